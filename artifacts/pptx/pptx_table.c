/*
 * pptx_table.c - a table (a table block's, a table slide's or a sheet's
 * rows) as DrawingML tables in graphic frames, one slide's worth of rows at
 * a time.
 *
 * A slide has a fixed height, so a long table continues over as many slides
 * as it needs, each with its own a:tbl, the header row repeated at the top
 * of every one. The rows are streamed: pptx_table_open measures the header
 * and the first MEASURE_ROWS rows with one row reader (the column widths and
 * the font size), then opens a second reader that pptx_table_write draws
 * from. Each slide's rows are copied (their display text, style and link)
 * into a scratch arena of their own; the row that no longer fits is kept in
 * it for the next slide, so the table holds two slides' rows at most,
 * however long it is. A longer value further down than the measured rows
 * simply wraps in its cell.
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

#include "../../common/utf8.h"
#include "../layout/merge_walk.h"
#include "../layout/numfmt.h"
#include "pptx_internal.h"
#include "../../common/banned.h"

/* Rows measured for the column widths (see the comment at the top). */
#define MEASURE_ROWS 200u
/* Font sizes, 1/100 pt: the default, and the smallest a wide table shrinks to. */
#define FONT_MAX 1400u
#define FONT_MIN 1000u
#define FONT_WRAP 1200u /* below this only for words that do not fit */
#define FONT_STEP 100u
/* The fewest rows a table's last slide takes when the slide before can
 * spare them (no single orphaned row). */
#define ORPHAN_ROWS 3u
/* A column of a wide table split into groups gets up to this much room for
 * its text (1.25 in) before the next group starts. */
#define GROUP_COL_EMU (1.25 * PPTX_EMU_PER_INCH)
/* Line height as a multiple of the font size. */
#define LINE_FACTOR 1.2
/* PowerPoint's default cell margins (a:tcPr marL/marR and marT/marB). */
#define CELL_MAR_X 91440
#define CELL_MAR_Y 45720
/* Measuring and PowerPoint's line breaking may differ a little: text
 * measured to fit on one line must not wrap. */
#define SLACK_EMU (2 * PPTX_EMU_PER_PT)
/* The narrowest column: its margins and about two digits. */
#define MIN_TEXT_EMU (11 * PPTX_EMU_PER_PT)
/* Excel's column width unit at 11 pt: the digit width, 7 px, plus 5 px of
 * padding (as docx_table.c converts it). */
#define EXCEL_DIGIT_PX 7.0
#define EXCEL_PAD_PX 5.0
#define BORDER_COLOR 0x404040

/* ------------------------------------------------------------------ model */

typedef struct table_col {
    const kiln_column *def;  /* NULL past the defined columns */
    double want_units;       /* widest line, 1/2048 em of the table font */
    double word_units;       /* widest word of text */
    double num_units;        /* widest number or date (never broken) */
    int has_numeric, has_text;
    int hidden;              /* width 0: hidden in Excel, left out here */
    double want, need;       /* EMU at the trial font (fit_widths) */
    int64_t width;           /* EMU, as written */
    int user_hidden;         /* width 0 in the spec: never shown */
    const char *algn;        /* l, ctr, r, just: the column's alignment */
    int auto_align;          /* untyped and mixed: number cells go right */
} table_col;

/* A merged range laid out (spans[k] lays out walk.merges[k]). */
typedef struct merge_span {
    const kiln_merge *merge;
    size_t lead_col;         /* the first shown column: where the cell goes */
    size_t shown;            /* shown columns; 0 = nothing shown */
    size_t measure_col;      /* the one column it shows in, KILN_MERGE_NONE when several */
    int64_t width;           /* EMU of its shown columns together */
    kiln_style look;         /* the top-left's look, for the rows below (fill, border) */
    int has_look;
    int merge_look;          /* shown in the merge's format: centered */
} merge_span;

/* One cell as it will be written: everything copied out of the row reader. */
typedef struct table_cell {
    const char *text;
    size_t len;
    const char *link;        /* URL, or NULL */
    kiln_style style;
    int has_style;
    int numeric;             /* a number or a date: right in an untyped mixed column */
    size_t merge;            /* index of the range covering it, or KILN_MERGE_NONE */
    int merge_look;
} table_cell;

typedef struct table_row {
    table_cell *cells;       /* t->ncols cells (hidden columns included, unused) */
    uint32_t ws_row;         /* the worksheet row */
    int64_t height;          /* EMU */
    int header;
} table_row;

struct pptx_table {
    pptx_ctx *c;
    const kiln_table_data *d;
    const char *pointer;
    pptx_rect area;
    table_col *cols;
    size_t ncols;
    unsigned sz;             /* the table's font size, 1/100 pt */
    kiln_merge_walk walk;
    merge_span *spans;
    table_row head;
    int has_head;
    kiln_row_reader *reader; /* the writing pass */
    int reader_done;
    uint32_t next_ws_row;    /* worksheet row of the next data row read */
    kiln_arena scratch[2];   /* this slide's rows; the previous slide's (the kept row) */
    int cur;                 /* scratch[cur] holds the kept rows */
    table_row kept[ORPHAN_ROWS + 1]; /* the rows the previous slide left for this one: the
                                        one that did not fit, after any moved with it */
    size_t kept_count;
    size_t rows_done;        /* data rows on the group's slides so far */
    table_row *rows;         /* this slide's rows (malloc'd, reused) */
    size_t row_cap;
    /* Column groups of a table too wide for a slide (see "Wide tables"):
     * group g shows columns group_first[g]..group_last[g], after key_col
     * when key_repeat[g]. One group (everything) for most tables. */
    size_t *group_first, *group_last;
    unsigned char *key_repeat;
    size_t group_count, group;
    size_t key_col;
    const kiln_cell *hdr;    /* the header row's cells, NULL = no header row */
};

/* ------------------------------------------------------------------ text metrics */

/* Advance width of a code point in 1/2048 em. */
static double cp_units(uint32_t cp, int bold)
{
    const unsigned short *w = bold ? kiln_calibri_bold : kiln_calibri_regular;
    if (cp == '\t')
        return 4.0 * w[0];
    if (cp < 32)
        return 0;
    if (cp < 127)
        return w[cp - 32];
    if (kiln_char_is_wide(cp))
        return KILN_METRIC_WIDE_UNITS;
    if (cp >= 0x300 && cp < 0x370)
        return 0; /* combining marks */
    return KILN_METRIC_OTHER_UNITS;
}

static int cp_is_space(uint32_t cp)
{
    return cp == ' ' || cp == '\t';
}

/* The widest line and the widest word of s, in 1/2048 em. A line may break
 * after a wide (CJK) character, so each is a word of its own. */
static void text_units(const char *s, size_t len, int bold, double *line_max, double *word_max)
{
    size_t pos = 0;
    double line = 0, word = 0, lmax = 0, wmax = 0;
    while (pos < len) {
        uint32_t cp = kiln_utf8_next(s, len, &pos);
        double u = cp_units(cp, bold);
        if (cp == '\n' || cp == '\r') {
            wmax = word > wmax ? word : wmax;
            lmax = line > lmax ? line : lmax;
            word = line = 0;
            continue;
        }
        line += u;
        if (cp_is_space(cp) || kiln_char_is_wide(cp)) {
            wmax = word > wmax ? word : wmax;
            word = 0;
            if (!cp_is_space(cp) && u > wmax)
                wmax = u;
            continue;
        }
        word += u;
    }
    *word_max = word > wmax ? word : wmax;
    *line_max = line > lmax ? line : lmax;
}

/* Lines of s broken greedily between words in avail (1/2048 em); a word
 * wider than a line breaks inside it. */
static unsigned wrap_lines(const char *s, size_t len, int bold, double avail)
{
    size_t pos = 0;
    unsigned lines = 1;
    double line = 0, word = 0, spaces = 0;
    int at_start = 1; /* nothing on the line yet */
    if (avail < 1)
        avail = 1;
    for (;;) {
        uint32_t cp = pos < len ? kiln_utf8_next(s, len, &pos) : 0;
        int done = pos >= len && cp == 0;
        int wide = !done && kiln_char_is_wide(cp);
        if (!done && !cp_is_space(cp) && cp != '\n' && cp != '\r' && !wide) {
            word += cp_units(cp, bold);
            continue;
        }
        /* A word ends: place it. */
        if (wide)
            word += cp_units(cp, bold);
        if (word > 0) {
            if (!at_start && line + spaces + word > avail) {
                lines++;
                at_start = 1;
            }
            if (at_start) {
                if (word > avail) {
                    double extra = ceil(word / avail) - 1;
                    lines += extra < 1e6 ? (unsigned)extra : 1000000u;
                    line = word - extra * avail;
                } else {
                    line = word;
                }
                at_start = 0;
            } else {
                line += spaces + word;
            }
            spaces = 0;
            word = 0;
        }
        if (done)
            break;
        if (cp == '\n') {
            lines++;
            line = spaces = 0;
            at_start = 1;
        } else if (cp_is_space(cp)) {
            spaces += cp_units(cp, bold);
        }
    }
    return lines;
}

/* ------------------------------------------------------------------ measuring */

/* A cell's text into col's widths and alignment counts (the header row is
 * bold and not counted). Units are of the table's font; a cell with a size
 * of its own is scaled against the default 14 pt. */
static void measure_cell(table_col *col, const kiln_cell *cell, const kiln_column *def, int header)
{
    if (cell->kind == KILN_CELL_BLANK)
        return;
    char buf[KILN_NUMFMT_MAX];
    size_t len;
    const char *text = kiln_cell_display(cell, def, buf, sizeof buf, &len);
    int bold = header || (cell->style && cell->style->bold);
    double line, word;
    text_units(text, len, bold, &line, &word);
    if (cell->style && cell->style->size > 0) {
        double f = cell->style->size * 100.0 / FONT_MAX;
        line *= f;
        word *= f;
    }
    if (line > col->want_units)
        col->want_units = line;
    int numeric = !header && kiln_cell_is_numeric(cell);
    if (numeric) {
        if (line > col->num_units)
            col->num_units = line;
    } else if (word > col->word_units) {
        col->word_units = word;
    }
    if (header)
        return;
    if (numeric)
        col->has_numeric = 1;
    else
        col->has_text = 1;
}

/* Grow the column array to n columns (tables without column definitions:
 * the widest row sets the grid). */
static kiln_status cols_grow(pptx_table *t, size_t n, size_t *cap)
{
    if (n <= t->ncols)
        return KILN_E_OK;
    if (n > *cap) {
        size_t grown = *cap ? *cap : 8;
        while (grown < n)
            grown *= 2;
        table_col *cols = kiln_arena_calloc(t->c->arena, grown, sizeof *cols);
        if (!cols)
            return pptx_nomem(t->c, t->pointer);
        if (t->ncols)
            memcpy(cols, t->cols, t->ncols * sizeof *cols);
        t->cols = cols;
        *cap = grown;
    }
    t->ncols = n;
    return KILN_E_OK;
}

/* The ranges starting in worksheet row `row`, measured in the one column
 * they show in (ranges over several columns wrap in them). */
static void measure_merges(pptx_table *t, uint32_t row, const kiln_cell *cells, size_t count,
                           int header)
{
    for (size_t k = 0; k < t->walk.active_count; k++) {
        merge_span *span = &t->spans[t->walk.active[k]];
        const kiln_range *r = &span->merge->range;
        if (r->first_row != row || span->measure_col == KILN_MERGE_NONE ||
            span->measure_col >= t->ncols)
            continue;
        int merge_look;
        const kiln_cell *own = r->first_col < count ? &cells[r->first_col] : NULL;
        const kiln_cell *shown = kiln_merge_shown(span->merge, own, &merge_look);
        const kiln_column *def = merge_look || header ? NULL : kiln_table_column(t->d, r->first_col);
        measure_cell(&t->cols[span->measure_col], shown, def, header);
    }
}

/* The header row as cells: each column's header a string (blank when none). */
static kiln_cell *header_cells(pptx_table *t)
{
    const kiln_table_data *d = t->d;
    kiln_cell *cells = kiln_arena_calloc(t->c->arena, d->column_count, sizeof *cells);
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

/* The measuring pass: the header and the first MEASURE_ROWS rows; past
 * them, a table without column definitions is read on for its width only. */
static kiln_status measure(pptx_table *t, const kiln_cell *hdr)
{
    pptx_ctx *c = t->c;
    const kiln_table_data *d = t->d;
    size_t cap = 0;
    kiln_status st = cols_grow(t, d->column_count, &cap);
    if (st != KILN_E_OK)
        return st;
    uint32_t row = 0;
    if (hdr) {
        kiln_merge_walk_row(&t->walk, row);
        for (size_t i = 0; i < d->column_count; i++)
            if (kiln_merge_walk_at(&t->walk, i) == KILN_MERGE_NONE)
                measure_cell(&t->cols[i], &hdr[i], NULL, 1);
        measure_merges(t, row, hdr, d->column_count, 1);
        row++;
    }
    kiln_row_reader *reader = NULL;
    st = kiln_rows_open(c->doc, d, &reader, c->err);
    if (st != KILN_E_OK)
        return st;
    const kiln_cell *cells;
    size_t count;
    int more;
    uint32_t measured = 0;
    while ((more = kiln_rows_next(reader, &cells, &count, c->err)) == 1) {
        if (measured >= MEASURE_ROWS) {
            if (d->column_count)
                break;
            if ((st = cols_grow(t, count, &cap)) != KILN_E_OK)
                goto cleanup_reader;
            continue;
        }
        if ((st = cols_grow(t, count, &cap)) != KILN_E_OK)
            goto cleanup_reader;
        kiln_merge_walk_row(&t->walk, row);
        for (size_t i = 0; i < count && i < t->ncols; i++)
            if (kiln_merge_walk_at(&t->walk, i) == KILN_MERGE_NONE)
                measure_cell(&t->cols[i], &cells[i], kiln_table_column(d, i), 0);
        measure_merges(t, row, cells, count, 0);
        measured++;
        if (row < UINT32_MAX)
            row++;
    }
    if (more < 0)
        st = c->err->code != KILN_E_OK ? c->err->code : KILN_E_INPUT;
cleanup_reader:
    kiln_rows_close(reader);
    return st;
}

static const char *algn_of(kiln_align align)
{
    switch (align) {
    case KILN_ALIGN_LEFT: return "l";
    case KILN_ALIGN_CENTER: return "ctr";
    case KILN_ALIGN_RIGHT: return "r";
    case KILN_ALIGN_JUSTIFY: return "just";
    default: return NULL;
    }
}

static void column_align(table_col *col)
{
    const kiln_column *def = col->def;
    const char *a = def ? algn_of(def->align) : NULL;
    col->algn = "l";
    if (a)
        col->algn = a;
    else if (def && def->type == KILN_COL_BOOLEAN)
        col->algn = "ctr"; /* as Excel shows TRUE and FALSE */
    else if (kiln_column_is_numeric(def))
        col->algn = "r";
    else if (!def || def->type == KILN_COL_AUTO) {
        if (col->has_numeric && !col->has_text)
            col->algn = "r";
        else
            col->auto_align = 1; /* mixed: number cells right, as Excel's General */
    }
}

/* ------------------------------------------------------------------ widths */

/* Wants and needs at font sz (1/100 pt); returns the sum of the wants. */
static double trial_widths(pptx_table *t, unsigned sz, double *need_total)
{
    double emu_per_unit = sz / 100.0 * PPTX_EMU_PER_PT / KILN_METRIC_UNITS_PER_EM;
    double pad = 2.0 * CELL_MAR_X + SLACK_EMU;
    double want_total = 0;
    *need_total = 0;
    for (size_t i = 0; i < t->ncols; i++) {
        table_col *col = &t->cols[i];
        if (col->hidden)
            continue;
        double word = col->word_units > col->num_units ? col->word_units : col->num_units;
        col->want = col->want_units * emu_per_unit + pad;
        col->need = word * emu_per_unit + pad;
        if (col->def && col->def->width > 0) {
            /* An explicit width, but never so narrow that a number wraps. */
            double px = col->def->width * EXCEL_DIGIT_PX + EXCEL_PAD_PX;
            double number = col->num_units * emu_per_unit + pad;
            col->want = px * 0.75 * (sz / 1100.0) * PPTX_EMU_PER_PT;
            if (col->want < number)
                col->want = number;
        }
        if (col->want < 2.0 * CELL_MAR_X + MIN_TEXT_EMU)
            col->want = 2.0 * CELL_MAR_X + MIN_TEXT_EMU;
        if (col->need > col->want)
            col->need = col->want;
        want_total += col->want;
        *need_total += col->need;
    }
    return want_total;
}

/* 1 when a column's need is its widest number, which is never broken. */
static int need_is_number(const table_col *col)
{
    return col->num_units > 0 && col->num_units >= col->word_units;
}

/* The widest cap on the text columns' needs at which everything fits
 * (numbers keep their need), found by bisection. */
static double text_cap(const pptx_table *t, double avail)
{
    double lo = 0, hi = avail;
    for (int i = 0; i < 50; i++) {
        double mid = (lo + hi) / 2, sum = 0;
        for (size_t j = 0; j < t->ncols; j++) {
            const table_col *col = &t->cols[j];
            if (col->hidden)
                continue;
            sum += need_is_number(col) || col->need < mid ? col->need : mid;
        }
        if (sum > avail)
            hi = mid;
        else
            lo = mid;
    }
    return lo;
}

/* The font size and every shown column's width; the widths add up to the
 * area's width exactly (see the comment at the top). */
static void fit_widths(pptx_table *t)
{
    double avail = (double)t->area.cx;
    double need_total = 0, want_total = 0;
    unsigned sz;
    for (sz = FONT_MAX;; sz -= FONT_STEP) {
        want_total = trial_widths(t, sz, &need_total);
        /* Long text wraps rather than shrink the type below FONT_WRAP (read
         * across a room); only words that cannot fit take it further. */
        if (want_total <= avail || (sz <= FONT_WRAP && need_total <= avail) || sz <= FONT_MIN)
            break;
    }
    t->sz = sz;
    double w_sum = 0;
    double cap = need_total > avail ? text_cap(t, avail) : 0;
    for (size_t i = 0; i < t->ncols; i++) {
        table_col *col = &t->cols[i];
        if (col->hidden)
            continue;
        double w;
        if (want_total <= avail)
            w = col->want + (avail - want_total) * col->want / want_total;
        else if (need_total <= avail)
            w = col->need + (col->want - col->need) * (avail - need_total) /
                                (want_total - need_total);
        else if (need_is_number(col))
            w = col->need; /* numbers keep their width */
        else
            w = col->need < cap ? col->need : cap;
        col->want = w;
        w_sum += w;
    }
    /* Numbers kept whole may still not fit beside the capped text: scale
     * everything to the area (some text then overflows its cell). */
    double scale = w_sum > avail ? avail / w_sum : 1.0;
    int64_t total = 0;
    table_col *last = NULL;
    for (size_t i = 0; i < t->ncols; i++) {
        table_col *col = &t->cols[i];
        if (col->hidden)
            continue;
        col->width = (int64_t)floor(col->want * scale);
        if (col->width < 1)
            col->width = 1;
        total += col->width;
        last = col;
    }
    if (last && total != t->area.cx && last->width + (t->area.cx - total) > 0)
        last->width += t->area.cx - total;
}

/* Split the shown columns into groups whose needs at FONT_MIN fit the
 * area's width (see "Wide tables" at the top); one group when they all fit.
 * The cols' hidden flags are the spec's (user_hidden) on entry. */
static kiln_status plan_groups(pptx_table *t)
{
    double avail = (double)t->area.cx;
    double need_total = 0;
    trial_widths(t, FONT_MIN, &need_total);
    size_t cap = t->ncols ? t->ncols : 1;
    t->group_first = kiln_arena_calloc(t->c->arena, cap, sizeof *t->group_first);
    t->group_last = kiln_arena_calloc(t->c->arena, cap, sizeof *t->group_last);
    t->key_repeat = kiln_arena_calloc(t->c->arena, cap, 1);
    if (!t->group_first || !t->group_last || !t->key_repeat)
        return pptx_nomem(t->c, t->pointer);
    t->key_col = 0;
    while (t->key_col < t->ncols && t->cols[t->key_col].user_hidden)
        t->key_col++;
    if (need_total <= avail || t->key_col >= t->ncols) {
        t->group_first[0] = 0;
        t->group_last[0] = t->ncols ? t->ncols - 1 : 0;
        t->group_count = 1;
        return KILN_E_OK;
    }
    /* Too wide, then: the groups are made so that their columns get room to
     * read at FONT_WRAP, each its longest word and up to GROUP_COL_EMU of
     * its text on a line, rather than packed as tight as 10 pt allows. */
    trial_widths(t, FONT_WRAP, &need_total);
    for (size_t i = 0; i < t->ncols; i++) {
        table_col *c = &t->cols[i];
        double roomy = c->want < GROUP_COL_EMU ? c->want : GROUP_COL_EMU;
        c->need = c->need > roomy ? c->need : roomy;
    }
    double key_need = t->cols[t->key_col].need;
    size_t g = 0, col = t->key_col;
    for (;;) {
        while (col < t->ncols && t->cols[col].user_hidden)
            col++;
        if (col >= t->ncols)
            break;
        /* The key column leads every group after the first, when it leaves
         * room for at least the next column beside it. */
        int repeat = g > 0 && key_need + t->cols[col].need <= avail;
        double used = repeat ? key_need : 0;
        size_t first = col, last = col;
        for (; col < t->ncols; col++) {
            if (t->cols[col].user_hidden)
                continue;
            if (col > first && used + t->cols[col].need > avail)
                break;
            used += t->cols[col].need;
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

/* Each range's lead column and width, now that the widths are known. */
static void merges_clip(pptx_table *t)
{
    for (size_t k = 0; k < t->walk.count; k++) {
        merge_span *span = &t->spans[k];
        const kiln_range *r = &span->merge->range;
        span->lead_col = SIZE_MAX;
        span->shown = 0;
        span->width = 0;
        for (size_t col = r->first_col; col <= r->last_col && col < t->ncols; col++) {
            if (t->cols[col].hidden)
                continue;
            if (span->lead_col == SIZE_MAX)
                span->lead_col = col;
            span->shown++;
            span->width += t->cols[col].width;
        }
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
    const char *text =
        cell->kind == KILN_CELL_BLANK ? "" : kiln_cell_display(cell, def, buf, sizeof buf, &len);
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
        const table_col *col = &t->cols[i];
        if (col->hidden || cell->len == 0)
            continue;
        int64_t width = col->width;
        if (cell->merge != KILN_MERGE_NONE)
            width = t->spans[cell->merge].width;
        unsigned sz = cell_sz(t, cell);
        double emu_per_unit = sz / 100.0 * PPTX_EMU_PER_PT / KILN_METRIC_UNITS_PER_EM;
        double avail = (double)(width - 2 * CELL_MAR_X) / emu_per_unit;
        /* A column squeezed to its margins still sets a character a line,
         * not a line a pixel. */
        if (avail < KILN_METRIC_UNITS_PER_EM)
            avail = KILN_METRIC_UNITS_PER_EM;
        int bold = row->header || (cell->has_style && cell->style.bold);
        double h = wrap_lines(cell->text, cell->len, bold, avail) * line_emu(sz);
        if (h > tallest)
            tallest = h;
    }
    return (int64_t)ceil(tallest) + 2 * CELL_MAR_Y;
}

/* Lay out worksheet row ws_row (cells[count], NULL for an empty row) into
 * out, copied into arena. The merge walk must be at the row before. */
static kiln_status row_prepare(pptx_table *t, kiln_arena *arena, uint32_t ws_row, int header,
                               const kiln_cell *cells, size_t count, table_row *out)
{
    memset(out, 0, sizeof *out);
    out->ws_row = ws_row;
    out->header = header;
    out->cells = kiln_arena_calloc(arena, t->ncols ? t->ncols : 1, sizeof *out->cells);
    if (!out->cells)
        return pptx_nomem(t->c, t->pointer);
    kiln_merge_walk_row(&t->walk, ws_row);
    for (size_t i = 0; i < t->ncols; i++) {
        table_cell *cell = &out->cells[i];
        cell->text = "";
        cell->merge = kiln_merge_walk_at(&t->walk, i);
        if (t->cols[i].hidden)
            continue;
        if (cell->merge != KILN_MERGE_NONE) {
            merge_span *span = &t->spans[cell->merge];
            const kiln_range *r = &span->merge->range;
            if (i != span->lead_col)
                continue;
            if (ws_row != r->first_row) {
                /* Below the range's first row: its look, for a range
                 * continued on the next slide. */
                if (span->has_look) {
                    cell->style = span->look;
                    cell->has_style = 1;
                }
                cell->merge_look = span->merge_look;
                continue;
            }
            int merge_look;
            const kiln_cell *own = cells && r->first_col < count ? &cells[r->first_col] : NULL;
            const kiln_cell *shown = kiln_merge_shown(span->merge, own, &merge_look);
            const kiln_column *def = merge_look || header ? NULL : kiln_table_column(t->d, r->first_col);
            if (cell_copy(arena, cell, shown, def) != 0)
                return pptx_nomem(t->c, t->pointer);
            cell->merge_look = merge_look && !kiln_merge_is_single(span->merge);
            span->merge_look = cell->merge_look;
            span->has_look = cell->has_style;
            if (cell->has_style)
                span->look = cell->style;
            continue;
        }
        if (!cells || i >= count)
            continue; /* a short row */
        if (cell_copy(arena, cell, &cells[i], header ? NULL : kiln_table_column(t->d, i)) != 0)
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
        t->cols[i].hidden = t->cols[i].user_hidden || !(in_group || key);
    }
    fit_widths(t);
    merges_clip(t);
    kiln_merge_walk_rewind(&t->walk);

    uint32_t ws_row = 0;
    t->has_head = 0;
    if (t->hdr) {
        kiln_status st = row_prepare(t, c->arena, ws_row++, 1, t->hdr, t->d->column_count,
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
    kiln_status st = KILN_E_OK;

    if (sheet && sheet->merge_count) {
        size_t n = sheet->merge_count;
        st = kiln_merge_walk_init(&t->walk, sheet->merges, n, c->arena);
        if (st == KILN_E_OK && !(t->spans = kiln_arena_calloc(c->arena, n, sizeof *t->spans)))
            st = KILN_E_NOMEM;
        if (st != KILN_E_OK) {
            st = pptx_nomem(c, t->pointer);
            goto close_table;
        }
        for (size_t k = 0; k < n; k++) {
            t->spans[k].merge = t->walk.merges[k];
            t->spans[k].measure_col = kiln_merge_single_column(data, &t->walk.merges[k]->range);
        }
    }

    const kiln_cell *hdr = NULL;
    int any_header = 0;
    for (size_t i = 0; i < data->column_count; i++)
        if (data->columns[i].header && *data->columns[i].header)
            any_header = 1;
    if (data->header && any_header && !(hdr = header_cells(t))) {
        st = pptx_nomem(c, t->pointer);
        goto close_table;
    }
    if ((st = measure(t, hdr)) != KILN_E_OK)
        goto close_table;
    if (t->ncols == 0) {
        /* No columns at all: one empty column, as a:tbl needs a grid. */
        size_t cap = 0;
        if ((st = cols_grow(t, 1, &cap)) != KILN_E_OK)
            goto close_table;
    }
    size_t shown = 0;
    for (size_t i = 0; i < t->ncols; i++) {
        table_col *col = &t->cols[i];
        col->def = kiln_table_column(data, i);
        col->hidden = col->def && col->def->width == 0;
        shown += !col->hidden;
        column_align(col);
    }
    if (shown == 0)
        t->cols[0].hidden = 0; /* every column hidden: still a grid of one */
    for (size_t i = 0; i < t->ncols; i++)
        t->cols[i].user_hidden = t->cols[i].hidden;
    t->hdr = hdr;
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
    const char *algn = style ? algn_of(style->align) : NULL;
    if (!algn && cell->merge_look)
        algn = "ctr";
    /* Right-to-left text reads from the right: marked so (as body text is,
     * pptx_text.c), and set right where the column would set it left. */
    int decided = 0;
    int rtl = !cell->numeric && pptx_text_is_rtl(cell->text, cell->len, &decided);
    if (!algn)
        algn = t->cols[col].auto_align && cell->numeric ? "r" : t->cols[col].algn;
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
    kiln_valign valign = style ? style->valign : KILN_VALIGN_DEFAULT;
    if (valign == KILN_VALIGN_DEFAULT && cell->merge_look)
        valign = KILN_VALIGN_MIDDLE;
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
        if (t->cols[i].hidden)
            continue;
        cell_place place = {1, 1, 0, 0, 0};
        size_t k = row->cells[i].merge;
        if (k != KILN_MERGE_NONE && t->spans[k].shown > 0) {
            const merge_span *span = &t->spans[k];
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
        kiln_status st = row_prepare(t, arena, t->next_ws_row, 0, cells, count, &row);
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
        st = row_prepare(t, arena, t->next_ws_row, 0, cells, count, &row);
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
        memset(&empty, 0, sizeof empty);
        empty.cells = kiln_arena_calloc(arena, t->ncols, sizeof *empty.cells);
        if (!empty.cells)
            return pptx_nomem(c, t->pointer);
        for (size_t i = 0; i < t->ncols; i++) {
            empty.cells[i].text = "";
            empty.cells[i].merge = KILN_MERGE_NONE;
        }
        empty.height = row_height(t, &empty);
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
        if (t->cols[i].hidden)
            continue;
        opc_xml_start(x, "a:gridCol");
        opc_xml_attr_int(x, "w", t->cols[i].width);
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
