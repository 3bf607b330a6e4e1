/*
 * parse_state.c - what every part of the parser's walk works with (the
 * kiln_pctx of spec_internal.h): errors at the current JSON Pointer, arena
 * copies of what the model keeps, the spec loaded a piece at a time with its
 * big arrays left as holes, the member getters, and the sheet-name rules.
 *
 * It sits under the files that walk the spec (parse_table_data.c,
 * parse_image.c, parse_chart.c, parse_sheet.c, parse_content.c,
 * spec_parse.c) and calls none of them: spec_internal.h gives the layers.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wctype.h>

#include "spec_internal.h"
#include "../../common/banned.h"

/* ---- error helpers ---- */

static void vadd(kiln_pctx *c, kiln_status code, const char *member, uint64_t limit,
                 uint64_t actual, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));
static void vadd(kiln_pctx *c, kiln_status code, const char *member, uint64_t limit,
                 uint64_t actual, const char *fmt, va_list ap)
{
    size_t saved = c->ptr.len;
    if (member)
        kiln_ptr_push(&c->ptr, member);
    kiln_error e;
    kiln_error_set(&e, code, c->ptr.buf, "%s", "");
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    e.limit = limit;
    e.actual = actual;
    kiln_errors_add(c->errs, &e);
    kiln_ptr_pop(&c->ptr, saved);
}

void kiln_perr(kiln_pctx *c, const char *member, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd(c, KILN_E_INVALID_SPEC, member, 0, 0, fmt, ap);
    va_end(ap);
}

void kiln_perr_code(kiln_pctx *c, kiln_status code, const char *member, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd(c, code, member, 0, 0, fmt, ap);
    va_end(ap);
}

void kiln_perr_limit(kiln_pctx *c, const char *member, uint64_t limit, uint64_t actual,
                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd(c, KILN_E_LIMIT, member, limit, actual, fmt, ap);
    va_end(ap);
}

void kiln_perr_rel(kiln_pctx *c, kiln_error *e)
{
    kiln_error_prefix(e, c->ptr.buf);
    kiln_errors_add(c->errs, e);
}

void kiln_pnomem(kiln_pctx *c)
{
    if (!c->nomem)
        kiln_errors_addf(c->errs, KILN_E_NOMEM, c->ptr.buf, "out of memory");
    c->nomem = 1;
}

size_t kiln_check_members(kiln_pctx *c, const json_t *obj, const char *const *allowed)
{
    size_t bad = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        int ok = 0;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = strcmp(allowed[i], key) == 0;
        if (!ok) {
            kiln_perr(c, key, "unknown member \"%s\"", key);
            bad++;
        }
    }
    return bad;
}

const char *kiln_ptr_dup(kiln_pctx *c, const char *member)
{
    size_t saved = c->ptr.len;
    if (member)
        kiln_ptr_push(&c->ptr, member);
    const char *p = kiln_arena_strndup(c->arena, c->ptr.buf, c->ptr.len);
    kiln_ptr_pop(&c->ptr, saved);
    if (!p)
        kiln_pnomem(c);
    return p;
}

const char *kiln_one_line(kiln_pctx *c, const char *s)
{
    if (!s)
        return NULL;
    /* Always a copy: the model owns its strings (the tree s is in is freed). */
    char *copy = kiln_arena_strdup(c->arena, s);
    if (!copy) {
        kiln_pnomem(c);
        return NULL;
    }
    for (char *p = copy; (p = strchr(p, '\n')); p++)
        *p = ' ';
    return copy;
}

/* ---- the spec a piece at a time ---- */

const char *kiln_pstrdup(kiln_pctx *c, const json_t *s)
{
    const char *p = kiln_arena_strndup(c->arena, json_string_value(s), json_string_length(s));
    if (!p)
        kiln_pnomem(c);
    return p;
}

int kiln_pcell_own(kiln_pctx *c, kiln_cell *cell)
{
    const char **strings[] = {&cell->text, &cell->link_text, &cell->cached_text,
                              &cell->number_format};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        if (!*strings[i])
            continue;
        size_t n = strings[i] == &cell->text ? cell->text_len : strlen(*strings[i]);
        if (!(*strings[i] = kiln_arena_strndup(c->arena, *strings[i], n))) {
            kiln_pnomem(c);
            return -1;
        }
    }
    if (cell->style) {
        kiln_style *st = kiln_arena_alloc(c->arena, sizeof *st);
        if (!st) {
            kiln_pnomem(c);
            return -1;
        }
        *st = *cell->style;
        if (st->font && !(st->font = kiln_arena_strdup(c->arena, st->font))) {
            kiln_pnomem(c);
            return -1;
        }
        cell->style = st;
    }
    return 0;
}

static int add_hole(kiln_pctx *c, const char *path, kiln_span span, const json_t *array)
{
    if (c->hole_count == c->hole_cap) {
        size_t cap = c->hole_cap ? c->hole_cap * 2 : 8;
        kiln_hole *h = realloc(c->holes, cap * sizeof *h);
        if (!h) {
            kiln_pnomem(c);
            return -1;
        }
        c->holes = h;
        c->hole_cap = cap;
    }
    c->holes[c->hole_count++] = (kiln_hole){NULL, span, array, path};
    return 0;
}

/* 1 when the value at span is an array with something in it. */
static int nonempty_array(const kiln_pctx *c, kiln_span span)
{
    if (c->text[span.off] != '[')
        return 0;
    size_t p = kiln_json_skip_ws(c->text, c->text_len, span.off + 1);
    return c->text[p] != ']';
}

/* The holes of the object at span: members on a path (rest: what of the
 * path is left below this object) whose values are non-empty arrays. */
static int find_holes(kiln_pctx *c, kiln_span span, const char *path, const char *rest)
{
    if (c->text[span.off] != '{')
        return 0;
    const char *slash = strchr(rest, '/');
    size_t seg = slash ? (size_t)(slash - rest) : strlen(rest);
    kiln_json_iter it;
    kiln_span key, value;
    kiln_json_iter_init(&it, c->text, c->text_len, span);
    while (kiln_json_next_member(&it, &key, &value)) {
        if (!kiln_json_key_is(c->text, key, rest, seg))
            continue;
        if (slash) {
            if (find_holes(c, value, path, slash + 1) != 0)
                return -1;
        } else if (nonempty_array(c, value) && add_hole(c, path, value, NULL) != 0) {
            return -1;
        }
    }
    return 0;
}

/* The placeholder a hole's path leads to in the loaded piece. */
static const json_t *hole_placeholder(const json_t *piece, const char *path)
{
    char seg[64];
    const json_t *v = piece;
    while (v && *path) {
        size_t n = strcspn(path, "/");
        if (n >= sizeof seg)
            return NULL;
        memcpy(seg, path, n);
        seg[n] = '\0';
        v = json_object_get(v, seg);
        path += n + (path[n] == '/');
    }
    return json_is_array(v) && json_array_size(v) == 0 ? v : NULL;
}

void kiln_perr_syntax(kiln_pctx *c, const kiln_json_syntax *se)
{
    int line, col;
    kiln_json_line_col(c->text, c->text_len, se->offset, &line, &col);
    if (se->too_deep)
        kiln_errors_addf(c->errs, KILN_E_LIMIT, "",
                         "JSON nested deeper than %u levels (line %d, column %d)",
                         (unsigned)c->lim.json_depth, line, col);
    else
        kiln_errors_addf(c->errs, KILN_E_INVALID_SPEC, "",
                         "not valid JSON at line %d, column %d: %s", line, col, se->what);
}

/* jansson's tree of span with the holes from first on left out: the text
 * is copied with "[]" in place of each. */
static json_t *load_with_holes(kiln_pctx *c, kiln_span span, size_t first)
{
    size_t cut = 0;
    for (size_t i = first; i < c->hole_count; i++)
        cut += c->holes[i].span.len - 2;
    size_t n = span.len - cut;
    char *buf = malloc(n ? n : 1);
    if (!buf) {
        kiln_pnomem(c);
        return NULL;
    }
    size_t from = span.off, at = 0;
    for (size_t i = first; i < c->hole_count; i++) {
        const kiln_span *h = &c->holes[i].span;
        memcpy(buf + at, c->text + from, h->off - from);
        at += h->off - from;
        memcpy(buf + at, "[]", 2);
        at += 2;
        from = h->off + h->len;
    }
    memcpy(buf + at, c->text + from, span.off + span.len - from);
    json_error_t je;
    json_t *v = json_loadb(buf, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY,
                           &je);
    free(buf);
    if (!v) {
        /* Back to the text's own offsets: each hole before the error was
         * its array's length less two. */
        size_t pos = je.position > 0 ? (size_t)je.position - 1 : 0, off = span.off + pos;
        for (size_t i = first; i < c->hole_count; i++)
            if (c->holes[i].span.off < off)
                off += c->holes[i].span.len - 2;
        kiln_json_syntax se = {off, strstr(je.text, "depth") != NULL, ""};
        snprintf(se.what, sizeof se.what, "%s", je.text);
        kiln_perr_syntax(c, &se);
        return NULL;
    }
    for (size_t i = first; i < c->hole_count; i++)
        c->holes[i].placeholder = hole_placeholder(v, c->holes[i].path);
    return v;
}

json_t *kiln_pload(kiln_pctx *c, kiln_span span, const char *const *holes, const char *pointer)
{
    size_t mark = c->hole_count;
    for (size_t i = 0; holes && holes[i]; i++)
        if (find_holes(c, span, holes[i], holes[i]) != 0)
            goto drop_holes;
    /* Found path by path, so "blocks" written before "sheets" is found after
     * it: into the text's order, which load_with_holes copies in. */
    for (size_t i = mark + 1; i < c->hole_count; i++)
        for (size_t j = i; j > mark && c->holes[j].span.off < c->holes[j - 1].span.off; j--) {
            kiln_hole t = c->holes[j];
            c->holes[j] = c->holes[j - 1];
            c->holes[j - 1] = t;
        }
    json_t *v;
    if (c->hole_count == mark) {
        kiln_json_syntax se;
        if (!(v = kiln_json_load_span(c->text, span, &se))) {
            kiln_perr_syntax(c, &se);
            goto drop_holes;
        }
    } else if (!(v = load_with_holes(c, span, mark))) {
        goto drop_holes;
    }
    kiln_json_scan(v, pointer, &c->lim, &c->string_bytes, c->errs, NULL);
    return v;

drop_holes:
    kiln_phole_pop(c, mark);
    return NULL;
}

void kiln_phole_pop(kiln_pctx *c, size_t mark)
{
    if (mark < c->hole_count)
        c->hole_count = mark;
}

const kiln_hole *kiln_phole(const kiln_pctx *c, const json_t *v)
{
    for (size_t i = c->hole_count; v && i-- > 0;)
        if (c->holes[i].placeholder == v)
            return &c->holes[i];
    return NULL;
}

size_t kiln_parray_size(const kiln_pctx *c, const json_t *v)
{
    const kiln_hole *h = kiln_phole(c, v);
    if (!h)
        return json_array_size(v);
    return h->array ? json_array_size(h->array) : kiln_json_count(c->text, c->text_len, h->span);
}

/* ---- the spec as a tree (kiln_doc_parse_json) ---- */

/* The holes path of member key of an object at path (NULL: on none), when
 * it leads to a hole or on towards one; else NULL. *is_hole says which. */
static const char *hole_step(const char *const *holes, const char *path, const char *key,
                             char *buf, size_t cap, int *is_hole)
{
    *is_hole = 0;
    /* A name with a slash is no segment of a path (as find_holes sees it). */
    if (!path || !holes || strchr(key, '/'))
        return NULL;
    int n = snprintf(buf, cap, "%s%s%s", path, *path ? "/" : "", key);
    if (n < 0 || (size_t)n >= cap)
        return NULL;
    const char *on = NULL;
    for (size_t i = 0; holes[i]; i++) {
        size_t len = (size_t)n;
        if (strcmp(holes[i], buf) == 0) {
            *is_hole = 1;
            return holes[i];
        }
        if (strncmp(holes[i], buf, len) == 0 && holes[i][len] == '/')
            on = buf;
    }
    return on;
}

/* A copy of v for a piece: its members on a holes path (path: v's own, ""
 * for the piece; NULL when v is on none) that are non-empty arrays become
 * holes. Everything else is copied, too deep or not, as the text's piece
 * holds it (the parse goes on past a depth error). The recursion is as deep
 * as the tree, as deep as check_size's dump of it went. NULL when out of
 * memory. */
static json_t *copy_piece(kiln_pctx *c, const json_t *v, const char *const *holes,
                          const char *path)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        json_t *o = json_object();
        if (!o)
            return o;
        const char *key;
        json_t *m;
        json_object_foreach((json_t *)v, key, m) {
            char buf[128];
            int is_hole;
            const char *sub = hole_step(holes, path, key, buf, sizeof buf, &is_hole);
            json_t *copy;
            if (is_hole && json_is_array(m) && json_array_size(m)) {
                copy = json_array();
                if (copy && add_hole(c, sub, (kiln_span){0, 0}, m) == 0)
                    c->holes[c->hole_count - 1].placeholder = copy;
                else if (copy) {
                    json_decref(copy);
                    copy = NULL;
                }
            } else {
                copy = copy_piece(c, m, holes, is_hole ? NULL : sub);
            }
            if (!copy || json_object_set_new_nocheck(o, key, copy) != 0) {
                json_decref(o);
                return NULL;
            }
        }
        return o;
    }
    case JSON_ARRAY: {
        json_t *a = json_array();
        for (size_t i = 0; a && i < json_array_size(v); i++) {
            if (json_array_append_new(a, copy_piece(c, json_array_get(v, i), NULL, NULL)) != 0) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case JSON_STRING:
        return json_stringn_nocheck(json_string_value(v), json_string_length(v));
    default:
        /* Numbers are copied, true, false and null are jansson's own. */
        return json_copy((json_t *)v);
    }
}

/* kiln_pload for a value of the spec's tree. */
json_t *kiln_pload_tree(kiln_pctx *c, const json_t *v, const char *const *holes,
                        const char *pointer)
{
    size_t mark = c->hole_count;
    json_t *copy = copy_piece(c, v, holes, "");
    if (!copy) {
        kiln_pnomem(c);
        kiln_phole_pop(c, mark);
        return NULL;
    }
    kiln_json_scan(copy, pointer, &c->lim, &c->string_bytes, c->errs, NULL);
    return copy;
}

/* ---- walking a hole, in either mode ---- */

size_t kiln_pwalk_init(kiln_pwalk *w, kiln_pctx *c, const json_t *v)
{
    memset(w, 0, sizeof *w);
    w->c = c;
    const kiln_hole *h = kiln_phole(c, v);
    if (h && h->array) {
        w->array = h->array;
        w->count = json_array_size(h->array);
    } else if (h) {
        w->span = h->span;
        w->count = kiln_json_count(c->text, c->text_len, h->span);
        kiln_json_iter_init(&w->it, c->text, c->text_len, h->span);
    }
    return w->count;
}

int kiln_pwalk_next(kiln_pwalk *w)
{
    size_t next = w->started ? w->index + 1 : 0;
    if (next >= w->count)
        return 0;
    if (!w->array && !kiln_json_next_element(&w->it, &w->el))
        return 0;
    w->index = next;
    w->started = 1;
    return 1;
}

json_t *kiln_pwalk_load(kiln_pwalk *w, const char *const *holes, const char *pointer)
{
    if (w->array)
        return kiln_pload_tree(w->c, json_array_get(w->array, w->index), holes, pointer);
    return kiln_pload(w->c, w->el, holes, pointer);
}

int kiln_pwalk_is_object(const kiln_pwalk *w)
{
    if (w->array)
        return json_is_object(json_array_get(w->array, w->index));
    return w->c->text[w->el.off] == '{';
}

kiln_inline_rows *kiln_pwalk_keep_rows(kiln_pctx *c, const json_t *v)
{
    kiln_pwalk w;
    size_t n = kiln_pwalk_init(&w, c, v);
    if (w.array) {
        kiln_inline_rows *kept = kiln_inline_rows_from_json(c->arena, w.array);
        if (!kept)
            kiln_pnomem(c);
        return kept;
    }
    /* The text copied, each row's span in it. */
    kiln_inline_rows *out = kiln_arena_alloc(c->arena, sizeof *out);
    kiln_span *rows = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *rows);
    char *text = kiln_arena_strndup(c->arena, n ? c->text + w.span.off : "", n ? w.span.len : 0);
    if (!out || !rows || !text) {
        kiln_pnomem(c);
        return NULL;
    }
    size_t i = 0;
    while (kiln_pwalk_next(&w))
        rows[i++] = (kiln_span){w.el.off - w.span.off, w.el.len};
    out->text = text;
    out->len = n ? w.span.len : 0;
    out->rows = rows;
    out->count = i;
    return out;
}

/* ---- member getters ---- */

int kiln_get_string(kiln_pctx *c, const json_t *obj, const char *key, const char **out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_string(v)) {
        kiln_perr(c, key, "expected a string");
        return -1;
    }
    const char *copy = kiln_pstrdup(c, v);
    if (!copy)
        return -1;
    *out = copy;
    return 0;
}

int kiln_get_bool(kiln_pctx *c, const json_t *obj, const char *key, int *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v)) {
        kiln_perr(c, key, "expected true or false");
        return -1;
    }
    *out = json_is_true(v);
    return 0;
}

int kiln_get_number(kiln_pctx *c, const json_t *obj, const char *key, double min, double max,
                    double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(d >= min && d <= max)) {
        if (min <= -1e308 && max >= 1e308)
            kiln_perr(c, key, "expected a number");
        else
            kiln_perr(c, key, "expected a number from %g to %g", min, max);
        return -1;
    }
    *out = d;
    return 0;
}

int kiln_get_int(kiln_pctx *c, const json_t *obj, const char *key, int64_t min, int64_t max,
                 int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    /* 3.0 is an integer to a person even if JSON spells it as a real. */
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(d >= (double)min && d <= (double)max) || d != floor(d)) {
        kiln_perr(c, key, "expected an integer from %lld to %lld", (long long)min,
                  (long long)max);
        return -1;
    }
    *out = (int64_t)d;
    return 0;
}

int kiln_get_enum(kiln_pctx *c, const json_t *obj, const char *key, const char *const *names,
                  int *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (json_is_string(v)) {
        for (int i = 0; names[i]; i++) {
            if (strcmp(names[i], json_string_value(v)) == 0) {
                *out = i;
                return 0;
            }
        }
    }
    char list[512];
    size_t n = 0;
    list[0] = '\0';
    for (int i = 0; names[i] && n < sizeof list - 1; i++) {
        const char *sep = !names[i + 1] && i ? " or " : i ? ", " : "";
        int w = snprintf(list + n, sizeof list - n, "%s\"%s\"", sep, names[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    kiln_perr(c, key, "expected %s", list);
    return -1;
}

int kiln_get_color(kiln_pctx *c, const json_t *obj, const char *key, int32_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    int32_t col = json_is_string(v) ? kiln_color_parse(json_string_value(v)) : -1;
    if (col < 0) {
        kiln_perr(c, key, "expected a color \"#RRGGBB\"");
        return -1;
    }
    *out = col;
    return 0;
}

int kiln_get_length(kiln_pctx *c, const json_t *obj, const char *key, double min, double max,
                    double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    double pt = NAN;
    if (json_is_number(v)) {
        pt = json_number_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        errno = 0;
        double n = strtod(s, &end);
        if (end != s && errno == 0 && isfinite(n) && (*s >= '0' && *s <= '9')) {
            if (strcmp(end, "pt") == 0)
                pt = n;
            else if (strcmp(end, "in") == 0)
                pt = n * 72.0;
            else if (strcmp(end, "cm") == 0)
                pt = n * 72.0 / 2.54;
            else if (strcmp(end, "mm") == 0)
                pt = n * 72.0 / 25.4;
        }
    }
    /* Allow rounding of the unit conversions at the top of the range. */
    if (!(pt >= min && pt <= max + 1e-9)) {
        kiln_perr(c, key,
                  "expected a length from %gpt to %gpt: a number of points or a string such as "
                  "\"20mm\", \"2.5cm\", \"1in\", \"72pt\"",
                  min, max);
        return -1;
    }
    *out = pt;
    return 0;
}

/* ---- sheet names ---- */

/* The C.UTF-8 LC_CTYPE locale object for towlower_l, made once and kept for
 * the life of the process (the global locale is never touched). NULL when
 * newlocale failed: names are then folded in ASCII only. */
static locale_t fold_locale;
static pthread_once_t fold_once = PTHREAD_ONCE_INIT;

static void fold_locale_init(void)
{
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    fold_locale = l == (locale_t)0 ? NULL : l;
}

/* Decode one code point of valid UTF-8 at *p and advance; 0 at the end. */
static uint32_t utf8_next(const unsigned char **p)
{
    const unsigned char *s = *p;
    uint32_t cp;
    if (!s[0])
        return 0;
    if (s[0] < 0x80) {
        cp = s[0];
        *p = s + 1;
    } else if ((s[0] & 0xE0) == 0xC0 && s[1]) {
        cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
        *p = s + 2;
    } else if ((s[0] & 0xF0) == 0xE0 && s[1] && s[2]) {
        cp = ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        *p = s + 3;
    } else if ((s[0] & 0xF8) == 0xF0 && s[1] && s[2] && s[3]) {
        cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
             ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        *p = s + 4;
    } else { /* not UTF-8 (jansson refuses it; stay safe): the byte itself */
        cp = 0xDC00u | s[0];
        *p = s + 1;
    }
    return cp;
}

int kiln_name_equal_fold(const char *a, const char *b)
{
    pthread_once(&fold_once, fold_locale_init);
    if (!fold_locale)
        return strcasecmp(a, b) == 0;
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    for (;;) {
        uint32_t x = utf8_next(&p), y = utf8_next(&q);
        if (x != y && towlower_l((wint_t)x, fold_locale) != towlower_l((wint_t)y, fold_locale))
            return 0;
        if (!x || !y)
            return x == y;
    }
}

const char *kiln_sheet_name_problem(const char *name, size_t len)
{
    size_t chars = kiln_utf8_count(name, len);
    if (chars == 0)
        return "a sheet name needs 1 to 31 characters, not none";
    if (chars > 31)
        return "a sheet name needs 1 to 31 characters";
    if (strpbrk(name, "[]:*?/\\"))
        return "a sheet name cannot contain any of [ ] : * ? / \\";
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20)
            return "a sheet name cannot contain control characters";
    if (name[0] == '\'' || name[len - 1] == '\'')
        return "a sheet name cannot begin or end with an apostrophe";
    if (kiln_name_equal_fold(name, "History"))
        return "Excel reserves the sheet name \"History\" (in any case)";
    return NULL;
}
