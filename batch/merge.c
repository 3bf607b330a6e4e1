/*
 * merge.c - mail merge (merge.h): the template walked value by value into a
 * new tree, each string's placeholders filled from one data row.
 *
 * A walk of the tree, not a substitution over the template's JSON text: a
 * placeholder keeps its field's type (12 stays a number, a row's line items
 * become a table's rows), and an error names the template's member by its
 * JSON Pointer, which only the tree knows. The walk keeps the path of member
 * names and indexes it is at, so the cell-position rule (.../rows/I/J) reads
 * the path, not a pointer that may have been cut short.
 *
 * Bounds: the walk goes no deeper than the spec parser would accept
 * (KILN_LIMIT_JSON_DEPTH), so a hostile template cannot exhaust the stack,
 * and what it adds is counted against KILN_MERGE_BYTES_MAX, so a template
 * repeating a large field cannot make a spec of gigabytes.
 */
#include "merge.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../artifacts/spec/spec.h"
#include "../common/pointer.h"
#include "../common/utf8.h"
#include "../common/banned.h"

/* What a copied value costs against KILN_MERGE_BYTES_MAX besides its
 * string's bytes: about what jansson spends on a node. */
#define VALUE_COST 16

/* Bytes of a field name or template text quoted in a message. */
#define SNIPPET_MAX 60

/* Room for any number as text: "%.17g" is at most 24 characters, a whole
 * number below 1e21 with "%.0f" at most 22. */
#define NUMBER_TEXT 40

/* One step from the root to the value being merged. */
typedef struct merge_step {
    const char *key; /* the member's name, NULL for an array element */
    size_t index;
} merge_step;

typedef struct merge {
    const json_t *row;
    kiln_merge_missing missing;
    uint64_t line;
    kiln_errors *errs; /* kiln_merge_spec: every error goes here */
    kiln_error *err;   /* kiln_merge_text: the first error */
    int failed;        /* an error was recorded */
    int stop;          /* out of memory or past a limit: walk no further */
    uint64_t added;    /* bytes added so far, against KILN_MERGE_BYTES_MAX */
    kiln_ptr ptr;      /* the template's pointer of the value being merged */
    merge_step path[KILN_LIMIT_JSON_DEPTH + 1];
    size_t depth; /* steps in path */
} merge;

/* A growing string; its length is bounded by the template string's plus what
 * charge() lets the merge add. */
typedef struct text_buf {
    char *buf;
    size_t len, cap;
} text_buf;

/* ---- errors ---- */

static void merge_error(merge *m, kiln_status code, double limit, double actual, const char *fmt,
                        ...) __attribute__((format(printf, 5, 6)));
static void merge_error(merge *m, kiln_status code, double limit, double actual, const char *fmt,
                        ...)
{
    char msg[KILN_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Errors of the machine name no member (error.h). */
    const char *pointer = code == KILN_E_NOMEM ? "" : m->ptr.buf;
    kiln_error e;
    kiln_error_limit(&e, code, pointer, limit, actual, "%s", msg);
    if (m->errs)
        kiln_errors_add(m->errs, &e);
    else if (!m->failed && m->err)
        *m->err = e;
    m->failed = 1;
    if (code == KILN_E_NOMEM || code == KILN_E_LIMIT)
        m->stop = 1;
}

static void *nomem(merge *m)
{
    merge_error(m, KILN_E_NOMEM, 0, 0, "out of memory");
    return NULL;
}

/* s[0..len) as it may stand quoted in a message: at most SNIPPET_MAX bytes,
 * cut at a character (and before any byte that is not UTF-8), control
 * characters shown as '?', "..." when cut. */
static void snippet(char *out, size_t cap, const char *s, size_t len)
{
    size_t room = cap > SNIPPET_MAX + 4 ? SNIPPET_MAX : cap - 4; /* "..." and NUL */
    size_t valid = kiln_utf8_invalid_at(s, len), n = valid < room ? valid : room;
    /* Inside a character: back to its first byte. */
    while (n > 0 && n < valid && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7F ? '?' : s[i];
    size_t end = n;
    if (n < len) {
        memcpy(out + n, "...", 3);
        end += 3;
    }
    out[end] = '\0';
}

/* Count bytes the merge adds; -1 (a limit error recorded) past the maximum. */
static int charge(merge *m, uint64_t bytes)
{
    if (m->added + bytes <= KILN_MERGE_BYTES_MAX) {
        m->added += bytes;
        return 0;
    }
    merge_error(m, KILN_E_LIMIT, KILN_MERGE_BYTES_MAX, (double)(m->added + bytes),
                "the merge adds more than %u MiB to the spec (a large field, or one "
                "repeated many times in the template)",
                KILN_MERGE_BYTES_MAX >> 20);
    return -1;
}

/* A container at depth (the spec parser's count: the root is 1). 0, or -1
 * with a limit error. */
static int check_depth(merge *m, size_t depth, const char *what)
{
    if (depth <= KILN_LIMIT_JSON_DEPTH)
        return 0;
    merge_error(m, KILN_E_LIMIT, KILN_LIMIT_JSON_DEPTH, (double)depth, "%s deeper than %u levels",
                what, (unsigned)KILN_LIMIT_JSON_DEPTH);
    return -1;
}

/* ---- placeholders ---- */

enum { PH_NONE, PH_OK, PH_UNCLOSED, PH_EMPTY, PH_MALFORMED };

typedef struct placeholder {
    size_t open, close; /* s[open..close): from "{{" to past "}}" */
    const char *name;
    size_t name_len;
} placeholder;

static int name_byte(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c >= 0x80;
}

/* NAME of merge.h: segments of name bytes joined by single dots, and UTF-8
 * (a template's strings are; --name's text may not be). */
static int valid_name(const char *s, size_t len)
{
    size_t seg = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (seg == 0)
                return 0;
            seg = 0;
        } else if (name_byte((unsigned char)s[i])) {
            seg++;
        } else {
            return 0;
        }
    }
    return seg > 0 && kiln_utf8_valid(s, len);
}

/* The next placeholder in s[pos..len): PH_NONE when there is no "{{", else
 * what the first one is, *ph filled (for PH_UNCLOSED, close is len). */
static int next_placeholder(const char *s, size_t len, size_t pos, placeholder *ph)
{
    const char *o = memmem(s + pos, len - pos, "{{", 2);
    if (!o)
        return PH_NONE;
    ph->open = (size_t)(o - s);
    const char *inner = o + 2, *c = memmem(inner, (size_t)(s + len - inner), "}}", 2);
    if (!c) {
        ph->close = len;
        ph->name = inner;
        ph->name_len = (size_t)(s + len - inner);
        return PH_UNCLOSED;
    }
    ph->close = (size_t)(c + 2 - s);
    const char *a = inner, *b = c;
    while (a < b && (*a == ' ' || *a == '\t'))
        a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
        b--;
    ph->name = a;
    ph->name_len = (size_t)(b - a);
    if (a == b)
        return PH_EMPTY;
    return valid_name(a, ph->name_len) ? PH_OK : PH_MALFORMED;
}

/* Record the error of a placeholder that is not one. */
static void placeholder_error(merge *m, int kind, const char *s, size_t len,
                              const placeholder *ph)
{
    char shown[SNIPPET_MAX + 8];
    if (kind == PH_UNCLOSED) {
        snippet(shown, sizeof shown, s + ph->open, len - ph->open);
        merge_error(m, KILN_E_INVALID_SPEC, 0, 0,
                    "{{ is not closed: \"%s\" (a placeholder is {{name}}; a template cannot "
                    "hold a literal {{)",
                    shown);
    } else if (kind == PH_EMPTY) {
        merge_error(m, KILN_E_INVALID_SPEC, 0, 0,
                    "an empty placeholder: {{ and }} hold the name of a field, {{name}}");
    } else if (!kiln_utf8_valid(ph->name, ph->name_len)) {
        merge_error(m, KILN_E_INVALID_SPEC, 0, 0, "a placeholder's name is not UTF-8");
    } else {
        snippet(shown, sizeof shown, ph->name, ph->name_len);
        merge_error(m, KILN_E_INVALID_SPEC, 0, 0,
                    "{{%s}} is not a placeholder: a field name is letters, digits, '_' and "
                    "'-' (and any non-ASCII letter), in parts joined by '.'",
                    shown);
    }
}

/* ---- fields ---- */

/* A decimal index without a leading zero ("0", "12"). 1 with *out, else 0. */
static int index_segment(const char *s, size_t len, size_t *out)
{
    if (len == 0 || (len > 1 && s[0] == '0'))
        return 0;
    size_t i = 0;
    for (size_t k = 0; k < len; k++) {
        if (s[k] < '0' || s[k] > '9')
            return 0;
        size_t d = (size_t)(s[k] - '0');
        if (i > (SIZE_MAX - d) / 10)
            return 0;
        i = i * 10 + d;
    }
    *out = i;
    return 1;
}

/* The row's field NAME (borrowed), NULL when it has none: the whole name as
 * one member first, then segment by segment. */
static const json_t *field(const json_t *row, const char *name, size_t len)
{
    if (!json_is_object(row))
        return NULL;
    const json_t *v = json_object_getn(row, name, len);
    if (v || !memchr(name, '.', len))
        return v;
    v = row;
    const char *p = name, *end = name + len;
    while (v) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        size_t seg = (size_t)((dot ? dot : end) - p), i;
        if (json_is_object(v))
            v = json_object_getn(v, p, seg);
        else if (json_is_array(v) && index_segment(p, seg, &i))
            v = json_array_get(v, i);
        else
            v = NULL;
        if (!dot)
            break;
        p = dot + 1;
    }
    return v;
}

static void missing_error(merge *m, const char *name, size_t len)
{
    char shown[SNIPPET_MAX + 8];
    snippet(shown, sizeof shown, name, len);
    if (m->line)
        merge_error(m, KILN_E_INVALID_SPEC, 0, 0, "data line %llu has no field '%s'",
                    (unsigned long long)m->line, shown);
    else
        merge_error(m, KILN_E_INVALID_SPEC, 0, 0, "the data row has no field '%s'", shown);
}

/* ---- values ---- */

/* A whole number below 1e21 as an integer, anything else in %g at the
 * fewest digits that read back as the same double. */
static void real_text(double d, char *out, size_t cap)
{
    if (d == 0) {
        snprintf(out, cap, "0"); /* -0 too */
        return;
    }
    if (d == trunc(d) && fabs(d) < 1e21) {
        snprintf(out, cap, "%.0f", d);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            return;
    }
}

/* The text a scalar stands for in a longer string: *text, *len (a number
 * written into num). 0, or -1 for an array or an object. */
static int value_text(const json_t *v, char num[NUMBER_TEXT], const char **text, size_t *len)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        *text = json_string_value(v);
        *len = json_string_length(v);
        return 0;
    case JSON_INTEGER:
        snprintf(num, NUMBER_TEXT, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        real_text(json_real_value(v), num, NUMBER_TEXT);
        break;
    case JSON_TRUE:
        snprintf(num, NUMBER_TEXT, "true");
        break;
    case JSON_FALSE:
        snprintf(num, NUMBER_TEXT, "false");
        break;
    case JSON_NULL:
        num[0] = '\0';
        break;
    default:
        return -1;
    }
    *text = num;
    *len = strlen(num);
    return 0;
}

/* A new copy of the row's value v, which will sit depth - 1 steps below the
 * root (a container there is at depth). NULL with an error recorded. */
static json_t *copy_value(merge *m, const json_t *v, size_t depth)
{
    size_t slen = json_is_string(v) ? json_string_length(v) : 0;
    if (charge(m, VALUE_COST + (uint64_t)slen))
        return NULL;
    json_t *out;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (check_depth(m, depth, "the field's value nests the spec"))
            return NULL;
        if (!(out = json_object()))
            return nomem(m);
        const char *key;
        size_t klen;
        json_t *child;
        json_object_keylen_foreach((json_t *)v, key, klen, child) {
            json_t *c = charge(m, klen) ? NULL : copy_value(m, child, depth + 1);
            if (!c)
                goto drop_out;
            if (json_object_setn_new_nocheck(out, key, klen, c) != 0) {
                nomem(m);
                goto drop_out;
            }
        }
        return out;
    }
    case JSON_ARRAY: {
        if (check_depth(m, depth, "the field's value nests the spec"))
            return NULL;
        if (!(out = json_array()))
            return nomem(m);
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n; i++) {
            json_t *c = copy_value(m, json_array_get(v, i), depth + 1);
            if (!c)
                goto drop_out;
            if (json_array_append_new(out, c) != 0) {
                nomem(m);
                goto drop_out;
            }
        }
        return out;
    }
    case JSON_STRING:
        out = json_stringn_nocheck(json_string_value(v), slen);
        break;
    default:
        out = json_copy((json_t *)v); /* a scalar: a node of its own */
        break;
    }
    return out ? out : nomem(m);
drop_out:
    json_decref(out);
    return NULL;
}

/* At a table's or sheet's cell: the path ends in rows/I/J. */
static int at_cell(const merge *m)
{
    size_t d = m->depth;
    return d >= 3 && !m->path[d - 1].key && !m->path[d - 2].key && m->path[d - 3].key &&
           strcmp(m->path[d - 3].key, "rows") == 0;
}

/* The typed value of a whole-string placeholder: a copy of v, or at a cell
 * position a date string as the date cell it means. */
static json_t *typed_value(merge *m, const json_t *v)
{
    if (json_is_string(v) && at_cell(m)) {
        const char *s = json_string_value(v);
        double serial;
        int has_time = 0;
        if (strlen(s) == json_string_length(v) &&
            kiln_iso_to_serial(s, &serial, &has_time) == 0) {
            json_t *str = copy_value(m, v, m->depth + 2);
            if (!str)
                return NULL;
            json_t *cell = json_object();
            if (!cell || json_object_set_new(cell, has_time ? "datetime" : "date", str) != 0) {
                json_decref(cell);
                if (!cell)
                    json_decref(str); /* set_new took it otherwise */
                return nomem(m);
            }
            return cell;
        }
    }
    return copy_value(m, v, m->depth + 1);
}

/* ---- strings ---- */

/* Append s[0..n) to t. 0, or -1 out of memory. */
static int text_put(merge *m, text_buf *t, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->buf, cap);
        if (!p) {
            nomem(m);
            return -1;
        }
        t->buf = p;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
    return 0;
}

/* s[0..len) with every placeholder replaced by its field as text, into t.
 * 0, or -1 with every error of the string recorded (t then holds part of
 * it). */
static int merge_text_into(merge *m, const char *s, size_t len, text_buf *t)
{
    size_t pos = 0;
    int bad = 0;
    for (;;) {
        placeholder ph;
        int kind = next_placeholder(s, len, pos, &ph);
        size_t literal_end = kind == PH_NONE ? len : ph.open;
        /* After an error the text is not used: stop building it, go on
         * looking for the string's other errors. */
        if (!bad && text_put(m, t, s + pos, literal_end - pos))
            return -1;
        if (kind == PH_NONE)
            break;
        if (kind != PH_OK) {
            placeholder_error(m, kind, s, len, &ph);
            bad = 1;
            if (kind == PH_UNCLOSED)
                break;
            pos = ph.close;
            continue;
        }
        pos = ph.close;
        const json_t *v = field(m->row, ph.name, ph.name_len);
        if (!v) {
            if (m->missing != KILN_MERGE_MISSING_EMPTY) {
                missing_error(m, ph.name, ph.name_len);
                bad = 1;
            }
            continue;
        }
        char num[NUMBER_TEXT];
        const char *text;
        size_t tlen;
        if (value_text(v, num, &text, &tlen) != 0) {
            char shown[SNIPPET_MAX + 8];
            snippet(shown, sizeof shown, ph.name, ph.name_len);
            merge_error(m, KILN_E_INVALID_SPEC, 0, 0,
                        "field '%s' is %s: it can only fill a whole value (a string that is "
                        "just {{%s}})",
                        shown, json_is_array(v) ? "an array" : "an object", shown);
            bad = 1;
            continue;
        }
        if (!bad && (charge(m, tlen) || text_put(m, t, text, tlen)))
            return -1;
    }
    return bad ? -1 : 0;
}

/* A template string merged: a new value, or NULL with its errors recorded. */
static json_t *merge_string(merge *m, const json_t *v)
{
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    placeholder ph;
    int kind = next_placeholder(s, len, 0, &ph);
    if (kind == PH_NONE) {
        json_t *out = json_stringn_nocheck(s, len);
        return out ? out : nomem(m);
    }
    if (kind == PH_OK && ph.open == 0 && ph.close == len) {
        const json_t *f = field(m->row, ph.name, ph.name_len);
        if (f)
            return typed_value(m, f);
        if (m->missing == KILN_MERGE_MISSING_EMPTY)
            return json_null();
        missing_error(m, ph.name, ph.name_len);
        return NULL;
    }
    text_buf t = {NULL, 0, 0};
    json_t *out = NULL;
    if (merge_text_into(m, s, len, &t) == 0) {
        out = json_stringn_nocheck(t.buf ? t.buf : "", t.len);
        if (!out)
            nomem(m);
    }
    free(t.buf);
    return out;
}

/* ---- the template ---- */

static json_t *walk(merge *m, const json_t *v);

/* The child at key (or index) of the container being walked: the path and
 * pointer pushed around the walk of it. */
static json_t *walk_child(merge *m, const char *key, size_t index, const json_t *v)
{
    size_t saved = key ? kiln_ptr_push(&m->ptr, key) : kiln_ptr_push_index(&m->ptr, index);
    m->path[m->depth++] = (merge_step){key, index};
    json_t *out = walk(m, v);
    m->depth--;
    kiln_ptr_pop(&m->ptr, saved);
    return out;
}

/* An object or array of the template: a new one, or NULL when any member
 * failed (all of them are walked, for their errors, unless the walk stops). */
static json_t *walk_container(merge *m, const json_t *v)
{
    if (check_depth(m, m->depth + 1, "JSON nested"))
        return NULL;
    int ok = 1;
    json_t *out = json_is_object(v) ? json_object() : json_array();
    if (!out)
        return nomem(m);
    if (json_is_object(v)) {
        const char *key;
        size_t klen;
        json_t *child;
        json_object_keylen_foreach((json_t *)v, key, klen, child) {
            json_t *c = walk_child(m, key, 0, child);
            if (c && ok && json_object_setn_new_nocheck(out, key, klen, c) != 0) {
                nomem(m);
                c = NULL; /* set_new took it */
            } else if (c && !ok) {
                json_decref(c);
                c = NULL;
            }
            ok = ok && c;
            if (m->stop)
                break;
        }
    } else {
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n && !m->stop; i++) {
            json_t *c = walk_child(m, NULL, i, json_array_get(v, i));
            if (c && ok && json_array_append_new(out, c) != 0) {
                nomem(m);
                c = NULL;
            } else if (c && !ok) {
                json_decref(c);
                c = NULL;
            }
            ok = ok && c;
        }
    }
    if (ok && !m->stop)
        return out;
    json_decref(out);
    return NULL;
}

static json_t *walk(merge *m, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return merge_string(m, v);
    case JSON_OBJECT:
    case JSON_ARRAY:
        return walk_container(m, v);
    default: {
        json_t *out = json_copy((json_t *)v);
        return out ? out : nomem(m);
    }
    }
}

static void merge_init(merge *m, const json_t *row, const kiln_merge_options *opt)
{
    memset(m, 0, sizeof *m);
    m->row = row;
    m->missing = opt ? opt->missing : KILN_MERGE_MISSING_ERROR;
    m->line = opt ? opt->line : 0;
}

json_t *kiln_merge_spec(const json_t *tmpl, const json_t *row, const kiln_merge_options *opt,
                        kiln_errors *errs)
{
    merge *m = malloc(sizeof *m);
    if (!m) {
        kiln_errors_addf(errs, KILN_E_NOMEM, "", "out of memory");
        return NULL;
    }
    merge_init(m, row, opt);
    m->errs = errs;
    json_t *out = NULL;
    if (!tmpl)
        merge_error(m, KILN_E_INTERNAL, 0, 0, "no template to merge");
    else
        out = walk(m, tmpl);
    if (out && m->failed) {
        json_decref(out);
        out = NULL;
    }
    free(m);
    return out;
}

char *kiln_merge_text(const char *tmpl, const json_t *row, const kiln_merge_options *opt,
                      const char *where, kiln_error *err)
{
    merge *m = malloc(sizeof *m);
    if (!m) {
        kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
        return NULL;
    }
    merge_init(m, row, opt);
    m->err = err;
    snprintf(m->ptr.buf, sizeof m->ptr.buf, "%s", where ? where : "");
    m->ptr.len = strlen(m->ptr.buf);
    text_buf t = {NULL, 0, 0};
    char *out = NULL;
    size_t len = tmpl ? strlen(tmpl) : 0;
    if (merge_text_into(m, tmpl ? tmpl : "", len, &t) != 0)
        goto drop_text;
    if (memchr(t.buf ? t.buf : "", '\0', t.len)) {
        merge_error(m, KILN_E_INVALID_SPEC, 0, 0, "the merged text holds a NUL byte");
        goto drop_text;
    }
    if (!t.buf && !(t.buf = calloc(1, 1))) {
        nomem(m);
        goto drop_text;
    }
    out = t.buf;
    t.buf = NULL;
drop_text:
    free(t.buf);
    free(m);
    return out;
}

int kiln_merge_has_placeholder(const char *s)
{
    return s && strstr(s, "{{") != NULL;
}
