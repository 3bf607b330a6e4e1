/*
 * data_rows.c - a mail merge's --data file read a row at a time
 * (data_rows.h): CSV or JSON Lines, through a fixed read buffer and one
 * record buffer that grows to KILN_DATA_ROW_BYTES and no further, so a batch
 * of a million rows runs in the memory of its largest record.
 *
 * The spec's own CSV reader (artifacts/spec/rows.c) reads a table's cells
 * against its columns; this one makes JSON objects keyed by the header, for
 * merge.c, and keeps going after a bad record so a batch runner can report
 * that row and merge the others.
 */
#include "data_rows.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../common/utf8.h"
#include "../common/banned.h"

#define READ_CHUNK 65536

struct kiln_data_rows {
    kiln_data_format format;
    int fd;
    int own_fd; /* opened here, closed by kiln_data_rows_free */
    char *name; /* the path, for messages */
    unsigned char *buf;
    size_t blen, bpos;
    int eof;
    int done;       /* the end, or an error that ends the file */
    int read_errno; /* the last read(2) error */
    char *rec;      /* the current record's fields (CSV) or line (JSON Lines) */
    size_t rec_len, rec_cap;
    size_t *fstart, *flen; /* CSV fields in rec */
    size_t nfields, fcap;
    json_t *header;    /* CSV: the field names, strings */
    uint64_t line;     /* the physical line of the next byte, 1-based */
    uint64_t rec_line; /* the line the current record started on */
};

/* ---- errors ---- */

static int file_error(kiln_data_rows *r, kiln_error *err, kiln_status code, uint64_t line,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int file_error(kiln_data_rows *r, kiln_error *err, kiln_status code, uint64_t line,
                      const char *fmt, ...)
{
    char msg[KILN_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kiln_error_set(err, code, "", "%s:%llu: %s", r->name, (unsigned long long)line, msg);
    return -1;
}

static int limit_error(kiln_data_rows *r, kiln_error *err, double limit, double actual,
                       const char *what)
{
    file_error(r, err, KILN_E_LIMIT, r->rec_line, "%s", what);
    if (err) {
        err->limit = limit;
        err->actual = actual;
    }
    return -1;
}

static int nomem(kiln_error *err)
{
    kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    return -1;
}

/* An error after which nothing more can be read: the next call is the end. */
static int fatal(kiln_data_rows *r)
{
    r->done = 1;
    return -1;
}

/* ---- bytes ---- */

/* Read more after what is left in buf. 1 read, 0 end, -1 error. */
static int fill(kiln_data_rows *r)
{
    if (r->eof)
        return 0;
    size_t keep = r->blen - r->bpos;
    memmove(r->buf, r->buf + r->bpos, keep);
    r->blen = keep;
    r->bpos = 0;
    for (;;) {
        ssize_t n = read(r->fd, r->buf + keep, READ_CHUNK - keep);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r->read_errno = errno;
            return -1;
        }
        if (n == 0) {
            r->eof = 1;
            return 0;
        }
        r->blen += (size_t)n;
        return 1;
    }
}

/* The next byte, -1 at the end, -2 on a read error. */
static int getbyte(kiln_data_rows *r)
{
    if (r->bpos >= r->blen) {
        int f = fill(r);
        if (f <= 0)
            return f == 0 ? -1 : -2;
    }
    return r->buf[r->bpos++];
}

static int peekbyte(kiln_data_rows *r)
{
    if (r->bpos >= r->blen) {
        int f = fill(r);
        if (f <= 0)
            return f == 0 ? -1 : -2;
    }
    return r->buf[r->bpos];
}

/* A byte order mark at the start: a read may bring fewer than its three
 * bytes, so read on until there are three or the file ends. */
static int skip_bom(kiln_data_rows *r)
{
    while (r->blen - r->bpos < 3 && !r->eof)
        if (fill(r) < 0)
            return -1;
    if (r->blen - r->bpos >= 3 && memcmp(r->buf + r->bpos, "\xEF\xBB\xBF", 3) == 0)
        r->bpos += 3;
    return 0;
}

/* Append c to the record; past KILN_DATA_ROW_BYTES the caller has stopped
 * (the raw count is checked first). 0, or -1 out of memory. */
static int rec_put(kiln_data_rows *r, char c)
{
    if (r->rec_len + 1 >= r->rec_cap) {
        size_t cap = r->rec_cap ? r->rec_cap * 2 : 4096;
        if (cap > (size_t)KILN_DATA_ROW_BYTES + 1)
            cap = (size_t)KILN_DATA_ROW_BYTES + 1;
        if (cap <= r->rec_len + 1)
            return -1; /* cannot happen: the raw count stops first */
        char *p = realloc(r->rec, cap);
        if (!p)
            return -1;
        r->rec = p;
        r->rec_cap = cap;
    }
    r->rec[r->rec_len++] = c;
    return 0;
}

/* What a record holds that no row may: bytes that are not UTF-8, a NUL.
 * -1 with the error at the line of the byte, else 0. */
static int check_text(kiln_data_rows *r, kiln_error *err)
{
    size_t bad = kiln_utf8_invalid_at(r->rec, r->rec_len);
    const char *nul = memchr(r->rec, '\0', r->rec_len);
    if (bad == r->rec_len && !nul)
        return 0;
    int is_nul = nul && (size_t)(nul - r->rec) < bad;
    size_t at = is_nul ? (size_t)(nul - r->rec) : bad;
    uint64_t line = r->rec_line;
    for (size_t i = 0; i < at; i++)
        line += r->rec[i] == '\n';
    if (is_nul)
        return file_error(r, err, KILN_E_INPUT, line, "a NUL byte, which no text may hold");
    return file_error(r, err, KILN_E_INPUT, line,
                      "not UTF-8 (byte 0x%02X): the file must be UTF-8",
                      (unsigned char)r->rec[at]);
}

/* ---- CSV ---- */

/* One CSV record, as the parse of it found it. */
typedef struct csv_state {
    uint64_t raw;       /* the record's bytes in the file */
    size_t fields;      /* fields seen (stored: at most KILN_DATA_FIELDS_MAX) */
    size_t start;       /* where the current field begins in rec */
    size_t field_bytes; /* bytes read into it */
    int in_quotes, quoted, closed, any_quoted;
    uint64_t quote_line; /* where the open quote was */
    char why[160];       /* the first stray quote, "" when none */
    uint64_t why_line;
} csv_state;

static int end_field(kiln_data_rows *r, csv_state *st)
{
    size_t i = st->fields++;
    if (i >= KILN_DATA_FIELDS_MAX || st->raw > KILN_DATA_ROW_BYTES)
        return 0; /* counted, reported when the record ends */
    if (i >= r->fcap) {
        size_t cap = r->fcap ? r->fcap * 2 : 64;
        if (cap > KILN_DATA_FIELDS_MAX)
            cap = KILN_DATA_FIELDS_MAX;
        size_t *s = realloc(r->fstart, cap * sizeof *s);
        if (!s)
            return -1;
        r->fstart = s;
        size_t *l = realloc(r->flen, cap * sizeof *l);
        if (!l)
            return -1;
        r->flen = l;
        r->fcap = cap;
    }
    r->fstart[i] = st->start;
    r->flen[i] = r->rec_len - st->start;
    r->nfields = i + 1;
    return 0;
}

static void stray_quote(csv_state *st, uint64_t line, const char *why)
{
    if (st->why[0])
        return;
    snprintf(st->why, sizeof st->why, "%s", why);
    st->why_line = line;
}

/* One byte of a field; past the record limit only counted. */
static int field_byte(kiln_data_rows *r, csv_state *st, int c)
{
    st->field_bytes++;
    if (st->raw > KILN_DATA_ROW_BYTES)
        return 0;
    return rec_put(r, (char)c);
}

/* The next CSV record into rec and fstart/flen, blank lines skipped.
 * 1 a record (possibly one to report: see csv_check), 0 the end, -1 an error
 * that ends the file. */
static int csv_record(kiln_data_rows *r, csv_state *st, kiln_error *err)
{
    for (;;) {
        memset(st, 0, sizeof *st);
        r->rec_len = 0;
        r->nfields = 0;
        r->rec_line = r->line;
        int c, any = 0;
        for (;;) {
            c = getbyte(r);
            if (c == -2)
                return file_error(r, err, KILN_E_INPUT, r->line, "cannot read: %s",
                                  strerror(r->read_errno));
            if (c == -1) {
                if (st->in_quotes)
                    return file_error(r, err, KILN_E_INPUT, st->quote_line,
                                      "a quoted field is not closed before the end of the file");
                if (!any)
                    return 0;
                break;
            }
            any = 1;
            if (c == '\r' || c == '\n') {
                if (c == '\r' && peekbyte(r) == '\n')
                    r->bpos++;
                r->line++;
                if (!st->in_quotes)
                    break;
                /* A line break inside a field: CR LF, CR and LF all become
                 * LF, as the spec's reader makes them. */
                st->raw++;
                if (field_byte(r, st, '\n'))
                    return nomem(err);
                continue;
            }
            st->raw++;
            if (st->in_quotes) {
                if (c == '"' && peekbyte(r) == '"') {
                    r->bpos++;
                    st->raw++;
                } else if (c == '"') {
                    st->in_quotes = 0;
                    st->closed = 1;
                    continue;
                }
            } else if (c == ',') {
                if (end_field(r, st))
                    return nomem(err);
                st->start = r->rec_len;
                st->field_bytes = 0;
                st->quoted = st->closed = 0;
                continue;
            } else if (c == '"' && st->field_bytes == 0 && !st->quoted) {
                st->in_quotes = st->quoted = st->any_quoted = 1;
                st->quote_line = r->line;
                continue;
            } else if (st->closed) {
                /* Kept as text, so the record's end is still found. */
                stray_quote(st, r->line,
                            "a character after the closing quote of a field (a quote inside a "
                            "quoted field is written twice: \"\")");
            } else if (c == '"') {
                stray_quote(st, r->line,
                            "a quote inside an unquoted field (quote the whole field and write "
                            "the quote twice)");
            }
            if (field_byte(r, st, c))
                return nomem(err);
        }
        if (end_field(r, st))
            return nomem(err);
        /* A blank line is no record of one empty field: exports end with
         * them, and people leave them in by hand. */
        if (st->fields == 1 && r->rec_len == 0 && !st->any_quoted)
            continue;
        return 1;
    }
}

/* What a record read whole may still be: too long, too wide, a stray quote,
 * not text. 0, or -1 with the error. */
static int csv_check(kiln_data_rows *r, const csv_state *st, kiln_error *err)
{
    if (st->raw > KILN_DATA_ROW_BYTES) {
        char what[120];
        snprintf(what, sizeof what, "a record longer than %u MiB", KILN_DATA_ROW_BYTES >> 20);
        return limit_error(r, err, KILN_DATA_ROW_BYTES, (double)st->raw, what);
    }
    if (st->fields > KILN_DATA_FIELDS_MAX) {
        char what[120];
        snprintf(what, sizeof what, "a record of %zu fields, more than %u", st->fields,
                 KILN_DATA_FIELDS_MAX);
        return limit_error(r, err, KILN_DATA_FIELDS_MAX, (double)st->fields, what);
    }
    if (st->why[0])
        return file_error(r, err, KILN_E_INPUT, st->why_line, "%s", st->why);
    return check_text(r, err);
}

static int read_header(kiln_data_rows *r, kiln_error *err)
{
    csv_state st;
    int rc = csv_record(r, &st, err);
    if (rc == 0)
        return file_error(r, err, KILN_E_INPUT, r->line,
                          "no header record (a CSV file's first line names its fields)");
    if (rc < 0 || csv_check(r, &st, err))
        return -1;
    /* A set of the names beside the list, to find a duplicate at once. */
    json_t *seen = json_object();
    if (!(r->header = json_array()) || !seen) {
        json_decref(seen);
        return nomem(err);
    }
    for (size_t i = 0; i < r->nfields; i++) {
        const char *name = r->rec + r->fstart[i];
        size_t len = r->flen[i];
        if (len == 0) {
            json_decref(seen);
            return file_error(r, err, KILN_E_INPUT, r->rec_line,
                              "the header's field %zu has no name", i + 1);
        }
        json_t *first = json_object_getn(seen, name, len);
        if (first) {
            long long at = (long long)json_integer_value(first); /* before seen goes */
            json_decref(seen);
            return file_error(r, err, KILN_E_INPUT, r->rec_line,
                              "the header names fields %lld and %zu alike: \"%.*s\"", at, i + 1,
                              (int)(len > 80 ? 80 : len), name);
        }
        if (json_object_setn_new_nocheck(seen, name, len, json_integer((json_int_t)i + 1)) ||
            json_array_append_new(r->header, json_stringn_nocheck(name, len))) {
            json_decref(seen);
            return nomem(err);
        }
    }
    json_decref(seen);
    return 0;
}

/* The spec's "auto" CSV rule (docs/spec.md, "Column typing"): a plain
 * decimal, -?D+(.D+)?, with at most 15 digits (Excel's precision: a longer
 * one, an account number, would lose digits) and no leading zero in its
 * whole part ("007" is a code, not seven). 1 with *integral, else 0. */
static int auto_number(const char *s, size_t len, int *integral)
{
    size_t i = 0, digits = 0, whole;
    if (i < len && s[i] == '-')
        i++;
    size_t whole_start = i;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    whole = i - whole_start;
    if (whole == 0 || (whole > 1 && s[whole_start] == '0'))
        return 0;
    *integral = 1;
    if (i < len && s[i] == '.') {
        size_t frac_start = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++, digits++;
        if (i == frac_start)
            return 0;
        *integral = 0;
    }
    return i == len && digits <= 15;
}

/* A CSV field as its row value: "" when empty, a number by the auto rule,
 * else the string. NULL out of memory. */
static json_t *field_value(const char *s, size_t len)
{
    int integral;
    if (len > 0 && auto_number(s, len, &integral)) {
        char num[32]; /* '-', 15 digits and '.' */
        memcpy(num, s, len);
        num[len] = '\0';
        return integral ? json_integer(strtoll(num, NULL, 10)) : json_real(strtod(num, NULL));
    }
    return json_stringn_nocheck(s, len);
}

static int next_csv(kiln_data_rows *r, json_t **row, kiln_error *err)
{
    csv_state st;
    int rc = csv_record(r, &st, err);
    if (rc <= 0)
        return rc < 0 ? fatal(r) : 0;
    if (csv_check(r, &st, err))
        return -1;
    size_t ncols = json_array_size(r->header);
    if (r->nfields > ncols)
        return file_error(r, err, KILN_E_INPUT, r->rec_line,
                          "a record of %zu fields, but the header names %zu", r->nfields, ncols);
    json_t *obj = json_object();
    if (!obj)
        return nomem(err);
    for (size_t i = 0; i < r->nfields; i++) {
        const json_t *name = json_array_get(r->header, i);
        json_t *v = field_value(r->rec + r->fstart[i], r->flen[i]);
        if (!v || json_object_setn_new_nocheck(obj, json_string_value(name),
                                               json_string_length(name), v) != 0) {
            json_decref(obj);
            return nomem(err);
        }
    }
    *row = obj;
    return 1;
}

/* ---- JSON Lines ---- */

/* The next line that is not blank into rec. 1 a line, 0 the end, -1 an
 * error (fatal(r) done when it ends the file). */
static int jsonl_line(kiln_data_rows *r, kiln_error *err)
{
    for (;;) {
        r->rec_len = 0;
        r->rec_line = r->line;
        uint64_t raw = 0;
        int c, blank = 1;
        while ((c = getbyte(r)) >= 0 && c != '\n') {
            if (c != ' ' && c != '\t' && c != '\r')
                blank = 0;
            if (++raw <= KILN_DATA_ROW_BYTES && rec_put(r, (char)c)) {
                nomem(err);
                return fatal(r);
            }
        }
        if (c == -2) {
            file_error(r, err, KILN_E_INPUT, r->line, "cannot read: %s", strerror(r->read_errno));
            return fatal(r);
        }
        if (c == '\n')
            r->line++;
        if (raw > KILN_DATA_ROW_BYTES) {
            char what[120];
            snprintf(what, sizeof what, "a line longer than %u MiB", KILN_DATA_ROW_BYTES >> 20);
            return limit_error(r, err, KILN_DATA_ROW_BYTES, (double)raw, what);
        }
        if (!blank)
            return 1;
        if (c == -1)
            return 0;
    }
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

static int next_jsonl(kiln_data_rows *r, json_t **row, kiln_error *err)
{
    int rc = jsonl_line(r, err);
    if (rc <= 0)
        return rc;
    if (check_text(r, err))
        return -1;
    json_error_t je;
    json_t *v = json_loadb(r->rec, r->rec_len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v && json_error_code(&je) == json_error_out_of_memory)
        return nomem(err);
    if (!v)
        return file_error(r, err, KILN_E_INPUT, r->rec_line, "not valid JSON (column %d): %s",
                          je.column, je.text);
    if (!json_is_object(v)) {
        file_error(r, err, KILN_E_INPUT, r->rec_line,
                   "a JSON Lines row is an object ({\"field\": ...}), not %s", json_kind(v));
        json_decref(v);
        return -1;
    }
    *row = v;
    return 1;
}

/* ---- open / next / free ---- */

static int format_of(const char *path, kiln_data_format *out)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!dot || (slash && slash > dot))
        return -1;
    if (strcasecmp(dot, ".csv") == 0)
        *out = KILN_DATA_CSV;
    else if (strcasecmp(dot, ".jsonl") == 0 || strcasecmp(dot, ".ndjson") == 0)
        *out = KILN_DATA_JSONL;
    else
        return -1;
    return 0;
}

kiln_status kiln_data_rows_open(const char *path, int fd, kiln_data_rows **out, kiln_error *err)
{
    *out = NULL;
    kiln_data_format format;
    if (format_of(path, &format) != 0)
        return kiln_error_set(err, KILN_E_USAGE, "",
                              "%s: a data file is CSV (.csv) or JSON Lines (.jsonl, .ndjson)",
                              path ? path : "(no name)");
    kiln_data_rows *r = calloc(1, sizeof *r);
    if (!r)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    r->format = format;
    r->fd = fd;
    r->line = 1;
    /* rec is never NULL, even for a record of empty fields. */
    r->rec_cap = 4096;
    if (!(r->name = strdup(path)) || !(r->buf = malloc(READ_CHUNK)) ||
        !(r->rec = malloc(r->rec_cap))) {
        kiln_data_rows_free(r);
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    }
    if (fd < 0) {
        r->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (r->fd < 0) {
            kiln_error_set(err, KILN_E_INPUT, "", "%s: %s", path, strerror(errno));
            kiln_data_rows_free(r);
            return KILN_E_INPUT;
        }
        r->own_fd = 1;
    }
    if (skip_bom(r) != 0) {
        file_error(r, err, KILN_E_INPUT, 1, "cannot read: %s", strerror(r->read_errno));
        kiln_data_rows_free(r);
        return KILN_E_INPUT;
    }
    if (format == KILN_DATA_CSV && read_header(r, err) != 0) {
        kiln_status code = err ? err->code : KILN_E_INPUT;
        kiln_data_rows_free(r);
        return code;
    }
    *out = r;
    return KILN_E_OK;
}

int kiln_data_rows_next(kiln_data_rows *r, json_t **row, uint64_t *line, kiln_error *err)
{
    *row = NULL;
    if (r->done)
        return 0;
    int rc = r->format == KILN_DATA_CSV ? next_csv(r, row, err) : next_jsonl(r, row, err);
    if (line)
        *line = r->rec_line;
    if (rc == 0)
        r->done = 1;
    return rc;
}

kiln_data_format kiln_data_rows_format(const kiln_data_rows *r)
{
    return r->format;
}

void kiln_data_rows_free(kiln_data_rows *r)
{
    if (!r)
        return;
    if (r->own_fd && r->fd >= 0)
        close(r->fd);
    json_decref(r->header);
    free(r->fstart);
    free(r->flen);
    free(r->rec);
    free(r->buf);
    free(r->name);
    free(r);
}
