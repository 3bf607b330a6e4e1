/*
 * pdf_table.c - a table block, or a sheet's data, as a report table.
 *
 * The layout is artifacts/layout/table_layout.h's, under the rules below
 * (pdf_rules), measured with the fonts the PDF embeds; this file breaks the
 * cells' lines (pdf_text.c), paginates and draws. Rows are streamed: a
 * table's rows may come from a CSV or JSON Lines file of any length, so
 * they are read through the row reader twice and never held. The first
 * pass (kiln_table_layout_init) measures (the column widths, the number of
 * columns when the table defines none, the alignment of untyped columns);
 * the second lays out and draws one row at a time. Each cell slot of the row keeps
 * its paragraph arrays from row to row (pdf_text.c reuses them), and what
 * a row copies (formatted numbers) comes from a scratch arena released
 * after the row is drawn, so a 200,000-row table needs the memory of one
 * row, not of all of them.
 *
 * The measuring pass reads the first 2,000 rows only. Unlike the
 * docx writer (which measures every row because measuring costs a fraction
 * of writing a row's XML), laying out a PDF row costs no more than measuring
 * it, and a table's widths are settled by its first rows in practice: a
 * longer value further down simply wraps in its cell. Past the cap the pass
 * still reads on, without measuring, when later rows may be wider than the
 * scanned ones (JSON rows, CSV without column definitions), so no cell is
 * ever dropped.
 *
 * What the table looks like, to match the docx writer's "Kiln Table" and
 * what a reader of a printed report expects:
 *   - "Table N: caption" above the table (the docx writer's numbering; a
 *     caption that already starts with "Table N" is kept as written), kept
 *     on one page with the header row and the first data row;
 *   - the header row bold on the theme's header fill in its header font
 *     color, repeated at the top of every page the table continues on;
 *   - thin grey borders around every cell, light banding of the data rows;
 *   - cell text as Excel shows it (numfmt.h); numbers and dates right-
 *     aligned (typed numeric columns, untyped columns whose values are all
 *     numbers, and number cells in mixed columns, as Excel's General
 *     alignment does), booleans centered, a column's align honoured; cell
 *     styles: bold, italic, underline, strike, color, fill, size, font,
 *     align, valign, and medium/thick borders;
 *   - URL cells as links (blue, underlined, clickable).
 *
 * Widths: a column wants its widest line (header or cell) and needs its
 * widest word (a number or a date is one word; a word of text counts for
 * at most a quarter of the text width: a URL breaks rather than shrink the
 * whole table), or wants its explicit width
 * (Excel characters: the body font's digit width, as the docx writer
 * converts them). When the wants do not fit the text width, an explicit
 * width first gives up what its content leaves blank; then each column
 * gets its need plus a share of the rest proportional to what it lacks
 * (text wraps between words). When even the needs do not fit, the cell
 * padding narrows, then the font shrinks half a point at a time down to
 * 7 pt (as the docx writer), and only then are the widest columns
 * capped at one width (their longest words break inside, which the
 * paragraph breaker does). A column of width 0 is hidden, as in Excel.
 *
 * Pagination: a row that does not fit in the space left goes to the next
 * page, after the repeated header row. A row taller than a whole page is
 * split between its lines: each cell draws the lines that fit and continues
 * on the next page.
 *
 * Merges (a sheet's "merges") follow the docx writer: rows are numbered as
 * in the worksheet (row 0 is the header row when the table has one), the
 * merged cell spans its columns and shows the merge's value in the merge's
 * format (centered) or else the top-left cell's own value; a range over
 * several rows shows its value in its first row and leaves out the lines
 * between its rows (a range cut by a page break is closed at the page's
 * foot). Cells a merge hides are not shown. A range's text is measured in
 * its column when it covers one, else it wraps inside the columns it spans.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../layout/numfmt.h"
#include "../layout/table_layout.h"
#include "pdf_internal.h"
#include "../../common/banned.h"

/* The smallest a number is set to keep it on one line. A number split over
 * lines reads as two values, which is worse than small type (a reader can
 * zoom), so the floor is only there to keep degenerate widths finite. */
#define MIN_NUMBER_SIZE 1.0
/* Cell padding: top and bottom (left and right: pdf_rules). */
#define PAD_Y 3.0
/* Line height in cells: tighter than body text, as tables are set. */
#define CELL_LEADING 1.2
/* Cells are set a little smaller than the body text, as report tables are. */
#define TABLE_FONT_FACTOR 0.9
#define BORDER_COLOR 0xBFBFBF
#define BORDER_PT 0.5
#define STRONG_BORDER_COLOR 0x404040
#define LINK_COLOR 0x0563C1    /* Word's Hyperlink style */
#define CAPTION_COLOR 0x44546A /* the docx Caption style's */
#define DEFAULT_HEADER_FILL 0xD9D9D9
#define TEXT_COLOR 0x000000

double pdf_table_min_height(const kiln_table_data *d)
{
    /* A row is at least its padding and one line of a number shrunk to its
     * floor; only the rows in the spec are known before they are read. */
    double rows = (double)(d->source == KILN_ROWS_INLINE ? d->inline_row_count : 0) +
                  (d->header ? 1 : 0);
    return rows * (2.0 * PAD_Y + MIN_NUMBER_SIZE * CELL_LEADING);
}

/* The layout rules of a PDF table (table_layout.h): the first 2,000 rows
 * measured; numbers never broken; 4 pt of padding left and right, 2 pt when
 * the columns do not fit; 1 pt of slack, since measuring and breaking may
 * round differently and a cell measured to fit on one line must not wrap;
 * the narrowest column two digits; explicit widths in digits of the body
 * font, giving up their blank part first; a word of text claims at most a
 * quarter of the text width; the font shrinks to 7 pt at the least. */
static const kiln_table_rules pdf_rules = {
    .measure_rows = 2000,
    .numbers_whole = 1,
    .pad_pt = 8.0,
    .narrow_pad_pt = 4.0,
    .slack_pt = 1.0,
    .min_need = 1,
    .explicit_floored = 1,
    .explicit_gives_up = 1,
    .word_cap = 0.25,
    .shrink = KILN_SHRINK_HALF_POINTS,
    .min_font_pt = 7.0,
    .mixed_per_cell = 1,
};

/* ------------------------------------------------------------------ model */

typedef struct table_cell {
    double x, w;
    pdf_para para;
    size_t next;  /* first line not drawn yet (a row split over pages) */
    size_t take;  /* lines drawn in the current segment */
    double min_h; /* content height of an empty cell: one line */
    int32_t fill;
    kiln_valign valign;
    kiln_border border;
    int open_below;   /* a merged range continues in the row below */
    const char *link; /* URL (main arena), or NULL */
} table_cell;

typedef struct table_row {
    table_cell *cells;
    size_t count, cap;
    double height; /* the whole row: content and padding */
    int32_t fill;  /* behind the whole row (header, banding), or NONE */
    int split;     /* part of it is already drawn */
} table_row;

typedef struct table_layout {
    pdf_ctx *ctx;
    const kiln_table_data *d;
    kiln_arena *keep;     /* the render's arena: what outlives a row */
    kiln_arena scratch;   /* one row's paragraphs */
    kiln_table_layout tl; /* the columns, merges and font size */
    double body;          /* the theme's body size */
    double size;          /* the table's font size */
    double pad_x;
    double left, width;
    int32_t head_fill, head_color, band_fill;
    int simple_grid; /* no merges: vertical lines once per page */
    /* pagination */
    table_row head; /* laid out once, drawn on every page */
    int has_head;
    int at_top;       /* the next segment starts the table on its page */
    int rows_on_page; /* data rows (or parts) on the current page */
    double page_top;  /* top of the table on the current page */
} table_layout;

/* ------------------------------------------------------------------ helpers */

static kiln_status nomem(table_layout *lay)
{
    return kiln_error_set(lay->ctx->err, KILN_E_NOMEM, lay->d->pointer,
                          "out of memory laying out a table");
}

/* The status of a failed call that set ctx->err (or should have). */
static kiln_status failed(const pdf_ctx *ctx)
{
    return ctx->err && ctx->err->code != KILN_E_OK ? ctx->err->code : KILN_E_INTERNAL;
}

/* Characters a line may break after (CJK ideographs, kana, Hangul, full-width
 * forms): each is a word of its own when measuring what a column needs. */
static int is_wide(uint32_t cp)
{
    return (cp >= 0x2E80 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7AF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFF00 && cp <= 0xFFEF) ||
           (cp >= 0x20000 && cp <= 0x3FFFF);
}

static unsigned face_style(const kiln_style *st, int bold)
{
    unsigned s = 0;
    if (bold || (st && st->bold))
        s |= PDF_STYLE_BOLD;
    if (st && st->italic)
        s |= PDF_STYLE_ITALIC;
    return s;
}

static pdf_family face_family(const pdf_ctx *ctx, const kiln_style *st)
{
    return st && st->font ? pdf_family_for_name(st->font) : ctx->body_family;
}

/* The table layout's text metrics: the faces the PDF embeds. */
static const void *metrics_face(void *ctx, const kiln_style *style, int bold)
{
    pdf_ctx *c = ctx;
    return pdf_fonts_face(&c->fonts, face_family(c, style), face_style(style, bold), c->err);
}

static double metrics_advance(void *ctx, const void *face, uint32_t cp, double size)
{
    pdf_ctx *c = ctx;
    return pdf_char_width(&c->fonts, (pdf_face *)face, cp == '\t' ? ' ' : cp, size);
}

/* A light tint of the header fill for banded rows (8% of it over white). */
static int32_t band_of(int32_t fill)
{
    if (fill == KILN_COLOR_NONE)
        return 0xF2F2F2;
    int r = (fill >> 16) & 0xFF, g = (fill >> 8) & 0xFF, b = fill & 0xFF;
    r = 255 - (int)lround((255 - r) * 0.08);
    g = 255 - (int)lround((255 - g) * 0.08);
    b = 255 - (int)lround((255 - b) * 0.08);
    return (int32_t)((r << 16) | (g << 8) | b);
}

/* ------------------------------------------------------------------ rows */

static void row_release(table_row *row)
{
    for (size_t i = 0; i < row->cap; i++)
        pdf_para_release(&row->cells[i].para);
    row->count = 0;
}

static table_cell *add_cell(table_layout *lay, table_row *row, double x, double w)
{
    if (row->count == row->cap) {
        size_t grown = row->cap ? row->cap * 2 : 8;
        table_cell *cells = kiln_arena_calloc(lay->keep, grown, sizeof *cells);
        if (!cells)
            return NULL;
        if (row->count)
            memcpy(cells, row->cells, row->count * sizeof *cells);
        row->cells = cells;
        row->cap = grown;
    }
    table_cell *c = &row->cells[row->count++];
    /* The slot's paragraph arrays (malloc'd by pdf_text.c) are reused from
     * row to row; everything else starts afresh. */
    pdf_para para = c->para;
    memset(c, 0, sizeof *c);
    c->para = para;
    c->para.frag_count = 0;
    c->para.line_count = 0;
    c->x = x;
    c->w = w;
    c->fill = KILN_COLOR_NONE;
    c->min_h = lay->size * CELL_LEADING;
    return c;
}

/* Lay out one cell (what slot shows) into its slot's paragraph. Text the
 * paragraph borrows is copied into ctx->arena: the scratch arena for data
 * rows, the render's for the header row, which is drawn on every page. */
static kiln_status layout_cell(table_layout *lay, table_cell *tc, const kiln_table_slot *slot,
                               int header)
{
    pdf_ctx *ctx = lay->ctx;
    const kiln_cell *cell = slot->cell;
    const kiln_style *st = slot->style;
    if (st) {
        tc->border = st->border;
        if (st->fill != KILN_COLOR_NONE)
            tc->fill = st->fill;
    }
    tc->valign = slot->valign;
    size_t len = 0;
    const char *text = "";
    char buf[KILN_NUMFMT_MAX];
    if (cell && cell->kind != KILN_CELL_BLANK) {
        text = kiln_cell_display(cell, slot->format, buf, sizeof buf, &len);
        if (text == buf) { /* the paragraph borrows its text until the row is drawn */
            text = kiln_arena_strndup(ctx->arena, buf, len);
            if (!text)
                return nomem(lay);
        }
    }
    /* A column's justify is left here (a cell's own is honoured). */
    kiln_align align = slot->align;
    if (align == KILN_ALIGN_JUSTIFY && !(st && st->align == KILN_ALIGN_JUSTIFY))
        align = KILN_ALIGN_LEFT;

    int is_link = cell && cell->kind == KILN_CELL_URL && cell->text && cell->text_len > 0;
    pdf_para_style ps = {
        .family = face_family(ctx, st),
        .style = face_style(st, header),
        .size = kiln_table_layout_cell_size(&lay->tl, lay->size, st),
        .leading = CELL_LEADING,
        .color = header ? lay->head_color : TEXT_COLOR,
        .align = align,
        .preserve_spaces = 0,
    };
    if (st && st->color != KILN_COLOR_NONE)
        ps.color = st->color;
    else if (is_link)
        ps.color = LINK_COLOR;
    double width = tc->w - 2.0 * lay->pad_x;
    if (width < 1.0)
        width = 1.0;
    /* A number or a date split over two lines reads as two values: when one
     * is wider than its column (the widths were measured on the first rows
     * only, or given), it is set smaller instead. */
    if (!header && cell && kiln_cell_is_numeric(cell) && !memchr(text, ' ', len)) {
        pdf_face *face = pdf_fonts_face(&ctx->fonts, ps.family, ps.style, ctx->err);
        double need;
        if (!face)
            return failed(ctx);
        need = pdf_text_width(&ctx->fonts, face, text, len, ps.size);
        if (need > width) {
            ps.size *= width / need * 0.999;
            if (ps.size < MIN_NUMBER_SIZE)
                ps.size = MIN_NUMBER_SIZE;
        }
    }
    tc->min_h = ps.size * CELL_LEADING;

    kiln_status s;
    if (is_link || (st && (st->underline || st->strike))) {
        /* One run for the decorations; the link rectangle is the cell's
         * (added when drawn), so the run itself carries none. */
        kiln_run run = {.text = text, .len = len, .color = KILN_COLOR_NONE};
        if (is_link || (st && st->underline))
            run.flags |= KILN_RUN_UNDERLINE;
        if (st && st->strike)
            run.flags |= KILN_RUN_STRIKE;
        kiln_text t = {&run, 1};
        s = pdf_para_layout(ctx, &t, &ps, width, &tc->para);
    } else {
        s = pdf_para_layout_plain(ctx, text, len, &ps, width, &tc->para);
    }
    if (s != KILN_E_OK)
        return s;
    if (is_link) {
        tc->link = kiln_arena_strndup(lay->keep, cell->text, cell->text_len);
        if (!tc->link)
            return nomem(lay);
    }
    return KILN_E_OK;
}

static double content_height(const table_cell *tc)
{
    double h = 0;
    for (size_t i = tc->next; i < tc->para.line_count; i++)
        h += tc->para.lines[i].height;
    return h > tc->min_h || tc->next > 0 ? h : tc->min_h;
}

static void row_measure(table_row *row)
{
    double h = 0;
    for (size_t i = 0; i < row->count; i++) {
        double c = content_height(&row->cells[i]);
        if (c > h)
            h = c;
    }
    row->height = h + 2.0 * PAD_Y;
}

/* The fill a range's rows below its first show: the first row's cell's
 * (its own fill, else the row's background, band included, so that it
 * reads as one cell). */
static int32_t merge_fill(const table_layout *lay, const kiln_table_slot *slot)
{
    if (slot->style && slot->style->fill != KILN_COLOR_NONE)
        return slot->style->fill;
    uint32_t first = lay->tl.spans[slot->merge].merge->range.first_row;
    if (lay->has_head && first == 0)
        return lay->head_fill;
    uint32_t index = first - (lay->has_head ? 1u : 0u);
    return index % 2 == 1 ? lay->band_fill : 0xFFFFFF;
}

/* One row's cells: worksheet row `wsrow`, cells[count] its values (the
 * header row: the headers, without column formats); row->fill already set.
 * merges 0: without the sheet's merges. */
static kiln_status build_row(table_layout *lay, table_row *row, uint32_t wsrow, int header,
                             const kiln_cell *cells, size_t count, int merges)
{
    const kiln_table_slot *slots = kiln_table_layout_row(&lay->tl, wsrow, header, cells, count,
                                                         merges);
    kiln_status st = KILN_E_OK;
    row->count = 0;
    row->split = 0;
    for (size_t i = 0; i < lay->tl.ncols && st == KILN_E_OK; i++) {
        const kiln_table_slot *slot = &slots[i];
        if (slot->kind == KILN_SLOT_HIDDEN || slot->kind == KILN_SLOT_COVERED)
            continue;
        table_cell *tc = add_cell(lay, row, slot->x, slot->width);
        if (!tc)
            return nomem(lay);
        tc->open_below = slot->open_below;
        if (slot->kind == KILN_SLOT_MERGE_BELOW) { /* the range's look, no text */
            tc->fill = merge_fill(lay, slot);
            tc->border = slot->style ? slot->style->border : KILN_BORDER_DEFAULT;
            continue;
        }
        st = layout_cell(lay, tc, slot, header);
        /* The rows below show the range's background, band included. */
        if (slot->kind == KILN_SLOT_MERGE_TOP && tc->open_below && tc->fill == KILN_COLOR_NONE)
            tc->fill = row->fill != KILN_COLOR_NONE ? row->fill : 0xFFFFFF;
    }
    if (st == KILN_E_OK)
        row_measure(row);
    return st;
}

/* ------------------------------------------------------------------ drawing */

static void rect_fill(HPDF_Page page, int32_t color, double x, double y, double w, double h)
{
    pdf_set_fill(page, color);
    HPDF_Page_Rectangle(page, (HPDF_REAL)x, (HPDF_REAL)y, (HPDF_REAL)w, (HPDF_REAL)h);
    HPDF_Page_Fill(page);
}

static void stroke_line(HPDF_Page page, double x0, double y0, double x1, double y1)
{
    HPDF_Page_MoveTo(page, (HPDF_REAL)x0, (HPDF_REAL)y0);
    HPDF_Page_LineTo(page, (HPDF_REAL)x1, (HPDF_REAL)y1);
}

/* Draw at the cursor the lines of row that fit in avail points (all of them
 * when the row fits); force: at least one line of each cell with lines
 * left, so that a page always makes progress. *done: the row is finished;
 * *drawn: anything was drawn. */
static kiln_status draw_segment(table_layout *lay, table_row *row, double avail, int force,
                                int *done, int *drawn)
{
    pdf_ctx *ctx = lay->ctx;
    HPDF_Page page = ctx->page;
    double room = avail - 2.0 * PAD_Y;
    double content = 0;
    int all = 1, any = 0;
    for (size_t i = 0; i < row->count; i++) {
        table_cell *tc = &row->cells[i];
        size_t k = 0;
        double h = 0;
        while (tc->next + k < tc->para.line_count) {
            double lh = tc->para.lines[tc->next + k].height;
            if (h + lh > room && !(force && k == 0))
                break;
            h += lh;
            k++;
        }
        tc->take = k;
        if (tc->next + k < tc->para.line_count)
            all = 0;
        if (k > 0)
            any = 1;
        if (h > content)
            content = h;
    }
    *done = all;
    *drawn = 0;
    if (!all && !any)
        return KILN_E_OK; /* not even one line fits here */
    double seg_h = all ? row->height : content + 2.0 * PAD_Y;
    if (all && row->split) {
        double rest = 0;
        for (size_t i = 0; i < row->count; i++) {
            double h = 0;
            table_cell *tc = &row->cells[i];
            for (size_t j = tc->next; j < tc->next + tc->take; j++)
                h += tc->para.lines[j].height;
            if (h > rest)
                rest = h;
        }
        seg_h = rest + 2.0 * PAD_Y;
    }
    double top = ctx->y, bottom = top - seg_h;

    /* backgrounds */
    if (row->fill != KILN_COLOR_NONE)
        rect_fill(page, row->fill, lay->left, bottom, lay->width, seg_h);
    for (size_t i = 0; i < row->count; i++) {
        const table_cell *tc = &row->cells[i];
        if (tc->fill != KILN_COLOR_NONE)
            rect_fill(page, tc->fill, tc->x, bottom, tc->w, seg_h);
    }

    /* text */
    for (size_t i = 0; i < row->count; i++) {
        table_cell *tc = &row->cells[i];
        if (tc->take > 0) {
            double h = pdf_para_height(&tc->para, tc->next, tc->take);
            double spare = seg_h - 2.0 * PAD_Y - h, off = 0;
            if (!row->split && all && spare > 0) {
                if (tc->valign == KILN_VALIGN_MIDDLE)
                    off = spare / 2.0;
                else if (tc->valign == KILN_VALIGN_BOTTOM)
                    off = spare;
            }
            kiln_status st = pdf_para_draw(ctx, &tc->para, tc->next, tc->take, tc->x + lay->pad_x,
                                           top - PAD_Y - off);
            if (st != KILN_E_OK)
                return st;
            if (tc->link) {
                st = pdf_add_link(ctx, tc->x, bottom, tc->x + tc->w, top, tc->link, 0);
                if (st != KILN_E_OK)
                    return st;
            }
        }
        tc->next += tc->take;
    }

    /* borders: the top only where the table starts on the page (else the
     * row above drew it); each cell's bottom unless a merged range goes on;
     * verticals per row when merges may interrupt them, else once per page
     * (close_page) */
    HPDF_Page_SetLineWidth(page, BORDER_PT);
    pdf_set_stroke(page, BORDER_COLOR);
    if (lay->at_top)
        stroke_line(page, lay->left, top, lay->left + lay->width, top);
    int open = 0;
    for (size_t i = 0; i < row->count; i++)
        open |= row->cells[i].open_below;
    if (!open || !all) {
        stroke_line(page, lay->left, bottom, lay->left + lay->width, bottom);
    } else {
        for (size_t i = 0; i < row->count; i++)
            if (!row->cells[i].open_below)
                stroke_line(page, row->cells[i].x, bottom, row->cells[i].x + row->cells[i].w,
                            bottom);
    }
    if (!lay->simple_grid) {
        for (size_t i = 0; i < row->count; i++)
            stroke_line(page, row->cells[i].x, top, row->cells[i].x, bottom);
        stroke_line(page, lay->left + lay->width, top, lay->left + lay->width, bottom);
    }
    HPDF_Page_Stroke(page);

    /* a cell's own medium or thick border over the grid */
    for (size_t i = 0; i < row->count; i++) {
        const table_cell *tc = &row->cells[i];
        if (tc->border != KILN_BORDER_MEDIUM && tc->border != KILN_BORDER_THICK)
            continue;
        HPDF_Page_SetLineWidth(page, tc->border == KILN_BORDER_THICK ? 1.5f : 1.0f);
        pdf_set_stroke(page, STRONG_BORDER_COLOR);
        HPDF_Page_Rectangle(page, (HPDF_REAL)tc->x, (HPDF_REAL)bottom, (HPDF_REAL)tc->w,
                            (HPDF_REAL)seg_h);
        HPDF_Page_Stroke(page);
    }

    if (!all)
        row->split = 1;
    ctx->y = bottom;
    ctx->page_fresh = 0;
    lay->at_top = 0;
    *drawn = 1;
    return KILN_E_OK;
}

/* The foot of the table on this page: the column lines of a grid without
 * merges, from the table's top on the page down to the cursor, and a line
 * closing ranges cut by the page break. */
static void close_page(table_layout *lay)
{
    pdf_ctx *ctx = lay->ctx;
    HPDF_Page page = ctx->page;
    if (!page || lay->at_top)
        return; /* nothing of the table on this page */
    HPDF_Page_SetLineWidth(page, BORDER_PT);
    pdf_set_stroke(page, BORDER_COLOR);
    if (lay->simple_grid) {
        for (size_t i = 0; i < lay->tl.ncols; i++)
            if (!lay->tl.cols[i].hidden)
                stroke_line(page, lay->tl.cols[i].x, lay->page_top, lay->tl.cols[i].x, ctx->y);
        stroke_line(page, lay->left + lay->width, lay->page_top, lay->left + lay->width, ctx->y);
    } else {
        stroke_line(page, lay->left, ctx->y, lay->left + lay->width, ctx->y);
    }
    HPDF_Page_Stroke(page);
}

static kiln_status draw_head(table_layout *lay)
{
    for (size_t i = 0; i < lay->head.count; i++)
        lay->head.cells[i].next = 0;
    lay->head.split = 0;
    int done, drawn;
    return draw_segment(lay, &lay->head, INFINITY, 1, &done, &drawn);
}

/* The table starts (again) at the cursor: its top, the header row. */
static kiln_status start_page(table_layout *lay, int with_head)
{
    lay->page_top = lay->ctx->y;
    lay->at_top = 1;
    lay->rows_on_page = 0;
    return with_head ? draw_head(lay) : KILN_E_OK;
}

static kiln_status break_page(table_layout *lay)
{
    close_page(lay);
    kiln_status st = pdf_new_page(lay->ctx);
    if (st != KILN_E_OK)
        return st;
    return start_page(lay, lay->has_head && lay->tl.repeat_head);
}

/* A data row at the cursor: on this page when it fits; else on the next,
 * after the header; a row taller than a page split between its lines. */
static kiln_status place_row(table_layout *lay, table_row *row)
{
    pdf_ctx *ctx = lay->ctx;
    double capacity = ctx->top - ctx->bottom -
                      (lay->has_head && lay->tl.repeat_head ? lay->head.height : 0);
    if (row->height > pdf_space_left(ctx) && lay->rows_on_page > 0) {
        /* Split here only a row no page can hold, and only when a few of
         * its lines fit. */
        double some = 3.0 * lay->size * CELL_LEADING + 2.0 * PAD_Y;
        if (row->height <= capacity || pdf_space_left(ctx) < some) {
            kiln_status st = break_page(lay);
            if (st != KILN_E_OK)
                return st;
        }
    }
    for (;;) {
        int done, drawn;
        kiln_status st = draw_segment(lay, row, pdf_space_left(ctx), lay->rows_on_page == 0,
                                      &done, &drawn);
        if (st != KILN_E_OK)
            return st;
        if (drawn)
            lay->rows_on_page++;
        if (done)
            return KILN_E_OK;
        st = break_page(lay);
        if (st != KILN_E_OK)
            return st;
    }
}

/* ------------------------------------------------------------------ caption */

/* If text starts with "Table" (any case), spaces and a number, it already
 * carries its label (docx_document.c keeps it as written). */
static int has_label(const char *text)
{
    if (strncasecmp(text, "Table", 5) != 0 || text[5] != ' ')
        return 0;
    size_t i = 5;
    while (text[i] == ' ')
        i++;
    if (text[i] < '0' || text[i] > '9')
        return 0;
    while (text[i] >= '0' && text[i] <= '9')
        i++;
    return !((text[i] >= 'A' && text[i] <= 'Z') || (text[i] >= 'a' && text[i] <= 'z'));
}

static kiln_status layout_caption(table_layout *lay, const char *caption, pdf_para *para)
{
    pdf_ctx *ctx = lay->ctx;
    size_t number = ++ctx->table_number;
    const char *text = has_label(caption)
                           ? caption
                           : kiln_arena_printf(ctx->arena, "Table %zu: %s", number, caption);
    if (!text)
        return nomem(lay);
    pdf_para_style ps = {
        .family = ctx->body_family,
        .style = PDF_STYLE_ITALIC,
        .size = lay->body * TABLE_FONT_FACTOR,
        .leading = 1.25,
        .color = CAPTION_COLOR,
        .align = KILN_ALIGN_LEFT,
    };
    return pdf_para_layout_plain(ctx, text, strlen(text), &ps, ctx->right - ctx->left, para);
}

/* ------------------------------------------------------------------ the table */

/* Read the next data row and lay it out (the previous row is drawn by
 * now); 1 = a row, 0 = the end, -1 = an error (returned in *st). */
static int next_row(table_layout *lay, kiln_row_reader *reader, table_row *row, uint32_t wsrow,
                    int32_t fill, kiln_status *st)
{
    pdf_ctx *ctx = lay->ctx;
    const kiln_cell *cells;
    size_t count;
    kiln_arena_release(&lay->scratch);
    int more = kiln_rows_next(reader, &cells, &count, ctx->err);
    if (more <= 0) {
        *st = more < 0 ? failed(ctx) : KILN_E_OK;
        return more;
    }
    /* Copies of the row's text, and whatever the paragraph code takes from
     * ctx->arena, go to the scratch arena while this row is laid out, so
     * that rows do not pile up in the render's arena. */
    kiln_arena *saved = ctx->arena;
    ctx->arena = &lay->scratch;
    row->fill = fill;
    *st = build_row(lay, row, wsrow, 0, cells, count, 1);
    ctx->arena = saved;
    return *st == KILN_E_OK ? 1 : -1;
}

kiln_status pdf_table_layout(pdf_ctx *ctx, const kiln_table_data *data, const kiln_sheet *sheet,
                             const char *caption)
{
    table_layout lay;
    memset(&lay, 0, sizeof lay);
    lay.ctx = ctx;
    lay.d = data;
    lay.keep = ctx->arena;
    lay.body = ctx->body_size > 0 ? ctx->body_size : 11.0;
    lay.left = ctx->left;
    lay.head_fill = ctx->header_fill != KILN_COLOR_NONE ? ctx->header_fill : DEFAULT_HEADER_FILL;
    /* The theme's header font color goes with its fill; on the default
     * grey, black. */
    lay.head_color = ctx->header_fill != KILN_COLOR_NONE &&
                             ctx->header_font_color != KILN_COLOR_NONE
                         ? ctx->header_font_color
                         : TEXT_COLOR;
    lay.band_fill = band_of(ctx->header_fill);
    lay.head.fill = lay.head_fill;
    kiln_arena_init(&lay.scratch, ctx->arena->max_bytes);

    kiln_row_reader *reader = NULL;
    table_row row;
    memset(&row, 0, sizeof row);
    pdf_para cap_para;
    memset(&cap_para, 0, sizeof cap_para);
    /* Cells are set a little smaller than the body, in half points. */
    kiln_table_rules rules = pdf_rules;
    rules.body_pt = lay.body;
    rules.base_pt = floor(lay.body * TABLE_FONT_FACTOR * 2.0 + 0.5) / 2.0;
    if (rules.base_pt < 1.0)
        rules.base_pt = 1.0;
    kiln_text_metrics metrics = {ctx, metrics_face, metrics_advance, is_wide};
    kiln_status st = kiln_table_layout_init(&lay.tl, ctx->doc, data, sheet,
                                            kiln_table_has_header(data), &rules, &metrics,
                                            ctx->arena, ctx->err, data->pointer);
    if (st != KILN_E_OK)
        goto cleanup_scratch;
    lay.simple_grid = lay.tl.walk.count == 0;
    lay.size = rules.base_pt;
    lay.pad_x = rules.pad_pt / 2.0;
    double avail = ctx->right - ctx->left;
    if (avail < 72)
        avail = 72;
    size_t shown = lay.tl.shown;

    double cap_h = 0, cap_gap = 0.3 * lay.body;
    if (caption) {
        st = layout_caption(&lay, caption, &cap_para);
        if (st != KILN_E_OK)
            goto cleanup_scratch;
        cap_h = pdf_para_height(&cap_para, 0, cap_para.line_count) + cap_gap;
    }
    if (shown == 0) {
        /* No columns to show: the caption alone, as the docx writer does. */
        if (caption) {
            st = pdf_ensure_space(ctx, cap_h);
            if (st == KILN_E_OK)
                st = pdf_para_draw(ctx, &cap_para, 0, cap_para.line_count, ctx->left, ctx->y);
            if (st != KILN_E_OK)
                goto cleanup_scratch;
            ctx->y -= cap_h;
            ctx->page_fresh = 0;
        }
        goto spacing;
    }
    kiln_table_layout_fit(&lay.tl, avail, lay.left);
    lay.size = lay.tl.size;
    lay.pad_x = lay.tl.pad / 2.0;
    lay.width = lay.tl.width;

    uint32_t wsrow = 0;
    if (lay.tl.hdr) {
        st = build_row(&lay, &lay.head, wsrow++, 1, lay.tl.hdr, data->column_count, 1);
        if (st != KILN_E_OK)
            goto cleanup_scratch;
        lay.has_head = 1;
        /* A header row taking most of a page is shown once only. */
        kiln_table_layout_head_repeat(&lay.tl, lay.head.height, ctx->top - ctx->bottom);
    }

    st = kiln_rows_open(ctx->doc, data, &reader, ctx->err);
    if (st != KILN_E_OK)
        goto cleanup_scratch;
    int more = next_row(&lay, reader, &row, wsrow, KILN_COLOR_NONE, &st);
    if (more < 0)
        goto cleanup_reader;

    /* The caption, the header row and the first data row (its first lines
     * when it is taller than a page) on one page. */
    double keep = cap_h + (lay.has_head ? lay.head.height : 0);
    if (more) {
        double first_lines = 2.0 * PAD_Y + 3.0 * lay.size * CELL_LEADING;
        keep += row.height < first_lines || row.height <= ctx->top - ctx->bottom - keep
                    ? row.height
                    : first_lines;
    } else if (!lay.has_head) {
        keep += 2.0 * PAD_Y + lay.size * CELL_LEADING;
    }
    if (!ctx->page) {
        st = pdf_new_page(ctx);
        if (st != KILN_E_OK)
            goto cleanup_reader;
    }
    st = pdf_ensure_space(ctx, keep);
    if (st != KILN_E_OK)
        goto cleanup_reader;
    if (caption) {
        st = pdf_para_draw(ctx, &cap_para, 0, cap_para.line_count, ctx->left, ctx->y);
        if (st != KILN_E_OK)
            goto cleanup_reader;
        ctx->y -= cap_h;
        ctx->page_fresh = 0;
    }
    st = start_page(&lay, lay.has_head);
    if (st != KILN_E_OK)
        goto cleanup_reader;

    if (!more && !lay.has_head) {
        /* Columns but neither a header row nor data: one row of empty
         * cells, without the sheet's merges (docx_table.c does the same). */
        row.fill = KILN_COLOR_NONE;
        st = build_row(&lay, &row, 0, 0, NULL, 0, 0);
        if (st == KILN_E_OK)
            st = place_row(&lay, &row);
        if (st != KILN_E_OK)
            goto cleanup_reader;
    }
    uint64_t index = 0;
    while (more == 1) {
        st = place_row(&lay, &row);
        if (st != KILN_E_OK)
            goto cleanup_reader;
        index++;
        if (wsrow < UINT32_MAX)
            wsrow++;
        more = next_row(&lay, reader, &row, wsrow,
                        index % 2 == 1 ? lay.band_fill : KILN_COLOR_NONE, &st);
        if (more < 0)
            goto cleanup_reader;
    }
    close_page(&lay);

spacing:
    /* A little space after the table, as after a paragraph. */
    ctx->y -= 0.6 * lay.body;
    if (ctx->page && ctx->y < ctx->bottom)
        ctx->y = ctx->bottom;

cleanup_reader:
    kiln_rows_close(reader);
cleanup_scratch:
    row_release(&row);
    row_release(&lay.head);
    pdf_para_release(&cap_para);
    kiln_arena_release(&lay.scratch);
    return st;
}
