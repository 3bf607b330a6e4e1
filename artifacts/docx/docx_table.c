/*
 * docx_table.c - a table block, or a sheet's data, as a Word table (w:tbl).
 *
 * Rows are streamed: a table's rows may come from a CSV or JSON Lines file
 * of any length, so they are read through the row reader twice, never held.
 * The first pass measures every row (the header and all the cells give the
 * column widths, the number of columns when the table defines none and, for
 * untyped columns, the alignment): a width taken from the first rows only
 * lets a longer value further down ("4,997" after "1") wrap in the middle.
 * Measuring costs a fraction of writing a row's XML. The second pass writes.
 *
 * What Word gets, each to match what Word itself writes for such a table:
 *   - the "Kiln Table" style (templates/docx/styles.xml): borders, cell
 *     margins, the header row's fill and bold white text (w:tblStylePr
 *     firstRow) and banded rows, switched on by w:tblLook;
 *   - fixed layout, w:tblW the sum of the columns, and one w:gridCol per
 *     column whose width every cell's w:tcW repeats (a merged cell's, the
 *     sum of the columns it spans: Word and LibreOffice disagree about
 *     tables whose grid and cells differ);
 *   - the header row marked w:tblHeader (repeated at the top of every page)
 *     and every row w:cantSplit (a row never breaks across pages);
 *   - per column: w:jc from the column's align, else right for numbers and
 *     dates (an untyped column: when every value is one), centered
 *     for booleans, else left; cell text as Excel would show it (numfmt.h);
 *   - per cell style: bold, italic, underline, strike, color, size, font
 *     as run properties; fill as w:shd; valign as w:vAlign; border as
 *     w:tcBorders; align as w:jc. A URL cell is a real hyperlink (an
 *     external relationship, the Hyperlink character style).
 * Each cell paragraph sets no space after it and single line spacing
 * directly, so the table stays compact whatever the Normal style says. The
 * caption, when there is one, is also the table's alternative text title
 * (w:tblCaption, as Word 2010 and later store it).
 *
 * Merges (a sheet's "merges"; table blocks have none) are stored the way
 * Word stores merged cells: the columns of a range are one w:tc with
 * w:gridSpan, and a range of several rows starts with w:vMerge="restart"
 * and continues with a w:vMerge cell (same span, an empty paragraph, the
 * same shading and borders) in each row below. Rows are numbered as in the
 * worksheet the .xlsx writer makes: row 0 is the header row when the table
 * has one, else the first data row. The merged cell shows what Excel shows:
 * the merge's value with the merge's style, centered both ways unless the
 * style says otherwise (the .xlsx writer's merge format; no column number
 * format); without a value, the top-left cell's own value and style. A
 * merge is clipped to the rows and columns the table has (a range past the
 * last row or column keeps the part inside); a hidden column inside a range
 * is left out of its span. Cells a merge hides are not measured; what a
 * range shows is measured in its column when it shows in one, else it
 * widens the columns of computed width it spans alike, as browsers widen
 * the columns under a cell with a colspan. The merge list is sorted by
 * first row once and walked alongside the rows, each row seeing which
 * range covers each column (merge_walk.h).
 *
 * Widths: a column wants its widest line (header or any cell, measured
 * with Calibri's advance widths) or, when it has one, its explicit width
 * (Excel characters: the digit width of the body font, 7 px at 11 pt, plus
 * Excel's 5 px padding, scaled to the theme's font size); it needs its
 * widest word (a number or a date is one word), never more than it wants.
 * When the wanted widths do not fit the text width, each column gets what
 * it needs plus a share of the rest proportional to what it lacks (the way
 * browsers lay out auto tables): text wraps between words.
 *
 * A table too wide for the page: when even the needs do not fit (numbers
 * and words would break in the middle, "1,234.5/7"), the table first gets
 * narrower cell margins (w:tblCellMar), then a smaller font, as a Word user
 * would shrink it: every run of the table (and each cell's paragraph mark)
 * gets w:sz, the body size scaled by text width / needed width, rounded
 * down to half points, then lowered half a point at a time until the needs
 * fit, never below MIN_FONT_PT (7 pt); a cell's own size is scaled by the
 * same factor, and explicit widths, being characters of that font, with
 * it. Wanted widths alone never shrink the font: a long sentence wraps.
 * Only when the needs do not fit even at 7 pt are the columns squeezed:
 * every column is capped at one width, so narrow columns keep what they
 * need and the longest words are broken. Never wider than the text width;
 * never narrower than its margins and MIN_TEXT_PT unless the columns
 * cannot all fit. A column of width 0 is hidden in Excel and left out of
 * the Word table.
 *
 * The table is only the w:tbl: the body writes the caption above it and the
 * paragraph Word needs after a table (docx_document.c). A table with no
 * columns at all (no column definitions and no cells) writes nothing; one
 * with columns but no rows to show (no header row, no data) gets one row of
 * empty cells, since Word rejects a table without rows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../layout/merge_walk.h"
#include "../layout/numfmt.h"
#include "docx_internal.h"
#include "../../common/banned.h"

/* Left and right cell margins: the KilnTable style's, and the narrower ones
 * a table gets when its columns do not fit otherwise. */
#define CELL_MARGIN_TWIPS 108
#define NARROW_MARGIN_TWIPS 58
/* No font is loaded and the theme font may not be Calibri: a little slack
 * (at the body size; it shrinks with the font) keeps a cell that should fit
 * on one line from wrapping. */
#define SLACK_PT 2.0
/* The narrowest column: its margins and about two digits. */
#define MIN_TEXT_PT 11.0
/* The smallest font a table too wide for the page is shrunk to. */
#define MIN_FONT_PT 7.0
/* Bold header text is wider than regular. */
#define BOLD_FACTOR 1.05

typedef struct column_layout {
    double text_want_pt; /* widest line (measured at the body size) */
    double text_need_pt; /* widest word (measured at the body size) */
    double want_pt;      /* the same with margins, at the table's font (fit_widths) */
    double need_pt;
    int hidden;          /* width 0: hidden in Excel, left out here */
    int has_numeric;     /* a cell is a number or a date */
    int has_text;        /* a cell is text */
    int64_t twips;       /* the width written */
    const char *jc;      /* w:jc of its cells */
} column_layout;

typedef struct table_layout {
    size_t ncols;
    column_layout *cols;
    double scale;        /* theme font size / 11 */
    int margin_twips;    /* left and right cell margins */
    double need_total_pt; /* what the shown columns need together */
    double body_pt;      /* the theme's body font size */
    double font_pt;      /* the table's font size when shrunk, else 0 (inherit) */
    double factor;       /* font_pt / body_pt, 1 when not shrunk */
} table_layout;

/* ---- merges ---- */

enum { VMERGE_NONE, VMERGE_RESTART, VMERGE_CONTINUE };

typedef struct merge_span {
    const kiln_merge *merge;
    size_t lead_col;      /* the first shown column in the table: where the cell goes */
    size_t grid_span;     /* shown columns in the table: w:gridSpan; 0 = nothing shown */
    size_t measure_col;   /* the one column the range shows in, KILN_MERGE_NONE when several */
    double text_want_pt;  /* several: what its text wants and needs (measure_merges) */
    double text_need_pt;
    int64_t twips;        /* their widths together */
    /* The top-left cell's look, kept for the cells below it (the row reader's
     * cells are gone by then): fill, border, valign (no font: nothing to show). */
    kiln_style look;
    int has_look;
    int merge_look;       /* shown in the merge's format (centered both ways) */
} merge_span;

/* The sheet's merges: the walk, and each range's layout at its index in
 * the walk (spans[k] lays out walk.merges[k]). Zeroed: no merges. */
typedef struct table_merges {
    kiln_merge_walk walk;
    merge_span *spans;
} table_merges;

/* Index the sheet's merges (none for a table block). */
static kiln_status merges_init(docx_ctx *c, const kiln_sheet *sheet, table_merges *merges,
                               const char *pointer)
{
    memset(merges, 0, sizeof *merges);
    if (!sheet || sheet->merge_count == 0)
        return KILN_E_OK;
    size_t n = sheet->merge_count;
    kiln_status st = kiln_merge_walk_init(&merges->walk, sheet->merges, n, c->arena);
    if (st == KILN_E_OK)
        merges->spans = kiln_arena_calloc(c->arena, n, sizeof *merges->spans);
    if (!merges->spans)
        return kiln_error_set(c->err, KILN_E_NOMEM, pointer, "out of memory laying out a table");
    for (size_t k = 0; k < n; k++) {
        merges->spans[k].merge = merges->walk.merges[k];
        merges->spans[k].measure_col =
            kiln_merge_single_column(&sheet->data, &merges->walk.merges[k]->range);
    }
    return KILN_E_OK;
}

/* The range covering column `col` in the walk's current row, or NULL. */
static merge_span *merge_at(const table_merges *merges, size_t col)
{
    size_t k = kiln_merge_walk_at(&merges->walk, col);
    return k == KILN_MERGE_NONE ? NULL : &merges->spans[k];
}

/* Clip every span to the table's columns, now that their widths are known. */
static void merges_clip(table_merges *merges, const table_layout *lay)
{
    for (size_t i = 0; i < merges->walk.count; i++) {
        merge_span *span = &merges->spans[i];
        const kiln_range *r = &span->merge->range;
        span->lead_col = SIZE_MAX;
        span->grid_span = 0;
        span->twips = 0;
        for (size_t col = r->first_col; col <= r->last_col && col < lay->ncols; col++) {
            if (lay->cols[col].hidden)
                continue;
            if (span->lead_col == SIZE_MAX)
                span->lead_col = col;
            span->grid_span++;
            span->twips += lay->cols[col].twips;
        }
    }
}

/* ---- measuring ---- */


/* Width in 1/2048 em of the widest line and the widest word of s. A line
 * may break after any wide (CJK) character, so each is a word of its own. */
static void text_units(const char *s, size_t len, uint32_t *line_max, uint32_t *word_max)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    uint32_t line = 0, word = 0, lmax = 0, wmax = 0;
    while (p < end) {
        unsigned char ch = *p;
        uint32_t px = 0;
        int word_end = 0, line_end = 0;
        if (ch < 0x80) {
            p++;
            if (ch == '\n' || ch == '\r')
                line_end = 1;
            else if (ch == ' ' || ch == '\t')
                px = ch == ' ' ? kiln_calibri_regular[0] : 4 * kiln_calibri_regular[0], word_end = 1;
            else if (ch >= 32 && ch < 127)
                px = kiln_calibri_regular[ch - 32];
        } else {
            size_t n = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC0 ? 2 : 1;
            uint32_t cp = n == 4 ? ch & 0x07u : n == 3 ? ch & 0x0Fu : ch & 0x1Fu;
            if ((size_t)(end - p) < n)
                n = (size_t)(end - p);
            for (size_t i = 1; i < n; i++)
                cp = (cp << 6) | (p[i] & 0x3Fu);
            p += n;
            if (kiln_char_is_wide(cp)) {
                if (word > wmax)
                    wmax = word;
                word = 0;
                if (KILN_METRIC_WIDE_UNITS > wmax)
                    wmax = KILN_METRIC_WIDE_UNITS;
                line += KILN_METRIC_WIDE_UNITS;
                continue;
            }
            px = cp >= 0x300 && cp < 0x370 ? 0 : KILN_METRIC_OTHER_UNITS; /* combining marks: none */
        }
        if (line_end || word_end) {
            if (word > wmax)
                wmax = word;
            word = 0;
        } else {
            word += px;
        }
        if (line_end) {
            if (line > lmax)
                lmax = line;
            line = 0;
        } else {
            line += px;
        }
    }
    if (word > wmax)
        wmax = word;
    if (line > lmax)
        lmax = line;
    *line_max = lmax;
    *word_max = wmax;
}

static void measure_text(column_layout *col, const char *s, size_t len, double factor,
                         double scale)
{
    uint32_t line, word;
    text_units(s, len, &line, &word);
    double to_pt = factor * scale * DOCX_BODY_DEFAULT_PT / KILN_METRIC_UNITS_PER_EM;
    double want = line * to_pt, need = word * to_pt;
    if (want > col->text_want_pt)
        col->text_want_pt = want;
    if (need > col->text_need_pt)
        col->text_need_pt = need;
}

/* A cell's text into the widths of `into` (a column, or a range
 * over several) and the column's alignment counts. A header cell is bold
 * and is not counted. */
static void measure_cell(column_layout *into, double scale, const kiln_cell *cell,
                         const kiln_column *col, int header)
{
    if (cell->kind == KILN_CELL_BLANK)
        return;
    char buf[KILN_NUMFMT_MAX];
    size_t len;
    const char *text = kiln_cell_display(cell, col, buf, sizeof buf, &len);
    double factor = header || (cell->style && cell->style->bold) ? BOLD_FACTOR : 1.0;
    if (cell->style && cell->style->size > 0)
        scale = cell->style->size / DOCX_BODY_DEFAULT_PT;
    measure_text(into, text, len, factor, scale);
    if (header)
        return;
    if (kiln_cell_is_numeric(cell))
        into->has_numeric = 1;
    else
        into->has_text = 1;
}

/* What the merged ranges starting in worksheet row `row` show: measured in
 * the one column a range shows in, else kept with the range for
 * widen_for_merges. cells[count] is the row; header: it is the header row,
 * whose own text is bold. */
static void measure_merges(table_layout *lay, const kiln_table_data *d, table_merges *merges,
                           uint32_t row, const kiln_cell *cells, size_t count, int header)
{
    for (size_t k = 0; k < merges->walk.active_count; k++) {
        merge_span *span = &merges->spans[merges->walk.active[k]];
        const kiln_range *r = &span->merge->range;
        if (r->first_row != row)
            continue;
        int merge_look;
        const kiln_cell *own = r->first_col < count ? &cells[r->first_col] : NULL;
        const kiln_cell *shown = kiln_merge_shown(span->merge, own, &merge_look);
        /* The merge's format has no column number format. */
        const kiln_column *col = merge_look || header ? NULL : kiln_table_column(d, r->first_col);
        if (span->measure_col != KILN_MERGE_NONE) {
            if (span->measure_col < lay->ncols)
                measure_cell(&lay->cols[span->measure_col], lay->scale, shown, col, header);
            continue;
        }
        column_layout text = {0};
        measure_cell(&text, lay->scale, shown, col, header);
        span->text_want_pt = text.text_want_pt;
        span->text_need_pt = text.text_need_pt;
    }
}

/* A range over several columns whose text is wider than they are together
 * widens them alike, as a browser widens the columns under a cell with a
 * colspan (its text has one pair of margins, not one per column). Only
 * columns of computed width: a range over an explicit width is left to
 * wrap. */
static void widen_for_merges(table_layout *lay, const kiln_table_data *d,
                             const table_merges *merges)
{
    const double gap = 2.0 * CELL_MARGIN_TWIPS / DOCX_TWIPS_PER_PT + SLACK_PT;
    const double min_text = MIN_TEXT_PT - SLACK_PT;
    for (size_t k = 0; k < merges->walk.count; k++) {
        const merge_span *span = &merges->spans[k];
        const kiln_range *r = &span->merge->range;
        if (span->text_want_pt <= 0)
            continue;
        double want_room = 0, need_room = 0;
        size_t shown = 0;
        int fixed = 0;
        for (size_t col = r->first_col; col <= r->last_col && col < lay->ncols; col++) {
            const kiln_column *kc = kiln_table_column(d, col);
            if (kc && kc->width == 0)
                continue;
            if (kc && kc->width > 0)
                fixed = 1;
            const column_layout *cl = &lay->cols[col];
            want_room += cl->text_want_pt > min_text ? cl->text_want_pt : min_text;
            need_room += cl->text_need_pt > min_text ? cl->text_need_pt : min_text;
            shown++;
        }
        if (fixed || shown < 2)
            continue;
        want_room += (double)(shown - 1) * gap;
        need_room += (double)(shown - 1) * gap;
        double want_more = (span->text_want_pt - want_room) / (double)shown;
        double need_more = (span->text_need_pt - need_room) / (double)shown;
        for (size_t col = r->first_col; col <= r->last_col && col < lay->ncols; col++) {
            const kiln_column *kc = kiln_table_column(d, col);
            column_layout *cl = &lay->cols[col];
            if (kc && kc->width == 0)
                continue;
            if (want_more > 0)
                cl->text_want_pt = (cl->text_want_pt > min_text ? cl->text_want_pt : min_text) +
                                   want_more;
            if (need_more > 0)
                cl->text_need_pt = (cl->text_need_pt > min_text ? cl->text_need_pt : min_text) +
                                   need_more;
        }
    }
}

/* The header row as cells: each column's header a string (blank when none). */
static kiln_cell *header_cells(docx_ctx *c, const kiln_table_data *d)
{
    kiln_cell *cells = kiln_arena_calloc(c->arena, d->column_count, sizeof *cells);
    if (!cells)
        return NULL;
    for (size_t i = 0; i < d->column_count; i++) {
        const char *h = d->columns[i].header;
        if (h && *h) {
            cells[i].kind = KILN_CELL_STRING;
            cells[i].text = h;
            cells[i].text_len = strlen(h);
        }
    }
    return cells;
}

/* The first pass: how many columns, what every cell needs. hdr is the
 * header row's cells, NULL when the table has none. */
static kiln_status measure(docx_ctx *c, const kiln_table_data *d, const kiln_cell *hdr,
                           table_merges *merges, table_layout *lay, const char *pointer)
{
    kiln_row_reader *reader = NULL;
    kiln_status st = kiln_rows_open(c->doc, d, &reader, c->err);
    if (st != KILN_E_OK)
        return st;

    /* Without column definitions, the widest row sets the grid: columns are
     * added as rows widen. */
    size_t cap = d->column_count ? d->column_count : 8;
    lay->ncols = d->column_count;
    lay->cols = kiln_arena_calloc(c->arena, cap, sizeof *lay->cols);
    if (!lay->cols) {
        st = kiln_error_set(c->err, KILN_E_NOMEM, pointer, "out of memory laying out a table");
        goto cleanup_reader;
    }

    uint32_t row = 0; /* the worksheet row */
    if (hdr) {
        /* Bold, and never counted for the alignment. */
        kiln_merge_walk_row(&merges->walk, row);
        for (size_t i = 0; i < d->column_count; i++)
            if (!merge_at(merges, i))
                measure_cell(&lay->cols[i], lay->scale, &hdr[i], NULL, 1);
        measure_merges(lay, d, merges, row, hdr, d->column_count, 1);
        row++;
    }

    const kiln_cell *cells;
    size_t count;
    int more;
    while ((more = kiln_rows_next(reader, &cells, &count, c->err)) == 1) {
        if (count > lay->ncols) {
            if (count > cap) {
                size_t grown = cap;
                while (grown < count)
                    grown *= 2;
                column_layout *cols = kiln_arena_calloc(c->arena, grown, sizeof *cols);
                if (!cols) {
                    st = kiln_error_set(c->err, KILN_E_NOMEM, pointer,
                                        "out of memory laying out a table");
                    goto cleanup_reader;
                }
                memcpy(cols, lay->cols, lay->ncols * sizeof *cols);
                lay->cols = cols;
                cap = grown;
            }
            lay->ncols = count;
        }
        kiln_merge_walk_row(&merges->walk, row);
        for (size_t i = 0; i < count; i++)
            if (!merge_at(merges, i))
                measure_cell(&lay->cols[i], lay->scale, &cells[i], kiln_table_column(d, i), 0);
        measure_merges(lay, d, merges, row, cells, count, 0);
        if (row < UINT32_MAX)
            row++;
    }
    if (more < 0)
        st = c->err->code != KILN_E_OK ? c->err->code : KILN_E_INPUT;

cleanup_reader:
    kiln_rows_close(reader);
    return st;
}

static const char *jc_of(kiln_align align)
{
    switch (align) {
    case KILN_ALIGN_LEFT: return "left";
    case KILN_ALIGN_CENTER: return "center";
    case KILN_ALIGN_RIGHT: return "right";
    case KILN_ALIGN_JUSTIFY: return "both";
    default: return NULL;
    }
}

static const char *column_jc(const kiln_column *col, const column_layout *cl)
{
    const char *jc = col ? jc_of(col->align) : NULL;
    if (jc)
        return jc;
    if (col && col->type == KILN_COL_BOOLEAN)
        return "center"; /* as Excel shows TRUE and FALSE */
    if (col && col->type != KILN_COL_AUTO)
        return kiln_column_is_numeric(col) ? "right" : "left";
    if (kiln_column_is_numeric(col))
        return "right";
    /* Untyped: right when every value is a number or a date. */
    return cl->has_numeric && !cl->has_text ? "right" : "left";
}

/* The widest of the capped needs min(need, cap) that together fit avail:
 * found by bisection, the sum growing with the cap. */
static double water_level(const table_layout *lay, double avail_pt, double max_need)
{
    double lo = 0, hi = max_need;
    for (int i = 0; i < 50; i++) {
        double mid = (lo + hi) / 2, sum = 0;
        for (size_t j = 0; j < lay->ncols; j++)
            if (!lay->cols[j].hidden)
                sum += lay->cols[j].need_pt < mid ? lay->cols[j].need_pt : mid;
        if (sum > avail_pt)
            hi = mid;
        else
            lo = mid;
    }
    return lo;
}

/* Widths in twips that fit avail_pt at the table's font (see the comment
 * at the top); returns the number of columns shown. */
static size_t fit_widths(table_layout *lay, const kiln_table_data *d, double avail_pt)
{
    double margins_pt = 2.0 * lay->margin_twips / DOCX_TWIPS_PER_PT;
    double min_pt = margins_pt + MIN_TEXT_PT;
    double slack_pt = SLACK_PT * lay->factor;
    double want_total = 0, need_total = 0, max_need = 0;
    size_t shown = 0;
    for (size_t i = 0; i < lay->ncols; i++) {
        column_layout *cl = &lay->cols[i];
        const kiln_column *col = kiln_table_column(d, i);
        if (col && col->width == 0) {
            cl->hidden = 1; /* a hidden column in Excel */
            continue;
        }
        cl->want_pt = cl->text_want_pt * lay->factor + margins_pt + slack_pt;
        cl->need_pt = cl->text_need_pt * lay->factor + margins_pt + slack_pt;
        if (cl->want_pt < min_pt)
            cl->want_pt = min_pt;
        if (cl->need_pt < min_pt)
            cl->need_pt = min_pt;
        if (col && col->width > 0) {
            /* Excel's column width: characters of the digit width (7 px at
             * 11 pt) plus 5 px of padding, of the table's font. It is what
             * the column wants; its widest word is still what it needs. */
            double px = col->width * 7.0 + 5.0;
            cl->want_pt = px * 0.75 * lay->scale * lay->factor;
        }
        if (cl->need_pt > cl->want_pt)
            cl->need_pt = cl->want_pt;
        want_total += cl->want_pt;
        need_total += cl->need_pt;
        if (cl->need_pt > max_need)
            max_need = cl->need_pt;
        shown++;
    }
    lay->need_total_pt = need_total;
    if (shown == 0)
        return 0;

    /* Not even the needs fit (at the smallest font): every column is capped
     * at one width, so that narrow columns (numbers, short words) keep what
     * they need and only the widest words are broken, by Word, at the
     * cell's edge. */
    double level = need_total > avail_pt ? water_level(lay, avail_pt, max_need) : 0;
    for (size_t i = 0; i < lay->ncols; i++) {
        column_layout *cl = &lay->cols[i];
        if (cl->hidden)
            continue;
        double w;
        if (want_total <= avail_pt)
            w = cl->want_pt;
        else if (need_total <= avail_pt)
            w = cl->need_pt + (cl->want_pt - cl->need_pt) * (avail_pt - need_total) /
                                  (want_total - need_total);
        else
            w = cl->need_pt < level ? cl->need_pt : level;
        cl->twips = (int64_t)(w * DOCX_TWIPS_PER_PT);
        if (cl->twips < 1)
            cl->twips = 1;
    }
    return shown;
}

/* A table whose needs do not fit: narrower cell margins, then a smaller
 * font, half a point at a time down to MIN_FONT_PT, until they do (the
 * comment at the top). The widths are fitted again at each step. */
static void shrink_to_fit(table_layout *lay, const kiln_table_data *d, double avail_pt)
{
    if (lay->need_total_pt <= avail_pt)
        return;
    lay->margin_twips = NARROW_MARGIN_TWIPS;
    fit_widths(lay, d, avail_pt);
    if (lay->need_total_pt <= avail_pt || lay->body_pt <= MIN_FONT_PT)
        return;
    /* Half points: what w:sz holds. The first guess scales the whole width
     * although the margins do not shrink, so it errs large; each step down
     * refits. */
    int body_half = (int)floor(lay->body_pt * 2.0);
    int min_half = (int)(MIN_FONT_PT * 2.0);
    int half = (int)floor(lay->body_pt * 2.0 * avail_pt / lay->need_total_pt);
    if (half >= body_half)
        half = body_half - 1;
    for (;; half--) {
        if (half < min_half)
            half = min_half;
        lay->font_pt = half / 2.0;
        lay->factor = lay->font_pt / lay->body_pt;
        fit_widths(lay, d, avail_pt);
        if (lay->need_total_pt <= avail_pt || half <= min_half)
            break;
    }
}

/* The size of a run in the table: its own size, or none (the style's),
 * when the table is not shrunk; else that size scaled, in half points
 * rounded down, and at least 1 pt. */
static double run_size(const table_layout *lay, const kiln_style *style)
{
    double own = style && style->size > 0 ? style->size : 0;
    if (lay->font_pt <= 0)
        return own;
    if (own <= 0)
        return lay->font_pt;
    double scaled = floor(own * lay->factor * 2.0) / 2.0;
    return scaled >= 1.0 ? scaled : 1.0;
}

static void write_border(opc_xml *x, const char *side, kiln_border border)
{
    opc_xml_start(x, side);
    if (border == KILN_BORDER_NONE) {
        opc_xml_attr(x, "w:val", "nil");
    } else {
        /* eighths of a point: thin 1/2 pt, medium 1 1/2 pt, thick 2 1/4 pt */
        int sz = border == KILN_BORDER_THICK ? 18 : border == KILN_BORDER_MEDIUM ? 12 : 4;
        opc_xml_attr(x, "w:val", "single");
        opc_xml_attr_int(x, "w:sz", sz);
        opc_xml_attr_int(x, "w:space", 0);
        opc_xml_attr(x, "w:color", "auto");
    }
    opc_xml_end(x);
}

/* Where a cell goes and how it looks before its style. */
typedef struct cell_box {
    int64_t twips;       /* w:tcW: the column's width, or the span's */
    size_t grid_span;    /* columns spanned (w:gridSpan when > 1) */
    int vmerge;          /* VMERGE_* */
    const char *jc;      /* the paragraph's alignment unless the style says */
    int merge_look;      /* a merged range in the merge's format: centered both ways
                            unless the style says */
} cell_box;

static void write_tc_pr(opc_xml *x, const cell_box *box, const kiln_style *style)
{
    opc_xml_start(x, "w:tcPr");
    opc_xml_start(x, "w:tcW");
    opc_xml_attr_int(x, "w:w", box->twips);
    opc_xml_attr(x, "w:type", "dxa");
    opc_xml_end(x);
    if (box->grid_span > 1)
        opc_xml_val_int(x, "w:gridSpan", "w:val", (int64_t)box->grid_span);
    if (box->vmerge == VMERGE_RESTART)
        opc_xml_val(x, "w:vMerge", "w:val", "restart");
    else if (box->vmerge == VMERGE_CONTINUE)
        opc_xml_empty(x, "w:vMerge");
    kiln_valign valign = style ? style->valign : KILN_VALIGN_DEFAULT;
    if (valign == KILN_VALIGN_DEFAULT && box->merge_look)
        valign = KILN_VALIGN_MIDDLE;
    if (style) {
        if (style->border != KILN_BORDER_DEFAULT) {
            static const char *const sides[4] = {"w:top", "w:left", "w:bottom", "w:right"};
            opc_xml_start(x, "w:tcBorders");
            for (int i = 0; i < 4; i++)
                write_border(x, sides[i], style->border);
            opc_xml_end(x);
        }
        if (style->fill != KILN_COLOR_NONE) {
            opc_xml_start(x, "w:shd");
            opc_xml_attr(x, "w:val", "clear");
            opc_xml_attr(x, "w:color", "auto");
            opc_xml_attr_color(x, "w:fill", style->fill);
            opc_xml_end(x);
        }
    }
    const char *v = valign == KILN_VALIGN_TOP      ? "top"
                    : valign == KILN_VALIGN_MIDDLE ? "center"
                    : valign == KILN_VALIGN_BOTTOM ? "bottom"
                                                   : NULL;
    if (v)
        opc_xml_val(x, "w:vAlign", "w:val", v);
    opc_xml_end(x);
}

/* One cell: its properties, one paragraph, the text as one run. */
static void write_cell(docx_ctx *c, const table_layout *lay, const cell_box *box,
                       const char *text, size_t len, const kiln_style *style, const char *link)
{
    opc_xml *x = c->x;
    opc_xml_start(x, "w:tc");
    write_tc_pr(x, box, style);

    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    opc_xml_start(x, "w:spacing");
    opc_xml_attr(x, "w:after", "0");
    opc_xml_attr(x, "w:line", "240");
    opc_xml_attr(x, "w:lineRule", "auto");
    opc_xml_end(x);
    const char *jc = style ? jc_of(style->align) : NULL;
    if (!jc && box->merge_look)
        jc = "center";
    opc_xml_val(x, "w:jc", "w:val", jc ? jc : box->jc);
    double size = run_size(lay, style);
    if (lay->font_pt > 0) {
        /* A shrunk table: the paragraph mark too, or an empty cell keeps
         * the row at the body size's height. */
        opc_xml_start(x, "w:rPr");
        opc_xml_val_int(x, "w:sz", "w:val", (int64_t)(size * 2 + 0.5));
        opc_xml_end(x);
    }
    opc_xml_end(x); /* w:pPr */

    if (len > 0) {
        kiln_run run = {.text = text, .len = len, .color = KILN_COLOR_NONE, .link = link,
                        .size = size};
        if (style) {
            run.flags = (style->bold ? KILN_RUN_BOLD : 0u) |
                        (style->italic ? KILN_RUN_ITALIC : 0u) |
                        (style->underline ? KILN_RUN_UNDERLINE : 0u) |
                        (style->strike ? KILN_RUN_STRIKE : 0u);
            run.color = style->color;
            run.font = style->font;
        }
        kiln_text t = {&run, 1};
        docx_write_runs(c, &t);
    }
    opc_xml_end(x); /* w:p */
    opc_xml_end(x); /* w:tc */
}

static void write_tbl_pr(docx_ctx *c, const table_layout *lay, const kiln_table *table)
{
    opc_xml *x = c->x;
    int64_t total = 0;
    for (size_t i = 0; i < lay->ncols; i++)
        if (!lay->cols[i].hidden)
            total += lay->cols[i].twips;

    opc_xml_start(x, "w:tblPr");
    opc_xml_val(x, "w:tblStyle", "w:val", DOCX_STYLE_TABLE);
    opc_xml_start(x, "w:tblW");
    opc_xml_attr_int(x, "w:w", total);
    opc_xml_attr(x, "w:type", "dxa");
    opc_xml_end(x);
    opc_xml_val(x, "w:tblLayout", "w:type", "fixed");
    if (lay->margin_twips != CELL_MARGIN_TWIPS) {
        opc_xml_start(x, "w:tblCellMar");
        opc_xml_start(x, "w:left");
        opc_xml_attr_int(x, "w:w", lay->margin_twips);
        opc_xml_attr(x, "w:type", "dxa");
        opc_xml_end(x);
        opc_xml_start(x, "w:right");
        opc_xml_attr_int(x, "w:w", lay->margin_twips);
        opc_xml_attr(x, "w:type", "dxa");
        opc_xml_end(x);
        opc_xml_end(x);
    }
    /* The header row's look when there is one, banded rows, no first
     * column; w:val is the same as a bit mask, which Word 2007 reads. */
    int header = table->data.header && table->data.column_count;
    opc_xml_start(x, "w:tblLook");
    opc_xml_attr(x, "w:val", header ? "0420" : "0400");
    opc_xml_attr(x, "w:firstRow", header ? "1" : "0");
    opc_xml_attr(x, "w:lastRow", "0");
    opc_xml_attr(x, "w:firstColumn", "0");
    opc_xml_attr(x, "w:lastColumn", "0");
    opc_xml_attr(x, "w:noHBand", "0");
    opc_xml_attr(x, "w:noVBand", "1");
    opc_xml_end(x);
    /* The caption doubles as the table's alternative text title. */
    if (table->caption && *table->caption)
        opc_xml_val(x, "w:tblCaption", "w:val", table->caption);
    opc_xml_end(x);

    opc_xml_start(x, "w:tblGrid");
    for (size_t i = 0; i < lay->ncols; i++)
        if (!lay->cols[i].hidden)
            opc_xml_val_int(x, "w:gridCol", "w:w", lay->cols[i].twips);
    opc_xml_end(x);
}

/* The cell of a merged range in worksheet row `row`, written by the
 * range's first shown column: the top-left's value in the first row, an
 * empty continuation (w:vMerge) below. */
static void write_merged_cell(docx_ctx *c, const table_layout *lay, const kiln_table_data *d,
                              merge_span *span, uint32_t row, int header,
                              const kiln_cell *cells, size_t count)
{
    const kiln_range *r = &span->merge->range;
    cell_box box = {span->twips, span->grid_span, VMERGE_NONE, lay->cols[span->lead_col].jc, 0};
    if (row != r->first_row) {
        box.vmerge = VMERGE_CONTINUE;
        box.merge_look = span->merge_look;
        write_cell(c, lay, &box, "", 0, span->has_look ? &span->look : NULL, NULL);
        return;
    }
    if (r->last_row > row)
        box.vmerge = VMERGE_RESTART;
    int merge_look;
    const kiln_cell *own = r->first_col < count ? &cells[r->first_col] : NULL;
    const kiln_cell *shown = kiln_merge_shown(span->merge, own, &merge_look);
    /* A one-cell "merge" only gives the cell its value and style. */
    box.merge_look = merge_look && !kiln_merge_is_single(span->merge);
    span->merge_look = box.merge_look;
    span->has_look = shown->style != NULL;
    if (span->has_look) {
        span->look = *shown->style;
        span->look.font = NULL; /* the reader's string; an empty cell needs no font */
    }
    const kiln_column *col = merge_look || header ? NULL : kiln_table_column(d, r->first_col);
    char buf[KILN_NUMFMT_MAX];
    size_t len = 0;
    const char *text = shown->kind == KILN_CELL_BLANK
                           ? ""
                           : kiln_cell_display(shown, col, buf, sizeof buf, &len);
    const char *link = shown->kind == KILN_CELL_URL ? shown->text : NULL;
    write_cell(c, lay, &box, text, len, shown->style, link);
}

/* One row: cells[count] its values (the header row: the headers, without
 * column formats, marked to repeat on every page). */
static void write_row(docx_ctx *c, const table_layout *lay, const kiln_table_data *d,
                      table_merges *merges, uint32_t row, int header, const kiln_cell *cells,
                      size_t count)
{
    opc_xml *x = c->x;
    kiln_merge_walk_row(&merges->walk, row);
    opc_xml_start(x, "w:tr");
    opc_xml_start(x, "w:trPr");
    opc_xml_empty(x, "w:cantSplit");
    if (header)
        opc_xml_empty(x, "w:tblHeader");
    opc_xml_end(x);
    for (size_t i = 0; i < lay->ncols; i++) {
        if (lay->cols[i].hidden)
            continue;
        merge_span *span = merge_at(merges, i);
        if (span) {
            if (span->grid_span > 0 && i == span->lead_col)
                write_merged_cell(c, lay, d, span, row, header, cells, count);
            continue;
        }
        cell_box box = {lay->cols[i].twips, 1, VMERGE_NONE, lay->cols[i].jc, 0};
        if (i >= count) {
            write_cell(c, lay, &box, "", 0, NULL, NULL); /* a short row */
            continue;
        }
        const kiln_cell *cell = &cells[i];
        char buf[KILN_NUMFMT_MAX];
        size_t len = 0;
        const char *text =
            cell->kind == KILN_CELL_BLANK
                ? ""
                : kiln_cell_display(cell, header ? NULL : kiln_table_column(d, i), buf, sizeof buf, &len);
        const char *link = cell->kind == KILN_CELL_URL ? cell->text : NULL;
        write_cell(c, lay, &box, text, len, cell->style, link);
    }
    opc_xml_end(x);
}

kiln_status docx_write_table(docx_ctx *c, const kiln_table *table, const kiln_sheet *sheet,
                             const char *pointer)
{
    const kiln_table_data *d = &table->data;
    double size = c->doc->theme.font_size > 0 ? c->doc->theme.font_size : DOCX_BODY_DEFAULT_PT;
    table_layout lay = {.scale = size / DOCX_BODY_DEFAULT_PT, .margin_twips = CELL_MARGIN_TWIPS,
                        .body_pt = size, .factor = 1.0};

    table_merges merges;
    kiln_status st = merges_init(c, sheet, &merges, pointer);
    if (st != KILN_E_OK)
        return st;
    const kiln_cell *hdr = NULL;
    if (d->header && d->column_count && !(hdr = header_cells(c, d)))
        return kiln_error_set(c->err, KILN_E_NOMEM, pointer, "out of memory laying out a table");

    st = measure(c, d, hdr, &merges, &lay, pointer);
    if (st != KILN_E_OK)
        return st;
    if (lay.ncols == 0)
        return KILN_E_OK;
    for (size_t i = 0; i < lay.ncols; i++)
        lay.cols[i].jc = column_jc(kiln_table_column(d, i), &lay.cols[i]);
    widen_for_merges(&lay, d, &merges);
    double avail = c->text_width_pt > 72 ? c->text_width_pt : 72;
    if (fit_widths(&lay, d, avail) == 0)
        return KILN_E_OK; /* every column hidden */
    shrink_to_fit(&lay, d, avail);
    merges_clip(&merges, &lay);
    kiln_merge_walk_rewind(&merges.walk);

    opc_xml *x = c->x;
    opc_xml_start(x, "w:tbl");
    write_tbl_pr(c, &lay, table);
    uint32_t row = 0; /* the worksheet row */
    int any_row = hdr != NULL;
    if (hdr)
        write_row(c, &lay, d, &merges, row++, 1, hdr, d->column_count);

    kiln_row_reader *reader = NULL;
    st = kiln_rows_open(c->doc, d, &reader, c->err);
    if (st != KILN_E_OK)
        return st;
    const kiln_cell *cells;
    size_t count;
    int more;
    while ((more = kiln_rows_next(reader, &cells, &count, c->err)) == 1) {
        write_row(c, &lay, d, &merges, row, 0, cells, count);
        any_row = 1;
        if (row < UINT32_MAX)
            row++;
        if (c->status != KILN_E_OK) { /* a hyperlink's relationship */
            st = c->status;
            goto cleanup_reader;
        }
        if (opc_xml_failed(x))
            break; /* out of memory, or past the output ceiling: stop reading rows */
    }
    if (more < 0) {
        st = c->err->code != KILN_E_OK ? c->err->code : KILN_E_INPUT;
        goto cleanup_reader;
    }
    if (!any_row) {
        /* Columns but neither a header row nor data: Word rejects a w:tbl
         * without a w:tr (it offers to repair the file), so the table gets
         * one row of empty cells, without the sheet's merges (they would
         * make up content for rows the table does not have). */
        table_merges none = {0};
        write_row(c, &lay, d, &none, 0, 0, NULL, 0);
    }
    opc_xml_end(x); /* w:tbl */
    if (opc_xml_failed(x))
        st = opc_xml_error(x, pointer, c->err);

cleanup_reader:
    kiln_rows_close(reader);
    return st;
}
