/*
 * rows.c - row readers: one interface over inline JSON rows, CSV files
 * (RFC 4180, streamed through a bounded record buffer) and JSON Lines files.
 *
 * A reader owns one row of cells at a time; the cells' strings point into the
 * current row's JSON value (inline rows, kept as text and built one row at a
 * time; JSON Lines) or the record buffer (CSV), and stay valid until the next
 * call. Memory is constant in the number of rows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec_internal.h"
#include "../../common/banned.h"

#define READ_CHUNK 65536

struct kiln_row_reader {
    const kiln_table_data *t;
    kiln_limits lim;
    uint64_t returned; /* data rows returned so far */
    kiln_cell *cells;
    kiln_style *styles;
    size_t cap;
    /* inline */
    const kiln_inline_rows *rows;
    size_t pos;
    /* files */
    int fd;
    unsigned char *buf;
    size_t blen, bpos;
    int eof;
    char *rec;
    size_t rec_len, rec_cap;
    size_t *fstart, *flen;
    size_t fcap, nfields;
    uint64_t line;     /* physical line of the next byte, 1-based */
    uint64_t rec_line; /* line the current record started on */
    const char *name;  /* file name for messages */
    json_t *cur;       /* the current row's value (inline, JSON Lines) */
};

/* ---- JSON rows (inline and JSON Lines) ---- */

size_t kiln_json_row_width(const json_t *row, const kiln_table_data *t)
{
    size_t n = json_is_array(row) ? json_array_size(row) : 0;
    return n > t->column_count ? n : t->column_count;
}

kiln_inline_rows *kiln_inline_rows_from_json(kiln_arena *arena, const json_t *rows)
{
    size_t n = json_array_size(rows), total = 0;
    kiln_inline_rows *out = kiln_arena_alloc(arena, sizeof *out);
    kiln_span *spans = kiln_arena_calloc(arena, n ? n : 1, sizeof *spans);
    if (!out || !spans)
        return NULL;
    for (size_t i = 0; i < n; i++)
        total += json_dumpb(json_array_get(rows, i), NULL, 0, JSON_COMPACT);
    char *text = kiln_arena_alloc(arena, total ? total : 1);
    if (!text || total > UINT32_MAX)
        return NULL;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = json_dumpb(json_array_get(rows, i), text + at, total - at, JSON_COMPACT);
        spans[i] = (kiln_span){(uint32_t)at, (uint32_t)len};
        at += len;
    }
    out->text = text;
    out->len = at;
    out->rows = spans;
    out->count = n;
    return out;
}

json_t *kiln_inline_row(const kiln_inline_rows *rows, size_t i)
{
    const kiln_span *sp = &rows->rows[i];
    json_t *row = kiln_json_load_span(rows->text, *sp, NULL);
    /* A row's line breaks, as the parse's scan made them (docs/spec.md "Line
     * breaks"): the tree the scan changed is gone, so again here. A CR is
     * always escaped in JSON text: a row without a backslash has none. */
    if (row && memchr(rows->text + sp->off, '\\', sp->len) && kiln_json_breaks_to_lf(row) != 0) {
        json_decref(row);
        return NULL;
    }
    return row;
}

/* Record a row error; pointer = rows_ptr/index + rel. Returns 1 when the
 * caller should stop (single-error mode). */
static int row_error(kiln_errors *errs, kiln_error *err, const char *rows_ptr, uint64_t index,
                     kiln_error *e)
{
    char prefix[KILN_PTR_BUF];
    if (rows_ptr)
        snprintf(prefix, sizeof prefix, "%s/%llu", rows_ptr, (unsigned long long)index);
    else
        prefix[0] = '\0';
    kiln_error_prefix(e, prefix);
    if (errs) {
        kiln_errors_add(errs, e);
        return 0;
    }
    *err = *e;
    return 1;
}

static void seg_prefix(kiln_error *e, const char *seg)
{
    char esc[KILN_POINTER_MAX];
    esc[0] = '/';
    kiln_ptr_escape(esc + 1, sizeof esc - 1, seg);
    kiln_error_prefix(e, esc);
}

static void index_prefix(kiln_error *e, size_t i)
{
    char num[32];
    snprintf(num, sizeof num, "/%zu", i);
    kiln_error_prefix(e, num);
}

size_t kiln_json_row(const json_t *row, const kiln_table_data *t, const kiln_limits *lim,
                     const char *rows_ptr, uint64_t index, kiln_cell *cells, kiln_style *styles,
                     size_t *count, kiln_errors *errs, kiln_error *err)
{
    kiln_error e;
    size_t found = 0;
    size_t ncols = t->column_count;
    *count = 0;
    if (json_is_array(row)) {
        size_t n = json_array_size(row);
        if (n > lim->columns) {
            kiln_error_limit(&e, KILN_E_LIMIT, "", lim->columns, n,
                             "a row of %zu cells, more than the %u columns a sheet can have", n,
                             (unsigned)lim->columns);
            row_error(errs, err, rows_ptr, index, &e);
            return 1;
        }
        if (ncols && n > ncols) {
            kiln_error_set(&e, KILN_E_INVALID_SPEC, "",
                           "a row of %zu cells, but only %zu columns are defined", n, ncols);
            row_error(errs, err, rows_ptr, index, &e);
            return 1;
        }
        for (size_t i = 0; i < n; i++) {
            kiln_column_type type = i < ncols ? t->columns[i].type : KILN_COL_AUTO;
            if (kiln_cell_from_json(json_array_get(row, i), type, lim, &cells[i], &styles[i],
                                    &e) != 0) {
                found++;
                index_prefix(&e, i);
                if (row_error(errs, err, rows_ptr, index, &e))
                    return found;
                cells[i].kind = KILN_CELL_BLANK;
            }
        }
        for (size_t i = n; i < ncols; i++)
            memset(&cells[i], 0, sizeof cells[i]);
        *count = ncols ? ncols : n;
        return found;
    }
    if (json_is_object(row)) {
        if (!ncols) {
            kiln_error_set(&e, KILN_E_INVALID_SPEC, "",
                           "a row object needs \"columns\" with a \"key\" or \"header\" to look "
                           "its members up by");
            row_error(errs, err, rows_ptr, index, &e);
            return 1;
        }
        size_t matched = 0;
        for (size_t i = 0; i < ncols; i++) {
            const char *key = t->columns[i].key;
            const json_t *v = key ? json_object_get(row, key) : NULL;
            memset(&cells[i], 0, sizeof cells[i]);
            if (!v)
                continue;
            matched++;
            if (kiln_cell_from_json(v, t->columns[i].type, lim, &cells[i], &styles[i], &e) != 0) {
                found++;
                seg_prefix(&e, key);
                if (row_error(errs, err, rows_ptr, index, &e))
                    return found;
                cells[i].kind = KILN_CELL_BLANK;
            }
        }
        /* Members no column asks for are typos until proven otherwise; find
         * them only when the count says there are some. */
        if (matched < json_object_size(row)) {
            const char *key;
            json_t *v;
            json_object_foreach((json_t *)row, key, v) {
                int known = 0;
                for (size_t i = 0; i < ncols && !known; i++)
                    known = t->columns[i].key && strcmp(t->columns[i].key, key) == 0;
                if (known)
                    continue;
                found++;
                kiln_error_set(&e, KILN_E_INVALID_SPEC, "",
                               "unknown member \"%s\" (no column has this key)", key);
                seg_prefix(&e, key);
                if (row_error(errs, err, rows_ptr, index, &e))
                    return found;
            }
        }
        *count = ncols;
        return found;
    }
    kiln_error_set(&e, KILN_E_INVALID_SPEC, "",
                   "expected a row: an array of cell values or an "
                   "object");
    row_error(errs, err, rows_ptr, index, &e);
    return 1;
}

/* ---- reader plumbing ---- */

static int ensure_cells(kiln_row_reader *r, size_t n)
{
    if (n <= r->cap)
        return 0;
    size_t cap = r->cap ? r->cap : 16;
    while (cap < n)
        cap *= 2;
    kiln_cell *c = realloc(r->cells, cap * sizeof *c);
    if (!c)
        return -1;
    r->cells = c;
    kiln_style *s = realloc(r->styles, cap * sizeof *s);
    if (!s)
        return -1;
    r->styles = s;
    r->cap = cap;
    return 0;
}

static kiln_status nomem(kiln_error *err)
{
    return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
}

/* ---- byte input ---- */

static int fill(kiln_row_reader *r)
{
    if (r->eof)
        return 0;
    for (;;) {
        ssize_t n = read(r->fd, r->buf, READ_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            r->eof = 1;
            return 0;
        }
        r->blen = (size_t)n;
        r->bpos = 0;
        return 1;
    }
}

/* Next byte, -1 at the end, -2 on a read error. */
static int getbyte(kiln_row_reader *r)
{
    if (r->bpos >= r->blen) {
        int f = fill(r);
        if (f <= 0)
            return f == 0 ? -1 : -2;
    }
    return r->buf[r->bpos++];
}

static int peekbyte(kiln_row_reader *r)
{
    if (r->bpos >= r->blen) {
        int f = fill(r);
        if (f <= 0)
            return f == 0 ? -1 : -2;
    }
    return r->buf[r->bpos];
}

static int rec_put(kiln_row_reader *r, char c)
{
    if (r->rec_len + 1 >= r->rec_cap) {
        if (r->rec_cap >= KILN_RECORD_MAX)
            return -2;
        size_t cap = r->rec_cap ? r->rec_cap * 2 : 4096;
        if (cap > KILN_RECORD_MAX)
            cap = KILN_RECORD_MAX;
        char *p = realloc(r->rec, cap);
        if (!p)
            return -1;
        r->rec = p;
        r->rec_cap = cap;
    }
    r->rec[r->rec_len++] = c;
    return 0;
}

static kiln_status file_error(kiln_row_reader *r, kiln_error *err, kiln_status code,
                              uint64_t line, size_t column, const char *msg)
{
    char where[64];
    if (column)
        snprintf(where, sizeof where, "line %llu, column %zu", (unsigned long long)line, column);
    else
        snprintf(where, sizeof where, "line %llu", (unsigned long long)line);
    return kiln_error_set(err, code, r->t->pointer, "%s %s: %s", r->name, where, msg);
}

static int rec_overflow(kiln_row_reader *r, int rc, kiln_error *err)
{
    if (rc == -1)
        nomem(err);
    else {
        char msg[128];
        snprintf(msg, sizeof msg, "a record longer than %u bytes", (unsigned)KILN_RECORD_MAX);
        file_error(r, err, KILN_E_LIMIT, r->rec_line, 0, msg);
        err->limit = KILN_RECORD_MAX;
    }
    return -1;
}

static int end_field(kiln_row_reader *r, size_t start, kiln_error *err)
{
    int rc = rec_put(r, '\0');
    if (rc)
        return rec_overflow(r, rc, err);
    if (r->nfields >= r->lim.columns) {
        char msg[128];
        snprintf(msg, sizeof msg, "more than %u fields in one record", (unsigned)r->lim.columns);
        file_error(r, err, KILN_E_LIMIT, r->rec_line, 0, msg);
        err->limit = r->lim.columns;
        err->actual = r->nfields + 1;
        return -1;
    }
    if (r->nfields >= r->fcap) {
        size_t cap = r->fcap ? r->fcap * 2 : 64;
        size_t *a = realloc(r->fstart, cap * sizeof *a);
        if (!a)
            return nomem(err), -1;
        r->fstart = a;
        size_t *b = realloc(r->flen, cap * sizeof *b);
        if (!b)
            return nomem(err), -1;
        r->flen = b;
        r->fcap = cap;
    }
    r->fstart[r->nfields] = start;
    r->flen[r->nfields] = r->rec_len - 1 - start;
    r->nfields++;
    return 0;
}

/* One CSV record into rec/fstart/flen. 1 = a record, 0 = end, -1 = error. */
static int csv_record(kiln_row_reader *r, kiln_error *err)
{
    const int delim = (unsigned char)r->t->delimiter;
    for (;;) {
        r->rec_len = 0;
        r->nfields = 0;
        r->rec_line = r->line;
        size_t start = 0;
        int in_quotes = 0, quoted = 0, closed = 0, started = 0, rc;
        for (;;) {
            int c = getbyte(r);
            if (c == -2) {
                file_error(r, err, KILN_E_INPUT, r->line, 0, strerror(errno));
                return -1;
            }
            if (c == -1) {
                if (in_quotes) {
                    file_error(r, err, KILN_E_INVALID_SPEC, r->rec_line, r->nfields + 1,
                               "a quoted field is not closed before the end of the file");
                    return -1;
                }
                if (!started)
                    return 0;
                if (end_field(r, start, err))
                    return -1;
                return 1;
            }
            started = 1;
            if (in_quotes) {
                if (c == '"') {
                    if (peekbyte(r) == '"') {
                        r->bpos++;
                    } else {
                        in_quotes = 0;
                        closed = 1;
                        continue;
                    }
                } else if (c == '\r' || c == '\n') {
                    /* A line break inside a field: CR LF, CR and LF alike
                     * become LF (docs/spec.md "Line breaks"). */
                    if (c == '\r' && peekbyte(r) == '\n')
                        r->bpos++;
                    c = '\n';
                    r->line++;
                }
                if ((rc = rec_put(r, (char)c)))
                    return rec_overflow(r, rc, err);
                continue;
            }
            if (c == delim) {
                if (end_field(r, start, err))
                    return -1;
                start = r->rec_len;
                quoted = closed = 0;
                continue;
            }
            if (c == '\r' || c == '\n') {
                if (c == '\r' && peekbyte(r) == '\n')
                    r->bpos++;
                r->line++;
                if (end_field(r, start, err))
                    return -1;
                break;
            }
            if (closed) {
                file_error(r, err, KILN_E_INVALID_SPEC, r->rec_line, r->nfields + 1,
                           "a character after the closing quote of a field (a quote inside a "
                           "quoted field is written twice: \"\")");
                return -1;
            }
            if (c == '"') {
                if (r->rec_len == start && !quoted) {
                    in_quotes = quoted = 1;
                    continue;
                }
                file_error(r, err, KILN_E_INVALID_SPEC, r->rec_line, r->nfields + 1,
                           "a quote inside an unquoted field (quote the whole field and "
                           "double the quote)");
                return -1;
            }
            if ((rc = rec_put(r, (char)c)))
                return rec_overflow(r, rc, err);
        }
        /* A blank line is not a record of one empty field: exports end with
         * them and people leave them in by hand. */
        if (r->nfields == 1 && r->flen[0] == 0 && !quoted)
            continue;
        return 1;
    }
}

/* One JSON Lines line into rec (NUL-terminated), skipping blank lines.
 * 1 = a line, 0 = end, -1 = error. */
static int jsonl_line(kiln_row_reader *r, kiln_error *err)
{
    for (;;) {
        r->rec_len = 0;
        r->rec_line = r->line;
        int c, blank = 1, rc;
        while ((c = getbyte(r)) >= 0 && c != '\n') {
            if (c != ' ' && c != '\t' && c != '\r')
                blank = 0;
            if ((rc = rec_put(r, (char)c)))
                return rec_overflow(r, rc, err);
        }
        if (c == -2) {
            file_error(r, err, KILN_E_INPUT, r->line, 0, strerror(errno));
            return -1;
        }
        if (c == '\n')
            r->line++;
        if ((rc = rec_put(r, '\0')))
            return rec_overflow(r, rc, err);
        r->rec_len--;
        if (!blank)
            return 1;
        if (c == -1)
            return 0;
    }
}

/* ---- open / next / close ---- */

static int skip_bom(kiln_row_reader *r)
{
    if (peekbyte(r) == 0xEF && r->blen - r->bpos >= 3 && r->buf[r->bpos + 1] == 0xBB &&
        r->buf[r->bpos + 2] == 0xBF)
        r->bpos += 3;
    return 0;
}

kiln_status kiln_rows_open_with(const char *base_dir, const kiln_limits *lim,
                                const kiln_table_data *table, kiln_row_reader **out,
                                kiln_error *err)
{
    *out = NULL;
    kiln_row_reader *r = calloc(1, sizeof *r);
    if (!r)
        return nomem(err);
    r->t = table;
    r->lim = *lim;
    r->fd = -1;
    r->line = 1;
    if (table->source == KILN_ROWS_INLINE) {
        r->rows = table->private_rows;
        *out = r;
        return KILN_E_OK;
    }
    const kiln_data_file *f = table->private_rows;
    if (!f) {
        free(r);
        return kiln_error_set(err, KILN_E_INTERNAL, table->pointer, "data source without a file");
    }
    r->name = f->display;
    char why[300];
    int is_input;
    r->fd = kiln_open_beneath(base_dir, f->rel_path, why, sizeof why, &is_input);
    if (r->fd < 0) {
        kiln_status code = is_input ? KILN_E_INPUT : KILN_E_INVALID_SPEC;
        kiln_error_set(err, code, table->pointer, "%s: %s", f->display, why);
        free(r);
        return code;
    }
    r->buf = malloc(READ_CHUNK);
    if (!r->buf) {
        kiln_rows_close(r);
        return nomem(err);
    }
    skip_bom(r);
    if (table->source == KILN_ROWS_CSV && table->data_header) {
        int rc = csv_record(r, err);
        if (rc < 0) {
            kiln_rows_close(r);
            return err->code;
        }
    }
    *out = r;
    return KILN_E_OK;
}

kiln_status kiln_rows_open(const kiln_doc *doc, const kiln_table_data *table,
                           kiln_row_reader **out, kiln_error *err)
{
    kiln_limits lim = doc && doc->priv ? doc->priv->limits : kiln_limits_default();
    return kiln_rows_open_with(doc ? doc->base_dir : ".", &lim, table, out, err);
}

static int row_limit(kiln_row_reader *r, kiln_error *err)
{
    uint64_t total = r->returned + 1 + (r->t->header ? 1 : 0);
    if (total <= r->lim.rows)
        return 0;
    char msg[160];
    snprintf(msg, sizeof msg,
             "more than %u rows (the header row included), the most a sheet "
             "can have",
             (unsigned)r->lim.rows);
    if (r->t->source == KILN_ROWS_INLINE)
        kiln_error_set(err, KILN_E_LIMIT, r->t->pointer, "%s", msg);
    else
        file_error(r, err, KILN_E_LIMIT, r->rec_line, 0, msg);
    err->limit = r->lim.rows;
    err->actual = total;
    return -1;
}

static int next_csv(kiln_row_reader *r, kiln_error *err)
{
    int rc = csv_record(r, err);
    if (rc <= 0)
        return rc;
    size_t ncols = r->t->column_count;
    if (ncols && r->nfields > ncols) {
        char msg[160];
        snprintf(msg, sizeof msg, "a record of %zu fields, but only %zu columns are defined",
                 r->nfields, ncols);
        file_error(r, err, KILN_E_INVALID_SPEC, r->rec_line, 0, msg);
        return -1;
    }
    size_t n = ncols ? ncols : r->nfields;
    if (ensure_cells(r, n))
        return nomem(err), -1;
    for (size_t i = 0; i < r->nfields; i++) {
        kiln_column_type type = i < ncols ? r->t->columns[i].type : KILN_COL_AUTO;
        kiln_error e;
        if (kiln_cell_from_text(r->rec + r->fstart[i], r->flen[i], type, &r->lim, &r->cells[i],
                                &e) != 0) {
            file_error(r, err, e.code, r->rec_line, i + 1, e.message);
            err->limit = e.limit;
            err->actual = e.actual;
            return -1;
        }
    }
    for (size_t i = r->nfields; i < n; i++)
        memset(&r->cells[i], 0, sizeof r->cells[i]);
    return 1;
}

/* An error inside a JSON Lines record, reported at the file's line with the
 * pointer within the record ("r.jsonl line 2: at /0: expected ..."). */
static int jsonl_cell_error(kiln_row_reader *r, kiln_error *err, const kiln_error *e)
{
    char msg[KILN_MESSAGE_MAX + KILN_POINTER_MAX + 16];
    snprintf(msg, sizeof msg, "at %s: %s", e->pointer[0] ? e->pointer : "/", e->message);
    file_error(r, err, e->code, r->rec_line, 0, msg);
    err->limit = e->limit;
    err->actual = e->actual;
    return -1;
}

static int next_jsonl(kiln_row_reader *r, kiln_error *err)
{
    int rc = jsonl_line(r, err);
    if (rc <= 0)
        return rc;
    json_decref(r->cur);
    json_error_t je;
    r->cur = json_loadb(r->rec, r->rec_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!r->cur) {
        char msg[300];
        snprintf(msg, sizeof msg, "not valid JSON (column %d): %s", je.column, je.text);
        file_error(r, err, KILN_E_INVALID_SPEC, r->rec_line, 0, msg);
        return -1;
    }
    uint64_t sb = 0;
    kiln_limits lim = r->lim;
    lim.string_bytes = UINT64_MAX; /* a spec limit, not a data file one */
    kiln_error e;
    if (kiln_json_scan(r->cur, "", &lim, &sb, NULL, &e)) {
        return jsonl_cell_error(r, err, &e);
    }
    size_t width = kiln_json_row_width(r->cur, r->t);
    if (width > r->lim.columns)
        width = r->lim.columns; /* kiln_json_row reports the long row */
    if (ensure_cells(r, width ? width : 1))
        return nomem(err), -1;
    size_t count;
    if (kiln_json_row(r->cur, r->t, &r->lim, NULL, 0, r->cells, r->styles, &count, NULL, &e)) {
        return jsonl_cell_error(r, err, &e);
    }
    r->nfields = count;
    return 1;
}

int kiln_rows_next(kiln_row_reader *r, const kiln_cell **cells, size_t *count, kiln_error *err)
{
    *cells = NULL;
    *count = 0;
    int rc;
    size_t n = 0;
    switch (r->t->source) {
    case KILN_ROWS_INLINE: {
        if (!r->rows || r->pos >= r->rows->count)
            return 0;
        json_decref(r->cur);
        const json_t *row = r->cur = kiln_inline_row(r->rows, r->pos);
        if (!row)
            return nomem(err), -1;
        size_t width = kiln_json_row_width(row, r->t);
        if (width > r->lim.columns)
            width = r->lim.columns;
        if (ensure_cells(r, width ? width : 1))
            return nomem(err), -1;
        if (kiln_json_row(row, r->t, &r->lim, r->t->pointer, r->pos, r->cells, r->styles, &n,
                          NULL, err))
            return -1;
        r->pos++;
        rc = 1;
        break;
    }
    case KILN_ROWS_CSV:
        rc = next_csv(r, err);
        n = r->t->column_count ? r->t->column_count : r->nfields;
        break;
    case KILN_ROWS_JSONL:
        rc = next_jsonl(r, err);
        n = r->nfields;
        break;
    default:
        kiln_error_set(err, KILN_E_INTERNAL, r->t->pointer, "unknown row source");
        return -1;
    }
    if (rc <= 0)
        return rc;
    if (row_limit(r, err))
        return -1;
    r->returned++;
    *cells = r->cells;
    *count = n;
    return 1;
}

uint64_t kiln_rows_index(const kiln_row_reader *r)
{
    return r->returned ? r->returned - 1 : 0;
}

void kiln_rows_close(kiln_row_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    json_decref(r->cur);
    free(r->buf);
    free(r->rec);
    free(r->fstart);
    free(r->flen);
    free(r->cells);
    free(r->styles);
    free(r);
}

int kiln_csv_header(const char *base_dir, const kiln_table_data *t, const kiln_limits *lim,
                    kiln_arena *arena, char ***names, size_t *count, kiln_error *err)
{
    kiln_table_data probe = *t;
    probe.data_header = 0;
    probe.column_count = 0;
    probe.columns = NULL;
    kiln_row_reader *r;
    *names = NULL;
    *count = 0;
    if (kiln_rows_open_with(base_dir, lim, &probe, &r, err) != KILN_E_OK)
        return -1;
    int rc = csv_record(r, err);
    if (rc < 0)
        goto close_reader;
    if (rc == 0) {
        rc = 0;
        goto close_reader;
    }
    char **out = kiln_arena_calloc(arena, r->nfields, sizeof *out);
    if (!out) {
        nomem(err);
        rc = -1;
        goto close_reader;
    }
    for (size_t i = 0; i < r->nfields; i++) {
        const char *s = r->rec + r->fstart[i];
        kiln_cell c;
        kiln_error e;
        /* Column names are text whatever they look like ("2024"). */
        if (kiln_cell_from_text(s, r->flen[i], KILN_COL_STRING, lim, &c, &e) != 0) {
            file_error(r, err, e.code, r->rec_line, i + 1, e.message);
            rc = -1;
            goto close_reader;
        }
        out[i] = kiln_arena_strndup(arena, s, r->flen[i]);
        if (!out[i]) {
            nomem(err);
            rc = -1;
            goto close_reader;
        }
    }
    *names = out;
    *count = r->nfields;
    rc = 0;
close_reader:
    kiln_rows_close(r);
    return rc < 0 ? -1 : 0;
}

const kiln_column *kiln_table_column(const kiln_table_data *table, size_t i)
{
    return i < table->column_count ? &table->columns[i] : NULL;
}
