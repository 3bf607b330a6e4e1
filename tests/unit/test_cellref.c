/* test_cellref.c - A1 references, ranges, column names, ISO dates -> serials. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "artifacts/spec/spec.h"
#include "artifacts/spec/spec_internal.h"
#include "test_util.h"
#include "common/banned.h"

static void test_cell_refs(void **state)
{
    (void)state;
    uint32_t r, c;
    assert_int_equal(kiln_cell_ref_parse("A1", &r, &c), 0);
    assert_int_equal(r, 0);
    assert_int_equal(c, 0);
    assert_int_equal(kiln_cell_ref_parse("B12", &r, &c), 0);
    assert_int_equal(r, 11);
    assert_int_equal(c, 1);
    assert_int_equal(kiln_cell_ref_parse("$AA$10", &r, &c), 0);
    assert_int_equal(r, 9);
    assert_int_equal(c, 26);
    assert_int_equal(kiln_cell_ref_parse("XFD1048576", &r, &c), 0);
    assert_int_equal(r, 1048575);
    assert_int_equal(c, 16383);
    assert_int_equal(kiln_cell_ref_parse("xfd1", &r, &c), 0);
    assert_int_equal(c, 16383);
    /* Past Excel's grid, malformed, or trailing junk. */
    assert_int_equal(kiln_cell_ref_parse("XFE1", &r, &c), -1);
    assert_int_equal(kiln_cell_ref_parse("A1048577", &r, &c), -1);
    assert_int_equal(kiln_cell_ref_parse("A0", &r, &c), -1);
    assert_int_equal(kiln_cell_ref_parse("A01", &r, &c), -1);
    assert_int_equal(kiln_cell_ref_parse("1A", &r, &c), -1);
    assert_int_equal(kiln_cell_ref_parse("A", &r, &c), -1);
    assert_int_equal(kiln_cell_ref_parse("", &r, &c), -1);
    assert_int_equal(kiln_cell_ref_parse("A1 ", &r, &c), -1);
    assert_int_equal(kiln_cell_ref_parse("AAAA1", &r, &c), -1);
    assert_int_equal(kiln_cell_ref_parse(NULL, &r, &c), -1);
}

static void test_ranges(void **state)
{
    (void)state;
    kiln_range rg;
    assert_int_equal(kiln_range_parse("A1:D10", &rg), 0);
    assert_int_equal(rg.first_row, 0);
    assert_int_equal(rg.first_col, 0);
    assert_int_equal(rg.last_row, 9);
    assert_int_equal(rg.last_col, 3);
    assert_int_equal(kiln_range_parse("C5", &rg), 0);
    assert_int_equal(rg.first_row, 4);
    assert_int_equal(rg.last_row, 4);
    assert_int_equal(rg.first_col, 2);
    assert_int_equal(rg.last_col, 2);
    /* Reversed corners are normalised. */
    assert_int_equal(kiln_range_parse("D10:A1", &rg), 0);
    assert_int_equal(rg.first_row, 0);
    assert_int_equal(rg.last_col, 3);
    assert_int_equal(kiln_range_parse("A1:", &rg), -1);
    assert_int_equal(kiln_range_parse("A1:B", &rg), -1);
    assert_int_equal(kiln_range_parse("A1-B2", &rg), -1);
    assert_int_equal(kiln_range_parse("Sheet1!A1:B2", &rg), -1);
}

static void test_col_names(void **state)
{
    (void)state;
    char buf[4];
    kiln_col_name(0, buf);
    assert_string_equal(buf, "A");
    kiln_col_name(25, buf);
    assert_string_equal(buf, "Z");
    kiln_col_name(26, buf);
    assert_string_equal(buf, "AA");
    kiln_col_name(701, buf);
    assert_string_equal(buf, "ZZ");
    kiln_col_name(702, buf);
    assert_string_equal(buf, "AAA");
    kiln_col_name(16383, buf);
    assert_string_equal(buf, "XFD");
    /* Round trip over the whole grid. */
    for (uint32_t c = 0; c < 16384; c++) {
        char ref[16];
        uint32_t r2, c2;
        kiln_col_name(c, buf);
        test_copy(ref, sizeof ref, buf);
        test_append(ref, sizeof ref, "7");
        assert_int_equal(kiln_cell_ref_parse(ref, &r2, &c2), 0);
        assert_int_equal(c2, c);
    }
}

static void test_sheet_prefix(void **state)
{
    (void)state;
    char buf[64];
    const char *sheet, *rest;
    assert_int_equal(kiln_ref_split_sheet("A1:B2", buf, sizeof buf, &sheet, &rest), 0);
    assert_null(sheet);
    assert_string_equal(rest, "A1:B2");
    assert_int_equal(kiln_ref_split_sheet("Data!A1:B2", buf, sizeof buf, &sheet, &rest), 0);
    assert_string_equal(sheet, "Data");
    assert_string_equal(rest, "A1:B2");
    assert_int_equal(kiln_ref_split_sheet("'It''s mine'!B2", buf, sizeof buf, &sheet, &rest), 0);
    assert_string_equal(sheet, "It's mine");
    assert_string_equal(rest, "B2");
    assert_int_equal(kiln_ref_split_sheet("'Open!A1", buf, sizeof buf, &sheet, &rest), -1);
    assert_int_equal(kiln_ref_split_sheet("My sheet!A1", buf, sizeof buf, &sheet, &rest), -1);
    assert_int_equal(kiln_ref_split_sheet("!A1", buf, sizeof buf, &sheet, &rest), -1);
}

static double serial(const char *iso)
{
    double s = -1;
    int t;
    assert_int_equal(kiln_iso_to_serial(iso, &s, &t), 0);
    return s;
}

static void test_dates(void **state)
{
    (void)state;
    assert_true(serial("1900-01-01") == 1);
    assert_true(serial("1900-02-28") == 59);
    /* Excel's phantom 1900-02-29 is serial 60. */
    assert_true(serial("1900-03-01") == 61);
    assert_true(serial("2026-03-31") == 46112);
    assert_true(serial("1970-01-01") == 25569);
    assert_true(serial("9999-12-31") == 2958465);
    int t = -1;
    double s;
    assert_int_equal(kiln_iso_to_serial("2026-03-31", &s, &t), 0);
    assert_int_equal(t, 0);
    assert_int_equal(kiln_iso_to_serial("2026-03-31T12:00:00", &s, &t), 0);
    assert_int_equal(t, 1);
    assert_true(s == 46112.5);
    assert_true(serial("2026-03-31T18:00") == 46112.75);
    assert_true(serial("2026-03-31 06:00:00") == 46112.25);
    /* The zone is ignored: the wall clock as written. */
    assert_true(serial("2026-03-31T12:00:00Z") == 46112.5);
    assert_true(serial("2026-03-31T12:00:00+02:00") == 46112.5);
    assert_true(serial("2026-03-31T12:00:00-0530") == 46112.5);
    double frac = serial("2026-03-31T00:00:00.5");
    assert_true(frac > 46112.0 && frac - 46112.0 - 0.5 / 86400 < 1e-12);
    assert_true(serial("2024-02-29") == 45351);
    /* Times are rounded to Excel's millisecond: up to midnight is the next
     * day, and the last millisecond of 9999-12-31 is the latest there is. */
    assert_true(serial("2026-03-31T23:59:59.9999") == 46113);
    assert_true(serial("2026-03-31T12:00:00.0004") == 46112.5);
    frac = serial("9999-12-31T23:59:59.999");
    assert_true(frac < 2958466 && frac > 2958465.99999);
    assert_int_equal(kiln_iso_to_serial("9999-12-31T23:59:59.9999999", &s, &t), -1);
    assert_int_equal(kiln_iso_to_serial("9999-12-31T23:59:59.9995", &s, &t), -1);

    const char *bad[] = {"1900-02-29",
                         "2026-02-30",
                         "2026-13-01",
                         "2026-00-10",
                         "1899-12-31",
                         "2026-3-31",
                         "20260331",
                         "2026-03-31T24:00",
                         "2026-03-31T12:60",
                         "2026-03-31T12:00:61",
                         "2026-03-31T",
                         "2026-03-31Tx",
                         "2026-03-31T12:00Q",
                         "2026-03-31T12:00:00.",
                         "",
                         "2023-02-29",
                         NULL};
    for (int i = 0; bad[i]; i++) {
        if (kiln_iso_to_serial(bad[i], &s, &t) == 0)
            fail_msg("accepted \"%s\"", bad[i]);
    }
    assert_int_equal(kiln_iso_to_serial(NULL, &s, &t), -1);
}

static void test_days_from_civil(void **state)
{
    (void)state;
    assert_int_equal(kiln_days_from_civil(1970, 1, 1), 0);
    assert_int_equal(kiln_days_from_civil(2000, 3, 1), 11017);
    assert_int_equal(kiln_days_from_civil(1969, 12, 31), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cell_refs), cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_col_names), cmocka_unit_test(test_sheet_prefix),
        cmocka_unit_test(test_dates),     cmocka_unit_test(test_days_from_civil),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
