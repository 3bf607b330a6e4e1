/*
 * chart_data.c - a chart's numbers, resolved to literal values
 * (chart_data.h).
 *
 * Literal charts are copied. Ranges ("'Sales'!G2:G41", normalised so by the
 * parser) are read from the sheets' rows as the .xlsx writer lays them out:
 * with a header row, the headers are worksheet row 0 (Excel's row 1) and
 * data row i is worksheet row i + 1; without one, data row i is row i. Each
 * sheet a chart names is streamed once, through the row reader, and only as
 * far as the last row any of the chart's ranges needs, so a chart over the
 * first rows of a million-row CSV reads those rows only.
 *
 * What a cell gives, as Excel would read it: values are the numbers of
 * NUMBER, DATE, DATETIME and BOOL cells and the cached numbers of formulas,
 * anything else NAN (a gap); categories and names are the cells' text as the
 * cell shows it (numfmt.h), on one line. Categories that are all dates of
 * whole days (numbers shown under a date format: date cells, or numbers and
 * formula results formatted as dates), or literal ISO dates, make a date
 * axis. Merged ranges with a value of their own cover the data the way the
 * .xlsx writer writes them: the value in the first cell, the rest blank.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "chart_data.h"
#include "numfmt.h"
#include "../spec/spec_internal.h"
#include "../../common/banned.h"

/* Office's own accents, for a theme that somehow has none. */
static const int32_t fallback_accents[] = {0x4472C4, 0xED7D31, 0xA5A5A5,
                                           0xFFC000, 0x5B9BD5, 0x70AD47};

/* What a range fills. */
typedef enum { NEED_CATEGORIES, NEED_VALUES, NEED_NAME } need_kind;

/* One range of one sheet to read, and where its cells go. */
typedef struct need {
    const kiln_sheet *sheet;
    kiln_range range;
    need_kind kind;
    size_t series; /* NEED_VALUES, NEED_NAME: the series' index */
    int done;      /* read along with an earlier need of the same sheet */
} need;

/* Categories as read from cells, before deciding whether they are numbers. */
typedef struct category_cell {
    const char *text;
    double number;
    int is_number;      /* a plain number (General format): usable as a number on any chart */
    int is_numeric;     /* any numeric cell (dates included): usable as a scatter x value */
    int is_date;        /* a whole day shown under a date format */
    const char *format; /* the number format it is shown under */
} category_cell;

typedef struct resolver {
    const kiln_doc *doc;
    const kiln_chart *chart;
    kiln_arena *arena;
    kiln_chart_data *out;
    category_cell *cats; /* point_count, when categories_ref */
    kiln_error *err;
} resolver;

static kiln_status nomem(kiln_error *err, const kiln_chart *chart)
{
    return kiln_error_set(err, KILN_E_NOMEM, chart->pointer, "out of memory resolving a chart");
}

static size_t range_cells(const kiln_range *r)
{
    return (size_t)(r->last_row - r->first_row + 1) * (size_t)(r->last_col - r->first_col + 1);
}

static const kiln_sheet *find_sheet(const kiln_doc *doc, const char *name)
{
    for (size_t i = 0; i < doc->sheet_count; i++)
        if (doc->sheets[i].name && strcmp(doc->sheets[i].name, name) == 0)
            return &doc->sheets[i];
    /* Excel compares sheet names ignoring case, and so does the parser. */
    for (size_t i = 0; i < doc->sheet_count; i++)
        if (doc->sheets[i].name && kiln_name_equal_fold(doc->sheets[i].name, name))
            return &doc->sheets[i];
    return NULL;
}

/* "'Sheet'!A2:A13", "Data!B2", "B2:B9", with or without "=" -> sheet and range. */
static kiln_status parse_ref(const resolver *rs, const kiln_sheet *own, const char *ref,
                             const char *member, need *out)
{
    char sheet_buf[256];
    const char *sheet_name, *rest;
    const char *s = ref[0] == '=' ? ref + 1 : ref;
    if (kiln_ref_split_sheet(s, sheet_buf, sizeof sheet_buf, &sheet_name, &rest) != 0 ||
        kiln_range_parse(rest, &out->range) != 0)
        return kiln_error_set(rs->err, KILN_E_INVALID_SPEC, rs->chart->pointer,
                              "the chart's %s '%s' is not a cell range", member, ref);
    out->sheet = sheet_name ? find_sheet(rs->doc, sheet_name) : own;
    if (!out->sheet)
        return kiln_error_set(rs->err, KILN_E_INVALID_SPEC, rs->chart->pointer,
                              sheet_name ? "the chart's %s '%s' names a sheet the document "
                                           "does not have"
                                         : "the chart's %s '%s' is a range, but the chart "
                                           "belongs to no sheet",
                              member, ref);
    return KILN_E_OK;
}

/* The 0-based position of worksheet cell (row, col) in a one-row or
 * one-column range, or -1 when outside it. */
static long position_in(const kiln_range *r, uint32_t row, uint32_t col)
{
    if (row < r->first_row || row > r->last_row || col < r->first_col || col > r->last_col)
        return -1;
    return r->first_row == r->last_row ? (long)(col - r->first_col) : (long)(row - r->first_row);
}

static double cell_number(const kiln_cell *cell)
{
    double v = NAN;
    switch (cell->kind) {
    case KILN_CELL_NUMBER:
    case KILN_CELL_DATE:
    case KILN_CELL_DATETIME:
    case KILN_CELL_BOOL:
        v = cell->number;
        break;
    case KILN_CELL_FORMULA:
        if (cell->cached_kind == KILN_CELL_NUMBER || cell->cached_kind == KILN_CELL_BOOL)
            v = cell->cached_number;
        break;
    default:
        break;
    }
    return isfinite(v) ? v : NAN;
}

static int format_is_general(const char *nf)
{
    return !nf || !*nf || strcmp(nf, "General") == 0 || strcmp(nf, "general") == 0;
}

/* Store one cell (col may be NULL) at position pos of what need n fills. */
static kiln_status store_cell(resolver *rs, const need *n, size_t pos, const kiln_cell *cell,
                              const kiln_column *col)
{
    kiln_chart_data *out = rs->out;
    if (n->kind == NEED_VALUES) {
        if (pos < out->point_count)
            ((double *)out->series[n->series].values)[pos] = cell_number(cell);
        return KILN_E_OK;
    }
    char buf[KILN_NUMFMT_MAX];
    size_t len = 0;
    const char *text = cell->kind == KILN_CELL_BLANK
                           ? ""
                           : kiln_cell_display(cell, col, buf, sizeof buf, &len);
    char *copy = kiln_arena_strndup(rs->arena, text ? text : "", text ? len : 0);
    if (!copy)
        return nomem(rs->err, rs->chart);
    /* Chart text is one line (docs/spec.md "Line breaks"). */
    for (char *p = copy; (p = strchr(p, '\n')); p++)
        *p = ' ';
    if (n->kind == NEED_NAME) {
        if (*copy)
            out->series[n->series].name = copy;
        return KILN_E_OK;
    }
    if (pos >= out->point_count)
        return KILN_E_OK;
    category_cell *c = &rs->cats[pos];
    c->text = copy;
    c->number = cell_number(cell);
    c->is_numeric = !isnan(c->number) && cell->kind != KILN_CELL_BOOL &&
                    !(cell->kind == KILN_CELL_FORMULA && cell->cached_kind == KILN_CELL_BOOL);
    int plain = cell->kind == KILN_CELL_NUMBER ||
                (cell->kind == KILN_CELL_FORMULA && cell->cached_kind == KILN_CELL_NUMBER);
    const char *nf = kiln_cell_number_format(cell, col);
    c->is_number = c->is_numeric && plain && format_is_general(nf);
    c->is_date = c->is_numeric && kiln_format_is_date(nf) && c->number >= 1 &&
                 c->number == floor(c->number);
    /* A cell's own format lives in the reader's current row only (rows are
     * read one at a time): kept, it is copied. */
    c->format = nf && nf == cell->number_format ? kiln_arena_strdup(rs->arena, nf) : nf;
    if (nf && !c->format)
        return nomem(rs->err, rs->chart);
    return KILN_E_OK;
}

/* One worksheet row: every cell of it that any need of sheet needs. */
static kiln_status store_row(resolver *rs, need *needs, size_t need_count,
                             const kiln_sheet *sheet, uint32_t row, const kiln_cell *cells,
                             size_t count)
{
    static const kiln_cell blank = {.kind = KILN_CELL_BLANK};
    const kiln_table_data *d = &sheet->data;
    for (size_t i = 0; i < need_count; i++) {
        const need *n = &needs[i];
        if (n->sheet != sheet || row < n->range.first_row || row > n->range.last_row)
            continue;
        for (uint32_t c = n->range.first_col; c <= n->range.last_col; c++) {
            const kiln_cell *cell = c < count ? &cells[c] : &blank;
            const kiln_column *col = c < d->column_count ? &d->columns[c] : NULL;
            long pos = position_in(&n->range, row, c);
            kiln_status st = store_cell(rs, n, (size_t)pos, cell, col);
            if (st != KILN_E_OK)
                return st;
        }
    }
    return KILN_E_OK;
}

/* The merges of sheet that carry a value: written over the data, the value
 * in the first cell and every other cell blank. */
static kiln_status apply_merges(resolver *rs, need *needs, size_t need_count,
                                const kiln_sheet *sheet)
{
    static const kiln_cell blank = {.kind = KILN_CELL_BLANK};
    for (size_t m = 0; m < sheet->merge_count; m++) {
        const kiln_merge *mg = &sheet->merges[m];
        if (mg->value.kind == KILN_CELL_BLANK)
            continue;
        for (size_t i = 0; i < need_count; i++) {
            const need *n = &needs[i];
            if (n->sheet != sheet)
                continue;
            for (uint32_t r = n->range.first_row; r <= n->range.last_row; r++) {
                for (uint32_t c = n->range.first_col; c <= n->range.last_col; c++) {
                    if (r < mg->range.first_row || r > mg->range.last_row ||
                        c < mg->range.first_col || c > mg->range.last_col)
                        continue;
                    int first = r == mg->range.first_row && c == mg->range.first_col;
                    kiln_status st = store_cell(rs, n, (size_t)position_in(&n->range, r, c),
                                                first ? &mg->value : &blank, NULL);
                    if (st != KILN_E_OK)
                        return st;
                }
            }
        }
    }
    return KILN_E_OK;
}

/* Read every need of needs[first].sheet from that sheet's rows. */
static kiln_status read_sheet(resolver *rs, need *needs, size_t need_count, size_t first)
{
    const kiln_sheet *sheet = needs[first].sheet;
    const kiln_table_data *d = &sheet->data;
    uint32_t last_row = 0;
    for (size_t i = first; i < need_count; i++) {
        if (needs[i].sheet != sheet)
            continue;
        needs[i].done = 1;
        if (needs[i].range.last_row > last_row)
            last_row = needs[i].range.last_row;
    }
    kiln_status st;
    uint32_t row = 0;
    if (d->header && d->column_count > 0) {
        /* The header row: each column's header as a string cell. */
        kiln_cell *hdr = kiln_arena_calloc(rs->arena, d->column_count, sizeof *hdr);
        if (!hdr)
            return nomem(rs->err, rs->chart);
        for (size_t c = 0; c < d->column_count; c++) {
            const char *h = d->columns[c].header;
            if (h && *h) {
                hdr[c].kind = KILN_CELL_STRING;
                hdr[c].text = h;
                hdr[c].text_len = strlen(h);
            } else if (sheet->table) {
                /* An Excel table names its unnamed columns (the .xlsx writer). */
                char *name = kiln_arena_printf(rs->arena, "Column%zu", c + 1);
                if (!name)
                    return nomem(rs->err, rs->chart);
                hdr[c].kind = KILN_CELL_STRING;
                hdr[c].text = name;
                hdr[c].text_len = strlen(name);
            }
        }
        if ((st = store_row(rs, needs, need_count, sheet, 0, hdr, d->column_count)) != KILN_E_OK)
            return st;
        row = 1;
    }

    if (row <= last_row) {
        kiln_row_reader *reader = NULL;
        if ((st = kiln_rows_open(rs->doc, d, &reader, rs->err)) != KILN_E_OK)
            return st;
        const kiln_cell *cells;
        size_t count;
        int more = 0;
        while (row <= last_row && (more = kiln_rows_next(reader, &cells, &count, rs->err)) == 1) {
            if ((st = store_row(rs, needs, need_count, sheet, row, cells, count)) != KILN_E_OK)
                goto cleanup_reader;
            row++;
        }
        if (row <= last_row && more < 0)
            st = rs->err && rs->err->code != KILN_E_OK ? rs->err->code : KILN_E_INPUT;
    cleanup_reader:
        kiln_rows_close(reader);
        if (st != KILN_E_OK)
            return st;
    }
    return apply_merges(rs, needs, need_count, sheet);
}

/* Charts whose categories lie along an axis, which may be a date axis. */
static int has_category_axis(const kiln_chart *chart)
{
    return chart->kind == KILN_CHART_COLUMN || chart->kind == KILN_CHART_BAR ||
           chart->kind == KILN_CHART_LINE || chart->kind == KILN_CHART_AREA;
}

/* A date axis has one format: every label is its date shown in it, as
 * Excel and LibreOffice label the axis, however each cell showed its own. */
static kiln_status label_dates(resolver *rs)
{
    kiln_chart_data *out = rs->out;
    for (size_t i = 0; i < out->point_count; i++) {
        kiln_cell cell = {.kind = KILN_CELL_DATE,
                          .number = out->category_numbers[i],
                          .number_format = out->category_format};
        char buf[KILN_NUMFMT_MAX];
        size_t len = 0;
        const char *text = kiln_cell_display(&cell, NULL, buf, sizeof buf, &len);
        char *copy = kiln_arena_strndup(rs->arena, text ? text : "", text ? len : 0);
        if (!copy)
            return nomem(rs->err, rs->chart);
        out->categories[i] = copy;
    }
    return KILN_E_OK;
}

/* Decide how the categories read from cells are kept. */
static kiln_status finish_ref_categories(resolver *rs)
{
    kiln_chart_data *out = rs->out;
    size_t n = out->point_count;
    const char **texts = kiln_arena_calloc(rs->arena, n ? n : 1, sizeof *texts);
    double *numbers = kiln_arena_calloc(rs->arena, n ? n : 1, sizeof *numbers);
    if (!texts || !numbers)
        return nomem(rs->err, rs->chart);
    /* A scatter chart plots x values, dates included; other charts label
     * their points, and a formatted number (a date, an amount) is labelled
     * as the cell shows it. */
    int numeric = n > 0, dates = n > 0 && has_category_axis(rs->chart);
    for (size_t i = 0; i < n; i++) {
        const category_cell *c = &rs->cats[i];
        texts[i] = c->text ? c->text : "";
        numbers[i] = c->number;
        if (!(rs->chart->kind == KILN_CHART_SCATTER ? c->is_numeric : c->is_number))
            numeric = 0;
        if (!c->is_date)
            dates = 0;
    }
    out->categories = texts;
    out->category_numbers = numeric || dates ? numbers : NULL;
    out->categories_numeric = numeric;
    out->categories_dates = dates;
    out->category_format = dates ? rs->cats[0].format : NULL;
    return dates ? label_dates(rs) : KILN_E_OK;
}

static kiln_status copy_literal_categories(resolver *rs)
{
    const kiln_chart *ch = rs->chart;
    kiln_chart_data *out = rs->out;
    size_t n = out->point_count;
    const char **texts = kiln_arena_calloc(rs->arena, n ? n : 1, sizeof *texts);
    double *numbers = kiln_arena_calloc(rs->arena, n ? n : 1, sizeof *numbers);
    if (!texts || !numbers)
        return nomem(rs->err, ch);
    int numeric = n > 0, dates = n > 0 && has_category_axis(ch);
    for (size_t i = 0; i < n; i++) {
        if (i < ch->category_count) {
            const kiln_category *k = &ch->categories[i];
            texts[i] = k->text ? k->text : "";
            numbers[i] = k->is_number || k->is_date ? k->number : NAN;
            if (!k->is_number)
                numeric = 0;
            if (!k->is_date)
                dates = 0;
        } else {
            texts[i] = "";
            numbers[i] = NAN;
            numeric = dates = 0;
        }
    }
    out->categories = texts;
    out->category_numbers = numeric || dates ? numbers : NULL;
    out->categories_numeric = numeric;
    out->categories_dates = dates;
    out->category_format = dates ? KILN_CHART_DATE_FORMAT : NULL;
    return KILN_E_OK;
}

kiln_status kiln_chart_data_resolve(const kiln_doc *doc, const kiln_sheet *own_sheet,
                                    const kiln_chart *chart, const kiln_theme *theme,
                                    kiln_arena *arena, kiln_chart_data *out, kiln_error *err)
{
    resolver rs = {.doc = doc, .chart = chart, .arena = arena, .out = out, .err = err};
    kiln_status st;
    memset(out, 0, sizeof *out);
    out->chart = chart;
    out->metadata = doc ? &doc->metadata : NULL;

    /* Ranges first: their sizes decide the number of points. */
    size_t need_cap = 1 + 2 * chart->series_count, need_count = 0;
    need *needs = kiln_arena_calloc(arena, need_cap, sizeof *needs);
    if (!needs)
        return nomem(err, chart);
    size_t points = chart->categories_ref ? 0 : chart->category_count;
    if (chart->categories_ref) {
        need *n = &needs[need_count];
        if ((st = parse_ref(&rs, own_sheet, chart->categories_ref, "categories", n)) != KILN_E_OK)
            return st;
        n->kind = NEED_CATEGORIES;
        points = range_cells(&n->range);
        need_count++;
    }
    for (size_t i = 0; i < chart->series_count; i++) {
        const kiln_series *se = &chart->series[i];
        size_t count = se->value_count;
        if (se->values_ref) {
            need *n = &needs[need_count];
            if ((st = parse_ref(&rs, own_sheet, se->values_ref, "values", n)) != KILN_E_OK)
                return st;
            n->kind = NEED_VALUES;
            n->series = i;
            count = range_cells(&n->range);
            need_count++;
        }
        if (se->name_ref) {
            need *n = &needs[need_count];
            if ((st = parse_ref(&rs, own_sheet, se->name_ref, "series name", n)) != KILN_E_OK)
                return st;
            /* A name is one cell: the first of whatever was given. */
            n->range.last_row = n->range.first_row;
            n->range.last_col = n->range.first_col;
            n->kind = NEED_NAME;
            n->series = i;
            need_count++;
        }
        if (count > points)
            points = count;
    }
    out->point_count = points;

    /* Series: literal parts now, ranges filled in below. */
    out->series_count = chart->series_count;
    out->series = kiln_arena_calloc(arena, chart->series_count ? chart->series_count : 1,
                                    sizeof *out->series);
    if (!out->series)
        return nomem(err, chart);
    const int32_t *accents = theme && theme->accent_count > 0 ? theme->accent_colors
                                                              : fallback_accents;
    size_t accent_count = theme && theme->accent_count > 0
                              ? (size_t)theme->accent_count
                              : sizeof fallback_accents / sizeof fallback_accents[0];
    for (size_t i = 0; i < chart->series_count; i++) {
        const kiln_series *se = &chart->series[i];
        kiln_chart_series_data *sd = &out->series[i];
        double *values = kiln_arena_calloc(arena, points ? points : 1, sizeof *values);
        if (!values)
            return nomem(err, chart);
        for (size_t p = 0; p < points; p++)
            values[p] = !se->values_ref && p < se->value_count && se->values &&
                                isfinite(se->values[p])
                            ? se->values[p]
                            : NAN;
        sd->values = values;
        sd->name = se->name;
        sd->color = se->color != KILN_COLOR_NONE ? se->color : accents[i % accent_count];
        sd->number_format = NULL;
    }

    if (chart->categories_ref) {
        rs.cats = kiln_arena_calloc(arena, points ? points : 1, sizeof *rs.cats);
        if (!rs.cats)
            return nomem(err, chart);
    }
    for (size_t i = 0; i < need_count; i++)
        if (!needs[i].done && (st = read_sheet(&rs, needs, need_count, i)) != KILN_E_OK)
            return st;

    /* A values range down one column shows that column's number format. */
    for (size_t i = 0; i < need_count; i++) {
        const need *n = &needs[i];
        const kiln_table_data *d = &n->sheet->data;
        if (n->kind == NEED_VALUES && n->range.first_col == n->range.last_col &&
            n->range.first_col < d->column_count)
            out->series[n->series].number_format = d->columns[n->range.first_col].number_format;
    }

    for (size_t i = 0; i < out->series_count; i++) {
        if (out->series[i].name)
            continue;
        char *name = kiln_arena_printf(arena, "Series %zu", i + 1);
        if (!name)
            return nomem(err, chart);
        out->series[i].name = name;
    }

    if (chart->categories_ref)
        return finish_ref_categories(&rs);
    if (chart->category_count > 0)
        return copy_literal_categories(&rs);
    return KILN_E_OK;
}
