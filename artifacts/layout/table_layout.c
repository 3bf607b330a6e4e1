/*
 * table_layout.c - a table laid out once, in points (table_layout.h): the
 * measuring pass, the widths, the font a table too wide is shrunk to, and
 * what each column of a row shows, for the docx, pptx and pdf writers.
 */
#include <math.h>
#include <string.h>

#include "../../common/utf8.h"
#include "numfmt.h"
#include "table_layout.h"
#include "text_metrics.h"
#include "../../common/banned.h"

/* ------------------------------------------------------------------ metrics */

static const void *calibri_face_of(void *ctx, const kiln_style *style, int bold)
{
    kiln_calibri_metrics *cm = ctx;
    (void)style; /* no font file: every font is measured as Calibri */
    return bold ? &cm->bold : &cm->regular;
}

static double calibri_advance(void *ctx, const void *face, uint32_t cp, double size)
{
    const kiln_calibri_face *f = face;
    const unsigned short *w = f->widths;
    double units;
    (void)ctx;
    if (cp == '\t')
        units = 4.0 * w[0];
    else if (cp < 32 || cp == 127)
        units = 0; /* not drawn */
    else if (cp < 127)
        units = w[cp - 32];
    else if (kiln_char_is_wide(cp))
        units = KILN_METRIC_WIDE_UNITS;
    else if (cp >= 0x300 && cp < 0x370)
        units = 0; /* combining marks */
    else
        units = KILN_METRIC_OTHER_UNITS;
    return units * f->factor * size / KILN_METRIC_UNITS_PER_EM;
}

void kiln_calibri_metrics_init(kiln_calibri_metrics *cm, double bold_factor)
{
    cm->m.ctx = cm;
    cm->m.face = calibri_face_of;
    cm->m.advance = calibri_advance;
    cm->m.breaks_after = NULL;
    cm->regular.widths = kiln_calibri_regular;
    cm->regular.factor = 1.0;
    cm->bold.widths = bold_factor > 0 ? kiln_calibri_regular : kiln_calibri_bold;
    cm->bold.factor = bold_factor > 0 ? bold_factor : 1.0;
}

static int breaks_after(const kiln_text_metrics *m, uint32_t cp)
{
    return m->breaks_after ? m->breaks_after(cp) : kiln_char_is_wide(cp);
}

void kiln_text_extent(const kiln_text_metrics *m, const void *face, double size, const char *s,
                      size_t len, double *line_max, double *word_max)
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
        double w = m->advance(m->ctx, face, cp, size);
        line += w;
        if (cp == ' ' || cp == '\t') {
            if (word > wmax)
                wmax = word;
            word = 0;
        } else if (breaks_after(m, cp)) {
            /* a line may break after it: a word of its own */
            if (word > wmax)
                wmax = word;
            if (w > wmax)
                wmax = w;
            word = 0;
        } else {
            word += w;
        }
    }
    *word_max = word > wmax ? word : wmax;
    *line_max = line > lmax ? line : lmax;
}

unsigned kiln_text_line_count(const kiln_text_metrics *m, const void *face, double size,
                              const char *s, size_t len, double width)
{
    size_t pos = 0;
    unsigned lines = 1;
    double line = 0, word = 0, spaces = 0;
    int at_start = 1; /* nothing on the line yet */
    if (width < 1e-6)
        width = 1e-6;
    for (;;) {
        uint32_t cp = pos < len ? kiln_utf8_next(s, len, &pos) : 0;
        int done = pos >= len && cp == 0;
        int space = cp == ' ' || cp == '\t';
        int wide = !done && breaks_after(m, cp);
        if (!done && !space && cp != '\n' && cp != '\r' && !wide) {
            word += m->advance(m->ctx, face, cp, size);
            continue;
        }
        /* A word ends: place it. */
        if (wide)
            word += m->advance(m->ctx, face, cp, size);
        if (word > 0) {
            if (!at_start && line + spaces + word > width) {
                lines++;
                at_start = 1;
            }
            if (at_start) {
                if (word > width) {
                    double extra = ceil(word / width) - 1;
                    lines += extra < 1e6 ? (unsigned)extra : 1000000u;
                    line = word - extra * width;
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
        } else if (space) {
            spaces += m->advance(m->ctx, face, cp, size);
        }
    }
    return lines;
}

/* ------------------------------------------------------------------ helpers */

static kiln_status nomem(const kiln_table_layout *t)
{
    return kiln_error_set(t->err, KILN_E_NOMEM, t->pointer, "out of memory laying out a table");
}

/* The status of a failed call that recorded its error (or should have). */
static kiln_status failed(const kiln_table_layout *t)
{
    return t->err && t->err->code != KILN_E_OK ? t->err->code : KILN_E_INTERNAL;
}

int kiln_table_has_header(const kiln_table_data *d)
{
    return d->header && d->column_count;
}

double kiln_table_layout_cell_size(const kiln_table_layout *t, double size,
                                   const kiln_style *style)
{
    if (!style || style->size <= 0)
        return size;
    double s = style->size * size / t->rules.body_pt;
    return s >= 1.0 ? s : 1.0;
}

/* The range covering column `col` in the walk's current row, or NULL. */
static kiln_table_span *span_at(const kiln_table_layout *t, size_t col)
{
    size_t k = kiln_merge_walk_at(&t->walk, col);
    return k == KILN_MERGE_NONE ? NULL : &t->spans[k];
}

/* ------------------------------------------------------------------ measuring */

static kiln_status grow_cols(kiln_table_layout *t, size_t count)
{
    if (count <= t->ncols)
        return KILN_E_OK;
    if (count > t->cap) {
        size_t grown = t->cap ? t->cap : 8;
        while (grown < count)
            grown *= 2;
        kiln_table_col *cols = kiln_arena_calloc(t->arena, grown, sizeof *cols);
        if (!cols)
            return nomem(t);
        if (t->ncols)
            memcpy(cols, t->cols, t->ncols * sizeof *cols);
        t->cols = cols;
        t->cap = grown;
    }
    t->ncols = count;
    return KILN_E_OK;
}

/* A cell's text into the widths of `into` (a column, or a range over
 * several) and the column's alignment counts. A header cell is bold and is
 * not counted. */
static kiln_status measure_cell(kiln_table_layout *t, kiln_table_col *into, const kiln_cell *cell,
                                const kiln_column *def, int header)
{
    if (cell->kind == KILN_CELL_BLANK)
        return KILN_E_OK;
    char buf[KILN_NUMFMT_MAX];
    size_t len = 0;
    const char *text = kiln_cell_display(cell, def, buf, sizeof buf, &len);
    int bold = header || (cell->style && cell->style->bold);
    const void *face = t->metrics->face(t->metrics->ctx, cell->style, bold);
    if (!face)
        return failed(t);
    double line, word;
    kiln_text_extent(t->metrics, face,
                     kiln_table_layout_cell_size(t, t->rules.base_pt, cell->style), text, len,
                     &line, &word);
    int numeric = !header && kiln_cell_is_numeric(cell);
    if (line > into->text_want)
        into->text_want = line;
    if (numeric && t->rules.numbers_whole) {
        if (line > into->num_need) /* "1,234.50" and "2026-01-05 10:00" never break */
            into->num_need = line;
    } else if (word > into->text_need) {
        into->text_need = word;
    }
    if (!header) {
        if (numeric)
            into->has_numeric = 1;
        else
            into->has_text = 1;
    }
    return KILN_E_OK;
}

/* What the ranges starting in worksheet row `row` show: measured in the one
 * column a range shows in, else kept with the range (widen_for_merges). */
static kiln_status measure_merges(kiln_table_layout *t, uint32_t row, const kiln_cell *cells,
                                  size_t count, int header)
{
    for (size_t k = 0; k < t->walk.active_count; k++) {
        kiln_table_span *span = &t->spans[t->walk.active[k]];
        const kiln_range *r = &span->merge->range;
        if (r->first_row != row)
            continue;
        int merge_look;
        const kiln_cell *own = r->first_col < count ? &cells[r->first_col] : NULL;
        const kiln_cell *shown = kiln_merge_shown(span->merge, own, &merge_look);
        /* The merge's format has no column number format. */
        const kiln_column *def = merge_look || header ? NULL
                                                      : kiln_table_column(t->d, r->first_col);
        kiln_status st;
        if (span->measure_col != KILN_MERGE_NONE) {
            if (span->measure_col >= t->ncols)
                continue;
            st = measure_cell(t, &t->cols[span->measure_col], shown, def, header);
        } else {
            kiln_table_col text = {0};
            st = measure_cell(t, &text, shown, def, header);
            span->text_want = text.text_want;
            span->text_need = text.text_need > text.num_need ? text.text_need : text.num_need;
        }
        if (st != KILN_E_OK)
            return st;
    }
    return KILN_E_OK;
}

/* One row of the measuring pass. */
static kiln_status measure_row(kiln_table_layout *t, uint32_t row, const kiln_cell *cells,
                               size_t count, int header)
{
    kiln_merge_walk_row(&t->walk, row);
    for (size_t i = 0; i < count && i < t->ncols; i++) {
        if (span_at(t, i))
            continue;
        kiln_status st = measure_cell(t, &t->cols[i], &cells[i],
                                      header ? NULL : kiln_table_column(t->d, i), header);
        if (st != KILN_E_OK)
            return st;
    }
    return measure_merges(t, row, cells, count, header);
}

/* The first pass: how many columns, what the rows measured need. Rows past
 * rules.measure_rows can be wider than those only when the table defines no
 * columns (the row readers reject a row wider than the columns defined), so
 * then they are read on for their width alone, and no cell is ever
 * dropped. */
static kiln_status measure(kiln_table_layout *t)
{
    const kiln_table_data *d = t->d;
    kiln_status st = grow_cols(t, d->column_count);
    if (st != KILN_E_OK)
        return st;
    uint32_t row = 0; /* the worksheet row */
    if (t->hdr) {
        if ((st = measure_row(t, row, t->hdr, d->column_count, 1)) != KILN_E_OK)
            return st;
        row++;
    }
    int count_on = d->column_count == 0;
    kiln_row_reader *reader = NULL;
    st = kiln_rows_open(t->doc, d, &reader, t->err);
    if (st != KILN_E_OK)
        return st;
    const kiln_cell *cells;
    size_t count;
    uint64_t seen = 0;
    int more;
    while ((more = kiln_rows_next(reader, &cells, &count, t->err)) == 1) {
        if ((st = grow_cols(t, count)) != KILN_E_OK)
            goto cleanup_reader;
        if (t->rules.measure_rows && seen++ >= t->rules.measure_rows) {
            if (!count_on)
                break;
            continue;
        }
        if ((st = measure_row(t, row, cells, count, 0)) != KILN_E_OK)
            goto cleanup_reader;
        if (row < UINT32_MAX)
            row++;
    }
    if (more < 0)
        st = t->err->code != KILN_E_OK ? t->err->code : KILN_E_INPUT;

cleanup_reader:
    kiln_rows_close(reader);
    return st;
}

static kiln_align column_align(const kiln_table_layout *t, const kiln_table_col *c)
{
    const kiln_column *def = c->def;
    if (def && def->align != KILN_ALIGN_DEFAULT)
        return def->align;
    if (def && def->type == KILN_COL_BOOLEAN)
        return KILN_ALIGN_CENTER; /* as Excel shows TRUE and FALSE */
    if (def && def->type != KILN_COL_AUTO)
        return kiln_column_is_numeric(def) ? KILN_ALIGN_RIGHT : KILN_ALIGN_LEFT;
    if (kiln_column_is_numeric(def))
        return KILN_ALIGN_RIGHT; /* untyped with a number format: "numbers here" */
    if (c->has_numeric && !c->has_text)
        return KILN_ALIGN_RIGHT; /* untyped: every value a number or a date */
    /* mixed: each cell as Excel's General aligns it, or all left */
    return t->rules.mixed_per_cell ? KILN_ALIGN_DEFAULT : KILN_ALIGN_LEFT;
}

/* The header row as cells: each column's header a string (blank when none). */
static kiln_cell *header_cells(kiln_table_layout *t)
{
    const kiln_table_data *d = t->d;
    kiln_cell *cells = kiln_arena_calloc(t->arena, d->column_count, sizeof *cells);
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

kiln_status kiln_table_layout_init(kiln_table_layout *t, const kiln_doc *doc,
                                   const kiln_table_data *d, const kiln_sheet *sheet, int header,
                                   const kiln_table_rules *rules,
                                   const kiln_text_metrics *metrics, kiln_arena *arena,
                                   kiln_error *err, const char *pointer)
{
    memset(t, 0, sizeof *t);
    t->doc = doc;
    t->d = d;
    t->rules = *rules;
    t->metrics = metrics;
    t->arena = arena;
    t->err = err;
    t->pointer = pointer ? pointer : d->pointer;
    t->size = rules->base_pt;
    t->pad = rules->pad_pt;
    t->repeat_head = 1;

    if (sheet && sheet->merge_count) {
        size_t n = sheet->merge_count;
        kiln_status st = kiln_merge_walk_init(&t->walk, sheet->merges, n, arena);
        if (st == KILN_E_OK)
            t->spans = kiln_arena_calloc(arena, n, sizeof *t->spans);
        if (!t->spans)
            return nomem(t);
        for (size_t k = 0; k < n; k++) {
            t->spans[k].merge = t->walk.merges[k];
            t->spans[k].measure_col = kiln_merge_single_column(d, &t->walk.merges[k]->range);
        }
    }
    if (header && d->column_count && !(t->hdr = header_cells(t)))
        return nomem(t);
    kiln_status st = measure(t);
    if (st != KILN_E_OK)
        return st;
    for (size_t i = 0; i < t->ncols; i++) {
        kiln_table_col *c = &t->cols[i];
        c->def = kiln_table_column(d, i);
        c->hidden = c->def && c->def->width == 0;
        c->align = column_align(t, c);
        t->shown += !c->hidden;
    }
    if (t->ncols && !(t->slots = kiln_arena_calloc(arena, t->ncols, sizeof *t->slots)))
        return nomem(t);
    return KILN_E_OK;
}

kiln_status kiln_table_layout_min_cols(kiln_table_layout *t, size_t n)
{
    if (n <= t->ncols)
        return KILN_E_OK;
    size_t first = t->ncols;
    kiln_status st = grow_cols(t, n);
    if (st != KILN_E_OK)
        return st;
    for (size_t i = first; i < n; i++) {
        t->cols[i].def = kiln_table_column(t->d, i);
        t->cols[i].align = KILN_ALIGN_LEFT;
        t->shown++;
    }
    if (!(t->slots = kiln_arena_calloc(t->arena, t->ncols, sizeof *t->slots)))
        return nomem(t);
    return KILN_E_OK;
}

/* ------------------------------------------------------------------ widths */

/* The narrowest text a column has room for at size. */
static double min_text(const kiln_table_layout *t)
{
    if (t->rules.min_text_pt > 0)
        return t->rules.min_text_pt;
    return 2.0 * t->digit;
}

/* The digit width of the body font at size (explicit widths, the floor). */
static double digit_width(kiln_table_layout *t, double size)
{
    const void *regular = t->metrics->face(t->metrics->ctx, NULL, 0);
    return regular ? t->metrics->advance(t->metrics->ctx, regular, '0', size) : size * 0.6;
}

/* A column's need is its widest number, which is never broken. */
static int need_is_number(const kiln_table_col *c)
{
    return c->num_need > 0 && c->num_need >= c->text_need;
}

/* A range over several columns whose text is wider than they are together
 * widens them alike, as a browser widens the columns under a cell with a
 * colspan (its text has one pair of margins, not one per column). Only
 * columns of computed width: a range over an explicit width is left to
 * wrap. */
static void widen_for_merges(kiln_table_layout *t)
{
    const double gap = t->rules.pad_pt + t->rules.slack_pt;
    const double floor_text = min_text(t) - t->rules.slack_pt;
    for (size_t k = 0; k < t->walk.count; k++) {
        const kiln_table_span *span = &t->spans[k];
        const kiln_range *r = &span->merge->range;
        if (span->text_want <= 0)
            continue;
        double want_room = 0, need_room = 0;
        size_t shown = 0;
        int fixed = 0;
        for (size_t col = r->first_col; col <= r->last_col && col < t->ncols; col++) {
            const kiln_table_col *c = &t->cols[col];
            if (c->def && c->def->width == 0)
                continue;
            if (c->def && c->def->width > 0)
                fixed = 1;
            want_room += c->text_want > floor_text ? c->text_want : floor_text;
            need_room += c->text_need > floor_text ? c->text_need : floor_text;
            shown++;
        }
        if (fixed || shown < 2)
            continue;
        want_room += (double)(shown - 1) * gap;
        need_room += (double)(shown - 1) * gap;
        double want_more = (span->text_want - want_room) / (double)shown;
        double need_more = (span->text_need - need_room) / (double)shown;
        for (size_t col = r->first_col; col <= r->last_col && col < t->ncols; col++) {
            kiln_table_col *c = &t->cols[col];
            if (c->def && c->def->width == 0)
                continue;
            if (want_more > 0)
                c->text_want = (c->text_want > floor_text ? c->text_want : floor_text) +
                               want_more;
            if (need_more > 0)
                c->text_need = (c->text_need > floor_text ? c->text_need : floor_text) +
                               need_more;
        }
    }
}

double kiln_table_layout_trial(kiln_table_layout *t, double size, double pad, double avail,
                               double *need_total)
{
    const kiln_table_rules *r = &t->rules;
    double factor = size / r->base_pt;
    t->digit = digit_width(t, size);
    double floor_w = pad + min_text(t);
    double slack = r->slack_scales ? r->slack_pt * factor : r->slack_pt;
    double want_total = 0;
    *need_total = 0;
    for (size_t i = 0; i < t->ncols; i++) {
        kiln_table_col *c = &t->cols[i];
        if (c->hidden)
            continue;
        /* A word wider than word_cap of the room (a URL, a part number)
         * breaks inside rather than shrink the whole table. */
        double word = c->text_need * factor;
        if (r->word_cap > 0 && word > r->word_cap * avail)
            word = r->word_cap * avail;
        double num = c->num_need * factor;
        c->want = c->text_want * factor + pad + slack;
        c->need = (num > word ? num : word) + pad + slack;
        if (c->want < floor_w)
            c->want = floor_w;
        if (r->min_need && c->need < floor_w)
            c->need = floor_w;
        if (c->def && c->def->width > 0) {
            /* An explicit width (Excel characters) is what the column
             * wants; its widest word is still what it needs. */
            if (r->explicit_excel_px) /* 7 px a character and 5 px at 11 pt */
                c->want = (c->def->width * 7.0 + 5.0) * 0.75 * size / 11.0;
            else /* characters of the body font's digit, and the padding */
                c->want = c->def->width * t->digit + pad;
            double number = num + pad + slack;
            if (r->explicit_holds_numbers && c->want < number)
                c->want = number;
            if (r->explicit_floored && c->want < floor_w)
                c->want = floor_w;
        }
        if (c->need > c->want)
            c->need = c->want;
        want_total += c->want;
        *need_total += c->need;
    }
    return want_total;
}

/* The widest cap on the needs whose sum fits avail, found by bisection
 * between 0 and hi (the sum grows with the cap). keep_numbers: a column
 * whose need is a number is not capped. */
static double water_level(const kiln_table_layout *t, double avail, double hi, int keep_numbers)
{
    double lo = 0;
    for (int i = 0; i < 50; i++) {
        double mid = (lo + hi) / 2, sum = 0;
        for (size_t j = 0; j < t->ncols; j++) {
            const kiln_table_col *c = &t->cols[j];
            if (c->hidden)
                continue;
            sum += (keep_numbers && need_is_number(c)) || c->need < mid ? c->need : mid;
        }
        if (sum > avail)
            hi = mid;
        else
            lo = mid;
    }
    return lo;
}

/* Every shown column's width from its want and need: the wants when they
 * fit (widened to the room under rules.fill_width); else each column its
 * need plus a share of the rest in proportion to what it lacks; else, when
 * not even the needs fit, every column capped at one width (the water
 * level), so that narrow columns keep what they need and only the widest
 * words break. */
static void distribute(kiln_table_layout *t, double avail, double want_total, double need_total)
{
    const kiln_table_rules *r = &t->rules;
    double max_need = 0;
    for (size_t i = 0; i < t->ncols; i++)
        if (!t->cols[i].hidden && t->cols[i].need > max_need)
            max_need = t->cols[i].need;
    double level = 0;
    if (need_total > avail)
        level = r->numbers_keep_need ? water_level(t, avail, avail, 1)
                                     : water_level(t, avail, max_need, 0);
    double sum = 0;
    for (size_t i = 0; i < t->ncols; i++) {
        kiln_table_col *c = &t->cols[i];
        if (c->hidden)
            continue;
        double w;
        if (want_total <= avail)
            w = r->fill_width ? c->want + (avail - want_total) * c->want / want_total : c->want;
        else if (need_total <= avail)
            w = c->need + (c->want - c->need) * (avail - need_total) / (want_total - need_total);
        else if (r->numbers_keep_need && need_is_number(c))
            w = c->need; /* numbers keep their width */
        else
            w = c->need < level ? c->need : level;
        c->width = w;
        sum += w;
    }
    /* Numbers kept whole may still not fit beside the capped text: scale
     * everything to the room (some text then overflows its cell). */
    if (r->numbers_keep_need && sum > avail)
        for (size_t i = 0; i < t->ncols; i++)
            t->cols[i].width *= avail / sum;
}

/* Widths at t->size and t->pad; returns the number of columns shown. */
static size_t fit_at(kiln_table_layout *t, double avail)
{
    double need_total;
    double want_total = kiln_table_layout_trial(t, t->size, t->pad, avail, &need_total);
    size_t shown = 0;
    for (size_t i = 0; i < t->ncols; i++)
        shown += !t->cols[i].hidden;
    if (t->rules.explicit_gives_up && want_total > avail) {
        /* Too wide: an explicit width wider than its content gives up the
         * blank part first, before any text has to wrap for it. */
        double factor = t->size / t->rules.base_pt;
        want_total = 0;
        for (size_t i = 0; i < t->ncols; i++) {
            kiln_table_col *c = &t->cols[i];
            if (c->hidden)
                continue;
            if (c->def && c->def->width > 0) {
                double content = c->text_want * factor + t->pad + t->rules.slack_pt;
                if (content < c->want)
                    c->want = content > c->need ? content : c->need;
            }
            want_total += c->want;
        }
    }
    t->need_total = need_total;
    if (shown == 0)
        return 0;
    distribute(t, avail, want_total, need_total);
    return shown;
}

/* Needs that do not fit: narrower padding, then a smaller font, half a
 * point at a time down to rules.min_font_pt, refitting at each step. */
static void shrink_half_points(kiln_table_layout *t, double avail)
{
    if (t->need_total <= avail)
        return;
    t->pad = t->rules.narrow_pad_pt;
    fit_at(t, avail);
    if (t->need_total <= avail || t->size <= t->rules.min_font_pt)
        return;
    /* The first guess scales the whole width although the padding does not
     * shrink, so it errs large; each step down refits. */
    int start = (int)floor(t->size * 2.0);
    int half = (int)floor(t->size * 2.0 * avail / t->need_total);
    int min_half = (int)(t->rules.min_font_pt * 2.0);
    if (half >= start)
        half = start - 1;
    for (;; half--) {
        if (half < min_half)
            half = min_half;
        t->size = half / 2.0;
        fit_at(t, avail);
        if (t->need_total <= avail || half <= min_half)
            break;
    }
}

/* From the measuring size down a step at a time until the wants fit; long
 * text wraps rather than shrink the type below wrap_font_pt, and only words
 * that cannot fit take it further, down to min_font_pt. */
static size_t fit_steps(kiln_table_layout *t, double avail)
{
    const kiln_table_rules *r = &t->rules;
    double want_total, need_total;
    for (t->size = r->base_pt;; t->size -= r->font_step_pt) {
        want_total = kiln_table_layout_trial(t, t->size, t->pad, avail, &need_total);
        if (want_total <= avail || (t->size <= r->wrap_font_pt && need_total <= avail) ||
            t->size <= r->min_font_pt)
            break;
    }
    t->need_total = need_total;
    size_t shown = 0;
    for (size_t i = 0; i < t->ncols; i++)
        shown += !t->cols[i].hidden;
    if (shown)
        distribute(t, avail, want_total, need_total);
    return shown;
}

size_t kiln_table_layout_fit(kiln_table_layout *t, double avail, double origin)
{
    t->size = t->rules.base_pt;
    t->pad = t->rules.pad_pt;
    if (t->rules.widen_for_merges && !t->widened) {
        widen_for_merges(t);
        t->widened = 1;
    }
    size_t shown;
    if (t->rules.shrink == KILN_SHRINK_STEPS) {
        shown = fit_steps(t, avail);
    } else {
        shown = fit_at(t, avail);
        if (shown)
            shrink_half_points(t, avail);
    }
    t->shrunk = t->size != t->rules.base_pt;

    double x = origin;
    for (size_t i = 0; i < t->ncols; i++) {
        kiln_table_col *c = &t->cols[i];
        if (c->hidden)
            continue;
        c->x = x;
        x += c->width;
    }
    t->width = x - origin;
    for (size_t k = 0; k < t->walk.count; k++) {
        kiln_table_span *span = &t->spans[k];
        const kiln_range *r = &span->merge->range;
        span->lead_col = SIZE_MAX;
        span->shown = 0;
        span->width = 0;
        for (size_t col = r->first_col; col <= r->last_col && col < t->ncols; col++) {
            if (t->cols[col].hidden)
                continue;
            if (span->lead_col == SIZE_MAX) {
                span->lead_col = col;
                span->x = t->cols[col].x;
            }
            span->shown++;
            span->width += t->cols[col].width;
        }
    }
    kiln_merge_walk_rewind(&t->walk);
    return shown;
}

void kiln_table_layout_head_repeat(kiln_table_layout *t, double head_height, double page_height)
{
    t->repeat_head = !(head_height > page_height / 2);
}

/* ------------------------------------------------------------------ rows */

/* The alignments of a slot whose cell, style and merge look are set. */
static void resolve_align(const kiln_table_layout *t, kiln_table_slot *s, size_t col, int header)
{
    const kiln_style *st = s->style;
    if (st && st->align != KILN_ALIGN_DEFAULT)
        s->align = st->align;
    else if (s->merge_look)
        s->align = KILN_ALIGN_CENTER;
    else if (t->cols[col].align != KILN_ALIGN_DEFAULT)
        s->align = t->cols[col].align;
    else
        s->align = !header && s->cell && kiln_cell_is_numeric(s->cell) ? KILN_ALIGN_RIGHT
                                                                       : KILN_ALIGN_LEFT;
    s->valign = st ? st->valign : KILN_VALIGN_DEFAULT;
    if (s->valign == KILN_VALIGN_DEFAULT && s->merge_look)
        s->valign = KILN_VALIGN_MIDDLE;
}

const kiln_table_slot *kiln_table_layout_row(kiln_table_layout *t, uint32_t wsrow, int header,
                                             const kiln_cell *cells, size_t count, int merges)
{
    if (merges)
        kiln_merge_walk_row(&t->walk, wsrow);
    for (size_t i = 0; i < t->ncols; i++) {
        kiln_table_slot *s = &t->slots[i];
        const kiln_table_col *c = &t->cols[i];
        memset(s, 0, sizeof *s);
        s->merge = KILN_MERGE_NONE;
        if (c->hidden) {
            s->kind = KILN_SLOT_HIDDEN;
            continue;
        }
        s->x = c->x;
        s->width = c->width;
        size_t k = merges ? kiln_merge_walk_at(&t->walk, i) : KILN_MERGE_NONE;
        if (k != KILN_MERGE_NONE) {
            kiln_table_span *span = &t->spans[k];
            const kiln_range *r = &span->merge->range;
            s->merge = k;
            s->open_below = r->last_row > wsrow;
            if (i != span->lead_col) {
                s->kind = KILN_SLOT_COVERED;
                resolve_align(t, s, i, header);
                continue;
            }
            s->x = span->x;
            s->width = span->width;
            if (wsrow != r->first_row) {
                /* Below the range's first row: its look, no text. */
                s->kind = KILN_SLOT_MERGE_BELOW;
                s->style = span->has_look ? &span->look : NULL;
                s->merge_look = span->merge_look;
                resolve_align(t, s, i, header);
                continue;
            }
            s->kind = KILN_SLOT_MERGE_TOP;
            int merge_look;
            const kiln_cell *own = cells && r->first_col < count ? &cells[r->first_col] : NULL;
            const kiln_cell *shown = kiln_merge_shown(span->merge, own, &merge_look);
            /* A one-cell "merge" only gives the cell its value and style. */
            s->merge_look = merge_look && !kiln_merge_is_single(span->merge);
            s->cell = shown;
            s->style = shown->style;
            s->format = merge_look || header ? NULL : kiln_table_column(t->d, r->first_col);
            span->merge_look = s->merge_look;
            span->has_look = shown->style != NULL;
            if (span->has_look) {
                span->look = *shown->style;
                span->look.font = NULL; /* the reader's string; an empty cell needs no font */
            }
            resolve_align(t, s, i, header);
            continue;
        }
        s->kind = KILN_SLOT_CELL;
        if (cells && i < count) {
            s->cell = &cells[i];
            s->style = cells[i].style;
            s->format = header ? NULL : kiln_table_column(t->d, i);
        }
        resolve_align(t, s, i, header);
    }
    return t->slots;
}

int64_t kiln_table_layout_slot_sum(const kiln_table_layout *t, size_t col,
                                   const kiln_table_slot *slot, const int64_t *per_col)
{
    if (slot->merge == KILN_MERGE_NONE)
        return per_col[col];
    const kiln_range *r = &t->spans[slot->merge].merge->range;
    int64_t sum = 0;
    for (size_t i = r->first_col; i <= r->last_col && i < t->ncols; i++)
        if (!t->cols[i].hidden)
            sum += per_col[i];
    return sum;
}
