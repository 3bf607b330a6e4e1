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
#include "common/banned.h"

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
        fail_msg("[%g, %g] zero=%d max=%d: got %g..%g step %g, want %g..%g step %g", lo, hi, zero,
                 max_iv, a.min, a.max, a.step, want_min, want_max, want_step);
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
    static const char *const cur[] = {"$0",       "$50,000",  "$100,000",
                                      "$150,000", "$200,000", "$250,000"};
    check_labels(0, 210000, "$#,##0.00", cur, 6);
    static const char *const pct[] = {"0%", "5%", "10%", "15%", "20%", "25%"};
    check_labels(0, 0.22, "0.0%", pct, 6);
    static const char *const pct2[] = {"0.0%", "0.5%", "1.0%", "1.5%", "2.0%"};
    check_labels(0, 0.02, "0.00%", pct2, 5);
    /* large and tiny magnitudes: one style per axis, never "1E+15" next to
     * "800000000000000" */
    static const char *const tera[] = {"0", "200T", "400T", "600T", "800T", "1,000T"};
    check_labels(0, 9e14, NULL, tera, 6);
    static const char *const sci[] = {"0",       "5.0E+14", "1.0E+15", "1.5E+15",
                                      "2.0E+15", "2.5E+15", "3.0E+15", "3.5E+15"};
    check_labels(0, 3.2e15, NULL, sci, 8);
    static const char *const sci2[] = {"0", "2E+16", "4E+16", "6E+16", "8E+16", "1E+17"};
    check_labels(0, 9.5e16, NULL, sci2, 6);
    static const char *const tiny[] = {"0", "1E-06", "2E-06", "3E-06", "4E-06"};
    check_labels(0, 4e-6, NULL, tiny, 5);
}

/* Is s written in scientific notation ("2E+14")? */
static int is_scientific(const char *s)
{
    return strchr(s, 'E') != NULL;
}

/* Whatever the magnitude, an axis' labels share one style and are all
 * different. */
static void test_tick_label_style(void **state)
{
    (void)state;
    for (int e = -12; e <= 300; e++)
        for (int m = 1; m <= 9; m += 2) {
            double hi = m * pow(10, e);
            for (int neg = 0; neg < 2; neg++) {
                axis a;
                memset(&a, 0, sizeof a);
                nice_axis(neg ? -hi / 3 : hi / 7, hi, neg, 7, &a);
                char buf[MAX_TICKS][KILN_NUMFMT_MAX];
                int sci = -1;
                for (size_t i = 0; i < a.ticks; i++) {
                    format_compact(&a, tick_value(&a, i), buf[i], sizeof buf[i]);
                    if (strcmp(buf[i], "0") == 0)
                        continue;
                    if (sci < 0)
                        sci = is_scientific(buf[i]);
                    if (is_scientific(buf[i]) != sci)
                        fail_msg("axis up to %g mixes styles: \"%s\" after \"%s\"", hi, buf[i],
                                 buf[0]);
                    if (i > 0 && strcmp(buf[i], buf[i - 1]) == 0)
                        fail_msg("axis up to %g: two ticks read \"%s\"", hi, buf[i]);
                }
                /* the compact K/M/B/T style up to 1e15, scientific beyond */
                double mag = fmax(fabs(a.min), fabs(a.max));
                assert_int_equal(sci, mag > 1e15 * (1 + 1e-9) || mag < 1e-4);
            }
        }
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
    if (getenv("KILN_TEST_CHART_PDF")) /* to look at: KILN_TEST_CHART_PDF=/tmp/x.pdf */
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
            case VALUES_WAVE:
                v = 10 + 8 * sin((double)(p + s));
                break;
            case VALUES_NAN:
                v = NAN;
                break;
            case VALUES_EQUAL:
                v = 5;
                break;
            case VALUES_HUGE:
                v = (p % 2 ? -1 : 1) * 1.7e308;
                break;
            case VALUES_TINY:
                v = 1e-310 * (double)(p + 1);
                break;
            case VALUES_MIXED:
                v = (p % 3 == 1) ? NAN : (double)p * (s % 2 ? -1.0 : 1.0);
                break;
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
    static const kiln_chart_kind kinds[] = {KILN_CHART_COLUMN,   KILN_CHART_BAR,
                                            KILN_CHART_LINE,     KILN_CHART_PIE,
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
                        make_case(&c, kinds[k], stacked, series[si], points[pi], values, where);
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

/* ---- colours ---- */

static void test_palette(void **state)
{
    (void)state;
    static case_data c;
    pdf_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    chart ch;
    memset(&ch, 0, sizeof ch);
    ch.ctx = &ctx;
    /* Office's six accents (no theme), then a theme of three: 48 distinct
     * colours either way, the accents themselves first. */
    for (int theme = 0; theme < 2; theme++) {
        if (theme) {
            ctx.accent_count = 3;
            ctx.accents[0] = 0x1F4E79;
            ctx.accents[1] = 0xED7D31;
            ctx.accents[2] = 0xA5A5A5;
        }
        int32_t seen[48];
        for (size_t i = 0; i < 48; i++) {
            seen[i] = accent(&ch, i);
            assert_true(seen[i] >= 0 && seen[i] <= 0xFFFFFF);
            for (size_t j = 0; j < i; j++)
                if (seen[j] == seen[i])
                    fail_msg("palette entries %zu and %zu are both %06X", j, i,
                             (unsigned)seen[i]);
        }
        assert_int_equal(seen[0], theme ? 0x1F4E79 : 0x4472C4);
        assert_int_equal(seen[1], theme ? 0xED7D31 : 0xED7D31);
    }
    /* the first variant is darker (shade 60%), the next lighter */
    int32_t base = accent(&ch, 0), dark = accent(&ch, 3), light = accent(&ch, 6);
    assert_true((dark & 0xFF) < (base & 0xFF) && (light & 0xFF) > (base & 0xFF));

    /* Series colours as chart_data.c fills them in (the accent for the
     * position): distinct for 12 series; an explicit spec colour wins, and
     * so does a data colour that is not the position's accent. */
    make_case(&c, KILN_CHART_COLUMN, 0, 12, 3, VALUES_WAVE, KILN_LEGEND_RIGHT);
    for (size_t s = 0; s < 12; s++)
        c.series[s].color = ctx.accents[s % 3];
    c.spec_series[4].color = 0x123456;
    c.series[4].color = 0x123456;
    c.series[7].color = 0x00AA00;
    ch.data = &c.data;
    ch.spec = &c.chart;
    for (size_t s = 0; s < 12; s++)
        for (size_t t = 0; t < s; t++)
            assert_int_not_equal(series_color(&ch, s), series_color(&ch, t));
    assert_int_equal(series_color(&ch, 0), 0x1F4E79);
    assert_int_equal(series_color(&ch, 3), accent(&ch, 3));
    assert_int_equal(series_color(&ch, 4), 0x123456);
    assert_int_equal(series_color(&ch, 7), 0x00AA00);

    /* Pie slices: 40 distinct; one colour for all when the series has one. */
    make_case(&c, KILN_CHART_PIE, 0, 1, 40, VALUES_WAVE, KILN_LEGEND_RIGHT);
    for (size_t p = 0; p < 40; p++)
        for (size_t q = 0; q < p; q++)
            assert_int_not_equal(slice_color(&ch, p), slice_color(&ch, q));
    c.spec_series[0].color = 0xC00000;
    assert_int_equal(slice_color(&ch, 0), 0xC00000);
    assert_int_equal(slice_color(&ch, 39), 0xC00000);

    /* lumMod/lumOff: identity, black and white ends, grey stays grey */
    assert_int_equal(kiln_color_lum(0x4472C4, 1, 0), 0x4472C4);
    assert_int_equal(kiln_color_lum(0x4472C4, 0, 0), 0x000000);
    assert_int_equal(kiln_color_lum(0x4472C4, 0, 1), 0xFFFFFF);
    assert_int_equal(kiln_color_lum(0x808080, 0.5, 0), 0x404040);
}

/* ---- category labels ---- */

static void test_category_plan(void **state)
{
    (void)state;
    static case_data c;
    static char dates[24][16];
    drawing d;
    drawing_open(&d);
    drawing_page(&d);
    make_case(&c, KILN_CHART_COLUMN, 0, 1, 24, VALUES_WAVE, KILN_LEGEND_RIGHT);
    for (int m = 0; m < 24; m++) {
        snprintf(dates[m], sizeof dates[m], "%04d-%02d-01", 2024 + m / 12, m % 12 + 1);
        c.cats[m] = dates[m];
    }
    chart ch;
    memset(&ch, 0, sizeof ch);
    ch.ctx = &d.ctx;
    ch.data = &c.data;
    ch.spec = &c.chart;
    ch.page = d.ctx.page;
    ch.regular = pdf_fonts_face(&d.ctx.fonts, PDF_FAMILY_SANS, 0, &d.err);
    assert_non_null(ch.regular);
    ch.label_size = 8;
    double date_w = text_width(&ch, ch.regular, 8, dates[0], strlen(dates[0]));
    cat_plan cp;

    /* wide slots: horizontal, every label */
    plan_categories(&ch, date_w + 10, 24, 80, &cp);
    assert_false(cp.rotated);
    assert_int_equal(cp.k, 1);

    /* narrow slots: rotated before thinning, whole, the band holding them */
    plan_categories(&ch, 14, 24, 80, &cp);
    assert_true(cp.rotated);
    assert_int_equal(cp.k, 1);
    assert_true(fabs(cp.slant - date_w) < 1e-9);
    assert_true(cp.band >= date_w * COS45 && cp.band <= 80);

    /* narrower still: rotated and every 2nd */
    plan_categories(&ch, 8, 24, 80, &cp);
    assert_true(cp.rotated);
    assert_int_equal(cp.k, 2);

    /* a short band: the slant shortened to it, not below four characters' worth */
    plan_categories(&ch, 14, 24, 40, &cp);
    assert_true(cp.rotated);
    assert_true(cp.slant < date_w && cp.band <= 40 + 1e-9);

    /* no room below at all: horizontal, thinned and shortened as before */
    plan_categories(&ch, 14, 24, 12, &cp);
    assert_false(cp.rotated);
    assert_true(cp.k > 1);

    /* the first labels move the plot right rather than reach out of the box */
    plan_categories(&ch, 14, 24, 80, &cp);
    assert_true(rotated_overhang(&ch, &cp, 10, 14, 24, 0) > 0);
    assert_true(rotated_overhang(&ch, &cp, 200, 14, 24, 0) == 0);

    /* drawn end to end: 24 dates, 12 series, 40 slices, 1e15 values */
    assert_int_equal(pdf_chart_draw(&d.ctx, &c.data, 20, 820, 360, 216), KILN_E_OK);
    make_case(&c, KILN_CHART_LINE, 0, 12, 24, VALUES_WAVE, KILN_LEGEND_BOTTOM);
    for (int m = 0; m < 24; m++)
        c.cats[m] = dates[m];
    assert_int_equal(pdf_chart_draw(&d.ctx, &c.data, 20, 590, 360, 216), KILN_E_OK);
    make_case(&c, KILN_CHART_PIE, 0, 1, 40, VALUES_WAVE, KILN_LEGEND_RIGHT);
    assert_int_equal(pdf_chart_draw(&d.ctx, &c.data, 20, 360, 360, 216), KILN_E_OK);
    drawing_page(&d);
    make_case(&c, KILN_CHART_COLUMN, 0, 1, 4, VALUES_WAVE, KILN_LEGEND_NONE);
    for (size_t p = 0; p < 4; p++)
        c.values[0][p] = (double)(p + 1) * 2.5e14;
    assert_int_equal(pdf_chart_draw(&d.ctx, &c.data, 20, 820, 360, 216), KILN_E_OK);
    assert_int_equal(d.herr.code, 0);
    drawing_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nice_axis),        cmocka_unit_test(test_tick_labels),
        cmocka_unit_test(test_tick_label_style), cmocka_unit_test(test_palette),
        cmocka_unit_test(test_category_plan),    cmocka_unit_test(test_trim_decimals),
        cmocka_unit_test(test_nice_stride),      cmocka_unit_test(test_draw_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
