/*
 * test_pdf_chart.c - the PDF chart drawer: nice axis ticks and their labels,
 * and every kind drawn from degenerate data (no categories, no numbers,
 * missing values, one point, equal values, extreme magnitudes, many series,
 * tiny and huge boxes) without a libharu error.
 *
 * The tick arithmetic is static in pdf_chart.c, so the file is compiled
 * into this test: its pdf_chart_draw then satisfies the library's
 * references and the archive's copy is never linked.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "artifacts/pdf/pdf_chart.c"

/* ---- ticks ---- */

static void check_axis(double lo, double hi, int zero, int max_iv, double want_min,
                       double want_max, double want_step)
{
    axis a;
    memset(&a, 0, sizeof a);
    nice_axis(lo, hi, zero, max_iv, &a);
    if (fabs(a.min - want_min) > 1e-9 * fmax(1, fabs(want_min)) ||
        fabs(a.max - want_max) > 1e-9 * fmax(1, fabs(want_max)) ||
        fabs(a.step - want_step) > 1e-9 * fmax(1e-300, fabs(want_step)))
        fail_msg("[%g, %g] zero=%d max=%d: got %g..%g step %g, want %g..%g step %g", lo, hi,
                 zero, max_iv, a.min, a.max, a.step, want_min, want_max, want_step);
    assert_true(a.ticks >= 2 && a.ticks <= (size_t)max_iv + 1);
    if (!isnan(lo)) { /* the data lies inside the axis */
        assert_true(a.min <= lo || fabs(a.min - lo) < 1e-9 * fabs(lo));
        assert_true(a.max >= hi || fabs(a.max - hi) < 1e-9 * fabs(hi));
    }
}

static void test_nice_axis(void **state)
{
    (void)state;
    check_axis(0, 455000, 1, 7, 0, 500000, 100000);
    check_axis(251000, 455000, 1, 7, 0, 500000, 100000);
    check_axis(0, 1412500, 1, 7, 0, 1500000, 250000);
    check_axis(-5, 14, 1, 7, -5, 15, 5);
    check_axis(-12, -3, 1, 6, -12, 0, 2);
    check_axis(1198, 1506, 0, 7, 1100, 1600, 100);
    check_axis(0, 1, 1, 4, 0, 1, 0.25);
    check_axis(0, 0.58, 1, 7, 0, 0.6, 0.1);
    check_axis(1e-9, 3e-9, 1, 7, 0, 3e-9, 5e-10);
    check_axis(0, 7, 1, 1, 0, 10, 10);
    /* degenerate: nothing, one value, equal values, NaN */
    check_axis(0, 0, 1, 7, 0, 1, 0.2);
    check_axis(7, 7, 0, 4, 0, 8, 2);
    check_axis(-3, -3, 0, 3, -3, 0, 1);
    check_axis(NAN, NAN, 1, 5, 0, 1, 0.2);
    check_axis(-1e300, 1e300, 1, 7, -1e300, 1e300, 5e299);
}

static void check_labels(double lo, double hi, const char *format, const char *const *want,
                         size_t count)
{
    axis a;
    memset(&a, 0, sizeof a);
    nice_axis(lo, hi, 1, 7, &a);
    /* what axis_labels does, without measuring (no fonts here) */
    char trimmed[256];
    const char *use = NULL;
    if (format) {
        int percent = strchr(format, '%') != NULL;
        if (trim_decimals(format, step_decimals(a.step * (percent ? 100 : 1)), trimmed,
                          sizeof trimmed))
            use = trimmed;
    }
    assert_int_equal(a.ticks, count);
    for (size_t i = 0; i < a.ticks; i++) {
        char buf[KILN_NUMFMT_MAX];
        double v = tick_value(&a, i);
        if (use)
            kiln_format_number(v, use, buf, sizeof buf);
        else
            format_compact(&a, v, buf, sizeof buf);
        if (strcmp(buf, want[i]) != 0)
            fail_msg("tick %zu of [%g, %g] under %s: got \"%s\", want \"%s\"", i, lo, hi,
                     format ? format : "(compact)", buf, want[i]);
    }
}

static void test_tick_labels(void **state)
{
    (void)state;
    static const char *const k[] = {"0", "100,000", "200,000", "300,000", "400,000", "500,000"};
    check_labels(0, 455000, NULL, k, 6);
    static const char *const m[] = {"0", "0.2M", "0.4M", "0.6M", "0.8M", "1.0M", "1.2M", "1.4M"};
    check_labels(0, 1400000, NULL, m, 8);
    static const char *const neg[] = {"-5", "0", "5", "10", "15"};
    check_labels(-5, 14, NULL, neg, 5);
    static const char *const frac[] = {"0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6"};
    check_labels(0, 0.58, NULL, frac, 7);
    static const char *const cur[] = {"$0", "$50,000", "$100,000", "$150,000", "$200,000",
                                      "$250,000"};
    check_labels(0, 210000, "$#,##0.00", cur, 6);
    static const char *const pct[] = {"0%", "5%", "10%", "15%", "20%", "25%"};
    check_labels(0, 0.22, "0.0%", pct, 6);
    static const char *const pct2[] = {"0.0%", "0.5%", "1.0%", "1.5%", "2.0%"};
    check_labels(0, 0.02, "0.00%", pct2, 5);
}

static void test_trim_decimals(void **state)
{
    (void)state;
    char out[64];
    assert_true(trim_decimals("#,##0.00", 0, out, sizeof out));
    assert_string_equal(out, "#,##0");
    assert_true(trim_decimals("$#,##0.00;[Red]-$#,##0.00", 1, out, sizeof out));
    assert_string_equal(out, "$#,##0.0;[Red]-$#,##0.0");
    assert_true(trim_decimals("0.0\" m.00\"", 0, out, sizeof out));
    assert_string_equal(out, "0\" m.00\"");
    assert_true(trim_decimals("0.0", 3, out, sizeof out));
    assert_string_equal(out, "0.0");
    assert_false(trim_decimals("#,##0.00", 0, out, 3));
}

static void test_nice_stride(void **state)
{
    (void)state;
    assert_int_equal(nice_stride(1), 1);
    assert_int_equal(nice_stride(6), 6);
    assert_int_equal(nice_stride(7), 10);
    assert_int_equal(nice_stride(21), 25);
    assert_int_equal(nice_stride(26), 50);
    assert_int_equal(nice_stride(120), 200);
}

/* ---- drawing ---- */

typedef struct haru_state {
    HPDF_STATUS code, detail;
} haru_state;

static void on_error(HPDF_STATUS code, HPDF_STATUS detail, void *user)
{
    haru_state *h = user;
    if (h->code == 0) {
        h->code = code;
        h->detail = detail;
    }
}

typedef struct drawing {
    haru_state herr;
    pdf_ctx ctx;
    kiln_arena arena;
    kiln_error err;
} drawing;

static void drawing_open(drawing *d)
{
    memset(d, 0, sizeof *d);
    kiln_arena_init(&d->arena, 0);
    d->ctx.err = &d->err;
    d->ctx.arena = &d->arena;
    d->ctx.pdf = HPDF_New(on_error, &d->herr);
    assert_non_null(d->ctx.pdf);
    assert_int_equal(HPDF_UseUTFEncodings(d->ctx.pdf), HPDF_OK);
    HPDF_SetCompressionMode(d->ctx.pdf, HPDF_COMP_ALL);
    assert_int_equal(pdf_fonts_init(&d->ctx.fonts, d->ctx.pdf, &d->err), KILN_E_OK);
    d->ctx.body_family = PDF_FAMILY_SANS;
    d->ctx.body_size = 11;
    d->ctx.accent_count = 3;
    d->ctx.accents[0] = 0x1F4E79;
    d->ctx.accents[1] = 0xED7D31;
    d->ctx.accents[2] = 0xA5A5A5;
}

static void drawing_page(drawing *d)
{
    d->ctx.page = HPDF_AddPage(d->ctx.pdf);
    assert_non_null(d->ctx.page);
    HPDF_Page_SetWidth(d->ctx.page, 595);
    HPDF_Page_SetHeight(d->ctx.page, 842);
}

static void drawing_close(drawing *d)
{
    if (getenv("KILN_TEST_CHART_PDF"))  /* to look at: KILN_TEST_CHART_PDF=/tmp/x.pdf */
        HPDF_SaveToFile(d->ctx.pdf, getenv("KILN_TEST_CHART_PDF"));
    else
        HPDF_SaveToStream(d->ctx.pdf);
    if (d->herr.code)
        fail_msg("libharu error %#lx detail %lu", (unsigned long)d->herr.code,
                 (unsigned long)d->herr.detail);
    pdf_fonts_release(&d->ctx.fonts);
    HPDF_Free(d->ctx.pdf);
    kiln_arena_release(&d->arena);
}

/* Data for a chart of kind with series_count series of point_count points,
 * value(s, p) from a small formula, optionally some NaN. */
typedef struct case_data {
    kiln_chart chart;
    kiln_chart_data data;
    kiln_chart_series_data series[60];
    kiln_series spec_series[60];
    double values[60][300];
    const char *cats[300];
    double nums[300];
    char names[60][40];
} case_data;

enum { VALUES_WAVE, VALUES_NAN, VALUES_EQUAL, VALUES_HUGE, VALUES_TINY, VALUES_MIXED };

static void make_case(case_data *c, kiln_chart_kind kind, int stacked, size_t series_count,
                      size_t point_count, int values, kiln_legend where)
{
    memset(c, 0, sizeof *c);
    c->chart.kind = kind;
    c->chart.stacked = stacked;
    c->chart.title = "A chart title";
    c->chart.x_title = "Categories";
    c->chart.y_title = "Values";
    c->chart.legend = where;
    c->chart.series = c->spec_series;
    c->chart.series_count = series_count;
    static const char *labels[] = {"North", "South", "A rather long category name", "", "東京"};
    for (size_t p = 0; p < point_count; p++) {
        c->cats[p] = labels[p % 5];
        c->nums[p] = (double)p * 1.5 - 3;
    }
    for (size_t s = 0; s < series_count; s++) {
        c->spec_series[s].color = KILN_COLOR_NONE;
        snprintf(c->names[s], sizeof c->names[s], "Series %zu", s + 1);
        c->series[s].name = c->names[s];
        c->series[s].color = s % 7 == 6 ? 0x00AA00 : KILN_COLOR_NONE;
        if (c->series[s].color == KILN_COLOR_NONE)
            c->series[s].color = 0x4472C4 + (int32_t)s * 0x030201;
        c->series[s].number_format = s == 0 && values == VALUES_MIXED ? "#,##0.00" : NULL;
        c->series[s].values = c->values[s];
        for (size_t p = 0; p < point_count; p++) {
            double v = 0;
            switch (values) {
            case VALUES_WAVE: v = 10 + 8 * sin((double)(p + s)); break;
            case VALUES_NAN: v = NAN; break;
            case VALUES_EQUAL: v = 5; break;
            case VALUES_HUGE: v = (p % 2 ? -1 : 1) * 1.7e308; break;
            case VALUES_TINY: v = 1e-310 * (double)(p + 1); break;
            case VALUES_MIXED: v = (p % 3 == 1) ? NAN : (double)p * (s % 2 ? -1.0 : 1.0); break;
            }
            c->values[s][p] = v;
        }
    }
    c->data.chart = &c->chart;
    c->data.point_count = point_count;
    c->data.categories = point_count ? c->cats : NULL;
    c->data.category_numbers = c->nums;
    c->data.categories_numeric = kind == KILN_CHART_SCATTER;
    c->data.series = c->series;
    c->data.series_count = series_count;
}

static void test_draw_everything(void **state)
{
    (void)state;
    static case_data c;
    drawing d;
    drawing_open(&d);
    static const kiln_chart_kind kinds[] = {KILN_CHART_COLUMN, KILN_CHART_BAR,
                                            KILN_CHART_LINE,   KILN_CHART_PIE,
                                            KILN_CHART_DOUGHNUT, KILN_CHART_SCATTER,
                                            KILN_CHART_AREA};
    static const size_t points[] = {0, 1, 2, 7, 300};
    static const size_t series[] = {1, 3, 50};
    static const double boxes[][2] = {{360, 216}, {12, 12}, {50, 30}, {90, 60}, {520, 700}};
    size_t drawn = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int stacked = 0; stacked < 2; stacked++)
            for (int values = VALUES_WAVE; values <= VALUES_MIXED; values++)
                for (size_t pi = 0; pi < sizeof points / sizeof points[0]; pi++)
                    for (size_t si = 0; si < sizeof series / sizeof series[0]; si++) {
                        size_t b = (k + (size_t)values + pi + si) % 5;
                        kiln_legend where = (kiln_legend)((k + pi + si + (size_t)values) % 5);
                        make_case(&c, kinds[k], stacked, series[si], points[pi], values,
                                  where);
                        if (drawn % 12 == 0)
                            drawing_page(&d);
                        /* a grid of boxes; the big one gets a page of its own */
                        double x = 20 + (double)(drawn % 2) * 280;
                        double y = 820 - (double)((drawn % 12) / 2) * 135;
                        double w = boxes[b][0] > 260 ? 260 : boxes[b][0];
                        double h = boxes[b][1] > 130 ? 130 : boxes[b][1];
                        kiln_status st = pdf_chart_draw(&d.ctx, &c.data, x, y, w, h);
                        assert_int_equal(st, KILN_E_OK);
                        assert_int_equal(d.herr.code, 0);
                        drawn++;
                    }
    drawing_page(&d);
    make_case(&c, KILN_CHART_COLUMN, 0, 3, 7, VALUES_WAVE, KILN_LEGEND_RIGHT);
    assert_int_equal(pdf_chart_draw(&d.ctx, &c.data, 20, 820, 520, 700), KILN_E_OK);
    drawing_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nice_axis),   cmocka_unit_test(test_tick_labels),
        cmocka_unit_test(test_trim_decimals), cmocka_unit_test(test_nice_stride),
        cmocka_unit_test(test_draw_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
