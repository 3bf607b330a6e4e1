/*
 * pointer.h - JSON Pointers (RFC 6901) built a member at a time, for the
 * errors every parser of a document reports: the spec's, a job request's.
 */
#ifndef KILN_POINTER_H
#define KILN_POINTER_H

#include <stddef.h>

#define KILN_PTR_BUF 1024
typedef struct kiln_ptr {
    char buf[KILN_PTR_BUF];
    size_t len;
} kiln_ptr;

/* Append "/" + escaped segment; returns the previous length for kiln_ptr_pop. */
size_t kiln_ptr_push(kiln_ptr *p, const char *segment);
size_t kiln_ptr_push_index(kiln_ptr *p, size_t index);
void kiln_ptr_pop(kiln_ptr *p, size_t saved_len);
/* Escape one segment into out (~ -> ~0, / -> ~1); always NUL-terminates. */
void kiln_ptr_escape(char *out, size_t cap, const char *segment);

#endif
