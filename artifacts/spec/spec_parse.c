/*
 * spec_parse.c - JSON spec -> validated kiln_doc (docs/spec.md).
 *
 * The order of work: refuse an oversized spec before parsing it; let jansson
 * parse (duplicate members refused, NUL allowed so that a NUL can be reported
 * with its pointer instead of as a bare syntax error); scan the whole tree
 * once for nesting depth, characters XML cannot hold and the total string
 * size; then walk the known structure into the typed model. The walk reports
 * every problem it can and keeps going where the rest does not depend on the
 * bad member, so a user fixes a spec in one round.
 *
 * This file holds the parser's helpers and the top level (metadata, theme,
 * page, the document's life cycle); parse_sheet.c holds sheets and tables,
 * parse_content.c blocks, slides, charts, images and text.
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <wctype.h>

#include "../../common/templates.h"
#include "markdown.h"
#include "spec_internal.h"
#include "../../common/banned.h"

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

void kiln_parse_options_init(kiln_parse_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->limits = kiln_limits_default();
}

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

static void syntax_error(kiln_pctx *c, const kiln_json_syntax *se)
{
    int line, col;
    kiln_json_line_col(c->text, c->text_len, se->offset, &line, &col);
    if (se->too_deep)
        kiln_errors_addf(c->errs, KILN_E_LIMIT, "",
                         "JSON nested deeper than %u levels (line %d, column %d)",
                         (unsigned)c->lim.json_depth, line, col);
    else
        kiln_errors_addf(c->errs, KILN_E_INVALID_SPEC, "", "not valid JSON at line %d, column %d: %s",
                         line, col, se->what);
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
    json_t *v = json_loadb(buf, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
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
        syntax_error(c, &se);
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
            syntax_error(c, &se);
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
static json_t *load_tree(kiln_pctx *c, const json_t *v, const char *const *holes,
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
        return load_tree(w->c, json_array_get(w->array, w->index), holes, pointer);
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

/* ---- metadata, theme, page ---- */

static void parse_metadata(kiln_pctx *c, const json_t *m)
{
    static const char *const allowed[] = {"title",    "author",   "subject", "description",
                                          "company",  "category", "keywords", "created",
                                          NULL};
    kiln_metadata *md = &c->doc->metadata;
    size_t saved = kiln_ptr_push(&c->ptr, "metadata");
    if (!json_is_object(m)) {
        kiln_perr(c, NULL, "expected an object");
        goto pop;
    }
    kiln_check_members(c, m, allowed);
    kiln_get_string(c, m, "title", &md->title);
    kiln_get_string(c, m, "author", &md->author);
    kiln_get_string(c, m, "subject", &md->subject);
    kiln_get_string(c, m, "description", &md->description);
    kiln_get_string(c, m, "company", &md->company);
    kiln_get_string(c, m, "category", &md->category);
    const json_t *kw = json_object_get(m, "keywords");
    if (json_is_string(kw)) {
        md->keywords = kiln_pstrdup(c, kw);
    } else if (json_is_array(kw)) {
        size_t total = 1, n = json_array_size(kw), bad = 0;
        for (size_t i = 0; i < n; i++) {
            const json_t *k = json_array_get(kw, i);
            if (!json_is_string(k)) {
                size_t s2 = kiln_ptr_push(&c->ptr, "keywords");
                char idx[32];
                snprintf(idx, sizeof idx, "%zu", i);
                kiln_perr(c, idx, "expected a string");
                kiln_ptr_pop(&c->ptr, s2);
                bad++;
                continue;
            }
            total += json_string_length(k) + 2;
        }
        char *joined = bad ? NULL : kiln_arena_alloc(c->arena, total);
        if (!bad && !joined) {
            kiln_pnomem(c);
        } else if (joined) {
            size_t pos = 0;
            for (size_t i = 0; i < n; i++) {
                const json_t *k = json_array_get(kw, i);
                if (i) {
                    memcpy(joined + pos, ", ", 2);
                    pos += 2;
                }
                memcpy(joined + pos, json_string_value(k), json_string_length(k));
                pos += json_string_length(k);
            }
            joined[pos] = '\0';
            md->keywords = joined;
        }
    } else if (kw) {
        kiln_perr(c, "keywords", "expected a string or an array of strings");
    }
    const json_t *cr = json_object_get(m, "created");
    if (cr) {
        int y, mo, d, h, mi, has_time, zone;
        double sec;
        if (!json_is_string(cr) ||
            kiln_iso_parse_zone(json_string_value(cr), &y, &mo, &d, &h, &mi, &sec, &has_time,
                                &zone) != 0) {
            kiln_perr(c, "created",
                      "expected an ISO 8601 date or date-time such as \"2026-03-01\" or "
                      "\"2026-03-01T09:30:00Z\"");
        } else {
            /* A point in time, unlike a cell's date-time: a zone offset is
             * applied to reach UTC (09:00+05:00 is 04:00Z); without a zone
             * the time is taken as UTC. */
            md->has_created = 1;
            md->created = kiln_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
                          h * 3600 + mi * 60 + (int64_t)sec - (int64_t)zone * 60;
        }
    }
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

static const char *arena_json_string(kiln_pctx *c, const json_t *obj, const char *key,
                                     const char *fallback)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_string(v))
        return fallback;
    const char *s = kiln_arena_strdup(c->arena, json_string_value(v));
    if (!s)
        kiln_pnomem(c);
    return s ? s : fallback;
}

/* Defaults from the embedded templates/theme.json. A broken template is a
 * build mistake, so fall back to the documented values rather than fail. */
static void theme_defaults(kiln_pctx *c)
{
    kiln_theme *t = &c->doc->theme;
    t->font = "Calibri";
    t->heading_font = "Calibri";
    t->mono_font = "Consolas";
    t->font_size = 11;
    static const int32_t office[] = {0x4472C4, 0xED7D31, 0xA5A5A5, 0xFFC000, 0x5B9BD5, 0x70AD47};
    t->accent_count = 6;
    memcpy(t->accent_colors, office, sizeof office);
    t->header_fill = office[0];
    t->header_font_color = 0xFFFFFF;
    c->chart_width = 480;
    c->chart_height = 288;
    c->table_style = "Table Style Medium 2";

    size_t len;
    const char *tpl = kiln_template("theme.json", &len);
    if (!tpl)
        return;
    json_t *j = json_loadb(tpl, len, 0, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return;
    }
    t->font = arena_json_string(c, j, "font", t->font);
    t->heading_font = arena_json_string(c, j, "heading_font", t->heading_font);
    t->mono_font = arena_json_string(c, j, "mono_font", t->mono_font);
    c->table_style = arena_json_string(c, j, "table_style", c->table_style);
    const json_t *v = json_object_get(j, "font_size");
    if (json_is_number(v))
        t->font_size = json_number_value(v);
    v = json_object_get(j, "accent_colors");
    if (json_is_array(v) && json_array_size(v) >= 1 && json_array_size(v) <= 12) {
        int n = 0;
        for (size_t i = 0; i < json_array_size(v); i++) {
            int32_t col = kiln_color_parse(json_string_value(json_array_get(v, i)));
            if (col >= 0)
                t->accent_colors[n++] = col;
        }
        if (n)
            t->accent_count = n;
    }
    int32_t col = kiln_color_parse(json_string_value(json_object_get(j, "header_fill")));
    t->header_fill = col >= 0 ? col : t->accent_colors[0];
    col = kiln_color_parse(json_string_value(json_object_get(j, "header_font_color")));
    if (col >= 0)
        t->header_font_color = col;
    v = json_object_get(j, "chart_width_px");
    if (json_is_integer(v) && json_integer_value(v) > 0)
        c->chart_width = (uint32_t)json_integer_value(v);
    v = json_object_get(j, "chart_height_px");
    if (json_is_integer(v) && json_integer_value(v) > 0)
        c->chart_height = (uint32_t)json_integer_value(v);
    json_decref(j);
}

static void parse_theme(kiln_pctx *c, const json_t *th)
{
    static const char *const allowed[] = {"font",        "heading_font",      "mono_font",
                                          "font_size",   "accent_colors",     "header_fill",
                                          "header_font_color", NULL};
    kiln_theme *t = &c->doc->theme;
    size_t saved = kiln_ptr_push(&c->ptr, "theme");
    if (!json_is_object(th)) {
        kiln_perr(c, NULL, "expected an object");
        goto pop;
    }
    kiln_check_members(c, th, allowed);
    const char *font = NULL, *heading = NULL;
    kiln_get_string(c, th, "font", &font);
    kiln_get_string(c, th, "heading_font", &heading);
    if (font && !*font)
        kiln_perr(c, "font", "expected a font name");
    else if (font)
        t->font = font;
    if (heading && !*heading)
        kiln_perr(c, "heading_font", "expected a font name");
    /* heading_font defaults to the body font, the spec's or the theme's. */
    t->heading_font = heading && *heading ? heading : font ? t->font : t->heading_font;
    const char *mono = NULL;
    kiln_get_string(c, th, "mono_font", &mono);
    if (mono && *mono)
        t->mono_font = mono;
    kiln_get_number(c, th, "font_size", 6, 72, &t->font_size);
    const json_t *ac = json_object_get(th, "accent_colors");
    int accents_given = 0;
    if (ac) {
        size_t n = json_is_array(ac) ? json_array_size(ac) : 0;
        if (n < 1 || n > 12) {
            kiln_perr(c, "accent_colors", "expected an array of 1 to 12 colors");
        } else {
            int32_t cols[12];
            int ok = 1;
            for (size_t i = 0; i < n; i++) {
                const json_t *e = json_array_get(ac, i);
                cols[i] = json_is_string(e) ? kiln_color_parse(json_string_value(e)) : -1;
                if (cols[i] < 0) {
                    size_t s2 = kiln_ptr_push(&c->ptr, "accent_colors");
                    kiln_ptr_push_index(&c->ptr, i);
                    kiln_perr(c, NULL, "expected a color \"#RRGGBB\"");
                    kiln_ptr_pop(&c->ptr, s2);
                    ok = 0;
                }
            }
            if (ok) {
                memcpy(t->accent_colors, cols, n * sizeof cols[0]);
                t->accent_count = (int)n;
                accents_given = 1;
            }
        }
    }
    /* docs/spec.md: header_fill defaults to the first accent color. When the
     * spec gives its own accents, follow them; otherwise theme.json's
     * header_fill is the default palette's choice. */
    if (accents_given)
        t->header_fill = t->accent_colors[0];
    kiln_get_color(c, th, "header_fill", &t->header_fill);
    kiln_get_color(c, th, "header_font_color", &t->header_font_color);
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

static void page_defaults(kiln_page *p)
{
    p->size = KILN_PAGE_A4;
    p->landscape = 0;
    p->margin_top = p->margin_bottom = p->margin_left = p->margin_right = 72;
    p->header_text = NULL;
    p->page_numbers = 1;
}

static void page_finish(kiln_page *p)
{
    static const double dims[][2] = {
        [KILN_PAGE_A4] = {595.28, 841.89},   [KILN_PAGE_LETTER] = {612, 792},
        [KILN_PAGE_LEGAL] = {612, 1008},     [KILN_PAGE_A3] = {841.89, 1190.55},
        [KILN_PAGE_A5] = {419.53, 595.28},
    };
    double w = dims[p->size][0], h = dims[p->size][1];
    p->width_pt = p->landscape ? h : w;
    p->height_pt = p->landscape ? w : h;
}

static void parse_page(kiln_pctx *c, const json_t *pg)
{
    static const char *const allowed[] = {"size",   "orientation",  "margins",
                                          "header", "page_numbers", NULL};
    static const char *const sizes[] = {"A4", "Letter", "Legal", "A3", "A5", NULL};
    static const char *const orient[] = {"portrait", "landscape", NULL};
    static const char *const sides[] = {"top", "bottom", "left", "right", NULL};
    kiln_page *p = &c->doc->page;
    size_t saved = kiln_ptr_push(&c->ptr, "page");
    if (!json_is_object(pg)) {
        kiln_perr(c, NULL, "expected an object");
        goto pop;
    }
    kiln_check_members(c, pg, allowed);
    int size = 0, o = 0;
    if (kiln_get_enum(c, pg, "size", sizes, &size) == 0)
        p->size = (kiln_page_size)size;
    if (kiln_get_enum(c, pg, "orientation", orient, &o) == 0)
        p->landscape = o == 1;
    const json_t *m = json_object_get(pg, "margins");
    if (m) {
        size_t s2 = kiln_ptr_push(&c->ptr, "margins");
        if (!json_is_object(m)) {
            kiln_perr(c, NULL, "expected an object with top, bottom, left, right");
        } else {
            kiln_check_members(c, m, sides);
            kiln_get_length(c, m, "top", 0, 288, &p->margin_top);
            kiln_get_length(c, m, "bottom", 0, 288, &p->margin_bottom);
            kiln_get_length(c, m, "left", 0, 288, &p->margin_left);
            kiln_get_length(c, m, "right", 0, 288, &p->margin_right);
        }
        kiln_ptr_pop(&c->ptr, s2);
        /* each margin is within 0-4 in, but together they must leave the
         * text an inch each way (an A5 page with 4 in margins has none) */
        page_finish(p);
        double text_w = p->width_pt - p->margin_left - p->margin_right;
        double text_h = p->height_pt - p->margin_top - p->margin_bottom;
        if (text_w < 72)
            kiln_perr(c, "margins",
                      "left and right margins leave %.0f pt of the page's %.0f pt width for "
                      "text; at least 72 pt (1 in) is needed",
                      text_w < 0 ? 0 : text_w, p->width_pt);
        if (text_h < 72)
            kiln_perr(c, "margins",
                      "top and bottom margins leave %.0f pt of the page's %.0f pt height for "
                      "text; at least 72 pt (1 in) is needed",
                      text_h < 0 ? 0 : text_h, p->height_pt);
    }
    /* The header: true means "the title", so the title is looked up after
     * metadata was parsed (parse_root parses metadata first). */
    const json_t *h = json_object_get(pg, "header");
    if (json_is_true(h)) {
        if (c->doc->metadata.title && c->doc->metadata.title[0])
            p->header_text = c->doc->metadata.title;
        else
            kiln_perr(c, "header", "true means the document title, but metadata has no title");
    } else if (h && !json_is_false(h)) {
        if (!json_is_string(h) || !json_string_value(h)[0])
            kiln_perr(c, "header", "expected true (the title), false or a non-empty string");
        else
            p->header_text = kiln_pstrdup(c, h);
    }
    /* A header is one line (docs/spec.md "Line breaks"). */
    p->header_text = kiln_one_line(c, p->header_text);
    kiln_get_bool(c, pg, "page_numbers", &p->page_numbers);
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

/* ---- the document ---- */

static void parse_root(kiln_pctx *c, const json_t *root)
{
    static const char *const allowed[] = {"version", "metadata", "theme", "page",
                                          "sheets",  "blocks",   "slides", NULL};
    if (!json_is_object(root)) {
        kiln_perr(c, NULL, "expected a JSON object (the document spec)");
        return;
    }
    kiln_check_members(c, root, allowed);
    const json_t *v = json_object_get(root, "version");
    if (v && !(json_is_integer(v) && json_integer_value(v) == KILN_SPEC_VERSION))
        kiln_perr(c, "version", "expected 1 (the only spec version)");
    if ((v = json_object_get(root, "metadata")))
        parse_metadata(c, v);
    if ((v = json_object_get(root, "theme")))
        parse_theme(c, v);
    if ((v = json_object_get(root, "page")))
        parse_page(c, v);
    page_finish(&c->doc->page);
    const json_t *sheets = json_object_get(root, "sheets");
    const json_t *blocks = json_object_get(root, "blocks");
    const json_t *slides = json_object_get(root, "slides");
    if (sheets)
        kiln_parse_sheets(c, sheets);
    if (blocks && !c->nomem)
        kiln_parse_blocks(c, blocks);
    if (slides && !c->nomem)
        kiln_parse_slides(c, slides);
    if (kiln_parray_size(c, sheets) == 0 && kiln_parray_size(c, blocks) == 0 &&
        kiln_parray_size(c, slides) == 0)
        kiln_perr(c, NULL, "a spec needs at least one of \"sheets\", \"blocks\", \"slides\", "
                           "non-empty");
}

void kiln_doc_free(kiln_doc *doc)
{
    if (!doc)
        return;
    struct kiln_doc_private *p = doc->priv;
    kiln_arena_release(&p->arena); /* doc itself lives in the arena */
    free(p);
}

static kiln_status first_code(const kiln_errors *errs)
{
    return errs->count ? errs->items[0].code : KILN_E_INTERNAL;
}

/* Counting the compact text of a tree (kiln_doc_parse_json) up to a limit. */
struct text_count {
    uint64_t bytes, max;
};

static int count_text(const char *buf, size_t size, void *data)
{
    (void)buf;
    struct text_count *tc = data;
    tc->bytes += size;
    return tc->bytes > tc->max ? -1 : 0;
}

/* The spec is over its size limit (an error added), under it (0), or a
 * tree that cannot be written as JSON (an error added). */
static int check_size(size_t len, const json_t *tree, const kiln_limits *lim,
                      kiln_errors *errs)
{
    kiln_error e;
    if (!tree) {
        if (len <= lim->spec_bytes)
            return 0;
        kiln_error_limit(&e, KILN_E_LIMIT, "", lim->spec_bytes, len,
                         "the spec is %zu bytes, more than the %llu allowed", len,
                         (unsigned long long)lim->spec_bytes);
    } else {
        /* Measured, not kept, and no further than the limit (spec.h). */
        struct text_count tc = {0, lim->spec_bytes};
        int rc = json_dump_callback(tree, count_text, &tc, JSON_COMPACT | JSON_ENCODE_ANY);
        if (tc.bytes > lim->spec_bytes)
            kiln_error_limit(&e, KILN_E_LIMIT, "", lim->spec_bytes, tc.bytes,
                             "the spec is more than the %llu bytes allowed",
                             (unsigned long long)lim->spec_bytes);
        else if (rc != 0)
            kiln_error_set(&e, KILN_E_INVALID_SPEC, "",
                           "the spec cannot be written as JSON: a string or member name that "
                           "is not UTF-8, or a value that contains itself");
        else
            return 0;
    }
    kiln_errors_add(errs, &e);
    return -1;
}

/* kiln_doc_parse (json, len) or kiln_doc_parse_json (tree). */
static kiln_status parse_spec(const char *json, size_t len, const json_t *tree,
                              const kiln_parse_options *opt, kiln_doc **out, kiln_errors *errs)
{
    kiln_errors local;
    if (!errs)
        errs = &local;
    kiln_errors_init(errs);
    *out = NULL;
    kiln_parse_options defaults;
    if (!opt) {
        kiln_parse_options_init(&defaults);
        opt = &defaults;
    }
    const kiln_limits *lim = &opt->limits;
    if (check_size(len, tree, lim, errs) != 0)
        return first_code(errs);

    struct kiln_doc_private *priv = calloc(1, sizeof *priv);
    if (!priv) {
        kiln_errors_addf(errs, KILN_E_NOMEM, "", "out of memory");
        return KILN_E_NOMEM;
    }
    priv->limits = *lim;
    /* The model is the images' bytes plus a small multiple of the spec; the
     * ceiling only stops a runaway, it is not a limit a valid spec can
     * reach. */
    uint64_t ceiling = lim->images_bytes + 16 * lim->spec_bytes + (64u << 20);
    if (ceiling < lim->images_bytes)
        ceiling = 0; /* overflowed: no ceiling rather than a tiny one */
    kiln_arena_init(&priv->arena, ceiling);
    kiln_doc *doc = kiln_arena_alloc(&priv->arena, sizeof *doc);
    kiln_pctx *c = calloc(1, sizeof *c);
    if (!doc || !c) {
        kiln_errors_addf(errs, KILN_E_NOMEM, "", "out of memory");
        goto free_pctx;
    }
    doc->priv = priv;
    c->doc = doc;
    c->arena = &priv->arena;
    c->lim = *lim;
    c->errs = errs;
    c->scan_data = opt->scan_data_files;
    c->text = json;
    c->text_len = len;
    c->tree = tree;

    /* The whole text's syntax first, so a spec that is not JSON gets that
     * one error; then the pieces (spec_internal.h). A tree is JSON. */
    kiln_json_syntax se;
    if (!tree && kiln_json_check(json, len, &se) != 0) {
        syntax_error(c, &se);
        goto free_pctx;
    }
    c->base_dir = kiln_arena_strdup(&priv->arena, opt->base_dir ? opt->base_dir : ".");
    doc->base_dir = c->base_dir;
    if (!c->base_dir)
        kiln_pnomem(c);
    theme_defaults(c);
    page_defaults(&doc->page);
    size_t at = tree ? 0 : kiln_json_skip_ws(json, len, 0);
    if (tree ? !json_is_object(tree) : json[at] != '{') {
        /* Not loaded: an array at the top could be the whole 64 MiB. */
        kiln_perr(c, NULL, "expected a JSON object (the document spec)");
    } else if (!c->nomem) {
        /* The root without its sheets, blocks and slides: those are read a
         * sheet, a block, a slide at a time. */
        static const char *const root_holes[] = {"sheets", "blocks", "slides", NULL};
        json_t *root;
        if (tree) {
            root = load_tree(c, tree, root_holes, "");
        } else {
            kiln_span span = {(uint32_t)at, (uint32_t)(kiln_json_value_end(json, len, at) - at)};
            root = kiln_pload(c, span, root_holes, "");
        }
        if (root)
            parse_root(c, root);
        json_decref(root);
    }
    free(c->holes);
    free(c);
    if (errs->count || errs->dropped)
        goto free_arena;
    *out = doc;
    return KILN_E_OK;

free_pctx:
    if (c)
        free(c->holes);
    free(c);
free_arena:
    kiln_arena_release(&priv->arena);
    free(priv);
    return first_code(errs);
}

kiln_status kiln_doc_parse(const char *json, size_t len, const kiln_parse_options *opt,
                           kiln_doc **out, kiln_errors *errs)
{
    return parse_spec(json, len, NULL, opt, out, errs);
}

kiln_status kiln_doc_parse_json(const json_t *spec, const kiln_parse_options *opt,
                                kiln_doc **out, kiln_errors *errs)
{
    if (!spec) {
        kiln_errors local;
        kiln_errors_init(errs ? errs : &local);
        *out = NULL;
        return kiln_errors_addf(errs ? errs : &local, KILN_E_INVALID_SPEC, "",
                                "expected a JSON object (the document spec)");
    }
    return parse_spec(NULL, 0, spec, opt, out, errs);
}

kiln_status kiln_doc_load(const char *path, const kiln_parse_options *opt, kiln_doc **out,
                          kiln_errors *errs)
{
    kiln_errors local;
    if (!errs)
        errs = &local;
    kiln_errors_init(errs);
    *out = NULL;
    kiln_parse_options o;
    if (opt)
        o = *opt;
    else
        kiln_parse_options_init(&o);

    int is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return kiln_errors_addf(errs, KILN_E_INPUT, "", "cannot read \"%s\": %s", path,
                                strerror(errno));
    /* Read at most one byte past the limit: enough to know it was passed. */
    uint64_t max = o.limits.spec_bytes;
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    kiln_status rc = KILN_E_OK;
    if (!buf) {
        rc = kiln_errors_addf(errs, KILN_E_NOMEM, "", "out of memory");
        goto close_fd;
    }
    for (;;) {
        if (len == cap) {
            if ((uint64_t)cap > max) {
                break;
            }
            size_t ncap = cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                rc = kiln_errors_addf(errs, KILN_E_NOMEM, "", "out of memory");
                goto free_buf;
            }
            buf = nb;
            cap = ncap;
        }
        size_t want = cap - len;
        if ((uint64_t)len + want > max + 1)
            want = (size_t)(max + 1 - len);
        if (want == 0)
            break;
        ssize_t n = read(fd, buf + len, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = kiln_errors_addf(errs, KILN_E_INPUT, "", "cannot read \"%s\": %s", path,
                                  strerror(errno));
            goto free_buf;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if ((uint64_t)len > max) {
        kiln_error e;
        kiln_error_limit(&e, KILN_E_LIMIT, "", max, len,
                         "the spec is more than the %llu bytes allowed",
                         (unsigned long long)max);
        kiln_errors_add(errs, &e);
        rc = KILN_E_LIMIT;
        goto free_buf;
    }
    char dir[4096];
    if (!o.base_dir) {
        const char *slash = is_stdin ? NULL : strrchr(path, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == path)
            snprintf(dir, sizeof dir, "/");
        else
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        o.base_dir = dir;
    }
    rc = kiln_doc_parse(buf, len, &o, out, errs);
free_buf:
    free(buf);
close_fd:
    if (!is_stdin)
        close(fd);
    return rc;
}
