/*
 * line_reader.h - lines of at most max bytes from a byte stream, as a
 * session's event channel, `kiln mcp`'s standard input and its sessions'
 * output are read: the buffer grows to max + 64 KiB and no further, and a
 * longer line is skipped to its newline and counted (oversized), never
 * handed over, so a hostile writer cannot make the reader hold more.
 */
#ifndef KILN_LINE_READER_H
#define KILN_LINE_READER_H

#include <stddef.h>
#include <stdint.h>

typedef struct kiln_line_reader {
    char *buf; /* the line begun and not yet ended: buf[0..len) */
    size_t len, cap, max;
    int skipping;       /* inside a line over max */
    uint64_t oversized; /* lines skipped */
} kiln_line_reader;

typedef void (*kiln_line_fn)(void *arg, const char *line, size_t len);

void kiln_line_reader_init(kiln_line_reader *r, size_t max);
/* Take data; each complete line (without its newline) goes to line(). 0,
 * or -1 when out of memory (what was fed is dropped). */
int kiln_line_reader_feed(kiln_line_reader *r, const char *data, size_t len, kiln_line_fn line,
                          void *arg);
void kiln_line_reader_release(kiln_line_reader *r);

#endif
