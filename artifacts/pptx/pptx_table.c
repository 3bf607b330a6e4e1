/*
 * pptx_table.c - a table (a table block's, a table slide's or a sheet's
 * rows) as DrawingML tables in graphic frames, one slide's worth of rows at
 * a time.
 *
 * A slide has a fixed height, so a long table continues over as many slides
 * as it needs, each with its own a:tbl, the header row repeated at the top
 * of every one. The layout is artifacts/layout/table_layout.h's, under the
 * rules below (pptx_rules), measured with Calibri's advance widths; this
 * file cuts the rows into slides and writes them. The rows are streamed:
 * pptx_table_open measures the header and the first 200 rows with one row
 * reader (the column widths and the font size), then opens a second reader
 * that pptx_table_write draws from. Each slide's rows are copied (their display text, style and
 * link) into a scratch arena of their own; the row that no longer fits is kept in it for the next
 * slide, so the table holds two slides' rows at most, however long it is. A longer value further
 * down than the measured rows simply wraps in its cell.
 *
 * What PowerPoint gets, as it writes a table itself: a p:graphicFrame in the
 * layout's content placeholder (idx 1), so "Reset" and the layout keep
 * working; the table style PPTX_TABLE_STYLE_ID (tableStyles.xml) with
 * firstRow and bandRow on, which gives borders and banding; the header row
 * filled with the theme's header fill and set bold in its header font color,
 * written explicitly on each cell, since the style's own first-row colors
 * are the accent's and the spec's theme may say otherwise; cell text as
 * Excel shows it (numfmt.h, the same text as the docx and pdf writers);
 * numbers and dates right-aligned (typed numeric columns, untyped columns
 * whose measured values are all numbers, number cells in mixed columns),
 * booleans centered, a column's align honoured; a cell's style (bold,
 * italic, underline, strike, color, fill, size, align, valign, border); URL
 * cells as hyperlinks (an external relationship of the slide).
 *
 * Widths: a column wants its widest line and needs its widest word (a
 * number or a date is one word and never wraps), at the table's font, plus
 * the cell margins (PowerPoint's defaults, 0.1 in left and right); an
 * explicit width (Excel characters) is what it wants instead. The font is
 * 14 pt; when the wanted widths do not fit the area, it steps down a point
 * at a time to 10 pt. When they still do not fit, each column gets its need
 * plus a share of the rest in proportion to what it lacks (text wraps
 * between words); when not even the needs fit, text columns are capped at
 * one width (their longest words break) while numeric columns keep their
 * widest number. A table narrower than the area is widened to its full
 * width, the extra shared in proportion to what each column wants. A column
 * of width 0 is hidden, as in Excel.
 *
 * Heights: a row is as tall as its tallest cell, wrapped lines x font size
 * x 1.2 plus the top and bottom margins (0.05 in each), which is close to
 * what PowerPoint draws with Calibri. Rows go on a slide until the next one
 * would pass the bottom of the area; a slide always takes at least one data
 * row, and when that row alone is taller than the area it overflows the
 * slide (counted in the render result's overflow_slides).
 *
 * Wide tables: when the columns' needs do not fit the slide's width even at
 * 10 pt, the columns are split into groups that do, each shown over as
 * many slides as the rows need (all the rows of the first group, then all
 * the rows of the next, ...), with the first column repeated at the left of
 * every group as the rows' key, as a printed spreadsheet repeats its
 * titles. So no column is squeezed narrower than its longest word or
 * number, and a 40-column table reads as five slide-wide tables instead of
 * one of unreadable slivers. Each group is fitted on its own.
 *
 * Merges (a sheet's "merges") follow the docx writer: rows are numbered as
 * in the worksheet (row 0 is the header row when the table has one); a
 * range is one cell spanning its shown columns (gridSpan, hMerge on the
 * cells it covers) and rows (rowSpan, vMerge), showing the merge's value in
 * the merge's format (centered) or else the top-left cell's own. A range cut
 * by a slide break continues as a merge of its own on the next slide, empty
 * but with the range's fill; the repeated header row's ranges end at the
 * header. Cells a merge covers are not measured; a range's text is measured
 * in its column when it shows in one, else it wraps in the columns it spans.
 * A range that spans rows adds its text's height to its first row only.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../layout/numfmt.h"
#include "../layout/table_layout.h"
#include "pptx_internal.h"
#include "../../common/banned.h"

/* Font sizes, points: the default, and the smallest a wide table shrinks to. */
#define FONT_MAX 14.0
#define FONT_MIN 10.0
#define FONT_WRAP 12.0 /* below this only for words that do not fit */
/* The fewest rows a table's last slide takes when the slide before can
 * spare them (no single orphaned row). */
#define ORPHAN_ROWS 3u
/* A column of a wide table split into groups gets up to this much room for
 * its text (1.25 in) before the next group starts. */
#define GROUP_COL_PT 90.0
/* Line height as a multiple of the font size. */
#define LINE_FACTOR 1.2
/* PowerPoint's default cell margins (a:tcPr marL/marR and marT/marB). */
#define CELL_MAR_X 91440
#define CELL_MAR_Y 45720
/* The narrowest column: its margins and about two digits. */
#define MIN_TEXT_EMU (11 * PPTX_EMU_PER_PT)
#define BORDER_COLOR 0x404040

/* The layout rules of a slide's table (table_layout.h): the first 200 rows
 * measured; numbers never broken, and never narrower than their widest
 * number even under an explicit width (Excel characters, 7 px and 5 px at
 * 11 pt scaled with the font); PowerPoint's default margins; 2 pt of slack,
 * since measuring and PowerPoint's line breaking may differ a little and
 * text measured to fit on one line must not wrap; the narrowest column its
 * margins and 11 pt; 14 pt stepping down a point at a time to 10 pt (the
 * comment at the top); a table narrower than the area widened to all of it;
 * when not even the needs fit, text columns capped while numbers keep
 * their width. */
static const kiln_table_rules pptx_rules = {
    .base_pt = FONT_MAX,
    .body_pt = FONT_MAX,
    .measure_rows = 200,
    .numbers_whole = 1,
    .pad_pt = 2.0 * CELL_MAR_X / PPTX_EMU_PER_PT,
    .slack_pt = 2.0,
    .min_text_pt = 11.0,
    .explicit_floored = 1,
    .explicit_excel_px = 1,
    .explicit_holds_numbers = 1,
    .fill_width = 1,
    .numbers_keep_need = 1,
    .shrink = KILN_SHRINK_STEPS,
    .min_font_pt = FONT_MIN,
    .wrap_font_pt = FONT_WRAP,
    .font_step_pt = 1.0,
    .mixed_per_cell = 1,
};

/* ------------------------------------------------------------------ model */

/* One cell as it will be written: everything copied out of the row reader. */
typedef struct table_cell {
    const char *text;
    size_t len;
    const char *link; /* URL, or NULL */
    kiln_style style;
    int has_style;
    int numeric;  /* a number or a date (never right-to-left) */
    size_t merge; /* index of the range covering it, or KILN_MERGE_NONE */
    int merge_look;
    kiln_align align; /* resolved by the layout */
    kiln_valign valign;
} table_cell;

typedef struct table_row {
    table_cell *cells; /* t->ncols cells (hidden columns included, unused) */
    uint32_t ws_row;   /* the worksheet row */
    int64_t height;    /* EMU */
    int header;
} table_row;

struct pptx_table {
    pptx_ctx *c;
    const kiln_table_data *d;
    const char *pointer;
    pptx_rect area;
    kiln_calibri_metrics metrics;
    kiln_table_layout tl; /* the columns, merges and font size */
    size_t ncols;
    int64_t *width;             /* EMU per column, as written (the group's) */
    int64_t *span_width;        /* EMU per merged range, its shown columns together */
    unsigned char *user_hidden; /* width 0 in the spec: never shown */
    unsigned sz;                /* the table's font size, 1/100 pt */
    table_row head;
    int has_head;
    kiln_row_reader *reader; /* the writing pass */
    int reader_done;
    uint32_t next_ws_row;            /* worksheet row of the next data row read */
    kiln_arena scratch[2];           /* this slide's rows; the previous slide's (the kept row) */
    int cur;                         /* scratch[cur] holds the kept rows */
    table_row kept[ORPHAN_ROWS + 1]; /* the rows the previous slide left for this one: the
                                        one that did not fit, after any moved with it */
    size_t kept_count;
    size_t rows_done; /* data rows on the group's slides so far */
    table_row *rows;  /* this slide's rows (malloc'd, reused) */
    size_t row_cap;
    /* Column groups of a table too wide for a slide (see "Wide tables"):
     * group g shows columns group_first[g]..group_last[g], after key_col
     * when key_repeat[g]. One group (everything) for most tables. */
    size_t *group_first, *group_last;
    unsigned char *key_repeat;
    size_t group_count, group;
    size_t key_col;
};

static const char *algn_of(kiln_align align)
{
    switch (align) {
    case KILN_ALIGN_LEFT:
        return "l";
    case KILN_ALIGN_CENTER:
        return "ctr";
    case KILN_ALIGN_RIGHT:
        return "r";
    case KILN_ALIGN_JUSTIFY:
        return "just";
    default:
        return NULL;
    }
}

/* ------------------------------------------------------------------ widths */

/* Split the shown columns into groups whose needs at FONT_MIN fit the
 * area's width (see "Wide tables" at the top); one group when they all fit.
 * The columns' hidden flags are the spec's (user_hidden) on entry. */
static kiln_status plan_groups(pptx_table *t)
{
    kiln_table_layout *tl = &t->tl;
    double avail = (double)t->area.cx / PPTX_EMU_PER_PT;
    double need_total = 0;
    kiln_table_layout_trial(tl, FONT_MIN, tl->rules.pad_pt, avail, &need_total);
    size_t cap = t->ncols ? t->ncols : 1;
    t->group_first = kiln_arena_calloc(t->c->arena, cap, sizeof *t->group_first);
    t->group_last = kiln_arena_calloc(t->c->arena, cap, sizeof *t->group_last);
    t->key_repeat = kiln_arena_calloc(t->c->arena, cap, 1);
    if (!t->group_first || !t->group_last || !t->key_repeat)
        return pptx_nomem(t->c, t->pointer);
    t->key_col = 0;
    while (t->key_col < t->ncols && t->user_hidden[t->key_col])
        t->key_col++;
    if (need_total <= avail || t->key_col >= t->ncols) {
        t->group_first[0] = 0;
        t->group_last[0] = t->ncols ? t->ncols - 1 : 0;
        t->group_count = 1;
        return KILN_E_OK;
    }
    /* Too wide, then: the groups are made so that their columns get room to
     * read at FONT_WRAP, each its longest word and up to GROUP_COL_PT of
     * its text on a line, rather than packed as tight as 10 pt allows. */
    kiln_table_layout_trial(tl, FONT_WRAP, tl->rules.pad_pt, avail, &need_total);
    for (size_t i = 0; i < t->ncols; i++) {
        kiln_table_col *c = &tl->cols[i];
        double roomy = c->want < GROUP_COL_PT ? c->want : GROUP_COL_PT;
        c->need = c->need > roomy ? c->need : roomy;
    }
    double key_need = tl->cols[t->key_col].need;
    size_t g = 0, col = t->key_col;
    for (;;) {
        while (col < t->ncols && t->user_hidden[col])
            col++;
        if (col >= t->ncols)
            break;
        /* The key column leads every group after the first, when it leaves
         * room for at least the next column beside it. */
        int repeat = g > 0 && key_need + tl->cols[col].need <= avail;
        double used = repeat ? key_need : 0;
        size_t first = col, last = col;
        for (; col < t->ncols; col++) {
            if (t->user_hidden[col])
                continue;
            if (col > first && used + tl->cols[col].need > avail)
                break;
            used += tl->cols[col].need;
            last = col;
        }
        t->group_first[g] = first;
        t->group_last[g] = last;
        t->key_repeat[g] = (unsigned char)repeat;
        g++;
    }
    t->group_count = g;
    return KILN_E_OK;
}

/* The group's widths in EMU, from the layout's points: they add up to the
 * area's width exactly. */
static void widths_emu(pptx_table *t)
{
    const kiln_table_layout *tl = &t->tl;
    int64_t total = 0;
    int64_t *last = NULL;
    for (size_t i = 0; i < t->ncols; i++) {
        t->width[i] = 0;
        if (tl->cols[i].hidden)
            continue;
        t->width[i] = (int64_t)floor(tl->cols[i].width * PPTX_EMU_PER_PT);
        if (t->width[i] < 1)
            t->width[i] = 1;
        total += t->width[i];
        last = &t->width[i];
    }
    if (last && total != t->area.cx && *last + (t->area.cx - total) > 0)
        *last += t->area.cx - total;
    for (size_t k = 0; k < tl->walk.count; k++) {
        kiln_table_slot lead = {.merge = k};
        t->span_width[k] = kiln_table_layout_slot_sum(tl, 0, &lead, t->width);
    }
}

/* ------------------------------------------------------------------ rows */

/* Height of one line at sz (1/100 pt), EMU. */
static double line_emu(unsigned sz)
{
    return sz / 100.0 * LINE_FACTOR * PPTX_EMU_PER_PT;
}

/* The size a cell is set in, 1/100 pt. */
static unsigned cell_sz(const pptx_table *t, const table_cell *cell)
{
    if (cell->has_style && cell->style.size > 0) {
        double v = cell->style.size * 100.0 + 0.5;
        return v < 100 ? 100u : v > 400000 ? 400000u : (unsigned)v;
    }
    return t->sz;
}

/* Copy one cell out of the reader (or the model) into arena: its text as
 * shown, its link and its style. */
static int cell_copy(kiln_arena *arena, table_cell *out, const kiln_cell *cell,
                     const kiln_column *def)
{
    char buf[KILN_NUMFMT_MAX];
    size_t len = 0;
    const char *text = cell->kind == KILN_CELL_BLANK
                           ? ""
                           : kiln_cell_display(cell, def, buf, sizeof buf, &len);
    out->text = len ? kiln_arena_strndup(arena, text, len) : "";
    out->len = len;
    if (!out->text)
        return -1;
    if (cell->kind == KILN_CELL_URL && cell->text && *cell->text) {
        out->link = kiln_arena_strndup(arena, cell->text, strlen(cell->text));
        if (!out->link)
            return -1;
    }
    if (cell->style) {
        out->style = *cell->style;
        out->style.font = NULL; /* the reader's string; the theme's font is used */
        out->has_style = 1;
    }
    out->numeric = kiln_cell_is_numeric(cell);
    return 0;
}

/* The row's height: its tallest cell (a range's text counts in its first
 * row, across its columns). */
static int64_t row_height(const pptx_table *t, const table_row *row)
{
    double tallest = line_emu(t->sz);
    for (size_t i = 0; i < t->ncols; i++) {
        const table_cell *cell = &row->cells[i];
        if (t->tl.cols[i].hidden || cell->len == 0)
            continue;
        int64_t width = cell->merge != KILN_MERGE_NONE ? t->span_width[cell->merge] : t->width[i];
        unsigned sz = cell_sz(t, cell);
        double size = sz / 100.0;
        double avail = (double)(width - 2 * CELL_MAR_X) / PPTX_EMU_PER_PT;
        /* A column squeezed to its margins still sets a character a line,
         * not a line a pixel. */
        if (avail < size)
            avail = size;
        int bold = row->header || (cell->has_style && cell->style.bold);
        const void *face = t->metrics.m.face(t->metrics.m.ctx, NULL, bold);
        double h = kiln_text_line_count(&t->metrics.m, face, size, cell->text, cell->len, avail) *
                   line_emu(sz);
        if (h > tallest)
            tallest = h;
    }
    return (int64_t)ceil(tallest) + 2 * CELL_MAR_Y;
}

/* Lay out worksheet row ws_row (cells[count], NULL for an empty row) into
 * out, copied into arena; merges 0: without the sheet's merges. Rows come
 * in order, from the header row. */
static kiln_status row_prepare(pptx_table *t, kiln_arena *arena, uint32_t ws_row, int header,
                               const kiln_cell *cells, size_t count, int merges, table_row *out)
{
    memset(out, 0, sizeof *out);
    out->ws_row = ws_row;
    out->header = header;
    out->cells = kiln_arena_calloc(arena, t->ncols ? t->ncols : 1, sizeof *out->cells);
    if (!out->cells)
        return pptx_nomem(t->c, t->pointer);
    const kiln_table_slot *slots = kiln_table_layout_row(&t->tl, ws_row, header, cells, count,
                                                         merges);
    for (size_t i = 0; i < t->ncols; i++) {
        const kiln_table_slot *slot = &slots[i];
        table_cell *cell = &out->cells[i];
        cell->text = "";
        cell->merge = slot->merge;
        cell->merge_look = slot->merge_look;
        cell->align = slot->align;
        cell->valign = slot->valign;
        if (slot->kind == KILN_SLOT_HIDDEN || slot->kind == KILN_SLOT_COVERED)
            continue;
        if (slot->kind == KILN_SLOT_MERGE_BELOW) {
            /* Below the range's first row: its look, for a range continued
             * on the next slide. */
            if (slot->style) {
                cell->style = *slot->style;
                cell->has_style = 1;
            }
            continue;
        }
        if (slot->cell && cell_copy(arena, cell, slot->cell, slot->format) != 0)
            return pptx_nomem(t->c, t->pointer);
    }
    out->height = row_height(t, out);
    return KILN_E_OK;
}

/* ------------------------------------------------------------------ open / close */

/* Show column group g: its columns fitted to the area, the header row laid
 * out for them (once for all the group's slides, from the render's arena)
 * and the rows read again from the first. */
static kiln_status start_group(pptx_table *t, size_t g)
{
    pptx_ctx *c = t->c;
    t->group = g;
    for (size_t i = 0; i < t->ncols; i++) {
        int in_group = i >= t->group_first[g] && i <= t->group_last[g];
        int key = i == t->key_col && t->key_repeat[g];
        t->tl.cols[i].hidden = t->user_hidden[i] || !(in_group || key);
    }
    kiln_table_layout_fit(&t->tl, (double)t->area.cx / PPTX_EMU_PER_PT, 0);
    t->sz = (unsigned)lround(t->tl.size * 100.0);
    widths_emu(t);

    uint32_t ws_row = 0;
    t->has_head = 0;
    if (t->tl.hdr) {
        kiln_status st = row_prepare(t, c->arena, ws_row++, 1, t->tl.hdr, t->d->column_count, 1,
                                     &t->head);
        if (st != KILN_E_OK)
            return st;
        t->has_head = 1;
    }
    t->next_ws_row = ws_row;
    t->reader_done = 0;
    t->kept_count = 0;
    t->rows_done = 0;
    kiln_rows_close(t->reader);
    t->reader = NULL;
    return kiln_rows_open(c->doc, t->d, &t->reader, c->err);
}

kiln_status pptx_table_open(pptx_ctx *c, const kiln_table_data *data, const kiln_sheet *sheet,
                            pptx_rect area, const char *pointer, pptx_table **out)
{
    *out = NULL;
    pptx_table *t = calloc(1, sizeof *t);
    if (!t)
        return pptx_nomem(c, pointer);
    t->c = c;
    t->d = data;
    t->pointer = pointer ? pointer : data->pointer;
    t->area = area;
    if (t->area.cx < 2 * CELL_MAR_X + MIN_TEXT_EMU)
        t->area.cx = 2 * CELL_MAR_X + MIN_TEXT_EMU;
    kiln_arena_init(&t->scratch[0], 0);
    kiln_arena_init(&t->scratch[1], 0);
    kiln_calibri_metrics_init(&t->metrics, 0);

    /* A header row only when some column has a header to show. */
    int any_header = 0;
    for (size_t i = 0; i < data->column_count; i++)
        if (data->columns[i].header && *data->columns[i].header)
            any_header = 1;
    kiln_status st = kiln_table_layout_init(&t->tl, c->doc, data, sheet,
                                            kiln_table_has_header(data) && any_header,
                                            &pptx_rules, &t->metrics.m, c->arena, c->err,
                                            t->pointer);
    /* No columns at all: one empty column, as a:tbl needs a grid. */
    if (st == KILN_E_OK)
        st = kiln_table_layout_min_cols(&t->tl, 1);
    if (st != KILN_E_OK)
        goto close_table;
    t->ncols = t->tl.ncols;
    if (t->tl.shown == 0)
        t->tl.cols[0].hidden = 0; /* every column hidden: still a grid of one */
    t->width = kiln_arena_calloc(c->arena, t->ncols, sizeof *t->width);
    t->span_width = kiln_arena_calloc(c->arena, t->tl.walk.count + 1, sizeof *t->span_width);
    t->user_hidden = kiln_arena_calloc(c->arena, t->ncols, 1);
    if (!t->width || !t->span_width || !t->user_hidden) {
        st = pptx_nomem(c, t->pointer);
        goto close_table;
    }
    for (size_t i = 0; i < t->ncols; i++)
        t->user_hidden[i] = (unsigned char)t->tl.cols[i].hidden;
    if ((st = plan_groups(t)) != KILN_E_OK || (st = start_group(t, 0)) != KILN_E_OK)
        goto close_table;
    *out = t;
    return KILN_E_OK;

close_table:
    pptx_table_close(t);
    return st;
}

void pptx_table_close(pptx_table *t)
{
    if (!t)
        return;
    kiln_rows_close(t->reader);
    kiln_arena_release(&t->scratch[0]);
    kiln_arena_release(&t->scratch[1]);
    free(t->rows);
    free(t);
}

/* ------------------------------------------------------------------ writing */

static void write_solid_fill(opc_xml *x, int32_t rgb)
{
    opc_xml_start(x, "a:solidFill");
    opc_xml_start(x, "a:srgbClr");
    opc_xml_attr_color(x, "val", rgb);
    opc_xml_end(x);
    opc_xml_end(x);
}

/* a:rPr / a:endParaRPr: the run's look; link_rid 0 = no link. */
static void write_rpr(opc_xml *x, const char *name, unsigned sz, const kiln_style *style,
                      int bold, int32_t color, unsigned link_rid)
{
    opc_xml_start(x, name);
    opc_xml_attr(x, "lang", "en-US");
    opc_xml_attr_uint(x, "sz", sz);
    if (bold || (style && style->bold))
        opc_xml_attr(x, "b", "1");
    if (style && style->italic)
        opc_xml_attr(x, "i", "1");
    if (style && style->underline)
        opc_xml_attr(x, "u", "sng");
    if (style && style->strike)
        opc_xml_attr(x, "strike", "sngStrike");
    if (style && style->color != KILN_COLOR_NONE)
        color = style->color;
    if (color >= 0 && color <= 0xFFFFFF)
        write_solid_fill(x, color);
    if (link_rid) {
        char rid[24];
        snprintf(rid, sizeof rid, "rId%u", link_rid);
        opc_xml_start(x, "a:hlinkClick");
        opc_xml_attr(x, "r:id", rid);
        opc_xml_end(x);
    }
    opc_xml_end(x);
}

static void write_border(opc_xml *x, const char *side, kiln_border border)
{
    opc_xml_start(x, side);
    if (border == KILN_BORDER_NONE) {
        opc_xml_attr_int(x, "w", PPTX_EMU_PER_PT);
        opc_xml_empty(x, "a:noFill");
    } else {
        int64_t w = border == KILN_BORDER_THICK    ? 3 * PPTX_EMU_PER_PT
                    : border == KILN_BORDER_MEDIUM ? 3 * PPTX_EMU_PER_PT / 2
                                                   : PPTX_EMU_PER_PT;
        opc_xml_attr_int(x, "w", w);
        write_solid_fill(x, BORDER_COLOR);
    }
    opc_xml_end(x);
}

/* Where a cell sits in a merge on this slide. */
typedef struct cell_place {
    size_t grid_span, row_span; /* > 1: the range's first cell on the slide */
    int h_merge, v_merge;       /* covered by the range's first cell */
    int skip_text;              /* covered: no text */
} cell_place;

/* One a:tc. */
static kiln_status write_cell(pptx_slide *s, pptx_table *t, const table_row *row, size_t col,
                              const cell_place *place)
{
    pptx_ctx *c = s->c;
    opc_xml *x = s->x;
    const table_cell *cell = &row->cells[col];
    const kiln_style *style = cell->has_style ? &cell->style : NULL;
    opc_xml_start(x, "a:tc");
    if (place->row_span > 1)
        opc_xml_attr_uint(x, "rowSpan", place->row_span);
    if (place->grid_span > 1)
        opc_xml_attr_uint(x, "gridSpan", place->grid_span);
    if (place->h_merge)
        opc_xml_attr(x, "hMerge", "1");
    if (place->v_merge)
        opc_xml_attr(x, "vMerge", "1");

    opc_xml_start(x, "a:txBody");
    opc_xml_empty(x, "a:bodyPr");
    opc_xml_empty(x, "a:lstStyle");
    opc_xml_start(x, "a:p");
    const char *algn = algn_of(cell->align);
    /* Right-to-left text reads from the right: marked so (as body text is,
     * pptx_text.c), and set right where the column would set it left. */
    int decided = 0;
    int rtl = !cell->numeric && pptx_text_is_rtl(cell->text, cell->len, &decided);
    if (!algn)
        algn = "l";
    if (rtl && strcmp(algn, "l") == 0)
        algn = "r";
    opc_xml_start(x, "a:pPr");
    opc_xml_attr(x, "algn", algn);
    if (rtl)
        opc_xml_attr(x, "rtl", "1");
    opc_xml_end(x);

    unsigned sz = cell_sz(t, cell);
    int bold = row->header;
    int32_t color = row->header ? c->doc->theme.header_font_color : KILN_COLOR_NONE;
    unsigned rid = 0;
    if (!place->skip_text && cell->len && cell->link) {
        rid = opc_rel_add(c->pkg, s->part, OPC_REL_HYPERLINK, cell->link, 1, c->err);
        if (rid == 0)
            return pptx_nomem(c, t->pointer);
    }
    if (!place->skip_text) {
        /* Line feeds in the text are line breaks (a:br) in the paragraph. */
        const char *p = cell->text, *end = p + cell->len;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *stop = nl ? nl : end;
            size_t n = (size_t)(stop - p);
            if (n && p[n - 1] == '\r')
                n--;
            if (n) {
                opc_xml_start(x, "a:r");
                write_rpr(x, "a:rPr", sz, style, bold, color, rid);
                opc_xml_start(x, "a:t");
                opc_xml_text(x, p, n);
                opc_xml_end(x);
                opc_xml_end(x);
            }
            if (!nl)
                break;
            opc_xml_start(x, "a:br");
            write_rpr(x, "a:rPr", sz, style, bold, color, 0);
            opc_xml_end(x);
            p = nl + 1;
        }
    }
    write_rpr(x, "a:endParaRPr", sz, style, bold, color, 0);
    opc_xml_end(x); /* a:p */
    opc_xml_end(x); /* a:txBody */

    opc_xml_start(x, "a:tcPr");
    kiln_valign valign = cell->valign;
    if (valign == KILN_VALIGN_TOP)
        opc_xml_attr(x, "anchor", "t");
    else if (valign == KILN_VALIGN_MIDDLE)
        opc_xml_attr(x, "anchor", "ctr");
    else if (valign == KILN_VALIGN_BOTTOM)
        opc_xml_attr(x, "anchor", "b");
    if (style && style->border != KILN_BORDER_DEFAULT) {
        static const char *const sides[4] = {"a:lnL", "a:lnR", "a:lnT", "a:lnB"};
        for (int i = 0; i < 4; i++)
            write_border(x, sides[i], style->border);
    }
    if (style && style->fill != KILN_COLOR_NONE)
        write_solid_fill(x, style->fill);
    else if (row->header && c->doc->theme.header_fill >= 0)
        write_solid_fill(x, c->doc->theme.header_fill);
    opc_xml_end(x); /* a:tcPr */
    opc_xml_end(x); /* a:tc */
    return KILN_E_OK;
}

/* Slide row j's worksheet row continues slide row j-1's (the repeated
 * header is followed by whichever data row the slide starts with). */
static int continues(table_row *const *rows, size_t j)
{
    return j > 0 && rows[j - 1]->ws_row + 1 == rows[j]->ws_row;
}

/* One a:tr: slide row j of rows[n]. */
static kiln_status write_row(pptx_slide *s, pptx_table *t, table_row *const *rows, size_t n,
                             size_t j)
{
    opc_xml *x = s->x;
    const table_row *row = rows[j];
    opc_xml_start(x, "a:tr");
    opc_xml_attr_int(x, "h", row->height);
    for (size_t i = 0; i < t->ncols; i++) {
        if (t->tl.cols[i].hidden)
            continue;
        cell_place place = {1, 1, 0, 0, 0};
        size_t k = row->cells[i].merge;
        if (k != KILN_MERGE_NONE && t->tl.spans[k].shown > 0) {
            const kiln_table_span *span = &t->tl.spans[k];
            const kiln_range *r = &span->merge->range;
            int top = !continues(rows, j) || rows[j - 1]->ws_row < r->first_row;
            if (top) {
                size_t down = 1;
                while (j + down < n && continues(rows, j + down) &&
                       rows[j + down]->ws_row <= r->last_row)
                    down++;
                place.row_span = down;
                place.grid_span = span->shown;
            } else {
                place.v_merge = 1;
                place.skip_text = 1;
            }
            if (i != span->lead_col) {
                place.h_merge = 1;
                place.skip_text = 1;
                place.grid_span = place.row_span = 1;
            }
            /* The first cell of a range on this slide with rows before it
             * (a slide break cut it) shows nothing: its value was shown on
             * the slide before. */
            if (top && row->ws_row != r->first_row)
                place.skip_text = 1;
        }
        kiln_status st = write_cell(s, t, row, i, &place);
        if (st != KILN_E_OK)
            return st;
    }
    opc_xml_end(x);
    return KILN_E_OK;
}

uint64_t pptx_table_min_slides(const kiln_table_data *d, int64_t area_cy)
{
    if (d->source != KILN_ROWS_INLINE || d->inline_row_count == 0)
        return 1;
    /* A row is at least its margins and one line at the smallest size a
     * cell's style can set (cell_sz: 1 pt). */
    int64_t min_row = 2 * CELL_MAR_Y + (int64_t)floor(line_emu(100));
    uint64_t per_slide = area_cy > min_row ? (uint64_t)(area_cy / min_row) : 1;
    return (d->inline_row_count + per_slide - 1) / per_slide;
}

kiln_status pptx_table_fits_one_slide(pptx_table *t, int *fits)
{
    pptx_ctx *c = t->c;
    *fits = 0;
    if (t->group_count != 1)
        return KILN_E_OK;
    int64_t avail = t->area.cy - (t->has_head ? t->head.height : 0);
    int64_t used = 0;
    kiln_arena *arena = &t->scratch[0];
    for (;;) {
        const kiln_cell *cells;
        size_t count;
        int got = kiln_rows_next(t->reader, &cells, &count, c->err);
        if (got < 0)
            return c->err->code != KILN_E_OK ? c->err->code : KILN_E_INPUT;
        if (got == 0)
            break;
        table_row row;
        kiln_status st = row_prepare(t, arena, t->next_ws_row, 0, cells, count, 1, &row);
        if (st != KILN_E_OK)
            return st;
        if (t->next_ws_row < UINT32_MAX)
            t->next_ws_row++;
        used += row.height;
        if (used > avail)
            return KILN_E_OK;
    }
    *fits = 1;
    return KILN_E_OK;
}

/* Room for n rows in t->rows. */
static int rows_reserve(pptx_table *t, size_t n)
{
    if (n <= t->row_cap)
        return 0;
    size_t cap = t->row_cap ? t->row_cap * 2 : 32;
    while (cap < n)
        cap *= 2;
    table_row *rows = realloc(t->rows, cap * sizeof *rows);
    if (!rows)
        return -1;
    t->rows = rows;
    t->row_cap = cap;
    return 0;
}

kiln_status pptx_table_write(pptx_slide *s, pptx_table *t, int *more)
{
    pptx_ctx *c = s->c;
    *more = 0;
    /* This slide's rows go into the scratch the slide before last used; the
     * kept row, in the other, stays valid until the slide after this one. */
    kiln_arena *arena = &t->scratch[t->cur ^ 1];
    kiln_arena_release(arena);
    kiln_status st = KILN_E_OK;
    if (!t->kept_count && t->reader_done && t->group + 1 < t->group_count &&
        (st = start_group(t, t->group + 1)) != KILN_E_OK)
        return st;

    int64_t avail = t->area.cy - (t->has_head ? t->head.height : 0);
    int64_t used = 0;
    size_t n = 0;
    /* The kept rows were on one slide together, or one alone: they fit. */
    size_t carried = t->kept_count;
    if (rows_reserve(t, carried + 1) != 0)
        return pptx_nomem(c, t->pointer);
    for (size_t k = 0; k < carried; k++) {
        t->rows[n++] = t->kept[k];
        used += t->kept[k].height;
    }
    t->kept_count = 0;
    while (!t->reader_done) {
        const kiln_cell *cells;
        size_t count;
        int got = kiln_rows_next(t->reader, &cells, &count, c->err);
        if (got < 0)
            return c->err->code != KILN_E_OK ? c->err->code : KILN_E_INPUT;
        if (got == 0) {
            t->reader_done = 1;
            break;
        }
        table_row row;
        st = row_prepare(t, arena, t->next_ws_row, 0, cells, count, 1, &row);
        if (st != KILN_E_OK)
            return st;
        if (t->next_ws_row < UINT32_MAX)
            t->next_ws_row++;
        if (n > 0 && used + row.height > avail) {
            t->kept[0] = row;
            t->kept_count = 1;
            break;
        }
        if (rows_reserve(t, n + 1) != 0)
            return pptx_nomem(c, t->pointer);
        t->rows[n++] = row;
        used += row.height;
    }
    /* No orphans: when the rows are in the spec (so their number is known)
     * and fewer than ORPHAN_ROWS would be left for the last slide, this one
     * gives it some of its own. Only rows read for this slide move, since
     * the carried ones live in the scratch the next slide releases. */
    if (t->kept_count && t->d->source == KILN_ROWS_INLINE &&
        t->d->inline_row_count > t->rows_done + n) {
        size_t left = t->d->inline_row_count - (t->rows_done + n);
        size_t move = left < ORPHAN_ROWS ? ORPHAN_ROWS - left : 0;
        if (move && n >= carried + move && n - move >= ORPHAN_ROWS) {
            int64_t h = t->kept[0].height;
            for (size_t k = n - move; k < n; k++)
                h += t->rows[k].height;
            if (h <= avail) {
                t->kept[move] = t->kept[0];
                for (size_t k = 0; k < move; k++) {
                    t->kept[k] = t->rows[n - move + k];
                    used -= t->kept[k].height;
                }
                t->kept_count = move + 1;
                n -= move;
            }
        }
    }
    t->rows_done += n;
    t->cur ^= 1;

    /* The slide's rows in order, the header first. */
    size_t total = n + (t->has_head ? 1 : 0);
    table_row empty;
    if (total == 0) {
        /* Neither a header nor data: a:tbl needs a row, so one empty row
         * (without the sheet's merges, which would make up content). */
        if ((st = row_prepare(t, arena, 0, 0, NULL, 0, 0, &empty)) != KILN_E_OK)
            return st;
        total = 1;
    }
    table_row **order = kiln_arena_calloc(arena, total, sizeof *order);
    if (!order)
        return pptx_nomem(c, t->pointer);
    size_t m = 0;
    if (t->has_head)
        order[m++] = &t->head;
    for (size_t j = 0; j < n; j++)
        order[m++] = &t->rows[j];
    if (m == 0)
        order[m++] = &empty;
    int64_t height = 0;
    for (size_t j = 0; j < m; j++)
        height += order[j]->height;
    if (n == 1 && used > avail && c->result) {
        /* One row taller than the whole area: it overflows the slide. */
        c->result->overflow_slides++;
        if (!c->result->overflow_first)
            c->result->overflow_first = s->number;
    }

    opc_xml *x = s->x;
    pptx_rect frame = {t->area.x, t->area.y, t->area.cx, height};
    pptx_write_frame_start(s, "Table", 1, NULL, frame,
                           "http://schemas.openxmlformats.org/drawingml/2006/table");
    opc_xml_start(x, "a:tbl");
    opc_xml_start(x, "a:tblPr");
    opc_xml_attr(x, "firstRow", t->has_head ? "1" : "0");
    opc_xml_attr(x, "bandRow", "1");
    opc_xml_element_text(x, "a:tableStyleId", PPTX_TABLE_STYLE_ID);
    opc_xml_end(x);
    opc_xml_start(x, "a:tblGrid");
    for (size_t i = 0; i < t->ncols; i++) {
        if (t->tl.cols[i].hidden)
            continue;
        opc_xml_start(x, "a:gridCol");
        opc_xml_attr_int(x, "w", t->width[i]);
        opc_xml_end(x);
    }
    opc_xml_end(x);
    for (size_t j = 0; j < m; j++) {
        if ((st = write_row(s, t, order, m, j)) != KILN_E_OK)
            return st;
        if (opc_xml_failed(x))
            break; /* out of memory, or past the output ceiling */
    }
    opc_xml_end(x); /* a:tbl */
    opc_xml_end(x); /* a:graphicData */
    opc_xml_end(x); /* a:graphic */
    opc_xml_end(x); /* p:graphicFrame */
    if (opc_xml_failed(x))
        return opc_xml_error(x, t->pointer, c->err);
    *more = t->kept_count > 0 || t->group + 1 < t->group_count;
    return KILN_E_OK;
}