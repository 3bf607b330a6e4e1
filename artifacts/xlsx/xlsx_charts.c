/*
 * xlsx_charts.c - native Excel charts.
 *
 * An Excel chart always reads its data from cells. Categories and values
 * given as ranges ("B2:B13", "'Other sheet'!B2:B13") are referenced as they
 * are. Literal categories and values (chart blocks, slides, or sheet charts
 * written with numbers) are written into one hidden worksheet,
 * "_kiln_data" (renamed "_kiln_data (2)" … should a sheet of the spec
 * already use the name; xlsx_writer.c also keeps long validation lists
 * there), and referenced there: a block per chart,
 * stacked downwards, with a header row of series names, then one row per
 * category (category in column A, series values in B, C, …). A hidden sheet
 * keeps the user's sheets exactly as specified (no stray cells to the right
 * of their data, no interference with their autofilter, table or widths),
 * and it is written strictly top to bottom, so it works in constant_memory
 * mode too.
 *
 * Cached values: in constant_memory mode libxlsxwriter cannot read cells
 * back, so charts are written without them (Excel and LibreOffice read the
 * cells when they open the file; a viewer that only draws caches shows an
 * empty chart). In memory mode libxlsxwriter caches numbers and strings but
 * takes a formula cell for 0, so the writer fills the caches of ranges over
 * the sheets' cells itself, from the cells' values and the formulas' cached
 * results (xlsx_chart_fill_caches, after the last sheet).
 *
 * Axis titles follow the data, not the orientation: x_axis titles the
 * category axis and y_axis the value axis for every kind, so a column chart
 * turned into a bar chart keeps its titles on the right axes (in a bar chart
 * the category axis is the vertical one).
 *
 * A literal title or series name starting with "=" would be read by
 * libxlsxwriter as a cell reference, so it gets a leading space.
 *
 * Blank cells are gaps, in every kind of chart, as Excel shows them and
 * writes <c:dispBlanksAs val="gap"/>. libxlsxwriter 1.1.4 writes the
 * element only for "zero" and "span", and the schema's default for it is
 * "zero" (which LibreOffice takes for a file Office 2007 did not write), so
 * the element is written here: a chart's write_plot_area hook runs inside
 * <c:chart> just before c:legend, c:plotVisOnly and c:dispBlanksAs, which
 * come in that order (CT_Chart). The hook (plot_area_then_blanks) has the
 * library write the plot area, writes those three itself and tells the
 * library not to write the first two again.
 *
 * Categories that are dates (date cells, or literal ISO dates, decided once
 * for every format by chart_data.c) get a date axis, <c:dateAx>, in their
 * number format, as Excel gives them: libxlsxwriter 1.1.4 has none, so the
 * same hook has the plot area written into memory and rewrites its
 * <c:catAx> as a <c:dateAx> (the same members, less the four CT_DateAx does
 * not have). The axis is marked by libxlsxwriter's own is_date flag, which
 * its writer never reads. Literal dates are written into the hidden sheet as
 * date cells.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../layout/chart_data.h"
#include "xlsx_internal.h"
#include "../../common/banned.h"

int xlsx_chart_needs_data(const kiln_chart *chart)
{
    if (!chart->categories_ref && chart->category_count > 0)
        return 1;
    for (size_t i = 0; i < chart->series_count; i++)
        if (!chart->series[i].values_ref)
            return 1;
    return 0;
}

static uint8_t chart_type(const kiln_chart *c)
{
    switch (c->kind) {
    case KILN_CHART_COLUMN:
        return c->stacked ? LXW_CHART_COLUMN_STACKED : LXW_CHART_COLUMN;
    case KILN_CHART_BAR:
        return c->stacked ? LXW_CHART_BAR_STACKED : LXW_CHART_BAR;
    case KILN_CHART_LINE:
        return LXW_CHART_LINE;
    case KILN_CHART_PIE:
        return LXW_CHART_PIE;
    case KILN_CHART_DOUGHNUT:
        return LXW_CHART_DOUGHNUT;
    case KILN_CHART_SCATTER:
        return LXW_CHART_SCATTER_STRAIGHT_WITH_MARKERS;
    case KILN_CHART_AREA:
        return c->stacked ? LXW_CHART_AREA_STACKED : LXW_CHART_AREA;
    }
    return LXW_CHART_COLUMN;
}

static uint8_t legend_position(kiln_legend l)
{
    switch (l) {
    case KILN_LEGEND_LEFT:
        return LXW_CHART_LEGEND_LEFT;
    case KILN_LEGEND_TOP:
        return LXW_CHART_LEGEND_TOP;
    case KILN_LEGEND_BOTTOM:
        return LXW_CHART_LEGEND_BOTTOM;
    case KILN_LEGEND_NONE:
        return LXW_CHART_LEGEND_NONE;
    default:
        return LXW_CHART_LEGEND_RIGHT;
    }
}

/* A literal text libxlsxwriter must not mistake for a reference, on one line
 * as chart text is (a block's caption, which titles its chart here, may have
 * line breaks). */
static const char *literal(xlsx_chart_ctx *ctx, const char *s)
{
    if (!s || (s[0] != '=' && !strchr(s, '\n')))
        return s;
    char *t = kiln_arena_printf(ctx->arena, "%s%s", s[0] == '=' ? " " : "", s);
    for (char *p = t; p && (p = strchr(p, '\n')); p++)
        *p = ' ';
    return t;
}

typedef struct resolved {
    const char *sheet; /* canonical sheet name */
    const xlsx_plan_sheet *target;
    kiln_range range;
} resolved;

/* The number format of the column a one-column range reads, or NULL. */
static const char *range_number_format(const resolved *r)
{
    const kiln_table_data *d = r->target ? r->target->data : NULL;
    if (!d || r->range.first_col != r->range.last_col || r->range.first_col >= d->column_count)
        return NULL;
    return d->columns[r->range.first_col].number_format;
}

/*
 * "B2:B13", "Data!B2:B13", "'My data'!B2:B13" -> sheet and range. A missing
 * sheet prefix means the chart's own sheet. The sheet must be one the
 * workbook has: libxlsxwriter would otherwise only print a warning.
 */
static kiln_status resolve_ref(xlsx_chart_ctx *ctx, const xlsx_plan_sheet *own, const char *ref,
                               int single_cell, const char *pointer, resolved *out,
                               kiln_error *err)
{
    char sheet[256];
    const char *rest = ref;
    const char *name = NULL;
    if (ref[0] == '\'') {
        size_t n = 0;
        const char *p = ref + 1;
        for (;;) {
            if (*p == '\0' || n + 1 >= sizeof sheet)
                goto fail_syntax;
            if (*p == '\'') {
                if (p[1] == '\'') {
                    sheet[n++] = '\'';
                    p += 2;
                    continue;
                }
                break;
            }
            sheet[n++] = *p++;
        }
        if (p[1] != '!')
            goto fail_syntax;
        sheet[n] = '\0';
        name = sheet;
        rest = p + 2;
    } else {
        const char *bang = strchr(ref, '!');
        if (bang) {
            size_t n = (size_t)(bang - ref);
            if (n == 0 || n >= sizeof sheet)
                goto fail_syntax;
            memcpy(sheet, ref, n);
            sheet[n] = '\0';
            name = sheet;
            rest = bang + 1;
        }
    }
    if (kiln_range_parse(rest, &out->range) != 0)
        goto fail_syntax;
    if (single_cell && (out->range.first_row != out->range.last_row ||
                        out->range.first_col != out->range.last_col))
        goto fail_syntax;
    if (!name) {
        out->sheet = own->name;
        out->target = own;
        return KILN_E_OK;
    }
    const xlsx_plan_sheet *target = xlsx_plan_find(ctx->plan, name);
    if (!target)
        return kiln_error_set(err, KILN_E_INVALID_SPEC, pointer,
                              "the chart refers to sheet '%s', which the workbook does not "
                              "have",
                              name);
    out->sheet = target->name;
    out->target = target;
    return KILN_E_OK;

fail_syntax:
    return kiln_error_set(err, KILN_E_INVALID_SPEC, pointer, "'%s' is not a %s", ref,
                          single_cell ? "cell reference" : "cell range");
}

typedef struct xlsx_ref_range {
    lxw_series_range *range;
    lxw_worksheet *ws;
} xlsx_ref_range;

static int remember_range(xlsx_chart_ctx *ctx, lxw_series_range *range, const resolved *r)
{
    if (!range || !r->target || !r->target->ws)
        return 0;
    if (ctx->ref_count == ctx->ref_cap) {
        size_t ncap = ctx->ref_cap ? ctx->ref_cap * 2 : 16;
        xlsx_ref_range *n = kiln_arena_calloc(ctx->arena, ncap, sizeof *n);
        if (!n)
            return -1;
        if (ctx->ref_count)
            memcpy(n, ctx->refs, ctx->ref_count * sizeof *n);
        ctx->refs = n;
        ctx->ref_cap = ncap;
    }
    ctx->refs[ctx->ref_count++] = (xlsx_ref_range){range, r->target->ws};
    return 0;
}

/* The cache of one range, as libxlsxwriter would build it but with formula
 * results. Leaves the range alone (to libxlsxwriter) when it is not one row
 * or one column. */
static int fill_cache(const xlsx_ref_range *rr)
{
    lxw_series_range *range = rr->range;
    if (range->first_row != range->last_row && range->first_col != range->last_col)
        return 0;
    uint64_t n = (uint64_t)(range->last_row - range->first_row + 1) *
                 (uint64_t)(range->last_col - range->first_col + 1);
    if (n > UINT16_MAX || !range->data_cache || !STAILQ_EMPTY(range->data_cache))
        return 0;
    for (lxw_row_t r = range->first_row; r <= range->last_row; r++) {
        lxw_row *row = lxw_worksheet_find_row(rr->ws, r);
        for (lxw_col_t c = range->first_col; c <= range->last_col; c++) {
            lxw_series_data_point *p = calloc(1, sizeof *p);
            if (!p)
                return -1;
            lxw_cell *cell = lxw_worksheet_find_cell_in_row(row, c);
            const char *str = NULL;
            switch (cell ? cell->type : BLANK_CELL) {
            case NUMBER_CELL:
            case BOOLEAN_CELL:
                p->number = cell->u.number;
                break;
            case STRING_CELL:
                str = cell->sst_string;
                break;
            case FORMULA_CELL:
                if (cell->user_data2)
                    str = cell->user_data2;
                else
                    p->number = cell->formula_result;
                break;
            default:
                p->no_data = 1;
                break;
            }
            if (str) {
                if (!(p->string = strdup(str))) {
                    free(p);
                    return -1;
                }
                p->is_string = 1;
                range->has_string_cache = 1;
            }
            /* The library frees the points with the chart. */
            STAILQ_INSERT_TAIL(range->data_cache, p, list_pointers);
        }
    }
    range->num_data_points = (uint16_t)n;
    range->ignore_cache = 1; /* keep ours */
    return 0;
}

kiln_status xlsx_chart_fill_caches(xlsx_chart_ctx *ctx, kiln_error *err)
{
    for (size_t i = 0; i < ctx->ref_count; i++)
        if (fill_cache(&ctx->refs[i]) != 0)
            return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory caching chart data");
    return KILN_E_OK;
}

static kiln_status lxw_fail(xlsx_chart_ctx *ctx, lxw_error e, const char *pointer,
                            kiln_error *err)
{
    ctx->lxw_err = e;
    return xlsx_lxw_error(err, e, pointer, "writing a chart");
}

/* Write the chart's literal data into the hidden sheet; *base gets the
 * block's header row. */
static kiln_status write_literal_data(xlsx_chart_ctx *ctx, const kiln_chart *c, int dates,
                                      uint32_t *base, kiln_error *err)
{
    lxw_worksheet *ws = ctx->data_ws;
    if (dates && !ctx->date_format) {
        if (!(ctx->date_format = workbook_add_format(ctx->wb)))
            return kiln_error_set(err, KILN_E_NOMEM, c->pointer, "out of memory");
        format_set_num_format(ctx->date_format, KILN_CHART_DATE_FORMAT);
    }
    uint32_t row = ctx->data_row;
    size_t n = c->categories_ref ? 0 : c->category_count;
    lxw_error e;
    *base = row;
    for (size_t s = 0; s < c->series_count; s++) {
        const kiln_series *se = &c->series[s];
        if (!se->values_ref && se->value_count > n)
            n = se->value_count;
        if (se->name && !se->values_ref) {
            const char *t = xlsx_xstring(se->name, strlen(se->name), &ctx->esc, &ctx->esc_cap);
            e = t ? worksheet_write_string(ws, row, (lxw_col_t)(1 + s), t, NULL)
                  : LXW_ERROR_MEMORY_MALLOC_FAILED;
            if (e)
                return lxw_fail(ctx, e, c->pointer, err);
        }
    }
    if (n + 2 > (size_t)LXW_ROW_MAX - row)
        return kiln_error_limit(err, KILN_E_LIMIT, c->pointer, LXW_ROW_MAX, row + n,
                                "the charts' literal data does not fit in one sheet");
    for (size_t i = 0; i < n; i++) {
        uint32_t r = row + 1 + (uint32_t)i;
        if (!c->categories_ref && i < c->category_count) {
            const kiln_category *cat = &c->categories[i];
            const char *t = cat->is_number || dates ? NULL
                                                    : xlsx_xstring(cat->text, strlen(cat->text),
                                                                   &ctx->esc, &ctx->esc_cap);
            e = dates            ? worksheet_write_number(ws, r, 0, cat->number, ctx->date_format)
                : cat->is_number ? worksheet_write_number(ws, r, 0, cat->number, NULL)
                : t              ? worksheet_write_string(ws, r, 0, t, NULL)
                                 : LXW_ERROR_MEMORY_MALLOC_FAILED;
            if (e)
                return lxw_fail(ctx, e, c->pointer, err);
        }
        for (size_t s = 0; s < c->series_count; s++) {
            const kiln_series *se = &c->series[s];
            /* A missing point stays an empty cell: a gap in the chart. */
            if (se->values_ref || i >= se->value_count || isnan(se->values[i]))
                continue;
            e = worksheet_write_number(ws, r, (lxw_col_t)(1 + s), se->values[i], NULL);
            if (e)
                return lxw_fail(ctx, e, c->pointer, err);
        }
    }
    ctx->data_row = row + (uint32_t)n + 2;
    return KILN_E_OK;
}

static lxw_color_t series_color(const xlsx_chart_ctx *ctx, const kiln_series *se, size_t i)
{
    if (se->color != KILN_COLOR_NONE)
        return xlsx_color(se->color);
    if (ctx->theme->accent_count > 0)
        return xlsx_color(ctx->theme->accent_colors[i % (size_t)ctx->theme->accent_count]);
    return LXW_COLOR_UNSET;
}

/* Pie and doughnut slices take the accent colors in turn. */
static kiln_status color_points(xlsx_chart_ctx *ctx, lxw_chart_series *s, size_t count,
                                const char *pointer, kiln_error *err)
{
    if (ctx->theme->accent_count <= 0 || count == 0)
        return KILN_E_OK;
    if (count > 255)
        count = 255;
    lxw_chart_point *pts = kiln_arena_calloc(ctx->arena, count, sizeof *pts);
    lxw_chart_fill *fills = kiln_arena_calloc(ctx->arena, count, sizeof *fills);
    lxw_chart_point **list = kiln_arena_calloc(ctx->arena, count + 1, sizeof *list);
    if (!pts || !fills || !list)
        return kiln_error_set(err, KILN_E_NOMEM, pointer, "out of memory");
    for (size_t i = 0; i < count; i++) {
        fills[i].color = xlsx_color(
            ctx->theme->accent_colors[i % (size_t)ctx->theme->accent_count]);
        pts[i].fill = &fills[i];
        list[i] = &pts[i];
    }
    lxw_error e = chart_series_set_points(s, list);
    return e ? lxw_fail(ctx, e, pointer, err) : KILN_E_OK;
}

/* ---- what libxlsxwriter 1.1.4 cannot write (see the top of the file) ---- */

typedef void (*plot_area_fn)(lxw_chart *);

/* libxlsxwriter's own plot-area writer for each chart type, noted as charts
 * are made: a process-wide constant (every chart of a type has the same
 * one), so threads rendering at once store the same value. */
#define LXW_CHART_TYPES 32
static _Atomic(plot_area_fn) library_plot_area[LXW_CHART_TYPES];

/* The legend as libxlsxwriter writes it for the positions Kiln uses. */
static void write_legend(lxw_chart *chart)
{
    const char *pos;
    switch (chart->legend.position) {
    case LXW_CHART_LEGEND_NONE:
        return;
    case LXW_CHART_LEGEND_LEFT:
        pos = "l";
        break;
    case LXW_CHART_LEGEND_TOP:
        pos = "t";
        break;
    case LXW_CHART_LEGEND_BOTTOM:
        pos = "b";
        break;
    default:
        pos = "r";
        break;
    }
    fprintf(chart->file, "<c:legend><c:legendPos val=\"%s\"/><c:layout/>", pos);
    if (chart->chart_group == LXW_CHART_PIE || chart->chart_group == LXW_CHART_DOUGHNUT)
        fputs("<c:txPr><a:bodyPr/><a:lstStyle/><a:p><a:pPr rtl=\"0\"><a:defRPr/></a:pPr>"
              "<a:endParaRPr lang=\"en-US\"/></a:p></c:txPr>",
              chart->file);
    fputs("</c:legend>", chart->file);
}

/* Drop each empty element <name .../> from xml[0..*len) (in place). */
static void drop_elements(char *xml, size_t *len, const char *name)
{
    size_t n = strlen(name), o = 0;
    for (size_t i = 0; i < *len;) {
        if (xml[i] == '<' && *len - i > n + 1 && memcmp(xml + i + 1, name, n) == 0 &&
            (xml[i + 1 + n] == ' ' || xml[i + 1 + n] == '/')) {
            const char *end = memchr(xml + i, '>', *len - i);
            if (end) {
                i = (size_t)(end - xml) + 1;
                continue;
            }
        }
        xml[o++] = xml[i++];
    }
    *len = o;
}

/* The plot area libxlsxwriter wrote, with its c:catAx as a c:dateAx, to
 * file. Text in the XML is escaped, so a "<c:" is always a tag. */
static void write_with_date_axis(FILE *file, char *xml, size_t len)
{
    static const char open[] = "<c:catAx>", close[] = "</c:catAx>";
    char *start = memmem(xml, len, open, sizeof open - 1);
    char *end = start ? memmem(start, len - (size_t)(start - xml), close, sizeof close - 1)
                      : NULL;
    if (!end) {
        fwrite(xml, 1, len, file);
        return;
    }
    fwrite(xml, 1, (size_t)(start - xml), file);
    char *inner = start + sizeof open - 1;
    size_t inner_len = (size_t)(end - inner);
    /* CT_DateAx has no lblAlgn, tickLblSkip, tickMarkSkip or noMultiLvlLbl;
     * auto="0" says it is a date axis by choice, not a guess from the data. */
    drop_elements(inner, &inner_len, "c:lblAlgn");
    drop_elements(inner, &inner_len, "c:tickLblSkip");
    drop_elements(inner, &inner_len, "c:tickMarkSkip");
    drop_elements(inner, &inner_len, "c:noMultiLvlLbl");
    static const char auto_on[] = "<c:auto val=\"1\"/>", auto_val[] = "<c:auto val=\"";
    char *a = memmem(inner, inner_len, auto_on, sizeof auto_on - 1);
    if (a)
        a[sizeof auto_val - 1] = '0';
    fputs("<c:dateAx>", file);
    fwrite(inner, 1, inner_len, file);
    fputs("</c:dateAx>", file);
    char *rest = end + sizeof close - 1;
    fwrite(rest, 1, len - (size_t)(rest - xml), file);
}

static void plot_area_then_blanks(lxw_chart *chart)
{
    plot_area_fn own = atomic_load(&library_plot_area[chart->type % LXW_CHART_TYPES]);
    int dates = (chart->x_axis && chart->x_axis->is_date) ||
                (chart->y_axis && chart->y_axis->is_date);
    char *xml = NULL;
    size_t len = 0;
    FILE *file = chart->file, *mem = dates ? open_memstream(&xml, &len) : NULL;
    if (mem) {
        chart->file = mem;
        own(chart);
        chart->file = file;
        if (fclose(mem) == 0)
            write_with_date_axis(file, xml, len);
        else
            own(chart); /* no memory to rewrite it: a text axis, still a whole chart */
        free(xml);
    } else {
        own(chart);
    }
    write_legend(chart);
    fputs("<c:plotVisOnly val=\"1\"/><c:dispBlanksAs val=\"gap\"/>", chart->file);
    /* Written: the library must not write them a second time. */
    chart->legend.position = LXW_CHART_LEGEND_NONE;
    chart->show_hidden_data = LXW_TRUE;
}

/* Make chart write what libxlsxwriter leaves out. */
static void hook_chart(lxw_chart *chart)
{
    atomic_store(&library_plot_area[chart->type % LXW_CHART_TYPES], chart->write_plot_area);
    chart->write_plot_area = plot_area_then_blanks;
}

kiln_status xlsx_chart_insert(xlsx_chart_ctx *ctx, xlsx_plan_sheet *sheet, const kiln_chart *c,
                              uint32_t row, uint32_t col, kiln_error *err)
{
    kiln_status st;
    char ptr[KILN_POINTER_MAX];
    const char *cp = c->pointer ? c->pointer : "";
    int is_pie = c->kind == KILN_CHART_PIE || c->kind == KILN_CHART_DOUGHNUT;
    uint32_t base = 0;
    resolved cats = {0}, vals, nm;
    const char *cat_nf = NULL, *val_nf = NULL;

    if (c->series_count == 0)
        return kiln_error_set(err, KILN_E_INVALID_SPEC, cp, "a chart needs a series");
    /* Whether the categories are dates: the categories alone, resolved as
     * every other format resolves them (a range's cells read from its rows).
     * Only a chart with a category axis can have a date axis. */
    kiln_chart_data cd = {0};
    if (!is_pie && c->kind != KILN_CHART_SCATTER &&
        (c->categories_ref || c->category_count > 0)) {
        kiln_chart cats_only = *c;
        cats_only.series = NULL;
        cats_only.series_count = 0;
        st = kiln_chart_data_resolve(ctx->doc, sheet->sheet, &cats_only, ctx->theme, ctx->arena,
                                     &cd, err);
        if (st != KILN_E_OK)
            return st;
    }
    if (xlsx_chart_needs_data(c)) {
        st = write_literal_data(ctx, c, cd.categories_dates && !c->categories_ref, &base, err);
        if (st != KILN_E_OK)
            return st;
    }
    if (c->categories_ref) {
        snprintf(ptr, sizeof ptr, "%s/categories", cp);
        st = resolve_ref(ctx, sheet, c->categories_ref, 0, ptr, &cats, err);
        if (st != KILN_E_OK)
            return st;
        /* Dates from cells would show as serial numbers on the axis. */
        cat_nf = range_number_format(&cats);
        if (!xlsx_numfmt_is_date(cat_nf) && c->kind != KILN_CHART_SCATTER)
            cat_nf = NULL;
    }

    lxw_chart *chart = workbook_add_chart(ctx->wb, chart_type(c));
    if (!chart)
        return kiln_error_set(err, KILN_E_NOMEM, cp, "out of memory creating a chart");
    hook_chart(chart);
    /* A chart block's caption titles it when it has no title of its own. */
    const char *title = c->title ? c->title : c->caption;
    if (title)
        chart_title_set_name(chart, literal(ctx, title));

    for (size_t i = 0; i < c->series_count; i++) {
        const kiln_series *se = &c->series[i];
        lxw_chart_series *s = chart_add_series(chart, NULL, NULL);
        if (!s)
            return kiln_error_set(err, KILN_E_NOMEM, cp, "out of memory creating a chart");
        size_t points = 0;

        if (c->categories_ref) {
            chart_series_set_categories(s, cats.sheet, cats.range.first_row,
                                        (lxw_col_t)cats.range.first_col, cats.range.last_row,
                                        (lxw_col_t)cats.range.last_col);
            if (remember_range(ctx, s->categories, &cats) != 0)
                return kiln_error_set(err, KILN_E_NOMEM, cp, "out of memory");
        } else if (c->category_count > 0) {
            chart_series_set_categories(s, ctx->data_name, base + 1, 0,
                                        base + (uint32_t)c->category_count, 0);
        }

        if (se->values_ref) {
            snprintf(ptr, sizeof ptr, "%s/series/%zu/values", cp, i);
            st = resolve_ref(ctx, sheet, se->values_ref, 0, ptr, &vals, err);
            if (st != KILN_E_OK)
                return st;
            chart_series_set_values(s, vals.sheet, vals.range.first_row,
                                    (lxw_col_t)vals.range.first_col, vals.range.last_row,
                                    (lxw_col_t)vals.range.last_col);
            if (remember_range(ctx, s->values, &vals) != 0)
                return kiln_error_set(err, KILN_E_NOMEM, cp, "out of memory");
            if (i == 0)
                val_nf = range_number_format(&vals);
            points = (size_t)(vals.range.last_row - vals.range.first_row + 1) *
                     (vals.range.last_col - vals.range.first_col + 1);
        } else if (se->value_count > 0) {
            chart_series_set_values(s, ctx->data_name, base + 1, (lxw_col_t)(1 + i),
                                    base + (uint32_t)se->value_count, (lxw_col_t)(1 + i));
            points = se->value_count;
        }

        if (se->name_ref) {
            snprintf(ptr, sizeof ptr, "%s/series/%zu/name", cp, i);
            st = resolve_ref(ctx, sheet, se->name_ref, 1, ptr, &nm, err);
            if (st != KILN_E_OK)
                return st;
            chart_series_set_name_range(s, nm.sheet, nm.range.first_row,
                                        (lxw_col_t)nm.range.first_col);
        } else {
            const char *name = se->name ? literal(ctx, se->name)
                                        : kiln_arena_printf(ctx->arena, "Series %zu", i + 1);
            if (!name)
                return kiln_error_set(err, KILN_E_NOMEM, cp, "out of memory");
            chart_series_set_name(s, name);
        }

        if (is_pie) {
            if (se->color == KILN_COLOR_NONE) {
                st = color_points(ctx, s, points, cp, err);
                if (st != KILN_E_OK)
                    return st;
            } else {
                lxw_chart_fill fill = {.color = xlsx_color(se->color)};
                chart_series_set_fill(s, &fill);
            }
            continue;
        }
        lxw_color_t color = series_color(ctx, se, i);
        if (color == LXW_COLOR_UNSET)
            continue;
        if (c->kind == KILN_CHART_LINE || c->kind == KILN_CHART_SCATTER) {
            lxw_chart_line line = {.color = color, .width = 2.25f};
            lxw_chart_fill fill = {.color = color};
            chart_series_set_line(s, &line);
            chart_series_set_marker_fill(s, &fill);
            chart_series_set_marker_line(s, &line);
        } else {
            lxw_chart_fill fill = {.color = color};
            chart_series_set_fill(s, &fill);
        }
    }

    if (!is_pie) {
        /* libxlsxwriter's bar chart has the category axis as y_axis. */
        lxw_chart_axis *cat_axis = c->kind == KILN_CHART_BAR ? chart->y_axis : chart->x_axis;
        lxw_chart_axis *val_axis = c->kind == KILN_CHART_BAR ? chart->x_axis : chart->y_axis;
        if (c->x_title)
            chart_axis_set_name(cat_axis, literal(ctx, c->x_title));
        if (c->y_title)
            chart_axis_set_name(val_axis, literal(ctx, c->y_title));
        /* Axes show the cells' formats (currency, dates) as Excel's own
         * charts do when linked to the source. */
        if (cd.categories_dates) {
            cat_nf = cd.category_format ? cd.category_format : KILN_CHART_DATE_FORMAT;
            cat_axis->is_date = LXW_TRUE; /* for plot_area_then_blanks */
        }
        if (cat_nf)
            chart_axis_set_num_format(cat_axis, cat_nf);
        if (val_nf && !xlsx_numfmt_is_date(val_nf))
            chart_axis_set_num_format(val_axis, val_nf);
    }
    chart_legend_set_position(chart, legend_position(c->legend));

    lxw_chart_options opt = {0};
    opt.x_scale = (c->width_px ? c->width_px : 480) / 480.0;
    opt.y_scale = (c->height_px ? c->height_px : 288) / 288.0;
    opt.description = (char *)title;
    lxw_error e = worksheet_insert_chart_opt(sheet->ws, row, (lxw_col_t)col, chart, &opt);
    if (e)
        return lxw_fail(ctx, e, cp, err);
    return KILN_E_OK;
}
