/*
 * test_list_marker.c - artifacts/layout/list_marker.c: the scheme of each nesting
 * level (1. a. i., as Word's numbering and PowerPoint's autonumbering draw
 * them, letters repeating past z),
 * the bullets by level, digits for a list its level's scheme cannot number
 * throughout, and a buffer too small.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "artifacts/layout/list_marker.h"
#include "common/banned.h"

static const char *marker(kiln_list_marks marks, int depth, int64_t number)
{
    static char buf[KILN_LIST_MARKER_MAX];
    memset(buf, 'x', sizeof buf);
    kiln_list_marker(marks, depth, number, buf, sizeof buf);
    return buf;
}

/* The marker of number in an ordered list at depth counting first..last. */
static const char *numbered(int depth, int64_t first, int64_t last, int64_t number)
{
    return marker(kiln_list_marks_for(1, depth, first, last), depth, number);
}

static void test_levels_count_as_word_does(void **state)
{
    (void)state;
    assert_string_equal(numbered(0, 1, 50, 1), "1.");
    assert_string_equal(numbered(0, 1, 50, 42), "42.");
    /* letters as Word's lowerLetter: one letter repeated past z */
    assert_string_equal(numbered(1, 1, 78, 1), "a.");
    assert_string_equal(numbered(1, 1, 78, 26), "z.");
    assert_string_equal(numbered(1, 1, 78, 27), "aa.");
    assert_string_equal(numbered(1, 1, 78, 28), "bb.");
    assert_string_equal(numbered(1, 1, 78, 52), "zz.");
    assert_string_equal(numbered(1, 1, 78, 53), "aaa.");
    assert_string_equal(numbered(1, 1, 78, 78), "zzz.");
    assert_string_equal(numbered(2, 1, 3999, 1), "i.");
    assert_string_equal(numbered(2, 1, 3999, 4), "iv.");
    assert_string_equal(numbered(2, 1, 3999, 9), "ix.");
    assert_string_equal(numbered(2, 1, 3999, 14), "xiv.");
    assert_string_equal(numbered(2, 1, 3999, 1994), "mcmxciv.");
    assert_string_equal(numbered(2, 1, 3999, 3888), "mmmdccclxxxviii.");
    assert_string_equal(numbered(2, 1, 3999, 3999), "mmmcmxcix.");
    /* the fourth level starts the scheme again */
    assert_string_equal(numbered(3, 5, 5, 5), "5.");
    assert_string_equal(numbered(4, 5, 5, 5), "e.");
    assert_string_equal(numbered(5, 5, 5, 5), "v.");
    /* an empty list takes its level's scheme */
    assert_int_equal(kiln_list_marks_for(1, 1, 0, -1), KILN_MARKS_LETTERS);
    assert_int_equal(kiln_list_marks_for(1, 2, 1, 0), KILN_MARKS_ROMAN);
}

static void test_bullets_by_level(void **state)
{
    (void)state;
    assert_int_equal(kiln_list_marks_for(0, 1, 0, 5), KILN_MARKS_BULLETS);
    assert_string_equal(marker(KILN_MARKS_BULLETS, 0, 7), "\xE2\x80\xA2");
    assert_string_equal(marker(KILN_MARKS_BULLETS, 1, 7), "\xE2\x97\xA6");
    assert_string_equal(marker(KILN_MARKS_BULLETS, 2, 7), "\xE2\x96\xAA");
    assert_string_equal(marker(KILN_MARKS_BULLETS, 3, 7), "\xE2\x80\xA2");
}

/* Letters have no 0 and roman numerals stop at 3999: such a list counts in
 * digits throughout, never "0." then "a.", nor an empty "." */
static void test_list_outside_its_scheme_in_digits(void **state)
{
    (void)state;
    assert_int_equal(kiln_list_marks_for(1, 1, 0, 2), KILN_MARKS_DIGITS);
    assert_string_equal(numbered(1, 0, 2, 0), "0.");
    assert_string_equal(numbered(1, 0, 2, 1), "1.");
    assert_int_equal(kiln_list_marks_for(1, 2, 0, 2), KILN_MARKS_DIGITS);
    assert_int_equal(kiln_list_marks_for(1, 2, 3998, 4001), KILN_MARKS_DIGITS);
    assert_string_equal(numbered(2, 3998, 4001, 3998), "3998.");
    assert_int_equal(kiln_list_marks_for(1, 2, 3998, 3999), KILN_MARKS_ROMAN);
    assert_int_equal(kiln_list_marks_for(1, 1, 70, 78), KILN_MARKS_LETTERS);
    assert_int_equal(kiln_list_marks_for(1, 1, 70, 79), KILN_MARKS_DIGITS);
    assert_string_equal(numbered(1, 70, 79, 70), "70.");
    assert_int_equal(kiln_list_marks_for(1, 1, 2147483647, 2147483650), KILN_MARKS_DIGITS);
    assert_int_equal(kiln_list_marks_for(1, 0, 0, 3), KILN_MARKS_DIGITS);
    /* a number its scheme cannot write, given anyway, is digits */
    assert_string_equal(marker(KILN_MARKS_LETTERS, 1, 0), "0.");
    assert_string_equal(marker(KILN_MARKS_LETTERS, 1, 79), "79.");
    assert_string_equal(marker(KILN_MARKS_LETTERS, 1, INT64_MAX), "9223372036854775807.");
    assert_string_equal(marker(KILN_MARKS_ROMAN, 2, 4000), "4000.");
    assert_string_equal(marker(KILN_MARKS_DIGITS, 0, INT64_MIN), "-9223372036854775808.");
    assert_string_equal(marker(KILN_MARKS_DIGITS, 0, INT64_MAX), "9223372036854775807.");
}

static void test_small_buffer_truncates(void **state)
{
    (void)state;
    char buf[4] = "zzz";
    kiln_list_marker(KILN_MARKS_ROMAN, 2, 3888, buf, sizeof buf);
    assert_string_equal(buf, "mmm");
    kiln_list_marker(KILN_MARKS_LETTERS, 1, 78, buf, 1);
    assert_string_equal(buf, "");
    kiln_list_marker(KILN_MARKS_BULLETS, 0, 1, buf, 0); /* nothing written */
    assert_string_equal(buf, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels_count_as_word_does),
        cmocka_unit_test(test_bullets_by_level),
        cmocka_unit_test(test_list_outside_its_scheme_in_digits),
        cmocka_unit_test(test_small_buffer_truncates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
