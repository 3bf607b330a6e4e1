/*
 * docx_table.c - a table block, or a sheet's data, as a Word table (w:tbl).
 *
 * The layout is artifacts/layout/table_layout.h's, under the rules below
 * (docx_rules); this file writes its result. Rows are streamed: a table's
 * rows may come from a CSV or JSON Lines file of any length, so they are
 * read through the row reader twice, never held. The first pass
 * (kiln_table_layout_init) measures every row (the header and all the cells
 * give the column widths, the number of columns when the table defines
 * none and, for untyped columns, the alignment): a width taken from the
 * first rows only lets a longer value further down ("4,997" after "1") wrap
 * in the middle. Measuring costs a fraction of writing a row's XML. The
 * second pass writes.
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
 * with Calibri's advance widths, bold as 5% wider) or, when it has one, its explicit width
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
 * fit, never below 7 pt; a cell's own size is scaled by the
 * same factor, and explicit widths, being characters of that font, with
 * it. Wanted widths alone never shrink the font: a long sentence wraps.
 * Only when the needs do not fit even at 7 pt are the columns squeezed:
 * every column is capped at one width, so narrow columns keep what they
 * need and the longest words are broken. Never wider than the text width;
 * never narrower than its margins and 11 pt unless the columns
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

#include "../layout/numfmt.h"
#include "../layout/table_layout.h"
#include "docx_internal.h"
#include "../../common/banned.h"

/* Left and right cell margins: the KilnTable style's, and the narrower ones
 * a table gets when its columns do not fit otherwise. */
#define CELL_MARGIN_TWIPS 108
#define NARROW_MARGIN_TWIPS 58

/* The layout rules of a Word table (table_layout.h). No font is loaded and
 * the theme font may not be Calibri: a little slack (at the body size; it
 * shrinks with the font) keeps a cell that should fit on one line from
 * wrapping. The narrowest column is its margins and about two digits. */
static const kiln_table_rules docx_rules = {
    .pad_pt = 2.0 * CELL_MARGIN_TWIPS / DOCX_TWIPS_PER_PT,
    .narrow_pad_pt = 2.0 * NARROW_MARGIN_TWIPS / DOCX_TWIPS_PER_PT,
    .slack_pt = 2.0,
    .slack_scales = 1,
    .min_text_pt = 11.0,
    .min_need = 1,
    .explicit_excel_px = 1,
    .widen_for_merges = 1,
    .shrink = KILN_SHRINK_HALF_POINTS,
    .min_font_pt = 7.0,
};
/* Bold text (the header row) is wider than regular: measured with the
 * regular widths, this much wider. */
#define BOLD_FACTOR 1.05

enum { VMERGE_NONE, VMERGE_RESTART, VMERGE_CONTINUE };

double docx_table_run_size(const kiln_table_layout *tl, const kiln_style *style)
{
    double own = style && style->size > 0 ? style->size : 0;
    if (!tl->shrunk)
        return own;
    if (own <= 0)
        return tl->size;
    double scaled = floor(own * (tl->size / tl->rules.base_pt) * 2.0) / 2.0;
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

/* Where a cell goes (its slot) and its width in twips. */
static void write_tc_pr(opc_xml *x, const kiln_table_slot *slot, int64_t twips, size_t grid_span,
                        int vmerge)
{
    const kiln_style *style = slot->style;
    opc_xml_start(x, "w:tcPr");
    opc_xml_start(x, "w:tcW");
    opc_xml_attr_int(x, "w:w", twips);
    opc_xml_attr(x, "w:type", "dxa");
    opc_xml_end(x);
    if (grid_span > 1)
        opc_xml_val_int(x, "w:gridSpan", "w:val", (int64_t)grid_span);
    if (vmerge == VMERGE_RESTART)
        opc_xml_val(x, "w:vMerge", "w:val", "restart");
    else if (vmerge == VMERGE_CONTINUE)
        opc_xml_empty(x, "w:vMerge");
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
    const char *v = slot->valign == KILN_VALIGN_TOP      ? "top"
                    : slot->valign == KILN_VALIGN_MIDDLE ? "center"
                    : slot->valign == KILN_VALIGN_BOTTOM ? "bottom"
                                                         : NULL;
    if (v)
        opc_xml_val(x, "w:vAlign", "w:val", v);
    opc_xml_end(x);
}

/* One cell: its properties, one paragraph, its text (what the slot shows,
 * nothing below a range's first row) as one run. */
static void write_cell(docx_ctx *c, const kiln_table_layout *tl, const kiln_table_slot *slot,
                       int64_t twips, size_t grid_span, int vmerge)
{
    opc_xml *x = c->x;
    const kiln_style *style = slot->style;
    opc_xml_start(x, "w:tc");
    write_tc_pr(x, slot, twips, grid_span, vmerge);

    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    opc_xml_start(x, "w:spacing");
    opc_xml_attr(x, "w:after", "0");
    opc_xml_attr(x, "w:line", "240");
    opc_xml_attr(x, "w:lineRule", "auto");
    opc_xml_end(x);
    opc_xml_val(x, "w:jc", "w:val", docx_jc_value(slot->align));
    double size = docx_table_run_size(tl, style);
    if (tl->shrunk) {
        /* A shrunk table: the paragraph mark too, or an empty cell keeps
         * the row at the body size's height. */
        opc_xml_start(x, "w:rPr");
        opc_xml_val_int(x, "w:sz", "w:val", (int64_t)(size * 2 + 0.5));
        opc_xml_end(x);
    }
    opc_xml_end(x); /* w:pPr */

    const kiln_cell *cell = slot->kind == KILN_SLOT_MERGE_BELOW ? NULL : slot->cell;
    char buf[KILN_NUMFMT_MAX];
    size_t len = 0;
    const char *text = cell && cell->kind != KILN_CELL_BLANK
                           ? kiln_cell_display(cell, slot->format, buf, sizeof buf, &len)
                           : "";
    if (len > 0) {
        kiln_run run = {.text = text,
                        .len = len,
                        .color = KILN_COLOR_NONE,
                        .link = cell->kind == KILN_CELL_URL ? cell->text : NULL,
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

static void write_tbl_pr(docx_ctx *c, const kiln_table_layout *tl, const int64_t *twips,
                         const kiln_table *table)
{
    opc_xml *x = c->x;
    int64_t total = 0;
    for (size_t i = 0; i < tl->ncols; i++)
        if (!tl->cols[i].hidden)
            total += twips[i];

    opc_xml_start(x, "w:tblPr");
    opc_xml_val(x, "w:tblStyle", "w:val", DOCX_STYLE_TABLE);
    opc_xml_start(x, "w:tblW");
    opc_xml_attr_int(x, "w:w", total);
    opc_xml_attr(x, "w:type", "dxa");
    opc_xml_end(x);
    opc_xml_val(x, "w:tblLayout", "w:type", "fixed");
    if (tl->pad != docx_rules.pad_pt) {
        opc_xml_start(x, "w:tblCellMar");
        opc_xml_start(x, "w:left");
        opc_xml_attr_int(x, "w:w", NARROW_MARGIN_TWIPS);
        opc_xml_attr(x, "w:type", "dxa");
        opc_xml_end(x);
        opc_xml_start(x, "w:right");
        opc_xml_attr_int(x, "w:w", NARROW_MARGIN_TWIPS);
        opc_xml_attr(x, "w:type", "dxa");
        opc_xml_end(x);
        opc_xml_end(x);
    }
    /* The header row's look when there is one, banded rows, no first
     * column; w:val is the same as a bit mask, which Word 2007 reads. */
    int header = tl->hdr != NULL;
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
    for (size_t i = 0; i < tl->ncols; i++)
        if (!tl->cols[i].hidden)
            opc_xml_val_int(x, "w:gridCol", "w:w", twips[i]);
    opc_xml_end(x);
}

/* One row: worksheet row `row`, cells[count] its values (the header row:
 * the headers, marked to repeat on every page); merges 0: without the
 * sheet's merges. A merged range is one w:tc with w:gridSpan at its lead
 * column, w:vMerge restart in its first row and continue below. */
static void write_row(docx_ctx *c, kiln_table_layout *tl, const int64_t *twips, uint32_t row,
                      int header, const kiln_cell *cells, size_t count, int merges)
{
    opc_xml *x = c->x;
    const kiln_table_slot *slots = kiln_table_layout_row(tl, row, header, cells, count, merges);
    opc_xml_start(x, "w:tr");
    opc_xml_start(x, "w:trPr");
    opc_xml_empty(x, "w:cantSplit");
    if (header)
        opc_xml_empty(x, "w:tblHeader");
    opc_xml_end(x);
    for (size_t i = 0; i < tl->ncols; i++) {
        const kiln_table_slot *slot = &slots[i];
        if (slot->kind == KILN_SLOT_HIDDEN || slot->kind == KILN_SLOT_COVERED)
            continue;
        size_t span = slot->merge == KILN_MERGE_NONE ? 1 : tl->spans[slot->merge].shown;
        int vmerge = slot->kind == KILN_SLOT_MERGE_BELOW                     ? VMERGE_CONTINUE
                     : slot->kind == KILN_SLOT_MERGE_TOP && slot->open_below ? VMERGE_RESTART
                                                                             : VMERGE_NONE;
        write_cell(c, tl, slot, kiln_table_layout_slot_sum(tl, i, slot, twips), span, vmerge);
    }
    opc_xml_end(x);
}

kiln_status docx_table_layout(const docx_ctx *c, const kiln_table_data *d,
                              const kiln_sheet *sheet, const char *pointer, kiln_table_layout *tl,
                              kiln_calibri_metrics *metrics, size_t *shown)
{
    kiln_table_rules rules = docx_rules;
    rules.base_pt = rules.body_pt = c->doc->theme.font_size > 0 ? c->doc->theme.font_size
                                                                : DOCX_BODY_DEFAULT_PT;
    kiln_calibri_metrics_init(metrics, BOLD_FACTOR);
    *shown = 0;
    kiln_status st = kiln_table_layout_init(tl, c->doc, d, sheet, kiln_table_has_header(d),
                                            &rules, &metrics->m, c->arena, c->err, pointer);
    if (st != KILN_E_OK || tl->ncols == 0)
        return st;
    double avail = c->text_width_pt > 72 ? c->text_width_pt : 72;
    *shown = kiln_table_layout_fit(tl, avail, 0);
    return KILN_E_OK;
}

kiln_status docx_write_table(docx_ctx *c, const kiln_table *table, const kiln_sheet *sheet,
                             const char *pointer)
{
    const kiln_table_data *d = &table->data;
    kiln_calibri_metrics metrics;
    kiln_table_layout tl;
    size_t shown;
    kiln_status st = docx_table_layout(c, d, sheet, pointer, &tl, &metrics, &shown);
    if (st != KILN_E_OK || shown == 0)
        return st; /* no columns, or every column hidden: nothing */
    int64_t *twips = kiln_arena_calloc(c->arena, tl.ncols, sizeof *twips);
    if (!twips)
        return kiln_error_set(c->err, KILN_E_NOMEM, pointer, "out of memory laying out a table");
    for (size_t i = 0; i < tl.ncols; i++) {
        twips[i] = (int64_t)(tl.cols[i].width * DOCX_TWIPS_PER_PT);
        if (twips[i] < 1)
            twips[i] = 1;
    }

    opc_xml *x = c->x;
    opc_xml_start(x, "w:tbl");
    write_tbl_pr(c, &tl, twips, table);
    uint32_t row = 0; /* the worksheet row */
    int any_row = tl.hdr != NULL;
    if (tl.hdr)
        write_row(c, &tl, twips, row++, 1, tl.hdr, d->column_count, 1);

    kiln_row_reader *reader = NULL;
    st = kiln_rows_open(c->doc, d, &reader, c->err);
    if (st != KILN_E_OK)
        return st;
    const kiln_cell *cells;
    size_t count;
    int more;
    while ((more = kiln_rows_next(reader, &cells, &count, c->err)) == 1) {
        write_row(c, &tl, twips, row, 0, cells, count, 1);
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
        write_row(c, &tl, twips, 0, 0, NULL, 0, 0);
    }
    opc_xml_end(x); /* w:tbl */
    if (opc_xml_failed(x))
        st = opc_xml_error(x, pointer, c->err);

cleanup_reader:
    kiln_rows_close(reader);
    return st;
}
