/*
 * list_marker.h - how a list's items are marked, one scheme for every
 * writer: .docx numbering and .pptx autonumbering are told the scheme, and
 * the writers that write markers out as text (.xlsx text sheets, PDF, a
 * .pptx number autonumbering cannot show) write it with kiln_list_marker.
 *
 * Numbered lists count 1. 2. 3. at the top level, a. b. c. one level down
 * (then aa. bb. as Word does), i. ii. iii. below that, and again from 1. at
 * the fourth; bullets go • ◦ ▪ by the same levels. A list whose numbers its
 * level's scheme cannot all write (letters have no 0 and stop at zzz, the
 * 78th; roman numerals at 3999) is numbered in digits throughout, so one
 * list never mixes two schemes.
 */
#ifndef KILN_LIST_MARKER_H
#define KILN_LIST_MARKER_H

#include <stddef.h>
#include <stdint.h>

#include "../spec/spec.h"

typedef enum kiln_list_marks {
    KILN_MARKS_BULLETS, /* •, ◦, ▪ by level */
    KILN_MARKS_DIGITS,  /* 1. 2. 3. */
    KILN_MARKS_LETTERS, /* a. b. ... z. aa. bb. ... zzz. (1 to 78) */
    KILN_MARKS_ROMAN,   /* i. ii. iii. (lower case, to 3999) */
} kiln_list_marks;

/* Longest marker with its terminating NUL: "-9223372036854775808." */
#define KILN_LIST_MARKER_MAX 24

/* The scheme of a list depth levels down (0 = top) whose items are numbered
 * first..last (ordered; ignored for bullets). An empty list (last < first)
 * takes its level's scheme. */
kiln_list_marks kiln_list_marks_for(int ordered, int depth, int64_t first, int64_t last);

/* The scheme of list, depth levels down: kiln_list_marks_for over the
 * numbers its items take (start .. start + item_count - 1). */
kiln_list_marks kiln_list_marks_of(const kiln_list *list, int depth);

/* Writes the marker of item number (a bullet: depth's) into buf, always
 * NUL-terminated, never more than cap bytes. A number the scheme cannot
 * write (which kiln_list_marks_for never chooses) is written in digits. */
void kiln_list_marker(kiln_list_marks marks, int depth, int64_t number, char *buf, size_t cap);

#endif
