/*
 * pdf_table.c - a table block, or a sheet's data, as a report table.
 *
 * Rows are streamed: a table's rows may come from a CSV or JSON Lines file
 * of any length, so they are read through the row reader twice and never
 * held. The first pass measures (the column widths, the number of columns
 * when the table defines none, the alignment of untyped columns); the second
 * lays out and draws one row at a time. Each cell slot of the row keeps
 * its paragraph arrays from row to row (pdf_text.c reuses them), and what
 * a row copies (formatted numbers) comes from a scratch arena released
 * after the row is drawn, so a 200,000-row table needs the memory of one
 * row, not of all of them.
 *
 * The measuring pass reads the first MEASURE_ROWS rows only. Unlike the
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
 * at most WORD_CAP of the text width: a URL breaks rather than shrink the
 * whole table), or wants its explicit width
 * (Excel characters: the body font's digit width, as the docx writer
 * converts them). When the wants do not fit the text width, an explicit
 * width first gives up what its content leaves blank; then each column
 * gets its need plus a share of the rest proportional to what it lacks
 * (text wraps between words). When even the needs do not fit, the cell
 * padding narrows, then the font shrinks half a point at a time down to
 * MIN_FONT_PT (7 pt, as docx_table.c), and only then are the widest columns
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

#include "../layout/merge_walk.h"
#include "../layout/numfmt.h"
#include "pdf_internal.h"
#include "../../common/banned.h"

/* Rows measured for the column widths (see the comment at the top). */
#define MEASURE_ROWS 2000u
/* The smallest a number is set to keep it on one line. A number split over
 * lines reads as two values, which is worse than small type (a reader can
 * zoom), so the floor is only there to keep degenerate widths finite. */
#define MIN_NUMBER_SIZE 1.0
/* Cell padding: left/right (narrowed when the columns do not fit), top/bottom. */
#define PAD_X 4.0
#define PAD_X_NARROW 2.0
#define PAD_Y 3.0
/* Line height in cells: tighter than body text, as tables are set. */
#define CELL_LEADING 1.2
/* Cells are set a little smaller than the body text, as report tables are. */
#define TABLE_FONT_FACTOR 0.9
/* The smallest font a table too wide for the page is shrunk to (docx_table.c). */
#define MIN_FONT_PT 7.0
/* Measuring and breaking may round differently: a cell measured to fit on
 * one line must not wrap. */
#define SLACK_PT 1.0
/* The widest word of text a column insists on, as a share of the text width
 * (fit_widths). */
#define WORD_CAP 0.25
#define BORDER_COLOR 0xBFBFBF
#define BORDER_PT 0.5
#define STRONG_BORDER_COLOR 0x404040
#define LINK_COLOR 0x0563C1       /* Word's Hyperlink style */
#define CAPTION_COLOR 0x44546A    /* the docx Caption style's */
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

/* ------------------------------------------------------------------ model */

typedef struct table_col {
    const kiln_column *def;   /* NULL past the defined columns */
    double text_want;         /* widest line, points at the measuring size */
    double text_need;         /* widest word of text, the same */
    double num_need;          /* widest number or date (never broken), the same */
    int has_numeric, has_text;
    int hidden;               /* width 0: hidden in Excel, left out here */
    double want, need;        /* with padding, at the trial size (fit_widths) */
    double x, width;          /* placed */
    kiln_align align;         /* DEFAULT = per cell (numbers right, else left) */
} table_col;

typedef struct table_cell {
    double x, w;
    pdf_para para;
    size_t next;              /* first line not drawn yet (a row split over pages) */
    size_t take;              /* lines drawn in the current segment */
    double min_h;             /* content height of an empty cell: one line */
    int32_t fill;
    kiln_valign valign;
    kiln_border border;
    int open_below;           /* a merged range continues in the row below */
    const char *link;         /* URL (main arena), or NULL */
} table_cell;

typedef struct table_row {
    table_cell *cells;
    size_t count, cap;
    double height;            /* the whole row: content and padding */
    int32_t fill;             /* behind the whole row (header, banding), or NONE */
    int split;                /* part of it is already drawn */
} table_row;

/* ---- merges (walked with merge_walk.h, as in docx_table.c) ---- */

typedef struct merge_span {
    const kiln_merge *merge;
    size_t lead_col;          /* the first shown column: where the cell goes */
    size_t shown;             /* shown columns; 0 = nothing shown */
    size_t measure_col;       /* the one column the range shows in, KILN_MERGE_NONE when several */
    double x, w;
    int32_t fill;             /* the top-left's fill, for the rows below it */
    kiln_border border;
} merge_span;

/* The sheet's merges: the walk, and each range's layout at its index in
 * the walk (spans[k] lays out walk.merges[k]). Zeroed: no merges. */
typedef struct table_merges {
    kiln_merge_walk walk;
    merge_span *spans;
} table_merges;

typedef struct table_layout {
    pdf_ctx *ctx;
    const kiln_table_data *d;
    kiln_arena *keep;         /* the render's arena: what outlives a row */
    kiln_arena scratch;       /* one row's paragraphs */
    table_col *cols;
    size_t ncols, cap;
    double body;              /* the theme's body size */
    double base;              /* the size the text was measured at */
    double size;              /* the table's font size */
    double pad_x;
    double left, width;
    double need_total;
    int32_t head_fill, head_color, band_fill;
    table_merges merges;
    int simple_grid;          /* no merges: vertical lines once per page */
    /* pagination */
    table_row head;           /* laid out once, drawn on every page */
    int has_head, repeat_head;
    int at_top;               /* the next segment starts the table on its page */
    int rows_on_page;         /* data rows (or parts) on the current page */
    double page_top;          /* top of the table on the current page */
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

/* Widest line and widest word of s in face at size. */
static void measure_text(pdf_ctx *ctx, pdf_face *face, double size, const char *s, size_t len,
                         double *want, double *need)
{
    double line = 0, word = 0, lmax = 0, wmax = 0;
    size_t pos = 0;
    while (pos < len) {
        uint32_t cp = kiln_utf8_next(s, len, &pos);
        if (cp == '\n' || cp == '\r') {
            if (word > wmax)
                wmax = word;
            if (line > lmax)
                lmax = line;
            word = line = 0;
            continue;
        }
        double w = pdf_char_width(&ctx->fonts, face, cp == '\t' ? ' ' : cp, size);
        line += w;
        if (cp == ' ' || cp == '\t') {
            if (word > wmax)
                wmax = word;
            word = 0;
        } else if (is_wide(cp)) {
            if (word > wmax)
                wmax = word;
            if (w > wmax)
                wmax = w;
            word = 0;
        } else {
            word += w;
        }
    }
    if (word > wmax)
        wmax = word;
    if (line > lmax)
        lmax = line;
    *want = lmax;
    *need = wmax;
}

static unsigned face_style(const kiln_style *st, int header)
{
    unsigned s = 0;
    if (header || (st && st->bold))
        s |= PDF_STYLE_BOLD;
    if (st && st->italic)
        s |= PDF_STYLE_ITALIC;
    return s;
}

static pdf_family face_family(const pdf_ctx *ctx, const kiln_style *st)
{
    return st && st->font ? pdf_family_for_name(st->font) : ctx->body_family;
}

/* A cell's own size scaled with the table's font, or the table's. */
static double cell_size(const table_layout *lay, double table_size, const kiln_style *st)
{
    if (!st || st->size <= 0)
        return table_size;
    double s = st->size * table_size / lay->body;
    return s >= 1.0 ? s : 1.0;
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

/* ------------------------------------------------------------------ merges */

static kiln_status merges_init(table_layout *lay, const kiln_sheet *sheet)
{
    table_merges *merges = &lay->merges;
    memset(merges, 0, sizeof *merges);
    if (!sheet || sheet->merge_count == 0)
        return KILN_E_OK;
    size_t n = sheet->merge_count;
    kiln_status st = kiln_merge_walk_init(&merges->walk, sheet->merges, n, lay->keep);
    if (st == KILN_E_OK)
        merges->spans = kiln_arena_calloc(lay->keep, n, sizeof *merges->spans);
    if (!merges->spans)
        return nomem(lay);
    for (size_t k = 0; k < n; k++) {
        merge_span *span = &merges->spans[k];
        span->merge = merges->walk.merges[k];
        span->measure_col = kiln_merge_single_column(lay->d, &span->merge->range);
        span->fill = KILN_COLOR_NONE;
    }
    return KILN_E_OK;
}

/* The range covering column `col` in the walk's current row, or NULL. */
static merge_span *merge_at(const table_merges *merges, size_t col)
{
    size_t k = kiln_merge_walk_at(&merges->walk, col);
    return k == KILN_MERGE_NONE ? NULL : &merges->spans[k];
}

/* Where every span goes, now that the columns are placed. */
static void merges_place(table_layout *lay)
{
    table_merges *merges = &lay->merges;
    for (size_t i = 0; i < merges->walk.count; i++) {
        merge_span *span = &merges->spans[i];
        const kiln_range *r = &span->merge->range;
        span->lead_col = SIZE_MAX;
        span->shown = 0;
        span->w = 0;
        for (size_t col = r->first_col; col <= r->last_col && col < lay->ncols; col++) {
            if (lay->cols[col].hidden)
                continue;
            if (span->lead_col == SIZE_MAX) {
                span->lead_col = col;
                span->x = lay->cols[col].x;
            }
            span->shown++;
            span->w += lay->cols[col].width;
        }
    }
}

/* ------------------------------------------------------------------ measuring */

/* The header row as cells: each column's header a string (blank when none). */
static kiln_cell *header_cells(table_layout *lay)
{
    const kiln_table_data *d = lay->d;
    kiln_cell *cells = kiln_arena_calloc(lay->keep, d->column_count, sizeof *cells);
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

static kiln_status measure_cell(table_layout *lay, table_col *into, const kiln_cell *cell,
                                const kiln_column *col, int header)
{
    if (cell->kind == KILN_CELL_BLANK)
        return KILN_E_OK;
    pdf_ctx *ctx = lay->ctx;
    char buf[KILN_NUMFMT_MAX];
    size_t len = 0;
    const char *text = kiln_cell_display(cell, col, buf, sizeof buf, &len);
    pdf_face *face = pdf_fonts_face(&ctx->fonts, face_family(ctx, cell->style),
                                    face_style(cell->style, header), ctx->err);
    if (!face)
        return failed(ctx);
    double want, need;
    measure_text(ctx, face, cell_size(lay, lay->base, cell->style), text, len, &want, &need);
    if (want > into->text_want)
        into->text_want = want;
    if (kiln_cell_is_numeric(cell)) {
        if (want > into->num_need) /* "1,234.50" and "2026-01-05" never break */
            into->num_need = want;
    } else if (need > into->text_need) {
        into->text_need = need;
    }
    if (!header) {
        if (kiln_cell_is_numeric(cell))
            into->has_numeric = 1;
        else
            into->has_text = 1;
    }
    return KILN_E_OK;
}

/* What the ranges starting in worksheet row `row` show, measured in the one
 * column a range shows in (a range over several wraps inside them). */
static kiln_status measure_merges(table_layout *lay, uint32_t row, const kiln_cell *cells,
                                  size_t count, int header)
{
    table_merges *merges = &lay->merges;
    for (size_t k = 0; k < merges->walk.active_count; k++) {
        merge_span *span = &merges->spans[merges->walk.active[k]];
        const kiln_range *r = &span->merge->range;
        if (r->first_row != row || span->measure_col == KILN_MERGE_NONE ||
            span->measure_col >= lay->ncols)
            continue;
        int merge_look;
        const kiln_cell *own = r->first_col < count ? &cells[r->first_col] : NULL;
        const kiln_cell *shown = kiln_merge_shown(span->merge, own, &merge_look);
        const kiln_column *col = merge_look || header ? NULL : kiln_table_column(lay->d, r->first_col);
        kiln_status st = measure_cell(lay, &lay->cols[span->measure_col], shown, col, header);
        if (st != KILN_E_OK)
            return st;
    }
    return KILN_E_OK;
}

static kiln_status grow_cols(table_layout *lay, size_t count)
{
    if (count <= lay->ncols)
        return KILN_E_OK;
    if (count > lay->cap) {
        size_t grown = lay->cap ? lay->cap : 8;
        while (grown < count)
            grown *= 2;
        table_col *cols = kiln_arena_calloc(lay->keep, grown, sizeof *cols);
        if (!cols)
            return nomem(lay);
        if (lay->ncols)
            memcpy(cols, lay->cols, lay->ncols * sizeof *cols);
        lay->cols = cols;
        lay->cap = grown;
    }
    lay->ncols = count;
    return KILN_E_OK;
}

/* The first pass: how many columns, what the first MEASURE_ROWS rows need. */
static kiln_status measure(table_layout *lay, const kiln_cell *hdr)
{
    pdf_ctx *ctx = lay->ctx;
    const kiln_table_data *d = lay->d;
    kiln_status st = grow_cols(lay, d->column_count);
    if (st != KILN_E_OK)
        return st;

    table_merges *merges = &lay->merges;
    uint32_t row = 0; /* the worksheet row */
    if (hdr) {
        kiln_merge_walk_row(&merges->walk, row);
        for (size_t i = 0; i < d->column_count && st == KILN_E_OK; i++)
            if (!merge_at(merges, i))
                st = measure_cell(lay, &lay->cols[i], &hdr[i], NULL, 1);
        if (st == KILN_E_OK)
            st = measure_merges(lay, row, hdr, d->column_count, 1);
        if (st != KILN_E_OK)
            return st;
        row++;
    }

    /* Rows past the ones measured can be wider than them only when the
     * columns are not fixed by the table (see the comment at the top). */
    int count_on = d->source != KILN_ROWS_CSV || d->column_count == 0;
    kiln_row_reader *reader = NULL;
    st = kiln_rows_open(ctx->doc, d, &reader, ctx->err);
    if (st != KILN_E_OK)
        return st;
    const kiln_cell *cells;
    size_t count;
    uint64_t seen = 0;
    int more;
    while ((more = kiln_rows_next(reader, &cells, &count, ctx->err)) == 1) {
        st = grow_cols(lay, count);
        if (st != KILN_E_OK)
            goto cleanup_reader;
        if (seen++ >= MEASURE_ROWS) {
            if (!count_on)
                break;
            continue;
        }
        kiln_merge_walk_row(&merges->walk, row);
        for (size_t i = 0; i < count && st == KILN_E_OK; i++)
            if (!merge_at(merges, i))
                st = measure_cell(lay, &lay->cols[i], &cells[i], kiln_table_column(d, i), 0);
        if (st == KILN_E_OK)
            st = measure_merges(lay, row, cells, count, 0);
        if (st != KILN_E_OK)
            goto cleanup_reader;
        if (row < UINT32_MAX)
            row++;
    }
    if (more < 0)
        st = failed(ctx);

cleanup_reader:
    kiln_rows_close(reader);
    return st;
}

/* ------------------------------------------------------------------ widths */

static kiln_align column_align(const kiln_column *def, const table_col *c)
{
    if (def && (def->align == KILN_ALIGN_LEFT || def->align == KILN_ALIGN_CENTER ||
                def->align == KILN_ALIGN_RIGHT))
        return def->align;
    if (def && def->align == KILN_ALIGN_JUSTIFY)
        return KILN_ALIGN_LEFT;
    if (def && def->type == KILN_COL_BOOLEAN)
        return KILN_ALIGN_CENTER; /* as Excel shows TRUE and FALSE */
    if (def && def->type != KILN_COL_AUTO)
        return kiln_column_is_numeric(def) ? KILN_ALIGN_RIGHT : KILN_ALIGN_LEFT;
    if (c->has_numeric && !c->has_text)
        return KILN_ALIGN_RIGHT;
    return KILN_ALIGN_DEFAULT; /* mixed: each cell as Excel's General aligns it */
}

/* The widest cap of min(need, cap) whose sum fits avail (bisection). */
static double water_level(const table_layout *lay, double avail, double max_need)
{
    double lo = 0, hi = max_need;
    for (int i = 0; i < 50; i++) {
        double mid = (lo + hi) / 2, sum = 0;
        for (size_t j = 0; j < lay->ncols; j++)
            if (!lay->cols[j].hidden)
                sum += lay->cols[j].need < mid ? lay->cols[j].need : mid;
        if (sum > avail)
            hi = mid;
        else
            lo = mid;
    }
    return lo;
}

/* Widths at lay->size and lay->pad_x that fit avail (the comment at the
 * top); returns the number of columns shown. */
static size_t fit_widths(table_layout *lay, double avail)
{
    pdf_ctx *ctx = lay->ctx;
    double factor = lay->size / lay->base;
    pdf_face *regular = pdf_fonts_face(&ctx->fonts, ctx->body_family, 0, ctx->err);
    double digit = regular ? pdf_char_width(&ctx->fonts, regular, '0', lay->size)
                           : lay->size * 0.6;
    double pads = 2.0 * lay->pad_x;
    double min_w = pads + 2.0 * digit;
    double want_total = 0, need_total = 0, max_need = 0;
    size_t shown = 0;
    for (size_t i = 0; i < lay->ncols; i++) {
        table_col *c = &lay->cols[i];
        if (c->hidden)
            continue;
        /* A word wider than WORD_CAP of the text width (a URL, a part
         * number) breaks inside rather than shrink the whole table. */
        double word = c->text_need * factor;
        if (word > WORD_CAP * avail)
            word = WORD_CAP * avail;
        double num = c->num_need * factor;
        c->want = c->text_want * factor + pads + SLACK_PT;
        c->need = (num > word ? num : word) + pads + SLACK_PT;
        if (c->want < min_w)
            c->want = min_w;
        if (c->need < min_w)
            c->need = min_w;
        if (c->def && c->def->width > 0) {
            /* Excel characters: digits of the body font (at the table's
             * size), plus the cell's padding. What the column wants; its
             * widest word is still what it needs. */
            c->want = c->def->width * digit + pads;
            if (c->want < min_w)
                c->want = min_w;
        }
        if (c->need > c->want)
            c->need = c->want;
        want_total += c->want;
        shown++;
    }
    if (want_total > avail) {
        /* Too wide: an explicit width wider than its content gives up the
         * blank part first, before any text has to wrap for it. */
        want_total = 0;
        for (size_t i = 0; i < lay->ncols; i++) {
            table_col *c = &lay->cols[i];
            if (c->hidden)
                continue;
            if (c->def && c->def->width > 0) {
                double content = c->text_want * factor + pads + SLACK_PT;
                if (content < c->want)
                    c->want = content > c->need ? content : c->need;
            }
            want_total += c->want;
        }
    }
    for (size_t i = 0; i < lay->ncols; i++) {
        const table_col *c = &lay->cols[i];
        if (c->hidden)
            continue;
        need_total += c->need;
        if (c->need > max_need)
            max_need = c->need;
    }
    lay->need_total = need_total;
    if (shown == 0)
        return 0;
    double level = need_total > avail ? water_level(lay, avail, max_need) : 0;
    double x = lay->left;
    for (size_t i = 0; i < lay->ncols; i++) {
        table_col *c = &lay->cols[i];
        if (c->hidden)
            continue;
        double w;
        if (want_total <= avail)
            w = c->want;
        else if (need_total <= avail)
            w = c->need + (c->want - c->need) * (avail - need_total) / (want_total - need_total);
        else
            w = c->need < level ? c->need : level;
        c->x = x;
        c->width = w;
        x += w;
    }
    lay->width = x - lay->left;
    return shown;
}

/* Needs that do not fit: narrower padding, then a smaller font, half a
 * point at a time down to MIN_FONT_PT, refitting at each step. */
static void shrink_to_fit(table_layout *lay, double avail)
{
    if (lay->need_total <= avail)
        return;
    lay->pad_x = PAD_X_NARROW;
    fit_widths(lay, avail);
    if (lay->need_total <= avail || lay->size <= MIN_FONT_PT)
        return;
    /* The first guess scales the whole width although the padding does not
     * shrink, so it errs large; each step down refits. */
    int start = (int)floor(lay->size * 2.0);
    int half = (int)floor(lay->size * 2.0 * avail / lay->need_total);
    int min_half = (int)(MIN_FONT_PT * 2.0);
    if (half >= start)
        half = start - 1;
    for (;; half--) {
        if (half < min_half)
            half = min_half;
        lay->size = half / 2.0;
        fit_widths(lay, avail);
        if (lay->need_total <= avail || half <= min_half)
            break;
    }
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

/* Lay out one cell's text into its slot's paragraph. Text the paragraph
 * borrows is copied into ctx->arena: the scratch arena for data rows, the
 * render's for the header row, which is drawn on every page. */
static kiln_status layout_cell(table_layout *lay, table_cell *tc, const kiln_cell *cell,
                               const kiln_column *col, int header, int merge_look,
                               kiln_align col_align)
{
    pdf_ctx *ctx = lay->ctx;
    const kiln_style *st = cell ? cell->style : NULL;
    if (st) {
        tc->valign = st->valign;
        tc->border = st->border;
        if (st->fill != KILN_COLOR_NONE)
            tc->fill = st->fill;
    }
    if (merge_look && tc->valign == KILN_VALIGN_DEFAULT)
        tc->valign = KILN_VALIGN_MIDDLE;
    size_t len = 0;
    const char *text = "";
    char buf[KILN_NUMFMT_MAX];
    if (cell && cell->kind != KILN_CELL_BLANK) {
        text = kiln_cell_display(cell, col, buf, sizeof buf, &len);
        if (text == buf) { /* the paragraph borrows its text until the row is drawn */
            text = kiln_arena_strndup(ctx->arena, buf, len);
            if (!text)
                return nomem(lay);
        }
    }

    kiln_align align = KILN_ALIGN_DEFAULT;
    if (st && st->align != KILN_ALIGN_DEFAULT)
        align = st->align;
    else if (merge_look)
        align = KILN_ALIGN_CENTER;
    else if (col_align != KILN_ALIGN_DEFAULT)
        align = col_align;
    else
        align = !header && cell && kiln_cell_is_numeric(cell) ? KILN_ALIGN_RIGHT : KILN_ALIGN_LEFT;

    int is_link = cell && cell->kind == KILN_CELL_URL && cell->text && cell->text_len > 0;
    pdf_para_style ps = {
        .family = face_family(ctx, st),
        .style = face_style(st, header),
        .size = cell_size(lay, lay->size, st),
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
     * is wider than its column (the widths were measured on the first
     * MEASURE_ROWS rows only, or given), it is set smaller instead. */
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

/* One row's cells: worksheet row `wsrow`, cells[count] its values (the
 * header row: the headers, without column formats); row->fill already set. */
static kiln_status build_row(table_layout *lay, table_row *row, uint32_t wsrow, int header,
                             const kiln_cell *cells, size_t count)
{
    table_merges *merges = &lay->merges;
    kiln_status st = KILN_E_OK;
    row->count = 0;
    row->split = 0;
    kiln_merge_walk_row(&merges->walk, wsrow);
    for (size_t i = 0; i < lay->ncols && st == KILN_E_OK; i++) {
        table_col *c = &lay->cols[i];
        if (c->hidden)
            continue;
        merge_span *span = merge_at(merges, i);
        if (span) {
            if (span->shown == 0 || i != span->lead_col)
                continue;
            const kiln_range *r = &span->merge->range;
            table_cell *tc = add_cell(lay, row, span->x, span->w);
            if (!tc)
                return nomem(lay);
            tc->open_below = r->last_row > wsrow;
            if (wsrow != r->first_row) { /* under the range's first row: its look, no text */
                tc->fill = span->fill;
                tc->border = span->border;
                continue;
            }
            int merge_look;
            const kiln_cell *own = r->first_col < count ? &cells[r->first_col] : NULL;
            const kiln_cell *shown = kiln_merge_shown(span->merge, own, &merge_look);
            merge_look = merge_look && !kiln_merge_is_single(span->merge);
            const kiln_column *col = merge_look || header ? NULL : kiln_table_column(lay->d, i);
            st = layout_cell(lay, tc, shown, col, header, merge_look, c->align);
            /* The rows below show the range's background, band included,
             * so that it reads as one cell. */
            if (tc->open_below && tc->fill == KILN_COLOR_NONE)
                tc->fill = row->fill != KILN_COLOR_NONE ? row->fill : 0xFFFFFF;
            span->fill = tc->fill;
            span->border = tc->border;
            continue;
        }
        table_cell *tc = add_cell(lay, row, c->x, c->width);
        if (!tc)
            return nomem(lay);
        if (i < count)
            st = layout_cell(lay, tc, &cells[i], header ? NULL : kiln_table_column(lay->d, i), header, 0,
                             c->align);
        else
            st = layout_cell(lay, tc, NULL, NULL, header, 0, c->align);
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
        for (size_t i = 0; i < lay->ncols; i++)
            if (!lay->cols[i].hidden)
                stroke_line(page, lay->cols[i].x, lay->page_top, lay->cols[i].x, ctx->y);
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
    return start_page(lay, lay->has_head && lay->repeat_head);
}

/* A data row at the cursor: on this page when it fits; else on the next,
 * after the header; a row taller than a page split between its lines. */
static kiln_status place_row(table_layout *lay, table_row *row)
{
    pdf_ctx *ctx = lay->ctx;
    double capacity = ctx->top - ctx->bottom -
                      (lay->has_head && lay->repeat_head ? lay->head.height : 0);
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
    *st = build_row(lay, row, wsrow, 0, cells, count);
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
    lay.base = floor(lay.body * TABLE_FONT_FACTOR * 2.0 + 0.5) / 2.0;
    if (lay.base < 1.0)
        lay.base = 1.0;
    lay.size = lay.base;
    lay.pad_x = PAD_X;
    lay.left = ctx->left;
    lay.head_fill = ctx->header_fill != KILN_COLOR_NONE ? ctx->header_fill : DEFAULT_HEADER_FILL;
    /* The theme's header font color goes with its fill; on the default
     * grey, black. */
    lay.head_color =
        ctx->header_fill != KILN_COLOR_NONE && ctx->header_font_color != KILN_COLOR_NONE
            ? ctx->header_font_color
            : TEXT_COLOR;
    lay.band_fill = band_of(ctx->header_fill);
    lay.head.fill = lay.head_fill;
    lay.repeat_head = 1;
    kiln_arena_init(&lay.scratch, ctx->arena->max_bytes);

    kiln_row_reader *reader = NULL;
    table_row row;
    memset(&row, 0, sizeof row);
    pdf_para cap_para;
    memset(&cap_para, 0, sizeof cap_para);
    kiln_status st = merges_init(&lay, sheet);
    if (st != KILN_E_OK)
        goto cleanup_scratch;
    lay.simple_grid = lay.merges.walk.count == 0;
    const kiln_cell *hdr = NULL;
    if (data->header && data->column_count && !(hdr = header_cells(&lay))) {
        st = nomem(&lay);
        goto cleanup_scratch;
    }
    st = measure(&lay, hdr);
    if (st != KILN_E_OK)
        goto cleanup_scratch;

    double avail = ctx->right - ctx->left;
    if (avail < 72)
        avail = 72;
    size_t shown = 0;
    for (size_t i = 0; i < lay.ncols; i++) {
        table_col *c = &lay.cols[i];
        c->def = kiln_table_column(data, i);
        c->hidden = c->def && c->def->width == 0;
        c->align = column_align(c->def, c);
        shown += !c->hidden;
    }

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
    fit_widths(&lay, avail);
    shrink_to_fit(&lay, avail);
    merges_place(&lay);
    kiln_merge_walk_rewind(&lay.merges.walk);

    uint32_t wsrow = 0;
    if (hdr) {
        st = build_row(&lay, &lay.head, wsrow++, 1, hdr, data->column_count);
        if (st != KILN_E_OK)
            goto cleanup_scratch;
        lay.has_head = 1;
        /* A header row taking most of a page is shown once only. */
        if (lay.head.height > (ctx->top - ctx->bottom) / 2)
            lay.repeat_head = 0;
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
        table_merges none = lay.merges;
        memset(&lay.merges, 0, sizeof lay.merges);
        row.fill = KILN_COLOR_NONE;
        st = build_row(&lay, &row, 0, 0, NULL, 0);
        lay.merges = none;
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
