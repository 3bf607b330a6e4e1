/*
 * test_chart_data.c - kiln_chart_data_resolve: literal charts copied with
 * their defaults, and sheet charts' ranges read from the sheets' rows the
 * way the .xlsx writer lays them out (header row, formulas' cached values,
 * formats, other sheets, CSV files, merges); then the chart part and the
 * embedded workbook written from the resolved data (opc_chart_add).
 *
 * Specs are written with single quotes for readability; q() turns them into
 * JSON quotes, and a backquote into an apostrophe.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "artifacts/layout/chart_data.h"
#include "artifacts/opc/opc.h"
#include "artifacts/opc/opc_internal.h"
#include "artifacts/spec/spec.h"
#include "common/banned.h"

static char tmpdir[256];

static char *q(const char *s)
{
    char *out = strdup(s);
    assert_non_null(out);
    for (char *p = out; *p; p++)
        if (*p == '\'')
            *p = '"';
        else if (*p == '`')
            *p = '\'';
    return out;
}

static kiln_doc *parse_ok(const char *spec)
{
    char *json = q(spec);
    kiln_parse_options opt;
    kiln_parse_options_init(&opt);
    opt.base_dir = tmpdir;
    kiln_errors errs;
    kiln_doc *doc = NULL;
    kiln_status rc = kiln_doc_parse(json, strlen(json), &opt, &doc, &errs);
    if (rc != KILN_E_OK)
        for (size_t i = 0; i < errs.count; i++)
            fprintf(stderr, "  %s: %s\n", errs.items[i].pointer, errs.items[i].message);
    free(json);
    assert_int_equal(rc, KILN_E_OK);
    return doc;
}

/* Resolve the first block chart, or chart `index` of sheet `sheet`. */
typedef struct fixture {
    kiln_doc *doc;
    kiln_arena arena;
    kiln_chart_data data;
    kiln_error err;
} fixture;

static kiln_status resolve_sheet_chart(fixture *f, const char *spec, size_t sheet, size_t index)
{
    f->doc = parse_ok(spec);
    kiln_arena_init(&f->arena, 0);
    memset(&f->err, 0, sizeof f->err);
    assert_true(sheet < f->doc->sheet_count);
    const kiln_sheet *sh = &f->doc->sheets[sheet];
    assert_true(index < sh->chart_count);
    return kiln_chart_data_resolve(f->doc, sh, &sh->charts[index], &f->doc->theme, &f->arena,
                                   &f->data, &f->err);
}

static void resolve_block_chart(fixture *f, const char *spec)
{
    f->doc = parse_ok(spec);
    kiln_arena_init(&f->arena, 0);
    memset(&f->err, 0, sizeof f->err);
    const kiln_chart *chart = NULL;
    for (size_t i = 0; i < f->doc->block_count && !chart; i++)
        if (f->doc->blocks[i].kind == KILN_BLOCK_CHART)
            chart = f->doc->blocks[i].chart;
    if (!chart && f->doc->slide_count)
        chart = f->doc->slides[0].chart;
    assert_non_null(chart);
    kiln_status st = kiln_chart_data_resolve(f->doc, NULL, chart, &f->doc->theme, &f->arena,
                                             &f->data, &f->err);
    if (st != KILN_E_OK)
        fprintf(stderr, "%s: %s\n", f->err.pointer, f->err.message);
    assert_int_equal(st, KILN_E_OK);
}

static void fixture_free(fixture *f)
{
    kiln_arena_release(&f->arena);
    kiln_doc_free(f->doc);
}

/* cmocka 1.1 has no assert_double_equal. */
static void assert_near_at(double got, double expect, const char *file, int line)
{
    if (!(fabs(got - expect) <= 1e-9 * (fabs(expect) > 1 ? fabs(expect) : 1))) {
        fprintf(stderr, "%s:%d: expected %.17g, got %.17g\n", file, line, expect, got);
        fail();
    }
}
#define assert_near(got, expect) assert_near_at((got), (expect), __FILE__, __LINE__)

static void assert_values(const kiln_chart_series_data *s, const double *expect, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (isnan(expect[i])) {
            if (!isnan(s->values[i]))
                fprintf(stderr, "value %zu: expected a gap, got %g\n", i, s->values[i]);
            assert_true(isnan(s->values[i]));
        } else {
            assert_near(s->values[i], expect[i]);
        }
    }
}

/* ---- literal charts ---- */

static void test_literal_block_chart(void **state)
{
    (void)state;
    fixture f;
    resolve_block_chart(&f, "{'blocks': [{'type': 'chart', 'kind': 'column', 'title': 'Revenue',"
                            " 'categories': ['Q1', 'Q2', 'Q3'], 'series': ["
                            "  {'name': '2025', 'values': [10, 12.5, 9]},"
                            "  {'values': [1, 2, 3], 'color': '#123456'},"
                            "  {'values': [4, 5, 6]}]}]}");
    const kiln_chart_data *d = &f.data;
    assert_non_null(d->chart);
    assert_string_equal(d->chart->title, "Revenue");
    assert_int_equal(d->point_count, 3);
    assert_int_equal(d->series_count, 3);
    assert_int_equal(d->categories_numeric, 0);
    assert_null(d->category_numbers);
    assert_string_equal(d->categories[0], "Q1");
    assert_string_equal(d->categories[2], "Q3");
    assert_string_equal(d->series[0].name, "2025");
    assert_string_equal(d->series[1].name, "Series 2");
    assert_string_equal(d->series[2].name, "Series 3");
    /* Colors: the accent of the series' position unless it has its own. */
    assert_int_equal(d->series[0].color, f.doc->theme.accent_colors[0]);
    assert_int_equal(d->series[1].color, 0x123456);
    assert_int_equal(d->series[2].color, f.doc->theme.accent_colors[2]);
    assert_values(&d->series[0], (double[]){10, 12.5, 9}, 3);
    assert_values(&d->series[2], (double[]){4, 5, 6}, 3);
    assert_null(d->series[0].number_format);
    assert_ptr_equal(d->metadata, &f.doc->metadata);
    fixture_free(&f);
}

static void test_literal_accents_wrap(void **state)
{
    (void)state;
    fixture f;
    resolve_block_chart(&f, "{'theme': {'accent_colors': ['#FF0000', '#00FF00']},"
                            " 'blocks': [{'type': 'chart', 'kind': 'line', 'series': ["
                            "  {'values': [1]}, {'values': [2]}, {'values': [3]}]}]}");
    assert_int_equal(f.data.series[0].color, 0xFF0000);
    assert_int_equal(f.data.series[1].color, 0x00FF00);
    assert_int_equal(f.data.series[2].color, 0xFF0000);
    /* No categories: none are made up here (the chart writers number them). */
    assert_null(f.data.categories);
    assert_int_equal(f.data.point_count, 1);
    fixture_free(&f);
}

static void test_literal_numeric_categories(void **state)
{
    (void)state;
    fixture f;
    resolve_block_chart(&f, "{'blocks': [{'type': 'chart', 'kind': 'scatter',"
                            " 'categories': [1.5, 2, 10],"
                            " 'series': [{'name': 'y', 'values': [3, 4, 5]}]}]}");
    assert_int_equal(f.data.categories_numeric, 1);
    assert_non_null(f.data.category_numbers);
    assert_near(f.data.category_numbers[0], 1.5);
    assert_near(f.data.category_numbers[2], 10);
    assert_string_equal(f.data.categories[0], "1.5");
    fixture_free(&f);

    resolve_block_chart(&f, "{'blocks': [{'type': 'chart', 'kind': 'column',"
                            " 'categories': [2024, 'next'],"
                            " 'series': [{'values': [3, 4]}]}]}");
    assert_int_equal(f.data.categories_numeric, 0);
    assert_string_equal(f.data.categories[0], "2024");
    assert_string_equal(f.data.categories[1], "next");
    fixture_free(&f);
}

static void test_slide_chart(void **state)
{
    (void)state;
    fixture f;
    resolve_block_chart(&f, "{'slides': [{'layout': 'chart', 'title': 'By region',"
                            " 'chart': {'kind': 'pie', 'categories': ['North', 'South'],"
                            " 'series': [{'name': 'Share', 'values': [60, 40]}]}}]}");
    assert_int_equal(f.data.point_count, 2);
    assert_string_equal(f.data.series[0].name, "Share");
    assert_values(&f.data.series[0], (double[]){60, 40}, 2);
    fixture_free(&f);
}

/* ---- ranges ---- */

#define DATA_SHEET                                                                     \
    "{'name': 'Data', 'columns': [{'header': 'Month'}, {'header': 'Revenue', 'type': " \
    "'currency'}, {'header': 'Units', 'type': 'integer'}, {'header': 'Day', 'type': "  \
    "'date'}],"                                                                        \
    " 'rows': [['Jan', 100.5, 3, '2026-01-05'],"                                       \
    "          ['Feb', {'formula': '=B2*2', 'value': 201}, 'n/a', '2026-01-06'],"      \
    "          ['Mar', null, true, '2026-01-07'],"                                     \
    "          [42, 300, 5, '2026-01-08']]"

static void test_ranges_on_own_sheet(void **state)
{
    (void)state;
    fixture f;
    kiln_status st = resolve_sheet_chart(
        &f,
        "{'sheets': [" DATA_SHEET ", 'charts': [{'kind': 'column', 'categories': 'A2:A5',"
        " 'series': [{'name': '=B1', 'values': 'B2:B5'}, {'name': '=Data!C1', 'values': "
        "'=C2:C5'}]}]}]}",
        0, 0);
    assert_int_equal(st, KILN_E_OK);
    const kiln_chart_data *d = &f.data;
    assert_int_equal(d->point_count, 4);
    /* The header row is row 1: "=B1" names the header cell. */
    assert_string_equal(d->series[0].name, "Revenue");
    assert_string_equal(d->series[1].name, "Units");
    /* Numbers, a formula's cached value, blanks and text as gaps, booleans as 1. */
    assert_values(&d->series[0], (double[]){100.5, 201, NAN, 300}, 4);
    assert_values(&d->series[1], (double[]){3, NAN, 1, 5}, 4);
    /* A one-column range shows its column's format. */
    assert_non_null(d->series[0].number_format);
    assert_string_equal(d->series[0].number_format, "$#,##0.00");
    assert_string_equal(d->series[1].number_format, "#,##0");
    /* Categories: text as it is, the number 42 as shown (General). */
    assert_int_equal(d->categories_numeric, 0);
    assert_string_equal(d->categories[0], "Jan");
    assert_string_equal(d->categories[2], "Mar");
    assert_string_equal(d->categories[3], "42");
    fixture_free(&f);
}

static void test_date_categories(void **state)
{
    (void)state;
    fixture f;
    /* A column chart labels its points with the dates as shown... */
    kiln_status st = resolve_sheet_chart(&f,
                                         "{'sheets': [" DATA_SHEET
                                         ", 'charts': [{'kind': 'line', 'categories': 'D2:D4',"
                                         " 'series': [{'values': 'B2:B4'}]}]}]}",
                                         0, 0);
    assert_int_equal(st, KILN_E_OK);
    assert_int_equal(f.data.categories_numeric, 0);
    assert_string_equal(f.data.categories[0], "2026-01-05");
    assert_string_equal(f.data.categories[2], "2026-01-07");
    assert_string_equal(f.data.series[0].name, "Series 1");
    /* ... on a date axis, in the column's format (issue 15) */
    assert_int_equal(f.data.categories_dates, 1);
    assert_string_equal(f.data.category_format, "yyyy-mm-dd");
    assert_near(f.data.category_numbers[0], 46027);
    fixture_free(&f);

    /* ... a scatter chart plots them as x values (serial days). */
    st = resolve_sheet_chart(&f,
                             "{'sheets': [" DATA_SHEET ", 'charts': [{'kind': 'scatter', "
                             "'categories': 'D2:D4', 'series': [{'values': 'B2:B4'}]}]}]}",
                             0, 0);
    assert_int_equal(st, KILN_E_OK);
    assert_int_equal(f.data.categories_numeric, 1);
    assert_near(f.data.category_numbers[0], 46027); /* 2026-01-05 */
    assert_near(f.data.category_numbers[2], 46029);
    fixture_free(&f);
}

/* Which categories make a date axis: whole days shown as dates, all of them,
 * on a chart with a category axis (issue 15). */
static void test_date_axis_categories(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        int dates;
        const char *format;
        double first;
    } cases[] = {
        /* literal ISO dates */
        {"{'blocks': [{'type': 'chart', 'kind': 'column', 'categories': ['2026-03-01',"
         " '2026-01-01'], 'series': [{'values': [1, 2]}]}]}",
         1, "yyyy-mm-dd", 46082},
        {"{'blocks': [{'type': 'chart', 'kind': 'area', 'categories': ['2026-03-01'],"
         " 'series': [{'values': [1]}]}]}",
         1, "yyyy-mm-dd", 46082},
        /* one text among them, a time of day, or no axis: labels as they are */
        {"{'blocks': [{'type': 'chart', 'kind': 'line', 'categories': ['2026-03-01', 'later'],"
         " 'series': [{'values': [1, 2]}]}]}",
         0, NULL, 0},
        {"{'blocks': [{'type': 'chart', 'kind': 'line', 'categories': ['2026-03-01T10:00'],"
         " 'series': [{'values': [1]}]}]}",
         0, NULL, 0},
        {"{'blocks': [{'type': 'chart', 'kind': 'pie', 'categories': ['2026-03-01', "
         "'2026-03-02'], 'series': [{'values': [1, 2]}]}]}",
         0, NULL, 0},
        /* date cells: their own format, else the column's */
        {"{'sheets': [{'columns': [{'header': 'd', 'type': 'date', 'number_format': "
         "'d mmm yyyy'}, {'header': 'v'}], 'rows': [['2026-01-02', 1], ['2026-01-01', 2]],"
         " 'charts': [{'kind': 'bar', 'categories': 'A2:A3', 'series': [{'values': 'B2:B3'}]}]}]}",
         1, "d mmm yyyy", 46024},
        {"{'sheets': [{'columns': [{'header': 'd'}, {'header': 'v'}],"
         " 'rows': [[{'date': '2026-01-02', 'number_format': 'mmm d'}, 1],"
         "          [{'date': '2026-01-03'}, 2]],"
         " 'charts': [{'kind': 'line', 'categories': 'A2:A3', 'series': [{'values': 'B2:B3'}]}]}]}",
         1, "mmm d", 46024},
        /* numbers shown as dates count; date-times with a time, and a blank, do not */
        {"{'sheets': [{'columns': [{'header': 'd', 'number_format': 'yyyy-mm-dd'},"
         " {'header': 'v'}], 'rows': [[46024, 1], [46025, 2]],"
         " 'charts': [{'kind': 'column', 'categories': 'A2:A3', 'series': [{'values': 'B2:B3'}]}]}]}",
         1, "yyyy-mm-dd", 46024},
        {"{'sheets': [{'columns': [{'header': 'd', 'type': 'datetime'}, {'header': 'v'}],"
         " 'rows': [['2026-01-02T08:00', 1], ['2026-01-03T09:30', 2]],"
         " 'charts': [{'kind': 'column', 'categories': 'A2:A3', 'series': [{'values': 'B2:B3'}]}]}]}",
         0, NULL, 0},
        {"{'sheets': [{'columns': [{'header': 'd', 'type': 'date'}, {'header': 'v'}],"
         " 'rows': [['2026-01-02', 1], [null, 2]],"
         " 'charts': [{'kind': 'column', 'categories': 'A2:A3', 'series': [{'values': 'B2:B3'}]}]}]}",
         0, NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture f;
        if (strstr(cases[i].spec, "'sheets'"))
            assert_int_equal(resolve_sheet_chart(&f, cases[i].spec, 0, 0), KILN_E_OK);
        else
            resolve_block_chart(&f, cases[i].spec);
        if (f.data.categories_dates != cases[i].dates)
            fprintf(stderr, "case %zu: categories_dates %d\n", i, f.data.categories_dates);
        assert_int_equal(f.data.categories_dates, cases[i].dates);
        if (cases[i].dates) {
            assert_string_equal(f.data.category_format, cases[i].format);
            assert_near(f.data.category_numbers[0], cases[i].first);
        } else {
            assert_null(f.data.category_format);
        }
        fixture_free(&f);
    }
}

static void test_plain_number_categories(void **state)
{
    (void)state;
    fixture f;
    kiln_status st = resolve_sheet_chart(
        &f,
        "{'sheets': [{'columns': [{'header': 'Year'}, {'header': 'Sales'}],"
        " 'rows': [[2024, 1], [2025, 2], [2026, 3]],"
        " 'charts': [{'kind': 'column', 'categories': 'A2:A4', 'series': [{'values': "
        "'B2:B4'}]}]}]}",
        0, 0);
    assert_int_equal(st, KILN_E_OK);
    assert_int_equal(f.data.categories_numeric, 1);
    assert_near(f.data.category_numbers[1], 2025);
    assert_string_equal(f.data.categories[1], "2025");
    assert_null(f.data.series[0].number_format);
    fixture_free(&f);
}

static void test_other_sheet_and_row_range(void **state)
{
    (void)state;
    fixture f;
    /* The chart sits on "Summary" and reads "Data" across a row. */
    kiln_status st =
        resolve_sheet_chart(&f,
                            "{'sheets': [" DATA_SHEET "}, {'name': 'Summary', 'rows': [['x']],"
                            " 'charts': [{'kind': 'bar', 'categories': '`Data`!A1:C1',"
                            " 'series': [{'name': '=`Data`!A3', 'values': 'Data!A2:C2'}]}]}]}",
                            1, 0);
    assert_int_equal(st, KILN_E_OK);
    const kiln_chart_data *d = &f.data;
    assert_int_equal(d->point_count, 3);
    assert_string_equal(d->categories[0], "Month");
    assert_string_equal(d->categories[2], "Units");
    assert_string_equal(d->series[0].name, "Feb");
    assert_values(&d->series[0], (double[]){NAN, 100.5, 3}, 3);
    /* A range across columns has no one column format. */
    assert_null(d->series[0].number_format);
    fixture_free(&f);
}

static void test_range_past_the_data(void **state)
{
    (void)state;
    fixture f;
    kiln_status st = resolve_sheet_chart(
        &f,
        "{'sheets': [{'rows': [['a', 1], ['b', 2]],"
        " 'charts': [{'kind': 'area', 'categories': 'A1:A4', 'series': [{'values': "
        "'B1:B4'}]}]}]}",
        0, 0);
    assert_int_equal(st, KILN_E_OK);
    /* No header row: data row 0 is row 1. */
    assert_int_equal(f.data.point_count, 4);
    assert_string_equal(f.data.categories[0], "a");
    assert_string_equal(f.data.categories[1], "b");
    assert_string_equal(f.data.categories[3], "");
    assert_values(&f.data.series[0], (double[]){1, 2, NAN, NAN}, 4);
    fixture_free(&f);
}

static void test_merge_value_covers_cells(void **state)
{
    (void)state;
    fixture f;
    kiln_status st = resolve_sheet_chart(
        &f,
        "{'sheets': [{'rows': [['a', 1], ['b', 2], [null, null], [null, null]],"
        " 'merges': [{'range': 'A3:B4', 'value': 'merged'}],"
        " 'charts': [{'kind': 'column', 'categories': 'A1:A4', 'series': [{'values': "
        "'B1:B4'}]}]}]}",
        0, 0);
    assert_int_equal(st, KILN_E_OK);
    assert_string_equal(f.data.categories[2], "merged");
    assert_string_equal(f.data.categories[3], "");
    assert_values(&f.data.series[0], (double[]){1, 2, NAN, NAN}, 4);
    fixture_free(&f);
}

static void test_csv_rows(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/sales.csv", tmpdir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    /* The last record is malformed: reading it would fail the chart. */
    fputs("Region,Revenue\nNorth,10\nSouth,20.5\nEast,\nWest,40\nBad,1,2\n", fp);
    fclose(fp);
    fixture f;
    kiln_status st = resolve_sheet_chart(
        &f,
        "{'sheets': [{'name': 'S', 'columns': [{'header': 'Region'}, {'header': 'Revenue', "
        "'type': 'number'}], 'data': {'path': 'sales.csv'},"
        " 'charts': [{'kind': 'pie', 'categories': 'A2:A4', 'series': [{'name': '=B1', "
        "'values': 'B2:B4'}]}]}]}",
        0, 0);
    assert_int_equal(st, KILN_E_OK);
    /* Only the rows up to the last one needed were read. */
    assert_int_equal(f.data.point_count, 3);
    assert_string_equal(f.data.series[0].name, "Revenue");
    assert_string_equal(f.data.categories[1], "South");
    assert_values(&f.data.series[0], (double[]){10, 20.5, NAN}, 3);
    fixture_free(&f);

    /* A data file that disappeared after parsing is an input error. */
    f.doc = parse_ok("{'sheets': [{'name': 'S', 'data': {'path': 'sales.csv'},"
                     " 'charts': [{'kind': 'pie', 'categories': 'A2:A4', 'series': "
                     "[{'values': 'B2:B4'}]}]}]}");
    unlink(path);
    kiln_arena_init(&f.arena, 0);
    memset(&f.err, 0, sizeof f.err);
    const kiln_sheet *sh = &f.doc->sheets[0];
    st = kiln_chart_data_resolve(f.doc, sh, &sh->charts[0], &f.doc->theme, &f.arena, &f.data,
                                 &f.err);
    assert_int_not_equal(st, KILN_E_OK);
    assert_true(st == KILN_E_INPUT || st == KILN_E_INVALID_SPEC);
    fixture_free(&f);
}

static void test_range_without_sheet(void **state)
{
    (void)state;
    /* A chart that names ranges needs the sheet they are on. */
    fixture f;
    f.doc = parse_ok("{'sheets': [{'rows': [[1]], 'charts': [{'kind': 'column',"
                     " 'series': [{'values': 'A1:A1'}]}]}]}");
    kiln_arena_init(&f.arena, 0);
    memset(&f.err, 0, sizeof f.err);
    kiln_chart *chart = &f.doc->sheets[0].charts[0];
    /* The parser normalises ranges with the sheet's name; take it off. */
    chart->series[0].values_ref = "A1:A1";
    kiln_status st = kiln_chart_data_resolve(f.doc, NULL, chart, &f.doc->theme, &f.arena, &f.data,
                                             &f.err);
    assert_int_equal(st, KILN_E_INVALID_SPEC);
    fixture_free(&f);
}

/* ---- the chart part ---- */

/* Part text as a NUL-terminated copy (malloc'd). */
static char *part_text(const opc_package *pkg, const char *name, size_t *len)
{
    const opc_part *part = opc_part_find(pkg, name, strlen(name));
    if (!part)
        fprintf(stderr, "no part %s\n", name);
    assert_non_null(part);
    char *text = malloc(part->len + 1);
    assert_non_null(text);
    memcpy(text, part->data, part->len);
    text[part->len] = '\0';
    if (len)
        *len = part->len;
    return text;
}

static size_t count_of(const char *haystack, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void assert_has(const char *xml, const char *needle)
{
    if (!strstr(xml, needle))
        fprintf(stderr, "missing %s\n", needle);
    assert_non_null(strstr(xml, needle));
}

/* Files left in a directory besides "." and "..". */
static size_t files_in(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static char *chart_part(fixture *f, opc_package *pkg, const char *dir, unsigned n)
{
    char scratch[300];
    snprintf(scratch, sizeof scratch, "%s/scratch", tmpdir);
    mkdir(scratch, 0700);
    kiln_status st = opc_chart_add(pkg, dir, n, &f->data, &f->doc->theme, 0, scratch, &f->err);
    if (st != KILN_E_OK)
        fprintf(stderr, "%s: %s\n", f->err.pointer, f->err.message);
    assert_int_equal(st, KILN_E_OK);
    /* The workbook's scratch file is gone. */
    assert_int_equal(files_in(scratch), 0);
    char name[64];
    snprintf(name, sizeof name, "%s/charts/chart%u.xml", dir, n);
    return part_text(pkg, name, NULL);
}

static void test_chart_part_column(void **state)
{
    (void)state;
    fixture f;
    resolve_block_chart(&f, "{'blocks': [{'type': 'chart', 'kind': 'column', 'stacked': true,"
                            " 'title': 'R & D', 'categories': ['Q1', 'Q2'], 'series': ["
                            "  {'name': '2025', 'values': [10, 12.5]},"
                            "  {'values': [0.1, 3], 'color': '#123456'}],"
                            " 'x_axis': {'title': 'Quarter'}, 'legend': 'bottom'}]}");
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    char *xml = chart_part(&f, pkg, "word", 3);
    assert_has(xml, "<c:barDir val=\"col\"/><c:grouping val=\"stacked\"/>");
    assert_has(xml, "<c:overlap val=\"100\"/>");
    assert_int_equal(count_of(xml, "<c:ser>"), 2);
    /* Two axis ids in the plot, each axis naming its own and the other. */
    assert_int_equal(count_of(xml, "<c:axId val=\"50010001\"/>"), 2);
    assert_int_equal(count_of(xml, "<c:axId val=\"50010002\"/>"), 2);
    assert_has(xml, "<c:catAx>");
    assert_has(xml, "<c:valAx>");
    /* References into the embedded workbook, with the cached values. */
    assert_has(xml, "<c:f>Sheet1!$B$1</c:f>");
    assert_has(xml, "<c:f>Sheet1!$C$1</c:f>");
    assert_has(xml, "<c:f>Sheet1!$A$2:$A$3</c:f>");
    assert_has(xml, "<c:f>Sheet1!$C$2:$C$3</c:f>");
    assert_has(xml, "<c:v>Series 2</c:v>");
    assert_has(xml, "<c:pt idx=\"1\"><c:v>12.5</c:v></c:pt>");
    assert_has(xml, "<c:pt idx=\"0\"><c:v>0.1</c:v></c:pt>");
    assert_has(xml, "<a:srgbClr val=\"123456\"/>");
    assert_has(xml, "<a:t>R &amp; D</a:t>");
    assert_has(xml, "<a:t>Quarter</a:t>");
    assert_has(xml, "<c:legendPos val=\"b\"/>");
    assert_has(xml, "<c:externalData r:id=\"rId1\"><c:autoUpdate val=\"0\"/></c:externalData>");
    assert_null(strstr(xml, "mc:"));
    free(xml);

    /* The workbook is a zip, stored as it is, and related from the chart. */
    size_t len;
    char *xlsx = part_text(pkg, "word/embeddings/Microsoft_Excel_Worksheet3.xlsx", &len);
    assert_true(len > 4 && memcmp(xlsx, "PK\x03\x04", 4) == 0);
    free(xlsx);
    const opc_part *wb = opc_part_find(pkg, "word/embeddings/Microsoft_Excel_Worksheet3.xlsx",
                                       strlen("word/embeddings/Microsoft_Excel_Worksheet3.xlsx"));
    assert_int_equal(wb->compress, 0);
    opc_package_free(pkg);
    fixture_free(&f);
}

static void test_chart_part_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *expect[4];
    } cases[] = {
        {"{'blocks': [{'type': 'chart', 'kind': 'pie', 'categories': ['a', 'b', 'c'],"
         " 'series': [{'values': [1, 2, 3]}], 'legend': 'none'}]}",
         {"<c:pieChart><c:varyColors val=\"1\"/>", "<c:dPt><c:idx val=\"2\"/>",
          "<c:autoTitleDeleted val=\"1\"/>", "<c:firstSliceAng val=\"0\"/>"}},
        {"{'blocks': [{'type': 'chart', 'kind': 'doughnut', 'categories': ['a', 'b'],"
         " 'series': [{'values': [1, 2]}]}]}",
         {"<c:doughnutChart>", "<c:holeSize val=\"50\"/>", "<c:legendPos val=\"r\"/>", NULL}},
        {"{'blocks': [{'type': 'chart', 'kind': 'bar', 'categories': ['a', 'b'],"
         " 'series': [{'values': [1, 2]}], 'x_axis': {'title': 'Cat'}}]}",
         {"<c:barDir val=\"bar\"/><c:grouping val=\"clustered\"/>", "<c:axPos val=\"l\"/>",
          "rot=\"-5400000\"", NULL}},
        {"{'blocks': [{'type': 'chart', 'kind': 'line', 'categories': ['a', 'b'],"
         " 'series': [{'values': [1, 2]}]}]}",
         {"<c:lineChart><c:grouping val=\"standard\"/>", "<c:symbol val=\"circle\"/>",
          "<a:ln w=\"28575\" cap=\"rnd\">", "<c:marker val=\"1\"/>"}},
        {"{'blocks': [{'type': 'chart', 'kind': 'scatter', 'categories': [1, 2.5],"
         " 'series': [{'values': [3, 4]}]}]}",
         {"<c:scatterStyle val=\"lineMarker\"/>", "<c:xVal><c:numRef><c:f>Sheet1!$A$2:$A$3",
          "<c:pt idx=\"1\"><c:v>2.5</c:v>", "<c:yVal>"}},
        {"{'blocks': [{'type': 'chart', 'kind': 'area', 'stacked': true,"
         " 'series': [{'values': [1, 2]}]}]}",
         {"<c:areaChart><c:grouping val=\"stacked\"/>", "<c:crossBetween val=\"midCat\"/>", NULL,
          NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture f;
        resolve_block_chart(&f, cases[i].spec);
        opc_package *pkg = opc_package_new();
        assert_non_null(pkg);
        char *xml = chart_part(&f, pkg, "ppt", 1);
        for (size_t k = 0; k < 4 && cases[i].expect[k]; k++)
            assert_has(xml, cases[i].expect[k]);
        if (f.data.chart->kind == KILN_CHART_SCATTER) {
            assert_int_equal(count_of(xml, "<c:valAx>"), 2);
            assert_null(strstr(xml, "<c:catAx>"));
        }
        if (f.data.chart->kind == KILN_CHART_PIE || f.data.chart->kind == KILN_CHART_DOUGHNUT)
            assert_null(strstr(xml, "<c:axId"));
        /* No categories: no c:cat at all. */
        if (!f.data.categories)
            assert_null(strstr(xml, "<c:cat>"));
        free(xml);
        opc_package_free(pkg);
        fixture_free(&f);
    }
}

static void test_chart_part_gaps_and_formats(void **state)
{
    (void)state;
    fixture f;
    kiln_status st = resolve_sheet_chart(&f,
                                         "{'sheets': [" DATA_SHEET
                                         ", 'charts': [{'kind': 'column', 'categories': 'A2:A5',"
                                         " 'series': [{'name': '=B1', 'values': 'B2:B5'}]}]}]}",
                                         0, 0);
    assert_int_equal(st, KILN_E_OK);
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    char *xml = chart_part(&f, pkg, "word", 1);
    /* The blank third value is a missing point, not a zero. */
    assert_has(xml, "<c:ptCount val=\"4\"/><c:pt idx=\"0\"><c:v>100.5</c:v></c:pt>"
                    "<c:pt idx=\"1\"><c:v>201</c:v></c:pt><c:pt idx=\"3\">");
    assert_has(xml, "<c:formatCode>$#,##0.00</c:formatCode>");
    assert_has(xml, "<c:numFmt formatCode=\"$#,##0.00\" sourceLinked=\"1\"/>");
    assert_has(xml, "<c:v>Revenue</c:v>");
    free(xml);
    opc_package_free(pkg);
    fixture_free(&f);
}

/* Date categories: a c:dateAx in their format, and a numeric cache of the
 * serials, formatted so, in the order given (issue 15). */
static void test_chart_part_date_axis(void **state)
{
    (void)state;
    fixture f;
    resolve_block_chart(&f, "{'blocks': [{'type': 'chart', 'kind': 'line',"
                            " 'categories': ['2026-03-01', '2026-01-01'],"
                            " 'series': [{'values': [3, null]}], 'x_axis': {'title': 'Day'}}]}");
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    char *xml = chart_part(&f, pkg, "word", 1);
    assert_null(strstr(xml, "<c:catAx>"));
    assert_has(xml, "<c:dateAx><c:axId val=\"50010001\"/>");
    assert_has(xml, "<c:numFmt formatCode=\"yyyy-mm-dd\" sourceLinked=\"1\"/>");
    assert_has(xml, "<c:auto val=\"0\"/><c:lblOffset val=\"100\"/></c:dateAx>");
    assert_has(xml, "<c:cat><c:numRef><c:f>Sheet1!$A$2:$A$3</c:f><c:numCache>"
                    "<c:formatCode>yyyy-mm-dd</c:formatCode><c:ptCount val=\"2\"/>"
                    "<c:pt idx=\"0\"><c:v>46082</c:v></c:pt>"
                    "<c:pt idx=\"1\"><c:v>46023</c:v></c:pt>");
    /* The null: a missing point, ptCount kept. */
    assert_has(xml, "<c:ptCount val=\"2\"/><c:pt idx=\"0\"><c:v>3</c:v></c:pt></c:numCache>");
    assert_has(xml, "<c:dispBlanksAs val=\"gap\"/>");
    free(xml);
    opc_package_free(pkg);
    fixture_free(&f);
}

static int setup_dir(void **state)
{
    (void)state;
    return test_dir_make(tmpdir, sizeof tmpdir, "chart-data");
}

static int teardown_dir(void **state)
{
    (void)state;
    return test_dir_remove(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal_block_chart),
        cmocka_unit_test(test_literal_accents_wrap),
        cmocka_unit_test(test_literal_numeric_categories),
        cmocka_unit_test(test_slide_chart),
        cmocka_unit_test(test_ranges_on_own_sheet),
        cmocka_unit_test(test_date_categories),
        cmocka_unit_test(test_date_axis_categories),
        cmocka_unit_test(test_plain_number_categories),
        cmocka_unit_test(test_other_sheet_and_row_range),
        cmocka_unit_test(test_range_past_the_data),
        cmocka_unit_test(test_merge_value_covers_cells),
        cmocka_unit_test(test_csv_rows),
        cmocka_unit_test(test_range_without_sheet),
        cmocka_unit_test(test_chart_part_column),
        cmocka_unit_test(test_chart_part_kinds),
        cmocka_unit_test(test_chart_part_gaps_and_formats),
        cmocka_unit_test(test_chart_part_date_axis),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
