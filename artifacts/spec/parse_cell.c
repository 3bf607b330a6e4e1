/*
 * parse_cell.c - the pieces validation and the row readers share: the
 * default limits, JSON Pointers, UTF-8 checks, the scan over a JSON tree,
 * colors, styles, and the conversion of one JSON cell or one CSV field into a
 * kiln_cell.
 *
 * The cell conversions sit on the hot path (every cell of every row is
 * converted once at validation and again when a writer reads it), so they
 * never allocate: strings are borrowed and a cell's style goes into scratch
 * the caller provides.
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "spec_internal.h"
#include "../../common/banned.h"

/* ---- limits ---- */

/* Here, under both of their users: the parser starts from them, and a row
 * reader for a doc the parser did not make applies them (rows.c). */
kiln_limits kiln_limits_default(void)
{
    kiln_limits l = {
        .spec_bytes = KILN_LIMIT_SPEC_BYTES,
        .json_depth = KILN_LIMIT_JSON_DEPTH,
        .sheets = KILN_LIMIT_SHEETS,
        .rows = KILN_LIMIT_ROWS,
        .columns = KILN_LIMIT_COLUMNS,
        .cell_chars = KILN_LIMIT_CELL_CHARS,
        .string_bytes = KILN_LIMIT_STRING_BYTES,
        .images = KILN_LIMIT_IMAGES,
        .image_bytes = KILN_LIMIT_IMAGE_BYTES,
        .images_bytes = KILN_LIMIT_IMAGES_BYTES,
        .list_depth = KILN_LIMIT_LIST_DEPTH,
    };
    return l;
}

/* ---- JSON Pointer ---- */

void kiln_error_prefix(kiln_error *err, const char *prefix)
{
    char tmp[KILN_POINTER_MAX];
    snprintf(tmp, sizeof tmp, "%s%s", prefix, err->pointer);
    memcpy(err->pointer, tmp, sizeof tmp);
    kiln_utf8_cut(err->pointer);
}

/* ---- UTF-8 ---- */

size_t kiln_utf8_count(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

long kiln_xml_illegal_at(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = u[i];
        if (c < 0x20) {
            if (c != '\t' && c != '\n' && c != '\r')
                return (long)i;
        } else if (c == 0xEF && i + 2 < len && u[i + 1] == 0xBF &&
                   (u[i + 2] == 0xBE || u[i + 2] == 0xBF)) {
            return (long)i;
        }
    }
    return -1;
}

/* A readable name for the forbidden character at s. */
static void describe_illegal(const char *s, char *out, size_t cap)
{
    unsigned char c = (unsigned char)s[0];
    if (c == 0)
        snprintf(out, cap, "a NUL character (U+0000)");
    else if (c < 0x20)
        snprintf(out, cap, "the control character U+%04X", c);
    else
        snprintf(out, cap, "the noncharacter U+%s",
                 (unsigned char)s[2] == 0xBE ? "FFFE" : "FFFF");
}

/* ---- the tree scan ---- */

struct scan_frame {
    const struct scan_frame *parent;
    const char *key; /* NULL: array element */
    size_t index;
};

struct scan {
    const kiln_limits *lim;
    uint64_t *string_bytes;
    kiln_errors *errs;
    kiln_error *err;
    size_t found;
    const char *prefix;
};

static void frame_pointer(const struct scan_frame *f, kiln_ptr *p)
{
    if (!f)
        return;
    frame_pointer(f->parent, p);
    if (f->key)
        kiln_ptr_push(p, f->key);
    else
        kiln_ptr_push_index(p, f->index);
}

/* Record one error at the frame's pointer. Returns 1 when scanning should stop. */
static int scan_error(struct scan *sc, const struct scan_frame *f, kiln_status code,
                      uint64_t limit, uint64_t actual, const char *msg)
{
    kiln_ptr p;
    snprintf(p.buf, sizeof p.buf, "%s", sc->prefix);
    p.len = strlen(p.buf);
    frame_pointer(f, &p);
    kiln_error e;
    kiln_error_limit(&e, code, p.buf, limit, actual, "%s", msg);
    sc->found++;
    if (sc->errs) {
        kiln_errors_add(sc->errs, &e);
        return 0;
    }
    if (sc->err)
        *sc->err = e;
    return 1;
}

/* Line breaks in one form (docs/spec.md "Line breaks"): every CR LF, and
 * every lone CR, becomes LF, so the writers only ever see LF. */
static size_t breaks_to_lf(char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\r') {
            s[o++] = '\n';
            if (i + 1 < len && s[i + 1] == '\n')
                i++;
        } else {
            s[o++] = s[i];
        }
    }
    return o;
}

static int normalize_breaks(json_t *v, const char *s, size_t len);

int kiln_json_breaks_to_lf(json_t *v)
{
    if (json_is_string(v))
        return normalize_breaks(v, json_string_value(v), json_string_length(v));
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (kiln_json_breaks_to_lf(json_array_get(v, i)) != 0)
                return -1;
    } else if (json_is_object(v)) {
        const char *key;
        json_t *m;
        json_object_foreach(v, key, m) {
            if (kiln_json_breaks_to_lf(m) != 0)
                return -1;
        }
    }
    return 0;
}

/* The string v (s, len) with its line breaks as LF. -1 when out of memory. */
static int normalize_breaks(json_t *v, const char *s, size_t len)
{
    if (!memchr(s, '\r', len))
        return 0;
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return -1;
    memcpy(copy, s, len);
    size_t n = breaks_to_lf(copy, len);
    int rc = json_string_setn_nocheck(v, copy, n);
    free(copy);
    return rc;
}

static int scan_string(struct scan *sc, const struct scan_frame *f, json_t *v)
{
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    uint64_t before = *sc->string_bytes;
    *sc->string_bytes += len;
    /* Reported once, by the string that passes the limit: the spec is
     * scanned a piece at a time, and the count goes on across the pieces. */
    if (before <= sc->lim->string_bytes && *sc->string_bytes > sc->lim->string_bytes) {
        char msg[160];
        snprintf(msg, sizeof msg, "the strings of the spec together pass %llu bytes",
                 (unsigned long long)sc->lim->string_bytes);
        if (scan_error(sc, f, KILN_E_LIMIT, sc->lim->string_bytes, *sc->string_bytes, msg))
            return 1;
    }
    long at = kiln_xml_illegal_at(s, len);
    if (at >= 0) {
        char what[64], msg[160];
        describe_illegal(s + at, what, sizeof what);
        snprintf(msg, sizeof msg, "text contains %s, which XML documents cannot hold", what);
        return scan_error(sc, f, KILN_E_INVALID_SPEC, 0, 0, msg);
    }
    if (normalize_breaks(v, s, len) != 0)
        return scan_error(sc, f, KILN_E_NOMEM, 0, 0, "out of memory");
    return 0;
}

static int scan_node(struct scan *sc, json_t *v, const struct scan_frame *f, uint32_t depth)
{
    if (json_is_string(v))
        return scan_string(sc, f, v);
    if (!json_is_object(v) && !json_is_array(v))
        return 0;
    if (depth > sc->lim->json_depth) {
        char msg[120];
        snprintf(msg, sizeof msg, "JSON nested deeper than %u levels",
                 (unsigned)sc->lim->json_depth);
        return scan_error(sc, f, KILN_E_LIMIT, sc->lim->json_depth, depth, msg);
    }
    struct scan_frame child = {f, NULL, 0};
    if (json_is_array(v)) {
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(v, i);
            /* Scalars other than strings need no frame or call. */
            if (!json_is_string(e) && !json_is_object(e) && !json_is_array(e))
                continue;
            child.index = i;
            if (scan_node(sc, e, &child, depth + 1))
                return 1;
        }
        return 0;
    }
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        child.key = key;
        size_t klen = strlen(key);
        long at = kiln_xml_illegal_at(key, klen);
        if (at >= 0) {
            char what[64], msg[160];
            describe_illegal(key + at, what, sizeof what);
            snprintf(msg, sizeof msg, "member name contains %s, which XML documents cannot hold",
                     what);
            if (scan_error(sc, &child, KILN_E_INVALID_SPEC, 0, 0, msg))
                return 1;
        }
        if (scan_node(sc, val, &child, depth + 1))
            return 1;
    }
    return 0;
}

size_t kiln_json_scan(json_t *root, const char *prefix, const kiln_limits *lim,
                      uint64_t *string_bytes, kiln_errors *errs, kiln_error *err)
{
    struct scan sc = {lim, string_bytes, errs, err, 0, prefix ? prefix : ""};
    /* A pointer's segments are the containers above the value: a block at
     * /blocks/3 sits at depth 3. */
    uint32_t depth = 1;
    for (const char *p = sc.prefix; *p; p++)
        depth += *p == '/';
    scan_node(&sc, root, NULL, depth);
    return sc.found;
}

/* ---- colors and styles ---- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int32_t kiln_color_parse(const char *s)
{
    if (!s)
        return -1;
    if (*s == '#')
        s++;
    int32_t v = 0;
    for (int i = 0; i < 6; i++) {
        int h = hexval(s[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return s[6] == '\0' ? v : -1;
}

/* An error at member (relative to the value being converted; NULL = the
 * value itself). Always returns -1. */
static int rel_error(kiln_error *err, kiln_status code, const char *member, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int rel_error(kiln_error *err, kiln_status code, const char *member, const char *fmt, ...)
{
    char ptr[KILN_POINTER_MAX] = "";
    if (member) {
        ptr[0] = '/';
        kiln_ptr_escape(ptr + 1, sizeof ptr - 1, member);
    }
    kiln_error_set(err, code, ptr, "%s", "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

static int style_bool(const json_t *v, const char *key, uint8_t *out, kiln_error *err)
{
    if (!json_is_boolean(v))
        return rel_error(err, KILN_E_INVALID_SPEC, key, "expected true or false");
    *out = json_is_true(v);
    return 0;
}

static int style_enum(const json_t *v, const char *key, const char *const *names, int *out,
                      const char *expected, kiln_error *err)
{
    if (json_is_string(v)) {
        for (int i = 0; names[i]; i++) {
            if (strcmp(json_string_value(v), names[i]) == 0) {
                *out = i + 1;
                return 0;
            }
        }
    }
    return rel_error(err, KILN_E_INVALID_SPEC, key, "expected %s", expected);
}

int kiln_style_from_json(const json_t *v, kiln_style *st, kiln_error *err)
{
    memset(st, 0, sizeof *st);
    st->color = KILN_COLOR_NONE;
    st->fill = KILN_COLOR_NONE;
    if (!json_is_object(v))
        return rel_error(err, KILN_E_INVALID_SPEC, NULL, "expected a style object");
    static const char *const aligns[] = {"left", "center", "right", NULL};
    static const char *const valigns[] = {"top", "middle", "bottom", NULL};
    static const char *const borders[] = {"none", "thin", "medium", "thick", NULL};
    const char *key;
    json_t *m;
    json_object_foreach((json_t *)v, key, m) {
        int rc = 0, e;
        if (strcmp(key, "bold") == 0)
            rc = style_bool(m, key, &st->bold, err);
        else if (strcmp(key, "italic") == 0)
            rc = style_bool(m, key, &st->italic, err);
        else if (strcmp(key, "underline") == 0)
            rc = style_bool(m, key, &st->underline, err);
        else if (strcmp(key, "strike") == 0)
            rc = style_bool(m, key, &st->strike, err);
        else if (strcmp(key, "wrap") == 0)
            rc = style_bool(m, key, &st->wrap, err);
        else if (strcmp(key, "color") == 0 || strcmp(key, "fill") == 0) {
            int32_t c = json_is_string(m) ? kiln_color_parse(json_string_value(m)) : -1;
            if (c < 0)
                rc = rel_error(err, KILN_E_INVALID_SPEC, key, "expected a color \"#RRGGBB\"");
            else if (key[0] == 'c')
                st->color = c;
            else
                st->fill = c;
        } else if (strcmp(key, "size") == 0) {
            double s = json_is_number(m) ? json_number_value(m) : -1;
            if (!(s >= 1 && s <= 409))
                rc = rel_error(err, KILN_E_INVALID_SPEC, key,
                               "expected a font size in points, 1 to 409");
            else
                st->size = s;
        } else if (strcmp(key, "font") == 0) {
            if (!json_is_string(m) || json_string_length(m) == 0)
                rc = rel_error(err, KILN_E_INVALID_SPEC, key, "expected a font name");
            else
                st->font = json_string_value(m);
        } else if (strcmp(key, "align") == 0) {
            rc = style_enum(m, key, aligns, &e, "\"left\", \"center\" or \"right\"", err);
            if (!rc)
                st->align = (kiln_align)e; /* 1..3 = LEFT..RIGHT */
        } else if (strcmp(key, "valign") == 0) {
            rc = style_enum(m, key, valigns, &e, "\"top\", \"middle\" or \"bottom\"", err);
            if (!rc)
                st->valign = (kiln_valign)e;
        } else if (strcmp(key, "border") == 0) {
            rc = style_enum(m, key, borders, &e, "\"thin\", \"medium\", \"thick\" or \"none\"",
                            err);
            if (!rc)
                st->border = (kiln_border)e; /* 1..4 = NONE..THICK */
        } else {
            rc = rel_error(err, KILN_E_INVALID_SPEC, key, "unknown member \"%s\"", key);
        }
        if (rc)
            return -1;
    }
    return 0;
}

/* ---- cells ---- */

static int check_cell_text(const char *s, size_t len, const kiln_limits *lim, const char *member,
                           kiln_error *err)
{
    /* Bytes >= code points, so short strings need no counting. */
    if (len > lim->cell_chars) {
        size_t n = kiln_utf8_count(s, len);
        if (n > lim->cell_chars) {
            rel_error(err, KILN_E_LIMIT, member,
                      "text of %zu characters, more than the %u a cell can hold", n,
                      (unsigned)lim->cell_chars);
            err->limit = lim->cell_chars;
            err->actual = n;
            return -1;
        }
    }
    return 0;
}

static int is_date_type(kiln_column_type t)
{
    return t == KILN_COL_DATE || t == KILN_COL_DATETIME;
}

static int date_from_string(const char *s, kiln_column_type type, kiln_cell *out)
{
    int has_time;
    if (kiln_iso_to_serial(s, &out->number, &has_time) != 0)
        return -1;
    out->kind = type == KILN_COL_DATETIME ? KILN_CELL_DATETIME : KILN_CELL_DATE;
    return 0;
}

/* A plain JSON value (not a cell object) under a column type. */
static int plain_value(const json_t *v, kiln_column_type type, const kiln_limits *lim,
                       kiln_cell *out, const char *member, kiln_error *err)
{
    switch (json_typeof(v)) {
    case JSON_NULL:
        out->kind = KILN_CELL_BLANK;
        return 0;
    case JSON_TRUE:
    case JSON_FALSE:
        out->kind = KILN_CELL_BOOL;
        out->number = json_is_true(v);
        return 0;
    case JSON_INTEGER:
    case JSON_REAL:
        out->kind = KILN_CELL_NUMBER;
        out->number = json_number_value(v);
        if (!isfinite(out->number))
            return rel_error(err, KILN_E_INVALID_SPEC, member, "expected a finite number");
        return 0;
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (is_date_type(type)) {
            if (date_from_string(s, type, out) != 0)
                return rel_error(err, KILN_E_INVALID_SPEC, member,
                                 "expected an ISO 8601 %s such as \"2026-03-31\" (the column's "
                                 "type is a date), from 1900-01-01 to 9999-12-31",
                                 type == KILN_COL_DATETIME ? "date-time" : "date");
            return 0;
        }
        if (check_cell_text(s, len, lim, member, err))
            return -1;
        out->kind = KILN_CELL_STRING;
        out->text = s;
        out->text_len = len;
        return 0;
    }
    default:
        return rel_error(err, KILN_E_INVALID_SPEC, member,
                         "expected a number, string, boolean, null or cell object");
    }
}

static int url_scheme_ok(const char *u)
{
    static const char *const schemes[] = {"http://", "https://", "mailto:", "ftp://", NULL};
    for (int i = 0; schemes[i]; i++) {
        size_t n = strlen(schemes[i]);
        if (strncasecmp(u, schemes[i], n) == 0 && u[n] != '\0')
            return 1;
    }
    return 0;
}

int kiln_cell_from_json(const json_t *v, kiln_column_type type, const kiln_limits *lim,
                        kiln_cell *out, kiln_style *style, kiln_error *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(v))
        return plain_value(v, type, lim, out, NULL, err);

    const json_t *formula = NULL, *value = NULL, *date = NULL, *datetime = NULL, *url = NULL,
                 *text = NULL, *fmt = NULL, *sty = NULL;
    const char *key;
    json_t *m;
    json_object_foreach((json_t *)v, key, m) {
        if (strcmp(key, "formula") == 0)
            formula = m;
        else if (strcmp(key, "value") == 0)
            value = m;
        else if (strcmp(key, "date") == 0)
            date = m;
        else if (strcmp(key, "datetime") == 0)
            datetime = m;
        else if (strcmp(key, "url") == 0)
            url = m;
        else if (strcmp(key, "text") == 0)
            text = m;
        else if (strcmp(key, "number_format") == 0)
            fmt = m;
        else if (strcmp(key, "style") == 0)
            sty = m;
        else
            return rel_error(err, KILN_E_INVALID_SPEC, key, "unknown member \"%s\"", key);
    }
    /* A formula's "value" is its cached result, not a second kind. */
    int kinds = !!formula + !!date + !!datetime + !!url + (!!value && !formula);
    if (kinds != 1)
        return rel_error(err, KILN_E_INVALID_SPEC, NULL,
                         "a cell object needs exactly one of \"formula\", \"date\", "
                         "\"datetime\", \"url\", \"value\"");
    if (text && !url)
        return rel_error(err, KILN_E_INVALID_SPEC, "text", "\"text\" belongs to a \"url\" cell");

    if (fmt) {
        if (!json_is_string(fmt) || json_string_length(fmt) == 0)
            return rel_error(err, KILN_E_INVALID_SPEC, "number_format",
                             "expected a number format string such as \"0.0%%\"");
        out->number_format = json_string_value(fmt);
    }
    if (sty) {
        if (kiln_style_from_json(sty, style, err) != 0) {
            kiln_error_prefix(err, "/style");
            return -1;
        }
        out->style = style;
    }

    if (formula) {
        const char *f = json_is_string(formula) ? json_string_value(formula) : NULL;
        if (f && *f == '=')
            f++;
        if (!f || !*f)
            return rel_error(err, KILN_E_INVALID_SPEC, "formula",
                             "expected a formula string such as \"=SUM(B2:B9)\"");
        if (check_cell_text(f, strlen(f), lim, "formula", err))
            return -1;
        /* Excel's formula limit, counted as the spec writes the formula (with
         * its '=' when it has one), as docs/spec.schema.json's maxLength does. */
        size_t written = json_string_length(formula);
        if (written > KILN_LIMIT_FORMULA_CHARS) {
            size_t n = kiln_utf8_count(json_string_value(formula), written);
            if (n > KILN_LIMIT_FORMULA_CHARS) {
                rel_error(err, KILN_E_LIMIT, "formula",
                          "a formula of %zu characters, more than the %u Excel allows", n,
                          (unsigned)KILN_LIMIT_FORMULA_CHARS);
                err->limit = KILN_LIMIT_FORMULA_CHARS;
                err->actual = n;
                return -1;
            }
        }
        out->kind = KILN_CELL_FORMULA;
        out->text = f;
        out->text_len = strlen(f);
        out->cached_kind = KILN_CELL_BLANK;
        if (value) {
            if (json_is_number(value)) {
                out->cached_kind = KILN_CELL_NUMBER;
                out->cached_number = json_number_value(value);
            } else if (json_is_boolean(value)) {
                out->cached_kind = KILN_CELL_BOOL;
                out->cached_number = json_is_true(value);
            } else if (json_is_string(value)) {
                if (check_cell_text(json_string_value(value), json_string_length(value), lim,
                                    "value", err))
                    return -1;
                out->cached_kind = KILN_CELL_STRING;
                out->cached_text = json_string_value(value);
            } else if (!json_is_null(value)) {
                return rel_error(err, KILN_E_INVALID_SPEC, "value",
                                 "expected a number, string or boolean (the formula's cached "
                                 "result)");
            }
        }
        return 0;
    }
    if (date || datetime) {
        const json_t *d = date ? date : datetime;
        const char *member = date ? "date" : "datetime";
        int has_time = 0;
        if (!json_is_string(d) ||
            kiln_iso_to_serial(json_string_value(d), &out->number, &has_time) != 0)
            return rel_error(err, KILN_E_INVALID_SPEC, member,
                             "expected an ISO 8601 %s, from 1900-01-01 to 9999-12-31 (a "
                             "time rounded to the millisecond must not pass 23:59:59.999 on "
                             "9999-12-31)",
                             date ? "date such as \"2026-03-31\""
                                  : "date-time such as \"2026-03-31T14:30:00\"");
        if (date && has_time)
            return rel_error(err, KILN_E_INVALID_SPEC, member,
                             "expected a date without a time (use \"datetime\")");
        out->kind = date ? KILN_CELL_DATE : KILN_CELL_DATETIME;
        return 0;
    }
    if (url) {
        if (!json_is_string(url) || !url_scheme_ok(json_string_value(url)))
            return rel_error(err, KILN_E_INVALID_SPEC, "url",
                             "expected a URL starting with http://, https://, mailto: or "
                             "ftp://");
        /* Excel stores at most 2,079 characters of a hyperlink's address. */
        if (json_string_length(url) > 2079)
            return rel_error(err, KILN_E_INVALID_SPEC, "url",
                             "a URL longer than 2079 characters, which Excel cannot store");
        out->kind = KILN_CELL_URL;
        out->text = json_string_value(url);
        out->text_len = json_string_length(url);
        if (text) {
            if (!json_is_string(text))
                return rel_error(err, KILN_E_INVALID_SPEC, "text", "expected a string");
            if (check_cell_text(json_string_value(text), json_string_length(text), lim, "text",
                                err))
                return -1;
            out->link_text = json_string_value(text);
        }
        return 0;
    }
    /* {"value": V}: a plain value, typed by the column like any other. */
    if (json_is_object(value) || json_is_array(value))
        return rel_error(err, KILN_E_INVALID_SPEC, "value",
                         "expected a number, string, boolean or null");
    return plain_value(value, type, lim, out, "value", err);
}

/* ---- CSV / text fields ---- */

static void quote_field(const char *text, size_t len, char *out, size_t cap)
{
    /* Show at most 40 bytes, cut at a character boundary. */
    size_t n = len < 40 ? len : 40;
    while (n < len && n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
        n--;
    snprintf(out, cap, "\"%.*s%s\"", (int)n, text, n < len ? "..." : "");
}

/* A number as CSV exports write it: optional sign, digits with an optional
 * fraction, optional exponent, surrounding spaces allowed. */
static int parse_number(const char *s, double *out)
{
    const char *p = s;
    while (*p == ' ')
        p++;
    const char *start = p;
    if (*p == '+' || *p == '-')
        p++;
    int nd = 0;
    while (*p >= '0' && *p <= '9')
        p++, nd++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, nd++;
    }
    if (!nd)
        return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return -1;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    const char *end = p;
    while (*p == ' ')
        p++;
    if (*p)
        return -1;
    char buf[64];
    size_t n = (size_t)(end - start);
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, start, n);
    buf[n] = '\0';
    errno = 0;
    double v = strtod(buf, NULL);
    if (errno == ERANGE && !isfinite(v))
        return -1;
    if (!isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* The "auto" rule: -?digits(.digits)? without a leading zero ("007" is a
 * code, not seven) and with at most 15 digits, Excel's precision: a longer
 * digit string (an account or card number) would silently lose digits. */
static int plain_decimal(const char *s, size_t len, double *out)
{
    const char *p = s, *end = s + len;
    if (p < end && *p == '-')
        p++;
    const char *int_start = p;
    int nd = 0;
    while (p < end && *p >= '0' && *p <= '9')
        p++, nd++;
    size_t int_len = (size_t)(p - int_start);
    if (int_len == 0 || (int_len > 1 && *int_start == '0'))
        return -1;
    if (p < end && *p == '.') {
        p++;
        const char *f = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++, nd++;
        if (p == f)
            return -1;
    }
    if (p != end || nd > 15)
        return -1;
    *out = strtod(s, NULL);
    return 0;
}

int kiln_cell_from_text(const char *text, size_t len, kiln_column_type type,
                        const kiln_limits *lim, kiln_cell *out, kiln_error *err)
{
    memset(out, 0, sizeof *out);
    char shown[64];
    if (!kiln_utf8_valid(text, len))
        return rel_error(err, KILN_E_INVALID_SPEC, NULL, "field is not valid UTF-8");
    long at = kiln_xml_illegal_at(text, len);
    if (at >= 0) {
        char what[64];
        describe_illegal(text + at, what, sizeof what);
        return rel_error(err, KILN_E_INVALID_SPEC, NULL,
                         "field contains %s, which XML documents cannot hold", what);
    }
    if (len == 0) {
        out->kind = KILN_CELL_BLANK;
        return 0;
    }
    switch (type) {
    case KILN_COL_NUMBER:
    case KILN_COL_INTEGER:
    case KILN_COL_CURRENCY:
    case KILN_COL_PERCENT:
        if (parse_number(text, &out->number) != 0) {
            quote_field(text, len, shown, sizeof shown);
            return rel_error(err, KILN_E_INVALID_SPEC, NULL, "expected a number, got %s", shown);
        }
        out->kind = KILN_CELL_NUMBER;
        return 0;
    case KILN_COL_DATE:
    case KILN_COL_DATETIME:
        if (date_from_string(text, type, out) != 0) {
            quote_field(text, len, shown, sizeof shown);
            return rel_error(err, KILN_E_INVALID_SPEC, NULL,
                             "expected an ISO 8601 date such as 2026-03-31, got %s", shown);
        }
        return 0;
    case KILN_COL_BOOLEAN:
        if (strcasecmp(text, "true") == 0 || strcmp(text, "1") == 0) {
            out->kind = KILN_CELL_BOOL;
            out->number = 1;
        } else if (strcasecmp(text, "false") == 0 || strcmp(text, "0") == 0) {
            out->kind = KILN_CELL_BOOL;
            out->number = 0;
        } else {
            quote_field(text, len, shown, sizeof shown);
            return rel_error(err, KILN_E_INVALID_SPEC, NULL,
                             "expected true, false, 1 or 0, got %s", shown);
        }
        return 0;
    case KILN_COL_AUTO:
        if (plain_decimal(text, len, &out->number) == 0) {
            out->kind = KILN_CELL_NUMBER;
            return 0;
        }
        break;
    case KILN_COL_STRING:
        break;
    }
    if (check_cell_text(text, len, lim, NULL, err))
        return -1;
    out->kind = KILN_CELL_STRING;
    out->text = text;
    out->text_len = len;
    return 0;
}
