/*
 * pdf_chart.c - a chart as vector graphics in a box on the current page.
 *
 * A PDF has no chart object: the chart is drawn from its resolved data
 * (chart_data.h) with libharu's path operators and the writer's text API,
 * the way a reader expects a report chart to look:
 *
 *   - the title centred at the top, bold, a little larger than the body;
 *   - the legend (right, left, top, bottom or none) in a band of its own, so
 *     it never covers the plot: a column of entries at the side (several
 *     columns when they do not fit), rows of entries above or below; what
 *     still does not fit ends in "+N more";
 *   - a value axis with "nice" ticks (steps of 1, 2, 2.5 or 5 x 10^n, as
 *     many as the plot's length leaves room for, at most 8 intervals), zero
 *     included for bars and areas (they grow from zero) and for lines when
 *     the data's spread is more than a sixth of its size (Excel's rule);
 *     stacked charts take the range of the stacked sums, negatives stacking
 *     downwards on their own;
 *   - tick labels in the first series' number format when it has one (unless
 *     that format shows two ticks alike, e.g. "0" for steps of 0.5), else in a
 *     compact form chosen once for the whole axis: thousands separators,
 *     M/B/T from a million up to 1e15 ("200T", "1,000T"), scientific with
 *     the same decimals on every tick beyond that and below 1e-4 ("5.0E+14",
 *     "1.0E+15"), never a mix;
 *   - light gridlines across the value axis and a darker line at zero;
 *   - category labels centred under their category when they fit; else (as
 *     Excel does) rotated 45 degrees with their end at the tick, the plot
 *     shrinking to make room below (and moving right for the first ones),
 *     then every k-th one when even slanted they would collide, and only
 *     then shortened with an ellipsis;
 *   - axis titles: x_title names the category axis and y_title the value
 *     axis whatever the orientation (as opc_chart.c does for Office), the
 *     vertical one rotated to read upwards;
 *   - date categories (chart_data.h) in date order, as a date axis sorts
 *     them, each labelled in the dates' number format.
 *
 * Kinds: column and bar (horizontal; the first category at the top, in
 * reading order) clustered or stacked; line (1.75 pt, small markers when the
 * points are not crowded, a gap at every missing value); area (filled down
 * to zero, translucent when several series overlap; stacked areas fill
 * between the cumulative lines, a missing value counting as 0); scatter
 * (markers at the numeric categories as x); pie and doughnut (slices from 12
 * o'clock clockwise, white separators, the percentage inside a slice when it
 * fits, the palette in turn unless the series has its own color).
 *
 * Colours: a series' own colour, else the palette: the theme's accents,
 * then (as Excel's default style does) the accents darker, then lighter,
 * and so on, so a dozen series or forty slices never share a colour.
 *
 * Everything is drawn inside a clip to the box, and the layout never divides
 * by zero: no categories, no numbers, one point, equal values, magnitudes
 * near the limits of a double and dozens of series all give a drawable
 * chart. Values beyond +-1e300 are clamped so sums and tick arithmetic stay
 * finite.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../layout/numfmt.h"
#include "pdf_internal.h"

#include "../../common/color.h"
#include "../../common/banned.h"

#define PAD 4.0 /* inside the box, around everything */
#define GRID_COLOR 0xD9D9D9
#define AXIS_COLOR 0x8C8C8C
#define LABEL_COLOR 0x595959
#define AXIS_TITLE_COLOR 0x404040
#define TITLE_COLOR 0x262626
#define EMPTY_COLOR 0xBFBFBF
#define VALUE_LIMIT 1e300 /* values are clamped to +-this */
#define MAX_INTERVALS 8
#define MAX_TICKS (MAX_INTERVALS + 2)
#define LEGEND_MEASURE_MAX 2000 /* entries measured for a legend: more never fit */
#define PI 3.14159265358979323846

static const int32_t office_accents[] = {0x4472C4, 0xED7D31, 0xA5A5A5,
                                         0xFFC000, 0x5B9BD5, 0x70AD47};

typedef struct box {
    double x0, y0, x1, y1; /* x0 <= x1, y0 <= y1 */
} box;

/* One value axis: nice bounds, ticks and their labels. */
typedef struct axis {
    double min, max, step;
    long kmin;    /* the first tick is kmin * step */
    size_t ticks; /* tick count (intervals + 1) */
    char label[MAX_TICKS][KILN_NUMFMT_MAX];
    size_t label_len[MAX_TICKS];
    double label_w_max;
} axis;

typedef struct chart {
    pdf_ctx *ctx;
    const kiln_chart_data *data;
    const kiln_chart *spec;
    HPDF_Page page;
    pdf_face *regular, *bold;
    double label_size, title_size;
    int is_pie, is_bar, stacked;
    const char *value_format; /* the value axis' number format, or NULL */
    int quiet;                /* a box too small for words: marks only */
    double *below, *above;    /* stacked lines and areas: see stack_next */
} chart;

/* ------------------------------------------------------------------ values */

static double clamp_value(double v)
{
    if (isnan(v))
        return NAN;
    if (v > VALUE_LIMIT)
        return VALUE_LIMIT;
    if (v < -VALUE_LIMIT)
        return -VALUE_LIMIT;
    return v;
}

/* Series s's value at point p: NAN when missing. */
static double value_at(const chart *ch, size_t s, size_t p)
{
    const kiln_chart_series_data *sd = &ch->data->series[s];
    if (!sd->values)
        return NAN;
    return clamp_value(sd->values[p]);
}

static double category_x(const chart *ch, size_t p)
{
    if (ch->data->categories_numeric && ch->data->category_numbers)
        return clamp_value(ch->data->category_numbers[p]);
    return (double)(p + 1);
}

/*
 * Office's variations on the accents for the series (or slices) beyond
 * them: the accents again darker (shade 60%), then lighter (tint 60%), and
 * so on, as Excel's default chart style paints them (lumMod, lumOff on the
 * HSL lightness); the last rounds are ours, so that even a theme of three
 * accents gives 48 distinct colours (six give 96) before they repeat.
 */
static const double accent_variants[][2] = {
    {1.0, 0.0}, {0.6, 0.0}, {0.8, 0.2}, {0.8, 0.0}, {0.6, 0.4}, {0.5, 0.0},
    {0.7, 0.3}, {0.7, 0.0}, {0.5, 0.5}, {0.4, 0.0}, {0.4, 0.6}, {0.3, 0.0},
    {0.3, 0.7}, {0.9, 0.0}, {0.9, 0.1}, {0.2, 0.8},
};
#define ACCENT_VARIANTS (sizeof accent_variants / sizeof accent_variants[0])

static size_t accent_count(const chart *ch)
{
    if (ch->ctx->accent_count > 0)
        return (size_t)ch->ctx->accent_count;
    return sizeof office_accents / sizeof office_accents[0];
}

/* The theme's accent i, cycling: what chart_data.c assigns by position. */
static int32_t base_accent(const chart *ch, size_t i)
{
    if (ch->ctx->accent_count > 0)
        return ch->ctx->accents[i % (size_t)ch->ctx->accent_count];
    return office_accents[i % (sizeof office_accents / sizeof office_accents[0])];
}

/* Palette entry i: the accents, then their darker and lighter variants. */
static int32_t accent(const chart *ch, size_t i)
{
    size_t n = accent_count(ch);
    size_t cycle = (i / n) % ACCENT_VARIANTS;
    return kiln_color_lum(base_accent(ch, i), accent_variants[cycle][0],
                          accent_variants[cycle][1]);
}

/* A series' colour: the spec's own, else the data's when it is not simply
 * the accent for the position (chart_data.c fills that in, which would
 * repeat after the accents), else the palette. */
static int32_t series_color(const chart *ch, size_t s)
{
    if (ch->spec && s < ch->spec->series_count && ch->spec->series[s].color != KILN_COLOR_NONE)
        return ch->spec->series[s].color;
    int32_t c = ch->data->series[s].color;
    if (c != KILN_COLOR_NONE && c != base_accent(ch, s))
        return c;
    return accent(ch, s);
}

/* A pie's slice: the series' own color when the spec gave one (every slice,
 * as the Office writers paint it), else the palette in turn. */
static int32_t slice_color(const chart *ch, size_t p)
{
    if (ch->spec && ch->spec->series_count > 0 && ch->spec->series[0].color != KILN_COLOR_NONE)
        return ch->spec->series[0].color;
    return accent(ch, p);
}

/* Category p's text and its length; "1", "2", ... without categories. */
static const char *category_text(const chart *ch, size_t p, char *buf, size_t cap, size_t *len)
{
    if (ch->data->categories && ch->data->categories[p]) {
        *len = strlen(ch->data->categories[p]);
        return ch->data->categories[p];
    }
    int n = snprintf(buf, cap, "%zu", p + 1);
    *len = n > 0 ? (size_t)n : 0;
    return buf;
}

/* ------------------------------------------------------------------ text */

static double text_width(const chart *ch, pdf_face *face, double size, const char *s, size_t len)
{
    return pdf_text_width(&ch->ctx->fonts, face, s, len, size);
}

/* All text goes through here, so a box too small for words draws none. */
static void put_text(const chart *ch, pdf_face *face, double size, int32_t color, double x,
                     double baseline, const char *s, size_t len)
{
    if (ch->quiet || len == 0)
        return;
    pdf_draw_text(ch->ctx, ch->page, face, size, color, x, baseline, s, len);
}

#define ELLIPSIS "\xE2\x80\xA6"

/* How much of s fits in max_w: the byte length of the prefix drawn, whether
 * an ellipsis follows it, and the total width. Nothing at all when not even
 * the ellipsis fits. */
static size_t fit_text(const chart *ch, pdf_face *face, double size, const char *s, size_t len,
                       double max_w, int *ellipsis, double *width)
{
    double full = text_width(ch, face, size, s, len);
    *ellipsis = 0;
    if (full <= max_w) {
        *width = full;
        return len;
    }
    double ell = text_width(ch, face, size, ELLIPSIS, 3);
    if (ell > max_w) {
        *width = 0;
        return 0;
    }
    size_t pos = 0, keep = 0;
    double w = 0, keep_w = 0;
    while (pos < len) {
        uint32_t cp = kiln_utf8_next(s, len, &pos);
        double cw = pdf_char_width(&ch->ctx->fonts, face, cp, size);
        if (w + cw + ell > max_w)
            break;
        w += cw;
        if (cp != ' ') { /* never end on a space before the ellipsis */
            keep = pos;
            keep_w = w;
        }
    }
    *ellipsis = 1;
    *width = keep_w + ell;
    return keep;
}

enum { ALIGN_LEFT, ALIGN_CENTER, ALIGN_RIGHT };

/* Draw s shortened to max_w, aligned at x (left end, centre or right end). */
static void draw_fit(const chart *ch, pdf_face *face, double size, int32_t color, double x,
                     double baseline, const char *s, size_t len, double max_w, int align)
{
    int ellipsis;
    double w;
    size_t n = fit_text(ch, face, size, s, len, max_w, &ellipsis, &w);
    if (n == 0 && !ellipsis)
        return;
    if (align == ALIGN_CENTER)
        x -= w / 2;
    else if (align == ALIGN_RIGHT)
        x -= w;
    if (n > 0)
        put_text(ch, face, size, color, x, baseline, s, n);
    if (ellipsis) {
        double pw = n > 0 ? text_width(ch, face, size, s, n) : 0;
        put_text(ch, face, size, color, x + pw, baseline, ELLIPSIS, 3);
    }
}

/* Baseline that centres capitals and digits on y. */
static double baseline_centered(double y, double size)
{
    return y - 0.36 * size;
}

/* Text reading upwards, centred on (x_left + its height, y_mid): a
 * vertical axis' title. The rotation goes through the CTM so the text API
 * draws in rotated coordinates unchanged. */
static void draw_vertical(const chart *ch, pdf_face *face, double size, int32_t color,
                          double x_left, double y_mid, const char *s, double max_len)
{
    double baseline_x = x_left + face->ascent * size;
    HPDF_Page_GSave(ch->page);
    HPDF_Page_Concat(ch->page, 0, 1, -1, 0, (HPDF_REAL)baseline_x, (HPDF_REAL)y_mid);
    draw_fit(ch, face, size, color, 0, 0, s, strlen(s), max_len, ALIGN_CENTER);
    HPDF_Page_GRestore(ch->page);
}

static int has_text(const char *s)
{
    return s && *s;
}

/* ------------------------------------------------------------------ drawing */

static void fill_rect(const chart *ch, double x0, double y0, double x1, double y1, int32_t color)
{
    if (x1 < x0) {
        double t = x0;
        x0 = x1;
        x1 = t;
    }
    if (y1 < y0) {
        double t = y0;
        y0 = y1;
        y1 = t;
    }
    if (x1 - x0 <= 0 || y1 - y0 <= 0)
        return;
    pdf_set_fill(ch->page, color);
    HPDF_Page_Rectangle(ch->page, (HPDF_REAL)x0, (HPDF_REAL)y0, (HPDF_REAL)(x1 - x0),
                        (HPDF_REAL)(y1 - y0));
    HPDF_Page_Fill(ch->page);
}

static void stroke_line(const chart *ch, double x0, double y0, double x1, double y1, double width,
                        int32_t color)
{
    pdf_set_stroke(ch->page, color);
    HPDF_Page_SetLineWidth(ch->page, (HPDF_REAL)width);
    HPDF_Page_MoveTo(ch->page, (HPDF_REAL)x0, (HPDF_REAL)y0);
    HPDF_Page_LineTo(ch->page, (HPDF_REAL)x1, (HPDF_REAL)y1);
    HPDF_Page_Stroke(ch->page);
}

static void marker(const chart *ch, double x, double y, double r, int32_t color)
{
    pdf_set_fill(ch->page, color);
    pdf_set_stroke(ch->page, 0xFFFFFF);
    HPDF_Page_SetLineWidth(ch->page, 0.6f);
    HPDF_Page_Circle(ch->page, (HPDF_REAL)x, (HPDF_REAL)y, (HPDF_REAL)r);
    HPDF_Page_FillStroke(ch->page);
}

/* ------------------------------------------------------------------ nice axis */

/* Decimals that show every multiple of step exactly (0..10). */
static int step_decimals(double step)
{
    for (int d = 0; d < 10; d++) {
        double t = step * pow(10, d);
        if (fabs(t - round(t)) < 1e-6 * fmax(1, t))
            return d;
    }
    return 10;
}

/* v with d decimals and thousands separators, "-" kept only for non-zero. */
static size_t format_grouped(double v, int d, const char *suffix, char *buf, size_t cap)
{
    char digits[400];
    int n = snprintf(digits, sizeof digits, "%.*f", d, fabs(v));
    if (n <= 0 || (size_t)n >= sizeof digits) {
        n = snprintf(buf, cap, "%.6g", v);
        return n > 0 && (size_t)n < cap ? (size_t)n : 0;
    }
    int nonzero = strspn(digits, "0.") != (size_t)n;
    const char *dot = strchr(digits, '.');
    size_t int_len = dot ? (size_t)(dot - digits) : (size_t)n;
    size_t o = 0;
    if (v < 0 && nonzero && o + 1 < cap)
        buf[o++] = '-';
    for (size_t i = 0; i < int_len && o + 2 < cap; i++) {
        buf[o++] = digits[i];
        size_t rest = int_len - i - 1;
        if (rest > 0 && rest % 3 == 0)
            buf[o++] = ',';
    }
    for (const char *p = dot; p && *p && o + 1 < cap; p++)
        buf[o++] = *p;
    for (const char *p = suffix; *p && o + 1 < cap; p++)
        buf[o++] = *p;
    buf[o] = '\0';
    return o;
}

/* v in scientific notation with d mantissa decimals, as Excel writes it:
 * "2E+14", "1.5E+15", "-3.0E-09". */
static size_t format_scientific(double v, int d, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%.*E", d, v);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static double tick_value(const axis *a, size_t i);

/* The fewest mantissa decimals (0..15) that write every tick of a exactly
 * enough to tell it from its neighbours. */
static int scientific_decimals(const axis *a)
{
    for (int d = 0; d < 15; d++) {
        int ok = 1;
        for (size_t i = 0; i < a->ticks && ok; i++) {
            double v = tick_value(a, i);
            char buf[64];
            if (v == 0 || format_scientific(v, d, buf, sizeof buf) == 0)
                continue;
            ok = fabs(strtod(buf, NULL) - v) <= a->step * 1e-6;
        }
        if (ok)
            return d;
    }
    return 15;
}

/*
 * A tick's text in the compact general form: see the file comment. The
 * style is chosen for the whole axis (from its magnitude and step), never
 * per tick, so one axis never mixes "1E+15" with "800000000000000":
 * grouped digits below a million, M/B/T up to 1e15 ("200T", "1,000T"),
 * scientific with the same decimals on every tick beyond that and for tiny
 * magnitudes.
 */
static size_t format_compact(const axis *a, double v, char *buf, size_t cap)
{
    double mag = fmax(fabs(a->min), fabs(a->max));
    if (v == 0) { /* "0", not "0.0M" nor "-0" */
        snprintf(buf, cap, "0");
        return 1;
    }
    if (mag > 1e15 * (1 + 1e-9) || mag < 1e-4)
        return format_scientific(v, scientific_decimals(a), buf, cap);
    double scale = 1;
    const char *suffix = "";
    if (mag >= 1e12) {
        scale = 1e12;
        suffix = "T";
    } else if (mag >= 1e9) {
        scale = 1e9;
        suffix = "B";
    } else if (mag >= 1e6) {
        scale = 1e6;
        suffix = "M";
    }
    int d = step_decimals(a->step / scale);
    return format_grouped(v / scale, d, suffix, buf, cap);
}

/*
 * Nice bounds for data in [lo, hi]: the densest step of 1, 2, 2.5 or 5 x
 * 10^n giving at most max_intervals intervals that cover the data.
 * include_zero stretches the range to zero. Degenerate data (nothing, one
 * value, equal values) still gets a usable range.
 */
static void nice_axis(double lo, double hi, int include_zero, int max_intervals, axis *a)
{
    if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi)) {
        lo = 0;
        hi = 1;
    }
    double mag = fmax(fabs(lo), fabs(hi));
    if (hi - lo <= mag * 1e-12) { /* one value: show it against zero */
        include_zero = 1;
        if (mag < 1e-290) {
            lo = 0;
            hi = 1;
        }
    }
    if (include_zero) {
        if (lo > 0)
            lo = 0;
        if (hi < 0)
            hi = 0;
    }
    if (max_intervals < 1)
        max_intervals = 1;
    if (max_intervals > MAX_INTERVALS)
        max_intervals = MAX_INTERVALS;
    double range = hi - lo;
    static const double mult[] = {1, 2, 2.5, 5};
    int e = (int)floor(log10(range / max_intervals)) - 1;
    for (int tries = 0; tries < 8; tries++, e++) {
        double p10 = pow(10, e);
        for (size_t m = 0; m < sizeof mult / sizeof mult[0]; m++) {
            double step = mult[m] * p10;
            if (!(step > 0) || !isfinite(step))
                continue;
            double kmin = floor(lo / step + 1e-9), kmax = ceil(hi / step - 1e-9);
            if (kmax - kmin > max_intervals || kmax <= kmin)
                continue;
            a->step = step;
            a->kmin = (long)kmin;
            a->ticks = (size_t)(kmax - kmin) + 1;
            a->min = kmin * step;
            a->max = kmax * step;
            return;
        }
    }
    /* Not reached for finite data; a plain range just in case. */
    a->step = range;
    a->kmin = 0;
    a->ticks = 2;
    a->min = lo;
    a->max = hi;
}

static double tick_value(const axis *a, size_t i)
{
    if (a->kmin == 0 && a->ticks == 2 && a->step == a->max - a->min && a->min != 0)
        return i == 0 ? a->min : a->max;
    double v = (double)(a->kmin + (long)i) * a->step;
    return v == 0 ? 0 : v;
}

/*
 * format with each section's decimals cut to decimals ("$#,##0.00" ->
 * "$#,##0" for ticks 50,000 apart): a cell shows cents, an axis stepping in
 * thousands does not need them. Quoted text, escapes and [...] tags are
 * copied as they are. 0 when the result does not fit in cap.
 */
static int trim_decimals(const char *format, int decimals, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = format; *p;) {
        size_t take = 1;
        if (*p == '"') {
            const char *q = strchr(p + 1, '"');
            take = q ? (size_t)(q - p) + 1 : strlen(p);
        } else if (*p == '\\' && p[1]) {
            take = 2;
        } else if (*p == '[') {
            const char *q = strchr(p, ']');
            take = q ? (size_t)(q - p) + 1 : strlen(p);
        } else if (*p == '.' && (p[1] == '0' || p[1] == '#' || p[1] == '?')) {
            size_t run = 1;
            while (p[run] == '0' || p[run] == '#' || p[run] == '?')
                run++;
            size_t keep = decimals > 0 ? (size_t)decimals + 1 : 0;
            if (keep > run)
                keep = run;
            if (o + keep >= cap)
                return 0;
            memcpy(out + o, p, keep);
            o += keep;
            p += run;
            continue;
        }
        if (o + take >= cap)
            return 0;
        memcpy(out + o, p, take);
        o += take;
        p += take;
    }
    out[o] = '\0';
    return 1;
}

/* Two neighbouring ticks that read the same: the format hides the step. */
static int labels_collide(const axis *a)
{
    for (size_t i = 1; i < a->ticks; i++)
        if (a->label_len[i] == a->label_len[i - 1] &&
            memcmp(a->label[i], a->label[i - 1], a->label_len[i]) == 0)
            return 1;
    return 0;
}

/* Fill the tick labels: the format with no more decimals than the step
 * needs, else the format as given, else (when neither tells the ticks
 * apart, or there is none) the compact form. */
static void axis_labels(const chart *ch, axis *a, const char *format, pdf_face *face, double size)
{
    char trimmed[256];
    const char *tries[3];
    size_t n = 0;
    if (format) {
        int percent = strchr(format, '%') != NULL;
        if (trim_decimals(format, step_decimals(a->step * (percent ? 100 : 1)), trimmed,
                          sizeof trimmed))
            tries[n++] = trimmed;
        tries[n++] = format;
    }
    tries[n++] = NULL;
    for (size_t t = 0; t < n; t++) {
        for (size_t i = 0; i < a->ticks; i++) {
            double v = tick_value(a, i);
            a->label_len[i] = tries[t]
                                  ? kiln_format_number(v, tries[t], a->label[i], KILN_NUMFMT_MAX)
                                  : format_compact(a, v, a->label[i], KILN_NUMFMT_MAX);
        }
        if (!tries[t] || !labels_collide(a))
            break;
    }
    a->label_w_max = 0;
    for (size_t i = 0; i < a->ticks; i++)
        a->label_w_max = fmax(a->label_w_max,
                              text_width(ch, face, size, a->label[i], a->label_len[i]));
}

/* Where v lies along [from, to] for the axis. */
static double axis_pos(const axis *a, double v, double from, double to)
{
    double span = a->max / 2 - a->min / 2; /* halves: never overflows */
    if (!(span > 0))
        return from;
    double t = (v / 2 - a->min / 2) / span;
    return from + t * (to - from);
}

/* ------------------------------------------------------------------ data range */

/* Range of what is drawn against the value axis: the values, or the stacked
 * sums (positives and negatives apart). 0 when there is no number at all. */
static int value_range(const chart *ch, double *lo, double *hi)
{
    const kiln_chart_data *d = ch->data;
    int any = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t p = 0; p < d->point_count; p++) {
        double pos = 0, neg = 0;
        for (size_t s = 0; s < d->series_count; s++) {
            double v = value_at(ch, s, p);
            if (isnan(v))
                continue;
            any = 1;
            if (ch->stacked) {
                if (v >= 0)
                    pos += v;
                else
                    neg += v;
            } else {
                *lo = fmin(*lo, v);
                *hi = fmax(*hi, v);
            }
        }
        if (ch->stacked) {
            *lo = fmin(*lo, neg);
            *hi = fmax(*hi, pos);
        }
    }
    if (!any) {
        *lo = 0;
        *hi = 0;
    }
    return any;
}

/* Lines and scatter start at zero only when the data spreads over more than
 * a sixth of its size (Excel's rule); bars and areas always do. */
static int wants_zero(const chart *ch, double lo, double hi)
{
    kiln_chart_kind k = ch->spec->kind;
    if (k != KILN_CHART_LINE && k != KILN_CHART_SCATTER)
        return 1;
    if (ch->stacked)
        return 1;
    if (lo >= 0)
        return hi - lo >= hi / 6;
    if (hi <= 0)
        return hi - lo >= -lo / 6;
    return 1;
}

/* ------------------------------------------------------------------ legend */

typedef struct legend {
    size_t count; /* entries */
    size_t shown; /* entries drawn (the rest summarised as "+N more") */
    double swatch, gap, row_h, col_gap, text_max;
    size_t cols, rows; /* side legends */
    double w, h;
} legend;

static size_t legend_count(const chart *ch)
{
    return ch->is_pie ? ch->data->point_count : ch->data->series_count;
}

static const char *legend_name(const chart *ch, size_t i, char *buf, size_t cap, size_t *len)
{
    if (ch->is_pie)
        return category_text(ch, i, buf, cap, len);
    const char *n = ch->data->series[i].name ? ch->data->series[i].name : "";
    *len = strlen(n);
    return n;
}

static int32_t legend_color(const chart *ch, size_t i)
{
    return ch->is_pie ? slice_color(ch, i) : series_color(ch, i);
}

static double legend_entry_text_w(const chart *ch, size_t i)
{
    char buf[32];
    size_t len;
    const char *s = legend_name(ch, i, buf, sizeof buf, &len);
    return text_width(ch, ch->regular, ch->label_size, s, len);
}

static size_t more_text(size_t hidden, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "+%zu more", hidden);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* A legend entry: swatch (a line with a marker for line and scatter charts,
 * a square otherwise) and the name shortened to text_w. */
static void legend_entry_draw(const chart *ch, const legend *lg, size_t i, double x, double y_mid,
                              double text_w)
{
    int32_t color = legend_color(ch, i);
    double sw = lg->swatch;
    kiln_chart_kind k = ch->spec->kind;
    if (k == KILN_CHART_LINE || k == KILN_CHART_SCATTER) {
        if (k == KILN_CHART_LINE)
            stroke_line(ch, x, y_mid, x + sw, y_mid, 1.75, color);
        marker(ch, x + sw / 2, y_mid, fmin(2.6, sw / 3), color);
    } else {
        double side = sw * 0.75;
        fill_rect(ch, x + (sw - side) / 2, y_mid - side / 2, x + (sw + side) / 2,
                  y_mid + side / 2, color);
    }
    char buf[32];
    size_t len;
    const char *s = legend_name(ch, i, buf, sizeof buf, &len);
    draw_fit(ch, ch->regular, ch->label_size, LABEL_COLOR, x + sw + lg->gap,
             baseline_centered(y_mid, ch->label_size), s, len, text_w, ALIGN_LEFT);
}

/* Measure (draw == 0) or draw a top/bottom legend: entries flowing in
 * centred rows across width, at most max_rows rows. */
static void legend_rows(const chart *ch, legend *lg, double x0, double width, double y_top,
                        size_t max_rows, int draw)
{
    size_t n = lg->count;
    double text_cap = fmax(width * 0.45 - lg->swatch - lg->gap, lg->swatch);
    size_t i = 0, row = 0;
    lg->shown = 0;
    double widest_row = 0;
    while (i < n && row < max_rows) {
        /* Entries [i, j) fit on this row. */
        size_t j = i;
        double w = 0;
        while (j < n && j - i < LEGEND_MEASURE_MAX) {
            double ew = lg->swatch + lg->gap + fmin(legend_entry_text_w(ch, j), text_cap);
            double add = (j > i ? lg->col_gap : 0) + ew;
            if (j > i && w + add > width)
                break;
            w += fmin(add, width);
            j++;
        }
        /* The last row allowed: leave room for "+N more" when entries remain. */
        char more[48];
        size_t more_len = 0;
        double more_w = 0;
        if (row + 1 == max_rows && j < n) {
            for (;;) {
                more_len = more_text(n - j, more, sizeof more);
                more_w = lg->col_gap +
                         text_width(ch, ch->regular, ch->label_size, more, more_len);
                if (w + more_w <= width || j <= i + 1)
                    break;
                j--;
                w = 0;
                for (size_t k = i; k < j; k++)
                    w += (k > i ? lg->col_gap : 0) + lg->swatch + lg->gap +
                         fmin(legend_entry_text_w(ch, k), text_cap);
            }
            w += more_w;
        }
        w = fmin(w, width);
        widest_row = fmax(widest_row, w);
        if (draw) {
            double x = x0 + (width - w) / 2;
            double y_mid = y_top - row * lg->row_h - lg->row_h / 2;
            for (size_t k = i; k < j; k++) {
                double tw = fmin(legend_entry_text_w(ch, k), text_cap);
                tw = fmin(tw, x0 + width - x - lg->swatch - lg->gap);
                legend_entry_draw(ch, lg, k, x, y_mid, tw);
                x += lg->swatch + lg->gap + tw + lg->col_gap;
            }
            if (more_len > 0)
                draw_fit(ch, ch->regular, ch->label_size, LABEL_COLOR, x,
                         baseline_centered(y_mid, ch->label_size), more, more_len,
                         fmax(0, x0 + width - x), ALIGN_LEFT);
        }
        lg->shown = j;
        i = j;
        row++;
    }
    lg->rows = row;
    lg->w = widest_row;
    lg->h = row * lg->row_h;
}

/* Measure a side legend for height avail_h and at most max_w wide: one
 * column when the entries fit, else several; the rest "+N more". */
static void legend_side_measure(const chart *ch, legend *lg, double avail_h, double max_w)
{
    size_t n = lg->count;
    size_t measured = n < LEGEND_MEASURE_MAX ? n : LEGEND_MEASURE_MAX;
    double natural = 0;
    for (size_t i = 0; i < measured; i++)
        natural = fmax(natural, legend_entry_text_w(ch, i));
    size_t rows_fit = avail_h > lg->row_h ? (size_t)(avail_h / lg->row_h) : 1;
    double entry_fixed = lg->swatch + lg->gap;
    /* More columns only while every name still shows whole: a column of
     * "Series..." helps no one, "+N more" at least says what is missing. */
    size_t cols = (n + rows_fit - 1) / rows_fit;
    size_t cols_max = (size_t)fmax(1,
                                   (max_w + lg->col_gap) / (entry_fixed + natural + lg->col_gap));
    if (cols > cols_max)
        cols = cols_max;
    if (cols < 1)
        cols = 1;
    double text = fmin(natural, (max_w + lg->col_gap) / cols - lg->col_gap - entry_fixed);
    lg->text_max = fmax(0, text);
    lg->cols = cols;
    lg->rows = n < rows_fit ? n : rows_fit;
    if (lg->rows == 0)
        lg->rows = 1;
    size_t capacity = cols * lg->rows;
    lg->shown = n <= capacity ? n : capacity - 1;
    lg->w = cols * (entry_fixed + lg->text_max) + (cols - 1) * lg->col_gap;
    if (lg->shown < n) {
        char more[48];
        size_t more_len = more_text(n - lg->shown, more, sizeof more);
        double mw = text_width(ch, ch->regular, ch->label_size, more, more_len);
        /* the summary sits in the last slot; widen it if that slot is narrow */
        if (mw > entry_fixed + lg->text_max && cols == 1)
            lg->w = fmin(max_w, mw);
    }
    lg->h = lg->rows * lg->row_h;
}

static void legend_side_draw(const chart *ch, const legend *lg, double x0, double y_top)
{
    double col_w = lg->swatch + lg->gap + lg->text_max;
    for (size_t i = 0; i < lg->shown; i++) {
        size_t col = i / lg->rows, row = i % lg->rows;
        double x = x0 + col * (col_w + lg->col_gap);
        double y_mid = y_top - row * lg->row_h - lg->row_h / 2;
        legend_entry_draw(ch, lg, i, x, y_mid, lg->text_max);
    }
    if (lg->shown < lg->count) {
        size_t slot = lg->shown;
        size_t col = slot / lg->rows, row = slot % lg->rows;
        double x = x0 + col * (col_w + lg->col_gap);
        double y_mid = y_top - row * lg->row_h - lg->row_h / 2;
        char more[48];
        size_t more_len = more_text(lg->count - lg->shown, more, sizeof more);
        draw_fit(ch, ch->regular, ch->label_size, LABEL_COLOR, x,
                 baseline_centered(y_mid, ch->label_size), more, more_len,
                 fmax(col_w, lg->w - (x - x0)), ALIGN_LEFT);
    }
}

/* Carve the legend out of area (shrinking it) and draw it there. */
static void legend_place(const chart *ch, box *area)
{
    kiln_legend where = ch->spec->legend;
    legend lg;
    memset(&lg, 0, sizeof lg);
    lg.count = legend_count(ch);
    if (where == KILN_LEGEND_NONE || lg.count == 0)
        return;
    double size = ch->label_size;
    lg.swatch = ch->spec->kind == KILN_CHART_LINE ? size * 1.8 : size;
    lg.gap = size * 0.45;
    lg.row_h = size * 1.5;
    lg.col_gap = size * 1.2;
    double aw = area->x1 - area->x0, ah = area->y1 - area->y0;
    if (aw < 8 * size || ah < 3 * lg.row_h)
        return; /* no room: the plot matters more */
    if (where == KILN_LEGEND_RIGHT || where == KILN_LEGEND_LEFT) {
        legend_side_measure(ch, &lg, ah, aw * 0.35);
        double gap = size * (ch->is_pie ? 2 : 1);
        double y_top = (area->y0 + area->y1) / 2 + lg.h / 2;
        /* A pie is as wide as it is high: keep the legend beside it rather
         * than at the far edge of the box. */
        double spare = ch->is_pie ? fmax(0, aw - lg.w - gap - ah) / 2 : 0;
        if (where == KILN_LEGEND_RIGHT) {
            legend_side_draw(ch, &lg, area->x1 - spare - lg.w, y_top);
            area->x1 -= spare + lg.w + gap;
            area->x0 += spare;
        } else {
            legend_side_draw(ch, &lg, area->x0 + spare, y_top);
            area->x0 += spare + lg.w + gap;
            area->x1 -= spare;
        }
    } else {
        size_t max_rows = (size_t)fmax(1, floor(ah * 0.3 / lg.row_h));
        legend_rows(ch, &lg, area->x0, aw, 0, max_rows, 0);
        double gap = size * (ch->is_pie ? 1 : 0.5);
        double spare = ch->is_pie ? fmax(0, ah - lg.h - gap - aw) / 2 : 0;
        if (where == KILN_LEGEND_TOP) {
            legend_rows(ch, &lg, area->x0, aw, area->y1 - spare, max_rows, 1);
            area->y1 -= spare + lg.h + gap;
            area->y0 += spare;
        } else {
            legend_rows(ch, &lg, area->x0, aw, area->y0 + spare + lg.h, max_rows, 1);
            area->y0 += spare + lg.h + gap;
            area->y1 -= spare;
        }
    }
}

/* ------------------------------------------------------------------ category labels */

/* Every k-th label, k rounded up to a stride a reader counts in (1..6, 10,
 * 20, 25, 50, 100, ...): "Day 0, Day 25, Day 50" rather than every 26th. */
static size_t nice_stride(size_t k)
{
    if (k <= 6)
        return k;
    static const size_t mult[] = {10, 20, 25, 50};
    for (size_t p10 = 1; p10 <= SIZE_MAX / 100; p10 *= 10)
        for (size_t m = 0; m < sizeof mult / sizeof mult[0]; m++)
            if (mult[m] * p10 >= k)
                return mult[m] * p10;
    return k;
}

#define COS45 0.70710678118654752440

/* How the category labels go along a horizontal axis. */
typedef struct cat_plan {
    size_t k;     /* every k-th label is drawn */
    int rotated;  /* 45 degrees, reading upwards, the end at the tick */
    double slant; /* rotated: the most text drawn along the slant */
    double band;  /* height the labels need below the plot */
} cat_plan;

static double widest_category(const chart *ch, double size)
{
    size_t n = ch->data->point_count;
    size_t measured = n < LEGEND_MEASURE_MAX ? n : LEGEND_MEASURE_MAX;
    double widest = 0;
    char buf[32];
    for (size_t p = 0; p < measured; p++) {
        size_t len;
        const char *s = category_text(ch, p, buf, sizeof buf, &len);
        widest = fmax(widest, text_width(ch, ch->regular, size, s, len));
    }
    return widest;
}

/* Slanted labels one line apart, measured across the slant: spacing *
 * cos 45 between neighbouring ticks. */
static size_t rotated_stride(double size, double spacing, size_t n)
{
    double across = spacing * COS45;
    size_t k = across > 0 ? (size_t)ceil(size * 1.2 / across - 1e-9) : n;
    k = nice_stride(k < 1 ? 1 : k);
    return k > n ? n : k;
}

/*
 * Plan the labels of n categories spacing apart (Excel's order): centred
 * and whole when every one fits its slot; else rotated 45 degrees, the band
 * below the plot growing up to max_band, every k-th label when even the
 * slanted ones would touch, shortened only to what the band holds; else
 * (no room below to rotate) centred, every k-th, shortened to the room.
 * Rotating before thinning keeps neighbouring dates and long names apart
 * ("2026-01-02", "2026-01-05", ... rather than "2026-01-..." for each).
 */
static void plan_categories(const chart *ch, double spacing, size_t n, double max_band,
                            cat_plan *cp)
{
    double size = ch->label_size, gap = size * 0.8;
    double widest = widest_category(ch, size);
    memset(cp, 0, sizeof *cp);
    cp->k = 1;
    cp->band = size * 1.25 + size * 0.45;
    if (n <= 1 || !(spacing > 0) || widest + gap <= spacing)
        return;
    double slant = fmin(widest, (max_band - size * 1.2) / COS45);
    if (slant > 0 && slant >= fmin(widest, size * 4)) {
        cp->rotated = 1;
        cp->slant = slant;
        cp->band = fmax(cp->band, slant * COS45 + size * 1.2);
        cp->k = rotated_stride(size, spacing, n);
        return;
    }
    /* The smallest k whose room holds the labels, or a useful part of them. */
    double want = fmin(widest, 5 * size);
    double need = (want + gap) / spacing;
    size_t k = need > 1 ? (size_t)ceil(need - 1e-9) : 1;
    k = nice_stride(k);
    cp->k = k > n ? n : k;
}

/* How far the rotated labels that are drawn would reach left of lo (0 when
 * none does): the plot moves right by that much rather than cut them. */
static double rotated_overhang(const chart *ch, const cat_plan *cp, double first, double spacing,
                               size_t n, double lo)
{
    double size = ch->label_size, over = 0;
    size_t k = cp->k > 0 ? cp->k : 1;
    char buf[32];
    for (size_t p = 0; p < n; p += k) {
        double room = first + p * spacing - lo;
        if (room > (cp->slant + size * 0.4) * COS45)
            break; /* this one and all further right fit */
        size_t len;
        const char *s = category_text(ch, p, buf, sizeof buf, &len);
        double w = fmin(cp->slant, text_width(ch, ch->regular, size, s, len));
        over = fmax(over, (w + size * 0.4) * COS45 - room);
    }
    return over;
}

/*
 * Labels at pos(i) = first + i * spacing along x as planned: centred on
 * baseline, each shortened to the room it has (its share of the axis, and
 * never past [lo, hi]); or rotated 45 degrees with the end just below the
 * tick on axis_y, never reaching left of lo.
 */
static void category_labels_x(const chart *ch, const cat_plan *cp, double first, double spacing,
                              size_t n, double axis_y, double baseline, double lo, double hi)
{
    if (n == 0)
        return;
    double size = ch->label_size, gap = size * 0.8;
    size_t k = cp->k > 0 ? cp->k : 1;
    char buf[32];
    double room = n > 1 ? k * spacing - gap : hi - lo;
    for (size_t p = 0; p < n; p += k) {
        double x = first + p * spacing;
        size_t len;
        const char *s = category_text(ch, p, buf, sizeof buf, &len);
        if (cp->rotated) {
            double w = fmin(cp->slant, (x - lo) / COS45 - size * 0.4);
            if (w <= 0)
                continue;
            HPDF_Page_GSave(ch->page);
            HPDF_Page_Concat(ch->page, (HPDF_REAL)COS45, (HPDF_REAL)COS45, (HPDF_REAL)-COS45,
                             (HPDF_REAL)COS45, (HPDF_REAL)x, (HPDF_REAL)(axis_y - size * 0.5));
            draw_fit(ch, ch->regular, size, LABEL_COLOR, 0, baseline_centered(0, size), s, len, w,
                     ALIGN_RIGHT);
            HPDF_Page_GRestore(ch->page);
            continue;
        }
        double w = fmin(room, 2 * fmin(x - lo, hi - x));
        if (w <= 0)
            continue;
        draw_fit(ch, ch->regular, size, LABEL_COLOR, x, baseline, s, len, w, ALIGN_CENTER);
    }
}

/* ------------------------------------------------------------------ axis charts */

typedef struct plot {
    box b;   /* the plot area */
    axis v;  /* value axis */
    axis xv; /* scatter: the x value axis */
} plot;

/* Gridlines across the value axis and the darker line at zero (or at the
 * edge nearest zero). vertical_values: values go up (column, line, ...). */
static void draw_grid(const chart *ch, const plot *pl, int vertical_values)
{
    const box *b = &pl->b;
    HPDF_Page_SetLineCap(ch->page, HPDF_BUTT_END);
    for (size_t i = 0; i < pl->v.ticks; i++) {
        double v = tick_value(&pl->v, i);
        if (vertical_values) {
            double y = axis_pos(&pl->v, v, b->y0, b->y1);
            stroke_line(ch, b->x0, y, b->x1, y, 0.5, GRID_COLOR);
        } else {
            double x = axis_pos(&pl->v, v, b->x0, b->x1);
            stroke_line(ch, x, b->y0, x, b->y1, 0.5, GRID_COLOR);
        }
    }
    if (ch->spec->kind == KILN_CHART_SCATTER) {
        for (size_t i = 0; i < pl->xv.ticks; i++) {
            double x = axis_pos(&pl->xv, tick_value(&pl->xv, i), b->x0, b->x1);
            stroke_line(ch, x, b->y0, x, b->y1, 0.5, GRID_COLOR);
        }
    }
}

static void draw_zero_lines(const chart *ch, const plot *pl, int vertical_values)
{
    const box *b = &pl->b;
    double zero = fmin(fmax(0, pl->v.min), pl->v.max);
    if (vertical_values) {
        double y = axis_pos(&pl->v, zero, b->y0, b->y1);
        stroke_line(ch, b->x0, y, b->x1, y, 0.75, AXIS_COLOR);
    } else {
        double x = axis_pos(&pl->v, zero, b->x0, b->x1);
        stroke_line(ch, x, b->y0, x, b->y1, 0.75, AXIS_COLOR);
    }
    if (ch->spec->kind == KILN_CHART_SCATTER) {
        double xz = fmin(fmax(0, pl->xv.min), pl->xv.max);
        double x = axis_pos(&pl->xv, xz, b->x0, b->x1);
        stroke_line(ch, x, b->y0, x, b->y1, 0.75, AXIS_COLOR);
    }
}

/* Vertical value axis labels right-aligned left of the plot. */
static void value_labels_left(const chart *ch, const plot *pl)
{
    double size = ch->label_size;
    for (size_t i = 0; i < pl->v.ticks; i++) {
        double y = axis_pos(&pl->v, tick_value(&pl->v, i), pl->b.y0, pl->b.y1);
        draw_fit(ch, ch->regular, size, LABEL_COLOR, pl->b.x0 - size * 0.5,
                 baseline_centered(y, size), pl->v.label[i], pl->v.label_len[i],
                 pl->v.label_w_max + 1, ALIGN_RIGHT);
    }
}

/* Horizontal axis tick labels centred under the plot. */
static void value_labels_below(const chart *ch, const axis *a, const box *b, double baseline)
{
    for (size_t i = 0; i < a->ticks; i++) {
        double x = axis_pos(a, tick_value(a, i), b->x0, b->x1);
        put_text(ch, ch->regular, ch->label_size, LABEL_COLOR,
                 x - text_width(ch, ch->regular, ch->label_size, a->label[i], a->label_len[i]) /
                         2,
                 baseline, a->label[i], a->label_len[i]);
    }
}

/* Ticks along a horizontal length: as many as their labels leave room for. */
static void axis_fit_horizontal(const chart *ch, axis *a, double lo, double hi, int zero,
                                const char *format, double length)
{
    int max_iv = MAX_INTERVALS - 1;
    for (int pass = 0; pass < 4; pass++) {
        nice_axis(lo, hi, zero, max_iv, a);
        axis_labels(ch, a, format, ch->regular, ch->label_size);
        double per = a->label_w_max + ch->label_size * 1.5;
        int fit = per > 0 ? (int)floor(length / per) : MAX_INTERVALS;
        if (fit < 1)
            fit = 1;
        if ((int)a->ticks - 1 <= fit || max_iv <= 1)
            return;
        max_iv = fit < max_iv ? fit : max_iv - 1;
    }
}

/* Where point p sits along the category axis [from, to]: in the middle of
 * its slot, or (areas with several points) edge to edge. */
static double category_pos(const chart *ch, size_t p, double from, double to)
{
    size_t n = ch->data->point_count;
    if (n == 0)
        return (from + to) / 2;
    if (ch->spec->kind == KILN_CHART_AREA && n > 1)
        return from + (to - from) * (double)p / (double)(n - 1);
    return from + (to - from) * ((double)p + 0.5) / (double)n;
}

/* Columns or bars: clustered side by side in a slot, or stacked. */
static void draw_bars(const chart *ch, const plot *pl)
{
    const kiln_chart_data *d = ch->data;
    size_t n = d->point_count, ns = d->series_count;
    if (n == 0 || ns == 0)
        return;
    int horizontal = ch->is_bar;
    const box *b = &pl->b;
    double len = horizontal ? b->y1 - b->y0 : b->x1 - b->x0;
    double slot = len / n;
    double group = slot * (ch->stacked || ns == 1 ? 0.6 : 0.75);
    double each = ch->stacked ? group : group / ns;
    for (size_t p = 0; p < n; p++) {
        /* bars: the first category at the top */
        double centre = horizontal ? b->y1 - slot * (p + 0.5) : b->x0 + slot * (p + 0.5);
        double pos = 0, neg = 0;
        for (size_t s = 0; s < ns; s++) {
            double v = value_at(ch, s, p);
            if (isnan(v))
                continue;
            double base = 0, top = v;
            if (ch->stacked) {
                base = v >= 0 ? pos : neg;
                top = base + v;
                if (v >= 0)
                    pos = top;
                else
                    neg = top;
            }
            double a0 = axis_pos(&pl->v, base, horizontal ? b->x0 : b->y0,
                                 horizontal ? b->x1 : b->y1);
            double a1 = axis_pos(&pl->v, top, horizontal ? b->x0 : b->y0,
                                 horizontal ? b->x1 : b->y1);
            double c0 = ch->stacked ? centre - group / 2 : centre - group / 2 + each * s;
            if (horizontal) /* series in legend order from the top */
                fill_rect(ch, a0, centre + group / 2 - (ch->stacked ? group : each * (s + 1)), a1,
                          centre + group / 2 - (ch->stacked ? 0 : each * s), series_color(ch, s));
            else
                fill_rect(ch, c0, a0, c0 + each, a1, series_color(ch, s));
        }
    }
}

/* Stacked lines and areas: after stack_next(ch, s), ch->below holds the
 * cumulative values of series 0..s-1 and ch->above those of 0..s (a missing
 * value counting as 0). Linear in the points, whatever the series count. */
static void stack_next(const chart *ch, size_t s)
{
    size_t n = ch->data->point_count;
    if (n == 0 || !ch->below || !ch->above)
        return;
    if (s > 0)
        memcpy(ch->below, ch->above, n * sizeof *ch->below);
    for (size_t p = 0; p < n; p++) {
        double v = value_at(ch, s, p);
        ch->above[p] = ch->below[p] + (isnan(v) ? 0 : v);
    }
}

static void draw_lines(const chart *ch, const plot *pl)
{
    const kiln_chart_data *d = ch->data;
    const box *b = &pl->b;
    size_t n = d->point_count;
    int markers = n > 0 && (b->x1 - b->x0) / n >= 7;
    HPDF_Page_SetLineJoin(ch->page, HPDF_ROUND_JOIN);
    HPDF_Page_SetLineCap(ch->page, HPDF_ROUND_END);
    for (size_t s = 0; s < d->series_count; s++) {
        int32_t color = series_color(ch, s);
        if (ch->stacked)
            stack_next(ch, s);
        pdf_set_stroke(ch->page, color);
        HPDF_Page_SetLineWidth(ch->page, 1.75f);
        int open = 0;
        for (size_t p = 0; p < n; p++) {
            double v = value_at(ch, s, p);
            if (isnan(v)) {
                if (open)
                    HPDF_Page_Stroke(ch->page);
                open = 0;
                continue;
            }
            if (ch->stacked)
                v = ch->above[p];
            double x = category_pos(ch, p, b->x0, b->x1);
            double y = axis_pos(&pl->v, v, b->y0, b->y1);
            if (!open)
                HPDF_Page_MoveTo(ch->page, (HPDF_REAL)x, (HPDF_REAL)y);
            else
                HPDF_Page_LineTo(ch->page, (HPDF_REAL)x, (HPDF_REAL)y);
            open = 1;
        }
        if (open)
            HPDF_Page_Stroke(ch->page);
        for (size_t p = 0; p < n; p++) {
            double v = value_at(ch, s, p);
            if (isnan(v))
                continue;
            int lonely = (p == 0 || isnan(value_at(ch, s, p - 1))) &&
                         (p + 1 >= n || isnan(value_at(ch, s, p + 1)));
            if (!markers && !lonely)
                continue;
            if (ch->stacked)
                v = ch->above[p];
            marker(ch, category_pos(ch, p, b->x0, b->x1), axis_pos(&pl->v, v, b->y0, b->y1), 2.4,
                   color);
        }
    }
}

static void draw_areas(const chart *ch, const plot *pl)
{
    const kiln_chart_data *d = ch->data;
    const box *b = &pl->b;
    size_t n = d->point_count, ns = d->series_count;
    if (n == 0)
        return;
    double zero_y = axis_pos(&pl->v, fmin(fmax(0, pl->v.min), pl->v.max), b->y0, b->y1);
    HPDF_Page_SetLineJoin(ch->page, HPDF_ROUND_JOIN);
    if (ch->stacked) {
        for (size_t s = 0; s < ns; s++) {
            stack_next(ch, s);
            pdf_set_fill(ch->page, series_color(ch, s));
            for (size_t p = 0; p < n; p++) {
                double x = category_pos(ch, p, b->x0, b->x1);
                double y = axis_pos(&pl->v, ch->above[p], b->y0, b->y1);
                if (p == 0)
                    HPDF_Page_MoveTo(ch->page, (HPDF_REAL)x, (HPDF_REAL)y);
                else
                    HPDF_Page_LineTo(ch->page, (HPDF_REAL)x, (HPDF_REAL)y);
            }
            for (size_t q = n; q-- > 0;) {
                double x = category_pos(ch, q, b->x0, b->x1);
                double y = axis_pos(&pl->v, ch->below[q], b->y0, b->y1);
                HPDF_Page_LineTo(ch->page, (HPDF_REAL)x, (HPDF_REAL)y);
            }
            HPDF_Page_ClosePath(ch->page);
            HPDF_Page_Fill(ch->page);
        }
        return;
    }
    /* Overlapping areas: translucent fills, so a series behind another
     * still shows, with a solid line on top of each. */
    int translucent = ns > 1;
    HPDF_ExtGState gs = NULL;
    if (translucent) {
        gs = HPDF_CreateExtGState(ch->ctx->pdf);
        if (gs)
            HPDF_ExtGState_SetAlphaFill(gs, 0.55f);
    }
    for (size_t s = 0; s < ns; s++) {
        int32_t color = series_color(ch, s);
        size_t p = 0;
        while (p < n) {
            while (p < n && isnan(value_at(ch, s, p)))
                p++;
            size_t first = p;
            while (p < n && !isnan(value_at(ch, s, p)))
                p++;
            if (first >= p)
                break;
            size_t last = p - 1;
            double xf = category_pos(ch, first, b->x0, b->x1);
            double xl = category_pos(ch, last, b->x0, b->x1);
            if (first < last) {
                HPDF_Page_GSave(ch->page);
                if (gs)
                    HPDF_Page_SetExtGState(ch->page, gs);
                pdf_set_fill(ch->page, color);
                HPDF_Page_MoveTo(ch->page, (HPDF_REAL)xf, (HPDF_REAL)zero_y);
                for (size_t q = first; q <= last; q++)
                    HPDF_Page_LineTo(ch->page, (HPDF_REAL)category_pos(ch, q, b->x0, b->x1),
                                     (HPDF_REAL)axis_pos(&pl->v, value_at(ch, s, q), b->y0,
                                                         b->y1));
                HPDF_Page_LineTo(ch->page, (HPDF_REAL)xl, (HPDF_REAL)zero_y);
                HPDF_Page_ClosePath(ch->page);
                HPDF_Page_Fill(ch->page);
                HPDF_Page_GRestore(ch->page);
            }
            if (translucent || first == last) {
                pdf_set_stroke(ch->page, color);
                HPDF_Page_SetLineWidth(ch->page, 1.5f);
                HPDF_Page_SetLineCap(ch->page, HPDF_ROUND_END);
                if (first == last)
                    HPDF_Page_MoveTo(ch->page, (HPDF_REAL)xf, (HPDF_REAL)zero_y);
                for (size_t q = first; q <= last; q++) {
                    double x = category_pos(ch, q, b->x0, b->x1);
                    double y = axis_pos(&pl->v, value_at(ch, s, q), b->y0, b->y1);
                    if (q == first && first != last)
                        HPDF_Page_MoveTo(ch->page, (HPDF_REAL)x, (HPDF_REAL)y);
                    else
                        HPDF_Page_LineTo(ch->page, (HPDF_REAL)x, (HPDF_REAL)y);
                }
                HPDF_Page_Stroke(ch->page);
            }
        }
    }
}

static void draw_scatter(const chart *ch, const plot *pl)
{
    const kiln_chart_data *d = ch->data;
    const box *b = &pl->b;
    for (size_t s = 0; s < d->series_count; s++) {
        int32_t color = series_color(ch, s);
        for (size_t p = 0; p < d->point_count; p++) {
            double v = value_at(ch, s, p), xv = category_x(ch, p);
            if (isnan(v) || isnan(xv))
                continue;
            marker(ch, axis_pos(&pl->xv, xv, b->x0, b->x1), axis_pos(&pl->v, v, b->y0, b->y1),
                   3.2, color);
        }
    }
}

/* Column, line, area and scatter: values up the left, categories (or x
 * values) along the bottom. */
static void draw_vertical_chart(chart *ch, box area)
{
    const kiln_chart_data *d = ch->data;
    const kiln_chart *c = ch->spec;
    double size = ch->label_size;
    pdf_face *f = ch->regular;
    int scatter = c->kind == KILN_CHART_SCATTER;
    plot pl;
    memset(&pl, 0, sizeof pl);

    /* Bottom up: the x title, the category labels, then the plot. */
    double y = area.y0;
    if (has_text(c->x_title)) {
        draw_fit(ch, f, size, AXIS_TITLE_COLOR, (area.x0 + area.x1) / 2, y - f->descent * size,
                 c->x_title, strlen(c->x_title), area.x1 - area.x0, ALIGN_CENTER);
        y += size * 1.25 + size * 0.3;
    }
    double cat_baseline = y - f->descent * size;
    double top = area.y1 - size * 0.6;
    size_t n = scatter ? 0 : d->point_count;
    cat_plan cp;
    memset(&cp, 0, sizeof cp);
    cp.k = 1;
    cp.band = size * 1.25 + size * 0.45;

    double lo, hi;
    value_range(ch, &lo, &hi);
    double x = area.x0;
    double y_title_x = x;
    if (has_text(c->y_title))
        x += size * 1.25 + size * 0.4;
    /* Lay the plot out for horizontal labels; when they do not fit and get
     * rotated, once more over the taller band they need (the value axis'
     * ticks, and so the plot's left edge, follow the plot's height). */
    for (int pass = 0; pass < 2; pass++) {
        pl.b.y0 = y + cp.band;
        pl.b.y1 = top;
        if (pl.b.y1 - pl.b.y0 < size * 2)
            pl.b.y1 = pl.b.y0 + size * 2;
        int max_iv = (int)floor((pl.b.y1 - pl.b.y0) / (size * 2.6));
        nice_axis(lo, hi, wants_zero(ch, lo, hi), max_iv < 2 ? 2 : max_iv, &pl.v);
        axis_labels(ch, &pl.v, ch->value_format, f, size);
        double max_tick_w = (area.x1 - area.x0) * 0.3;
        if (pl.v.label_w_max > max_tick_w)
            pl.v.label_w_max = max_tick_w;
        pl.b.x0 = x + pl.v.label_w_max + size * 0.5;
        pl.b.x1 = area.x1 - size * 0.3;
        if (c->kind == KILN_CHART_AREA && n > 1 && !cp.rotated)
            pl.b.x1 = area.x1 - size * 1.5; /* the last label is centred on the edge */
        if (pl.b.x1 - pl.b.x0 < size * 2)
            pl.b.x1 = pl.b.x0 + size * 2;
        if (n == 0)
            break;
        double spacing = n > 1 ? category_pos(ch, 1, pl.b.x0, pl.b.x1) -
                                     category_pos(ch, 0, pl.b.x0, pl.b.x1)
                               : pl.b.x1 - pl.b.x0;
        if (pass == 1) {
            /* Room for the first slanted labels, then the stride for the
             * plot as it finally is. */
            cp.k = rotated_stride(size, spacing, n);
            double over = rotated_overhang(ch, &cp, category_pos(ch, 0, pl.b.x0, pl.b.x1),
                                           spacing, n, area.x0);
            pl.b.x0 += fmin(over, (pl.b.x1 - pl.b.x0) * 0.25);
            spacing = n > 1 ? category_pos(ch, 1, pl.b.x0, pl.b.x1) -
                                  category_pos(ch, 0, pl.b.x0, pl.b.x1)
                            : pl.b.x1 - pl.b.x0;
            cp.k = rotated_stride(size, spacing, n);
            break;
        }
        plan_categories(ch, spacing, n, (top - y) * 0.4, &cp);
        if (!cp.rotated)
            break;
    }

    /* Scatter's x axis: its labels hang half outside the plot's ends. */
    if (scatter) {
        double xlo = INFINITY, xhi = -INFINITY;
        for (size_t p = 0; p < d->point_count; p++) {
            double xv = category_x(ch, p);
            if (isnan(xv))
                continue;
            xlo = fmin(xlo, xv);
            xhi = fmax(xhi, xv);
        }
        if (!(xlo <= xhi)) {
            xlo = 0;
            xhi = 1;
        }
        int xzero = xlo >= 0 ? xhi - xlo >= xhi / 6 : (xhi <= 0 ? xhi - xlo >= -xlo / 6 : 1);
        axis_fit_horizontal(ch, &pl.xv, xlo, xhi, xzero, NULL, pl.b.x1 - pl.b.x0);
        double first_w = text_width(ch, f, size, pl.xv.label[0], pl.xv.label_len[0]);
        double last_w = text_width(ch, f, size, pl.xv.label[pl.xv.ticks - 1],
                                   pl.xv.label_len[pl.xv.ticks - 1]);
        pl.b.x1 = area.x1 - last_w / 2 - 1;
        if (pl.b.x0 - area.x0 < first_w / 2)
            pl.b.x0 = area.x0 + first_w / 2;
    }
    if (pl.b.x1 - pl.b.x0 < size * 2)
        pl.b.x1 = pl.b.x0 + size * 2;

    draw_grid(ch, &pl, 1);
    switch (c->kind) {
    case KILN_CHART_COLUMN:
        draw_bars(ch, &pl);
        break;
    case KILN_CHART_LINE:
        break; /* lines go on top of the zero line */
    case KILN_CHART_AREA:
        draw_areas(ch, &pl);
        break;
    default:
        break;
    }
    draw_zero_lines(ch, &pl, 1);
    if (c->kind == KILN_CHART_LINE)
        draw_lines(ch, &pl);
    else if (scatter)
        draw_scatter(ch, &pl);

    value_labels_left(ch, &pl);
    if (scatter) {
        value_labels_below(ch, &pl.xv, &pl.b, cat_baseline);
    } else if (n > 0) {
        double first = category_pos(ch, 0, pl.b.x0, pl.b.x1);
        double spacing = n > 1 ? category_pos(ch, 1, pl.b.x0, pl.b.x1) - first
                               : pl.b.x1 - pl.b.x0;
        category_labels_x(ch, &cp, first, spacing, n, pl.b.y0, cat_baseline, area.x0, area.x1);
    }
    if (has_text(c->y_title))
        draw_vertical(ch, f, size, AXIS_TITLE_COLOR, y_title_x, (pl.b.y0 + pl.b.y1) / 2,
                      c->y_title, pl.b.y1 - pl.b.y0 + size * 2);
}

/* Bar: categories down the left (first at the top), values along the
 * bottom. x_title names the categories, y_title the values. */
static void draw_bar_chart(chart *ch, box area)
{
    const kiln_chart_data *d = ch->data;
    const kiln_chart *c = ch->spec;
    double size = ch->label_size;
    pdf_face *f = ch->regular;
    plot pl;
    memset(&pl, 0, sizeof pl);
    size_t n = d->point_count;

    double y = area.y0;
    double value_title_y = y;
    if (has_text(c->y_title))
        y += size * 1.25 + size * 0.3;
    double tick_baseline = y - f->descent * size;
    y += size * 1.25 + size * 0.45;
    pl.b.y0 = y;
    pl.b.y1 = area.y1 - size * 0.3;
    if (pl.b.y1 - pl.b.y0 < size * 2)
        pl.b.y1 = pl.b.y0 + size * 2;

    double x = area.x0;
    double cat_title_x = x;
    if (has_text(c->x_title))
        x += size * 1.25 + size * 0.4;
    double widest = 0;
    size_t measured = n < LEGEND_MEASURE_MAX ? n : LEGEND_MEASURE_MAX;
    char buf[32];
    for (size_t p = 0; p < measured; p++) {
        size_t len;
        const char *s = category_text(ch, p, buf, sizeof buf, &len);
        widest = fmax(widest, text_width(ch, f, size, s, len));
    }
    double cat_w = fmin(widest, (area.x1 - x) * 0.3);
    double cat_right = x + cat_w;
    pl.b.x0 = cat_right + (n > 0 ? size * 0.6 : 0);
    pl.b.x1 = area.x1 - size * 0.3;

    double lo, hi;
    value_range(ch, &lo, &hi);
    for (int pass = 0; pass < 2; pass++) {
        if (pl.b.x1 - pl.b.x0 < size * 2)
            pl.b.x1 = pl.b.x0 + size * 2;
        axis_fit_horizontal(ch, &pl.v, lo, hi, 1, ch->value_format, pl.b.x1 - pl.b.x0);
        double first_w = text_width(ch, f, size, pl.v.label[0], pl.v.label_len[0]);
        double last_w = text_width(ch, f, size, pl.v.label[pl.v.ticks - 1],
                                   pl.v.label_len[pl.v.ticks - 1]);
        double want_x1 = area.x1 - last_w / 2 - 1;
        double want_x0 = fmax(pl.b.x0, area.x0 + first_w / 2);
        if (want_x1 >= pl.b.x1 && want_x0 <= pl.b.x0)
            break;
        pl.b.x1 = fmin(pl.b.x1, want_x1);
        pl.b.x0 = want_x0;
    }

    draw_grid(ch, &pl, 0);
    draw_bars(ch, &pl);
    draw_zero_lines(ch, &pl, 0);
    value_labels_below(ch, &pl.v, &pl.b, tick_baseline);

    /* Category labels, right-aligned, every k-th when the slots are short. */
    if (n > 0) {
        double slot = (pl.b.y1 - pl.b.y0) / n;
        size_t k = slot > 0 ? (size_t)ceil(size * 1.15 / slot - 1e-9) : n;
        if (k < 1)
            k = 1;
        k = nice_stride(k);
        for (size_t p = 0; p < n; p += k) {
            size_t len;
            const char *s = category_text(ch, p, buf, sizeof buf, &len);
            double yc = pl.b.y1 - slot * (p + 0.5);
            draw_fit(ch, f, size, LABEL_COLOR, cat_right, baseline_centered(yc, size), s, len,
                     cat_w, ALIGN_RIGHT);
        }
    }
    if (has_text(c->y_title))
        draw_fit(ch, f, size, AXIS_TITLE_COLOR, (pl.b.x0 + pl.b.x1) / 2,
                 value_title_y - f->descent * size, c->y_title, strlen(c->y_title),
                 area.x1 - area.x0, ALIGN_CENTER);
    if (has_text(c->x_title))
        draw_vertical(ch, f, size, AXIS_TITLE_COLOR, cat_title_x, (pl.b.y0 + pl.b.y1) / 2,
                      c->x_title, pl.b.y1 - pl.b.y0 + size * 2);
}

/* ------------------------------------------------------------------ pie */

/* libharu's arc angles run clockwise from 12 o'clock, in degrees; these
 * are the same angles as a point. */
static void polar(double cx, double cy, double r, double deg, double *x, double *y)
{
    double rad = deg * PI / 180.0;
    *x = cx + r * sin(rad);
    *y = cy + r * cos(rad);
}

/* Is the label rectangle inside the ring sector [a0, a1] x [r0, r1]? */
static int label_fits(double cx, double cy, double r0, double r1, double a0, double a1, double x0,
                      double y0, double x1, double y1)
{
    double xs[4] = {x0, x1, x0, x1}, ys[4] = {y0, y0, y1, y1};
    for (int i = 0; i < 4; i++) {
        double dx = xs[i] - cx, dy = ys[i] - cy;
        double r = sqrt(dx * dx + dy * dy);
        if (r < r0 || r > r1)
            return 0;
        double a = atan2(dx, dy) * 180.0 / PI; /* clockwise from 12 o'clock */
        if (a < 0)
            a += 360;
        if (a < a0)
            a += 360;
        if (a > a1)
            return 0;
    }
    return 1;
}

/* Dark text on light slices, white on dark ones. */
static int32_t text_on(int32_t bg)
{
    double r = (bg >> 16) & 0xFF, g = (bg >> 8) & 0xFF, b = bg & 0xFF;
    double lum = 0.299 * r + 0.587 * g + 0.114 * b;
    return lum > 150 ? 0x262626 : 0xFFFFFF;
}

static void draw_pie(chart *ch, box area)
{
    const kiln_chart_data *d = ch->data;
    int doughnut = ch->spec->kind == KILN_CHART_DOUGHNUT;
    double cx = (area.x0 + area.x1) / 2, cy = (area.y0 + area.y1) / 2;
    double r = fmin(area.x1 - area.x0, area.y1 - area.y0) / 2 - 1;
    if (r < 2)
        return;
    double hole = doughnut ? r * 0.5 : 0;
    size_t n = d->point_count;
    double total = 0;
    for (size_t p = 0; p < n && d->series_count > 0; p++) {
        double v = value_at(ch, 0, p);
        if (v > 0)
            total += v;
    }
    HPDF_Page_SetLineJoin(ch->page, HPDF_ROUND_JOIN);
    if (!(total > 0)) { /* nothing to share: an empty ring */
        pdf_set_stroke(ch->page, EMPTY_COLOR);
        HPDF_Page_SetLineWidth(ch->page, 0.75f);
        HPDF_Page_Circle(ch->page, (HPDF_REAL)cx, (HPDF_REAL)cy, (HPDF_REAL)r);
        HPDF_Page_Stroke(ch->page);
        return;
    }
    double sep = n > 1 ? fmin(1.25, r / 40) : 0;
    double a = 0;
    for (size_t p = 0; p < n; p++) {
        double v = value_at(ch, 0, p);
        if (!(v > 0))
            continue;
        double sweep = v / total * 360.0;
        double a1 = a + sweep;
        int32_t color = slice_color(ch, p);
        pdf_set_fill(ch->page, color);
        pdf_set_stroke(ch->page, 0xFFFFFF);
        HPDF_Page_SetLineWidth(ch->page, (HPDF_REAL)sep);
        if (sweep >= 359.999) {
            HPDF_Page_Circle(ch->page, (HPDF_REAL)cx, (HPDF_REAL)cy, (HPDF_REAL)r);
            if (doughnut)
                HPDF_Page_Circle(ch->page, (HPDF_REAL)cx, (HPDF_REAL)cy, (HPDF_REAL)hole);
            HPDF_Page_Eofill(ch->page);
        } else {
            double sx, sy;
            if (doughnut) {
                polar(cx, cy, r, a, &sx, &sy);
                HPDF_Page_MoveTo(ch->page, (HPDF_REAL)sx, (HPDF_REAL)sy);
                HPDF_Page_Arc(ch->page, (HPDF_REAL)cx, (HPDF_REAL)cy, (HPDF_REAL)r, (HPDF_REAL)a,
                              (HPDF_REAL)a1);
                /* back along the hole, counter-clockwise */
                HPDF_Page_Arc(ch->page, (HPDF_REAL)cx, (HPDF_REAL)cy, (HPDF_REAL)hole,
                              (HPDF_REAL)a1, (HPDF_REAL)a);
            } else {
                HPDF_Page_MoveTo(ch->page, (HPDF_REAL)cx, (HPDF_REAL)cy);
                HPDF_Page_Arc(ch->page, (HPDF_REAL)cx, (HPDF_REAL)cy, (HPDF_REAL)r, (HPDF_REAL)a,
                              (HPDF_REAL)a1);
            }
            HPDF_Page_ClosePath(ch->page);
            if (sep > 0)
                HPDF_Page_FillStroke(ch->page);
            else
                HPDF_Page_Fill(ch->page);
        }
        a = a1;
    }

    /* Percentages inside the slices they fit in. */
    double size = ch->label_size;
    pdf_face *f = ch->bold ? ch->bold : ch->regular;
    a = 0;
    for (size_t p = 0; p < n; p++) {
        double v = value_at(ch, 0, p);
        if (!(v > 0))
            continue;
        double share = v / total * 100.0;
        double sweep = share * 3.6, a1 = a + sweep;
        char buf[32];
        int len = share < 0.5 ? snprintf(buf, sizeof buf, "<1%%")
                              : snprintf(buf, sizeof buf, "%.0f%%", share);
        if (len > 0 && (size_t)len < sizeof buf) {
            double w = text_width(ch, f, size, buf, (size_t)len);
            double h = size * 0.75;
            double rl = doughnut ? (r + hole) / 2 : r * (n == 1 ? 0 : 0.62);
            double lx, ly;
            polar(cx, cy, rl, a + sweep / 2, &lx, &ly);
            int fits = sweep >= 359.999
                           ? (doughnut ? w < (r - hole) * 1.6 : w < r * 1.6)
                           : label_fits(cx, cy, hole + 1, r - 1, a, a1, lx - w / 2 - 1,
                                        ly - h / 2 - 1, lx + w / 2 + 1, ly + h / 2 + 1);
            if (sweep >= 359.999 && doughnut)
                polar(cx, cy, (r + hole) / 2, 180, &lx, &ly);
            if (fits)
                put_text(ch, f, size, text_on(slice_color(ch, p)), lx - w / 2,
                         baseline_centered(ly, size), buf, (size_t)len);
        }
        a = a1;
    }
}

/* ------------------------------------------------------------------ entry */

/* The title centred at the top of area, on two lines when one is too short
 * (broken at a space; the second shortened with an ellipsis), and area's
 * top moved below it. */
static void draw_title(const chart *ch, box *area)
{
    pdf_face *tf = ch->bold;
    double ts = ch->title_size, w = area->x1 - area->x0;
    const char *t = ch->spec->title;
    size_t len = strlen(t);
    size_t first = len; /* bytes on the first line */
    size_t rest = len;  /* where the second line starts */
    if (text_width(ch, tf, ts, t, len) > w && area->y1 - area->y0 > ts * 8) {
        size_t pos = 0, brk = 0;
        double acc = 0;
        while (pos < len) {
            size_t at = pos;
            uint32_t cp = kiln_utf8_next(t, len, &pos);
            if (cp == ' ' && at > 0)
                brk = at;
            acc += pdf_char_width(&ch->ctx->fonts, tf, cp, ts);
            if (acc > w)
                break;
        }
        if (brk > 0) {
            first = brk;
            rest = brk;
            while (rest < len && t[rest] == ' ')
                rest++;
        }
    }
    double cx = (area->x0 + area->x1) / 2;
    double baseline = area->y1 - tf->ascent * ts;
    draw_fit(ch, tf, ts, TITLE_COLOR, cx, baseline, t, first, w, ALIGN_CENTER);
    if (first < len && rest < len) {
        baseline -= ts * 1.2;
        draw_fit(ch, tf, ts, TITLE_COLOR, cx, baseline, t + rest, len - rest, w, ALIGN_CENTER);
    }
    area->y1 = baseline + tf->descent * ts - ts * 0.5;
}

typedef struct dated_point {
    double serial;
    size_t index;
} dated_point;

static int dated_point_cmp(const void *a, const void *b)
{
    const dated_point *x = a, *y = b;
    if (x->serial != y->serial)
        return x->serial < y->serial ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index; /* equal dates keep their order */
}

/* The points of a chart with date categories in date order, as a date axis
 * places them: a copy of d with its categories and every series' values
 * sorted by date. d itself when it has no dates or is in order already. */
static kiln_status in_date_order(pdf_ctx *ctx, const kiln_chart_data *d,
                                 const kiln_chart_data **out)
{
    *out = d;
    size_t n = d->point_count;
    if (!d->categories_dates || !d->category_numbers || !d->categories || n < 2)
        return KILN_E_OK;
    size_t i = 1;
    while (i < n && d->category_numbers[i - 1] <= d->category_numbers[i])
        i++;
    if (i == n)
        return KILN_E_OK;
    kiln_arena *a = ctx->arena;
    dated_point *order = kiln_arena_calloc(a, n, sizeof *order);
    kiln_chart_data *sorted = kiln_arena_alloc(a, sizeof *sorted);
    const char **texts = kiln_arena_calloc(a, n, sizeof *texts);
    double *serials = kiln_arena_calloc(a, n, sizeof *serials);
    kiln_chart_series_data *series = kiln_arena_calloc(a, d->series_count ? d->series_count : 1,
                                                       sizeof *series);
    if (!order || !sorted || !texts || !serials || !series)
        goto nomem;
    for (i = 0; i < n; i++)
        order[i] = (dated_point){d->category_numbers[i], i};
    qsort(order, n, sizeof *order, dated_point_cmp);
    for (i = 0; i < n; i++) {
        texts[i] = d->categories[order[i].index];
        serials[i] = order[i].serial;
    }
    for (size_t s = 0; s < d->series_count; s++) {
        double *values = kiln_arena_calloc(a, n, sizeof *values);
        if (!values)
            goto nomem;
        for (i = 0; i < n; i++)
            values[i] = d->series[s].values[order[i].index];
        series[s] = d->series[s];
        series[s].values = values;
    }
    *sorted = *d;
    sorted->categories = texts;
    sorted->category_numbers = serials;
    sorted->series = series;
    *out = sorted;
    return KILN_E_OK;

nomem:
    return kiln_error_set(ctx->err, KILN_E_NOMEM, d->chart->pointer,
                          "out of memory drawing a chart of %zu points", n);
}

kiln_status pdf_chart_draw(pdf_ctx *ctx, const kiln_chart_data *data, double x, double y_top,
                           double width, double height)
{
    if (!ctx || !ctx->page || !data || !data->chart)
        return KILN_E_OK;
    if (!(width > 0) || !(height > 0))
        return KILN_E_OK;
    kiln_status st = in_date_order(ctx, data, &data);
    if (st != KILN_E_OK)
        return st;
    chart ch;
    memset(&ch, 0, sizeof ch);
    ch.ctx = ctx;
    ch.data = data;
    ch.spec = data->chart;
    ch.page = ctx->page;
    kiln_chart_kind kind = ch.spec->kind;
    ch.is_pie = kind == KILN_CHART_PIE || kind == KILN_CHART_DOUGHNUT;
    ch.is_bar = kind == KILN_CHART_BAR;
    ch.stacked = ch.spec->stacked && !ch.is_pie && kind != KILN_CHART_SCATTER;
    ch.regular = pdf_fonts_face(&ctx->fonts, ctx->body_family, 0, ctx->err);
    if (!ch.regular)
        return ctx->err->code;
    ch.bold = pdf_fonts_face(&ctx->fonts, ctx->body_family, PDF_STYLE_BOLD, ctx->err);
    if (!ch.bold)
        return ctx->err->code;
    if (ch.stacked && (kind == KILN_CHART_LINE || kind == KILN_CHART_AREA) &&
        data->point_count > 0) {
        ch.below = kiln_arena_calloc(ctx->arena, data->point_count, sizeof *ch.below);
        ch.above = kiln_arena_calloc(ctx->arena, data->point_count, sizeof *ch.above);
        if (!ch.below || !ch.above)
            return kiln_error_set(ctx->err, KILN_E_NOMEM, ch.spec->pointer,
                                  "out of memory drawing a chart of %zu points",
                                  data->point_count);
    }
    for (size_t s = 0; s < data->series_count; s++)
        if (data->series[s].number_format) {
            ch.value_format = data->series[s].number_format;
            break;
        }

    /* Text a little smaller than the body, smaller still in a small box. */
    double body = ctx->body_size > 0 ? ctx->body_size : 11;
    double scale = fmin(1, fmin(width / 220, height / 120));
    if (scale < 0.6)
        scale = 0.6;
    ch.label_size = fmax(5, fmin(10, body * 0.8) * scale);
    ch.title_size = fmax(6, (body + 1) * scale);

    box outer = {x, y_top - height, x + width, y_top};
    HPDF_Page_GSave(ch.page);
    HPDF_Page_Rectangle(ch.page, (HPDF_REAL)outer.x0, (HPDF_REAL)outer.y0, (HPDF_REAL)width,
                        (HPDF_REAL)height);
    HPDF_Page_Clip(ch.page);
    HPDF_Page_EndPath(ch.page);

    box area = {outer.x0 + PAD, outer.y0 + PAD, outer.x1 - PAD, outer.y1 - PAD};
    /* A box too small for words gets the plot alone. */
    int words = area.x1 - area.x0 >= 60 && area.y1 - area.y0 >= 40;
    if (!words) {
        ch.quiet = 1;
        ch.label_size = 0.01; /* the layout reserves (almost) nothing for text */
    }
    if (words && has_text(ch.spec->title))
        draw_title(&ch, &area);
    if (words)
        legend_place(&ch, &area);
    if (area.y1 - area.y0 < 4 || area.x1 - area.x0 < 4) {
        HPDF_Page_GRestore(ch.page);
        return KILN_E_OK;
    }

    if (ch.is_pie) {
        draw_pie(&ch, area);
    } else if (ch.is_bar) {
        draw_bar_chart(&ch, area);
    } else {
        draw_vertical_chart(&ch, area);
    }
    HPDF_Page_GRestore(ch.page);
    return KILN_E_OK;
}
