/*
 * list_marker.c - list markers as text (list_marker.h).
 */
#include "list_marker.h"

#include <stdio.h>
#include <string.h>
#include "../../common/banned.h"

/* Roman numerals, lower case, for 1..3999 (what they write without a bar). */
#define ROMAN_MAX 3999

static void roman(int n, char *buf, size_t cap)
{
    static const int values[] = {1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1};
    static const char *const digits[] = {"m",  "cm", "d",  "cd", "c",  "xc", "l",
                                         "xl", "x",  "ix", "v",  "iv", "i"};
    size_t at = 0;
    for (size_t i = 0; i < sizeof values / sizeof values[0] && n > 0; i++) {
        size_t len = strlen(digits[i]);
        while (n >= values[i] && at + len < cap) {
            memcpy(buf + at, digits[i], len);
            at += len;
            n -= values[i];
        }
    }
    buf[at] = '\0';
}

/* Letters as Word's lowerLetter counts them (ST_NumberFormat, and what
 * PowerPoint's alphaLcPeriod draws): a..z, then aa, bb .. zz, then aaa ..
 * zzz, one letter repeated. Past zzz the markers would only grow, so a list
 * that long counts in digits (kiln_list_marks_for). */
#define LETTERS_MAX 78

static void letters(int64_t n, char *buf, size_t cap)
{
    size_t repeat = (size_t)((n - 1) / 26) + 1, at = 0;
    char letter = (char)('a' + (n - 1) % 26);
    while (at < repeat && at + 1 < cap)
        buf[at++] = letter;
    buf[at] = '\0';
}

kiln_list_marks kiln_list_marks_for(int ordered, int depth, int64_t first, int64_t last)
{
    if (!ordered)
        return KILN_MARKS_BULLETS;
    switch (depth < 0 ? 0 : depth % 3) {
    case 1:
        return last >= first && (first < 1 || last > LETTERS_MAX) ? KILN_MARKS_DIGITS
                                                                  : KILN_MARKS_LETTERS;
    case 2:
        return last >= first && (first < 1 || last > ROMAN_MAX) ? KILN_MARKS_DIGITS
                                                                : KILN_MARKS_ROMAN;
    default:
        return KILN_MARKS_DIGITS;
    }
}

kiln_list_marks kiln_list_marks_of(const kiln_list *list, int depth)
{
    return kiln_list_marks_for(list->ordered, depth, list->start,
                               (int64_t)list->start + (int64_t)list->item_count - 1);
}

void kiln_list_marker(kiln_list_marks marks, int depth, int64_t number, char *buf, size_t cap)
{
    static const char *const bullets[3] = {"\xE2\x80\xA2",  /* U+2022 bullet */
                                           "\xE2\x97\xA6",  /* U+25E6 white bullet */
                                           "\xE2\x96\xAA"}; /* U+25AA small square */
    char body[KILN_LIST_MARKER_MAX];
    if (cap == 0)
        return;
    if (marks == KILN_MARKS_BULLETS) {
        snprintf(buf, cap, "%s", bullets[depth < 0 ? 0 : depth % 3]);
        return;
    }
    if (marks == KILN_MARKS_LETTERS && number >= 1 && number <= LETTERS_MAX)
        letters(number, body, sizeof body);
    else if (marks == KILN_MARKS_ROMAN && number >= 1 && number <= ROMAN_MAX)
        roman((int)number, body, sizeof body);
    else
        snprintf(body, sizeof body, "%lld", (long long)number);
    snprintf(buf, cap, "%s.", body);
}
