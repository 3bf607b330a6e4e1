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
 * This file holds the parser's helpers, the top level (metadata, theme, page),
 * sheets and tables; parse_content.c holds blocks, slides, charts, images and
 * text.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../common/templates.h"
#include "markdown.h"
#include "spec_internal.h"

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
    *out = json_string_value(v);
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

const char *kiln_sheet_name_problem(const char *name, size_t len)
{
    size_t chars = kiln_utf8_count(name, len);
    if (chars == 0)
        return "a sheet name needs 1 to 31 characters, not none";
    if (chars > 31)
        return "a sheet name needs 1 to 31 characters";
    if (strpbrk(name, "[]:*?/\\"))
        return "a sheet name cannot contain any of [ ] : * ? / \\";
    if (name[0] == '\'' || name[len - 1] == '\'')
        return "a sheet name cannot begin or end with an apostrophe";
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
        md->keywords = json_string_value(kw);
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
        int y, mo, d, h, mi, has_time;
        double sec;
        if (!json_is_string(cr) ||
            kiln_iso_parse(json_string_value(cr), &y, &mo, &d, &h, &mi, &sec, &has_time) != 0) {
            kiln_perr(c, "created",
                      "expected an ISO 8601 date or date-time such as \"2026-03-01\" or "
                      "\"2026-03-01T09:30:00Z\"");
        } else {
            /* The time as written, taken as UTC: the zone is ignored here as
             * it is for date cells. */
            md->has_created = 1;
            md->created = kiln_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
                          h * 3600 + mi * 60 + (int64_t)sec;
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
    static const char *const allowed[] = {"size", "orientation", "margins", NULL};
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
    }
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

/* ---- columns and table data ---- */

static const char *const col_types[] = {"auto",     "string",  "number",   "integer", "currency",
                                        "percent",  "date",    "datetime", "boolean", NULL};
static const kiln_column_type col_type_vals[] = {
    KILN_COL_AUTO,    KILN_COL_STRING, KILN_COL_NUMBER,   KILN_COL_INTEGER, KILN_COL_CURRENCY,
    KILN_COL_PERCENT, KILN_COL_DATE,   KILN_COL_DATETIME, KILN_COL_BOOLEAN};

static const char *default_format(kiln_column_type t)
{
    switch (t) {
    case KILN_COL_INTEGER: return "#,##0";
    case KILN_COL_NUMBER: return "#,##0.00";
    case KILN_COL_CURRENCY: return "$#,##0.00";
    case KILN_COL_PERCENT: return "0.0%";
    case KILN_COL_DATE: return "yyyy-mm-dd";
    case KILN_COL_DATETIME: return "yyyy-mm-dd hh:mm";
    default: return NULL;
    }
}

static void parse_columns(kiln_pctx *c, const json_t *cols, kiln_table_data *td)
{
    static const char *const allowed[] = {"header", "key", "type", "number_format", "width",
                                          "align", NULL};
    static const char *const aligns[] = {"left", "center", "right", NULL};
    size_t saved = kiln_ptr_push(&c->ptr, "columns");
    if (!json_is_array(cols)) {
        kiln_perr(c, NULL, "expected an array of column objects");
        goto pop;
    }
    size_t n = json_array_size(cols);
    if (n > c->lim.columns) {
        kiln_perr_limit(c, NULL, c->lim.columns, n,
                        "%zu columns, more than the %u a sheet can have", n,
                        (unsigned)c->lim.columns);
        goto pop;
    }
    td->columns = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *td->columns);
    if (!td->columns) {
        kiln_pnomem(c);
        goto pop;
    }
    td->column_count = n;
    /* A set of keys seen, to refuse two columns answering to one member. */
    json_t *seen = json_object();
    if (!seen) {
        kiln_pnomem(c);
        goto pop;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *col = json_array_get(cols, i);
        kiln_column *k = &td->columns[i];
        k->width = -1;
        size_t s2 = kiln_ptr_push_index(&c->ptr, i);
        if (!json_is_object(col)) {
            kiln_perr(c, NULL, "expected a column object");
            kiln_ptr_pop(&c->ptr, s2);
            continue;
        }
        kiln_check_members(c, col, allowed);
        kiln_get_string(c, col, "header", &k->header);
        kiln_get_string(c, col, "key", &k->key);
        if (k->header && kiln_utf8_count(k->header, strlen(k->header)) > c->lim.cell_chars)
            kiln_perr_limit(c, "header", c->lim.cell_chars,
                            kiln_utf8_count(k->header, strlen(k->header)),
                            "a header longer than %u characters", (unsigned)c->lim.cell_chars);
        int t = 0;
        if (kiln_get_enum(c, col, "type", col_types, &t) == 0)
            k->type = col_type_vals[t];
        k->number_format = default_format(k->type);
        const char *nf = NULL;
        kiln_get_string(c, col, "number_format", &nf);
        if (nf && !*nf)
            kiln_perr(c, "number_format", "expected a number format string such as \"0.0%%\"");
        else if (nf)
            k->number_format = nf;
        kiln_get_number(c, col, "width", 0, 255, &k->width);
        int a = 0;
        if (kiln_get_enum(c, col, "align", aligns, &a) == 0 && json_object_get(col, "align"))
            k->align = (kiln_align)(a + 1);
        if (!k->key)
            k->key = k->header;
        if (k->key) {
            if (json_object_get(seen, k->key))
                kiln_perr(c, json_object_get(col, "key") ? "key" : "header",
                          "another column already has the key \"%s\"", k->key);
            else if (json_object_set_new(seen, k->key, json_true()) != 0)
                kiln_pnomem(c);
        }
        kiln_ptr_pop(&c->ptr, s2);
    }
    json_decref(seen);
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

static void validate_inline_rows(kiln_pctx *c, const json_t *rows, kiln_table_data *td)
{
    size_t n = json_array_size(rows);
    kiln_cell *cells = NULL;
    kiln_style *styles = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        /* Past the list's size every further error would only be dropped. */
        if (c->errs->count >= KILN_ERRORS_MAX)
            break;
        const json_t *row = json_array_get(rows, i);
        size_t width = kiln_json_row_width(row, td);
        if (width > c->lim.columns)
            width = c->lim.columns;
        if (width > cap) {
            size_t ncap = cap ? cap : 16;
            while (ncap < width)
                ncap *= 2;
            kiln_cell *nc = realloc(cells, ncap * sizeof *nc);
            if (nc)
                cells = nc;
            kiln_style *ns = nc ? realloc(styles, ncap * sizeof *ns) : NULL;
            if (ns)
                styles = ns;
            if (!nc || !ns) {
                kiln_pnomem(c);
                break;
            }
            cap = ncap;
        }
        size_t count;
        kiln_json_row(row, td, &c->lim, c->ptr.buf, i, cells, styles, &count, c->errs, NULL);
    }
    free(cells);
    free(styles);
}

static void parse_data_source(kiln_pctx *c, const json_t *d, kiln_table_data *td)
{
    static const char *const allowed[] = {"path", "format", "header", "delimiter", NULL};
    static const char *const formats[] = {"csv", "jsonl", NULL};
    size_t saved = kiln_ptr_push(&c->ptr, "data");
    td->pointer = kiln_ptr_dup(c, NULL);
    if (!json_is_object(d)) {
        kiln_perr(c, NULL, "expected a data source object {\"path\": ..., \"format\": ...}");
        goto pop;
    }
    if (kiln_check_members(c, d, allowed))
        goto pop;
    const char *path = NULL;
    if (kiln_get_string(c, d, "path", &path) != 0)
        goto pop;
    if (!path) {
        kiln_perr(c, NULL, "a data source needs a \"path\"");
        goto pop;
    }
    int fmt = -1;
    if (kiln_get_enum(c, d, "format", formats, &fmt) != 0)
        goto pop;
    if (fmt < 0) {
        /* Without "format", the file name's extension decides. */
        const char *dot = strrchr(path, '.');
        if (dot && strcasecmp(dot, ".csv") == 0)
            fmt = 0;
        else if (dot && (strcasecmp(dot, ".jsonl") == 0 || strcasecmp(dot, ".ndjson") == 0))
            fmt = 1;
        else {
            kiln_perr(c, NULL, "a data source needs \"format\": \"csv\" or \"jsonl\"");
            goto pop;
        }
    }
    td->source = fmt == 0 ? KILN_ROWS_CSV : KILN_ROWS_JSONL;
    td->delimiter = ',';
    td->data_header = td->source == KILN_ROWS_CSV;
    const json_t *h = json_object_get(d, "header");
    if (h && td->source != KILN_ROWS_CSV)
        kiln_perr(c, "header", "\"header\" applies to CSV data only");
    else
        kiln_get_bool(c, d, "header", &td->data_header);
    const json_t *dl = json_object_get(d, "delimiter");
    if (dl) {
        const char *s = json_string_value(dl);
        if (td->source != KILN_ROWS_CSV)
            kiln_perr(c, "delimiter", "\"delimiter\" applies to CSV data only");
        else if (!s || strlen(s) != 1 || s[0] == '"' || s[0] == '\r' || s[0] == '\n' ||
                 (unsigned char)s[0] >= 0x80)
            kiln_perr(c, "delimiter",
                      "expected a single ASCII character other than a quote or a line break");
        else
            td->delimiter = s[0];
    }
    char why[300];
    int is_input;
    int fd = kiln_open_beneath(c->base_dir, path, why, sizeof why, &is_input);
    if (fd < 0) {
        kiln_perr_code(c, is_input ? KILN_E_INPUT : KILN_E_INVALID_SPEC, "path", "%s: %s", path,
                       why);
        goto pop;
    }
    close(fd);
    kiln_data_file *f = kiln_arena_alloc(c->arena, sizeof *f);
    const char *rel = kiln_arena_strdup(c->arena, path);
    const char *joined = kiln_arena_printf(c->arena, "%s/%s", c->base_dir, path);
    if (!f || !rel || !joined) {
        kiln_pnomem(c);
        goto pop;
    }
    f->rel_path = rel;
    f->display = rel;
    td->private_rows = f;
    td->data_path = joined;
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

static void scan_data_file(kiln_pctx *c, kiln_table_data *td)
{
    kiln_row_reader *r;
    kiln_error e;
    if (kiln_rows_open_with(c->base_dir, &c->lim, td, &r, &e) != KILN_E_OK) {
        kiln_errors_add(c->errs, &e);
        return;
    }
    const kiln_cell *cells;
    size_t count;
    int rc;
    while ((rc = kiln_rows_next(r, &cells, &count, &e)) > 0)
        ;
    if (rc < 0)
        kiln_errors_add(c->errs, &e);
    kiln_rows_close(r);
}

void kiln_parse_table_data(kiln_pctx *c, const json_t *obj, kiln_table_data *td)
{
    const json_t *cols = json_object_get(obj, "columns");
    const json_t *rows = json_object_get(obj, "rows");
    const json_t *data = json_object_get(obj, "data");
    size_t errs_before = c->errs->count;
    td->source = KILN_ROWS_INLINE;
    if (cols)
        parse_columns(c, cols, td);
    int cols_ok = c->errs->count == errs_before;
    if (rows && data) {
        kiln_perr(c, "data", "give either \"rows\" or \"data\", not both");
        return;
    }
    if (data) {
        parse_data_source(c, data, td);
        if (!td->private_rows)
            return;
        if (td->source == KILN_ROWS_CSV && td->data_header && !td->column_count) {
            char **names;
            size_t n;
            kiln_error e;
            if (kiln_csv_header(c->base_dir, td, &c->lim, c->arena, &names, &n, &e) != 0) {
                kiln_errors_add(c->errs, &e);
                return;
            }
            td->columns = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *td->columns);
            if (!td->columns) {
                kiln_pnomem(c);
                return;
            }
            for (size_t i = 0; i < n; i++) {
                td->columns[i].header = names[i];
                td->columns[i].key = names[i];
                td->columns[i].width = -1;
            }
            td->column_count = n;
        }
    }
    td->header = 0;
    for (size_t i = 0; i < td->column_count; i++)
        if (td->columns[i].header)
            td->header = 1;
    kiln_get_bool(c, obj, "header", &td->header);

    if (rows) {
        size_t saved = kiln_ptr_push(&c->ptr, "rows");
        td->pointer = kiln_ptr_dup(c, NULL);
        if (!json_is_array(rows)) {
            kiln_perr(c, NULL, "expected an array of rows");
        } else {
            size_t n = json_array_size(rows);
            uint64_t total = (uint64_t)n + (td->header ? 1 : 0);
            td->inline_row_count = n;
            td->private_rows = rows;
            if (total > c->lim.rows)
                kiln_perr_limit(c, NULL, c->lim.rows, total,
                                "%llu rows (the header row included), more than the %u a sheet "
                                "can have",
                                (unsigned long long)total, (unsigned)c->lim.rows);
            else if (cols_ok)
                validate_inline_rows(c, rows, td);
        }
        kiln_ptr_pop(&c->ptr, saved);
    } else if (!data) {
        td->pointer = kiln_ptr_dup(c, NULL);
        td->private_rows = NULL; /* no rows: the reader ends at once */
    }
    if (data && td->private_rows && c->scan_data && cols_ok)
        scan_data_file(c, td);
}

/* ---- sheets ---- */

static int name_equal_fold(const char *a, const char *b)
{
    /* ASCII case folding; Excel also folds other scripts, which this does not. */
    return strcasecmp(a, b) == 0;
}

/* First pass: every sheet's name, so chart ranges may name a later sheet. */
static void collect_sheet_names(kiln_pctx *c, const json_t *sheets)
{
    size_t n = json_array_size(sheets);
    c->sheet_names = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *c->sheet_names);
    if (!c->sheet_names) {
        kiln_pnomem(c);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(sheets, i);
        const json_t *nm = json_is_object(s) ? json_object_get(s, "name") : NULL;
        if (!json_is_string(nm))
            continue;
        size_t saved = kiln_ptr_push_index(&c->ptr, i);
        const char *name = json_string_value(nm);
        const char *problem = kiln_sheet_name_problem(name, json_string_length(nm));
        if (problem) {
            kiln_perr(c, "name", "%s", problem);
        } else {
            for (size_t j = 0; j < c->sheet_name_count && name; j++)
                if (c->sheet_names[j] && name_equal_fold(c->sheet_names[j], name)) {
                    kiln_perr(c, "name", "another sheet is already named \"%s\" (names are "
                                         "compared ignoring case)",
                              c->sheet_names[j]);
                    name = NULL;
                }
        }
        c->sheet_names[i] = problem ? NULL : name;
        kiln_ptr_pop(&c->ptr, saved);
    }
    c->sheet_name_count = n;
    /* Unnamed sheets take SheetN, skipping numbers an explicit name took. */
    unsigned next = 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(sheets, i);
        const json_t *nm = json_is_object(s) ? json_object_get(s, "name") : NULL;
        if (nm)
            continue;
        for (;; next++) {
            char buf[32];
            snprintf(buf, sizeof buf, "Sheet%u", next);
            int taken = 0;
            for (size_t j = 0; j < n && !taken; j++)
                taken = c->sheet_names[j] && name_equal_fold(c->sheet_names[j], buf);
            if (!taken) {
                c->sheet_names[i] = kiln_arena_strdup(c->arena, buf);
                if (!c->sheet_names[i])
                    kiln_pnomem(c);
                next++;
                break;
            }
        }
    }
}

static int ref_member(kiln_pctx *c, const json_t *obj, const char *key, uint32_t *row,
                      uint32_t *col, int required)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            kiln_perr(c, NULL, "missing \"%s\": a cell reference such as \"B2\"", key);
        return -1;
    }
    if (!json_is_string(v) || kiln_cell_ref_parse(json_string_value(v), row, col) != 0) {
        kiln_perr(c, key, "expected a cell reference such as \"B2\"");
        return -1;
    }
    return 0;
}

static int range_member(kiln_pctx *c, const json_t *obj, const char *key, kiln_range *r)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        kiln_perr(c, NULL, "missing \"%s\": a range such as \"A1:D10\"", key);
        return -1;
    }
    if (!json_is_string(v) || kiln_range_parse(json_string_value(v), r) != 0) {
        kiln_perr(c, key, "expected a range such as \"A1:D10\"");
        return -1;
    }
    return 0;
}

/* Iterate an optional array member: returns its size, 0 when absent or not
 * an array (reported). */
static size_t array_member(kiln_pctx *c, const json_t *obj, const char *key, const json_t **arr)
{
    *arr = json_object_get(obj, key);
    if (!*arr)
        return 0;
    if (!json_is_array(*arr)) {
        kiln_perr(c, key, "expected an array");
        *arr = NULL;
        return 0;
    }
    return json_array_size(*arr);
}

static void parse_merges(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const allowed[] = {"range", "value", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "merges", &arr);
    if (!n)
        return;
    sh->merges = kiln_arena_calloc(c->arena, n, sizeof *sh->merges);
    if (!sh->merges)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "merges");
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(arr, i);
        size_t s2 = kiln_ptr_push_index(&c->ptr, i);
        if (!json_is_object(m)) {
            kiln_perr(c, NULL, "expected {\"range\": \"A1:D1\", \"value\": ...}");
            goto next;
        }
        kiln_check_members(c, m, allowed);
        kiln_merge *mg = &sh->merges[sh->merge_count];
        if (range_member(c, m, "range", &mg->range) != 0)
            goto next;
        const json_t *v = json_object_get(m, "value");
        if (v) {
            kiln_style *st = kiln_arena_alloc(c->arena, sizeof *st);
            kiln_error e;
            if (!st) {
                kiln_pnomem(c);
                goto next;
            }
            if (kiln_cell_from_json(v, KILN_COL_AUTO, &c->lim, &mg->value, st, &e) != 0) {
                kiln_ptr_push(&c->ptr, "value");
                kiln_perr_rel(c, &e);
                goto next;
            }
        }
        for (size_t j = 0; j < sh->merge_count; j++) {
            const kiln_range *a = &sh->merges[j].range, *b = &mg->range;
            if (a->first_row <= b->last_row && b->first_row <= a->last_row &&
                a->first_col <= b->last_col && b->first_col <= a->last_col) {
                kiln_perr(c, "range", "overlaps merge %zu (ranges merged must not overlap)", j);
                goto next;
            }
        }
        sh->merge_count++;
    next:
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_cond_formats(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const types[] = {"cell", "color_scale", "data_bar", NULL};
    static const char *const crit[] = {"==", "!=", ">", ">=", "<", "<=", "between",
                                       "not_between", NULL};
    static const char *const cell_allowed[] = {"range", "type", "criteria", "value", "maximum",
                                               "style", NULL};
    static const char *const scale_allowed[] = {"range", "type", "colors", NULL};
    static const char *const bar_allowed[] = {"range", "type", "color", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "conditional_formats", &arr);
    if (!n)
        return;
    sh->cond_formats = kiln_arena_calloc(c->arena, n, sizeof *sh->cond_formats);
    if (!sh->cond_formats)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "conditional_formats");
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(arr, i);
        kiln_cond_format *cf = &sh->cond_formats[sh->cond_format_count];
        size_t s2 = kiln_ptr_push_index(&c->ptr, i), before = c->errs->count;
        int type = -1;
        if (!json_is_object(f)) {
            kiln_perr(c, NULL, "expected a conditional format object");
            goto next;
        }
        kiln_get_enum(c, f, "type", types, &type);
        if (type < 0) {
            if (!json_object_get(f, "type"))
                kiln_perr(c, NULL, "missing \"type\": \"cell\", \"color_scale\" or \"data_bar\"");
            goto next;
        }
        cf->type = (kiln_cf_type)type;
        kiln_check_members(c, f, type == 0 ? cell_allowed : type == 1 ? scale_allowed
                                                                      : bar_allowed);
        range_member(c, f, "range", &cf->range);
        if (type == 0) {
            int cr = -1;
            kiln_get_enum(c, f, "criteria", crit, &cr);
            if (cr < 0 && !json_object_get(f, "criteria"))
                kiln_perr(c, NULL, "missing \"criteria\"");
            cf->criteria = (kiln_criteria)(cr < 0 ? 0 : cr);
            if (!json_object_get(f, "value"))
                kiln_perr(c, NULL, "missing \"value\"");
            kiln_get_number(c, f, "value", -1e308, 1e308, &cf->value);
            int between = cr == KILN_CRIT_BETWEEN || cr == KILN_CRIT_NOT_BETWEEN;
            if (between && !json_object_get(f, "maximum"))
                kiln_perr(c, NULL, "\"between\" and \"not_between\" need \"maximum\"");
            else if (!between && cr >= 0 && json_object_get(f, "maximum"))
                kiln_perr(c, "maximum", "\"maximum\" belongs to \"between\" and "
                                        "\"not_between\"");
            kiln_get_number(c, f, "maximum", -1e308, 1e308, &cf->maximum);
            const json_t *st = json_object_get(f, "style");
            memset(&cf->style, 0, sizeof cf->style);
            cf->style.color = cf->style.fill = KILN_COLOR_NONE;
            if (st) {
                kiln_error e;
                if (kiln_style_from_json(st, &cf->style, &e) != 0) {
                    size_t s3 = kiln_ptr_push(&c->ptr, "style");
                    kiln_perr_rel(c, &e);
                    kiln_ptr_pop(&c->ptr, s3);
                }
            }
        } else if (type == 1) {
            const json_t *cols = json_object_get(f, "colors");
            size_t k = json_is_array(cols) ? json_array_size(cols) : 0;
            if (k < 2 || k > 3) {
                kiln_perr(c, cols ? "colors" : NULL, "expected \"colors\": 2 or 3 colors");
            } else {
                for (size_t j = 0; j < k; j++) {
                    const json_t *e = json_array_get(cols, j);
                    int32_t col = json_is_string(e) ? kiln_color_parse(json_string_value(e)) : -1;
                    if (col < 0) {
                        size_t s3 = kiln_ptr_push(&c->ptr, "colors");
                        kiln_ptr_push_index(&c->ptr, j);
                        kiln_perr(c, NULL, "expected a color \"#RRGGBB\"");
                        kiln_ptr_pop(&c->ptr, s3);
                    }
                    cf->colors[j] = col;
                }
                cf->color_count = (int)k;
            }
        } else {
            cf->colors[0] = 0x638EC6; /* Excel's default data bar blue */
            cf->color_count = 1;
            kiln_get_color(c, f, "color", &cf->colors[0]);
        }
    next:
        if (c->errs->count == before)
            sh->cond_format_count++;
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_validations(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const allowed[] = {"range", "type", "values", "message", NULL};
    static const char *const types[] = {"list", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "validations", &arr);
    if (!n)
        return;
    sh->validations = kiln_arena_calloc(c->arena, n, sizeof *sh->validations);
    if (!sh->validations)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "validations");
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, i);
        kiln_validation *va = &sh->validations[sh->validation_count];
        size_t s2 = kiln_ptr_push_index(&c->ptr, i), before = c->errs->count;
        if (!json_is_object(v)) {
            kiln_perr(c, NULL, "expected a validation object");
            goto next;
        }
        kiln_check_members(c, v, allowed);
        int t = 0;
        kiln_get_enum(c, v, "type", types, &t);
        range_member(c, v, "range", &va->range);
        kiln_get_string(c, v, "message", &va->message);
        const json_t *vals = json_object_get(v, "values");
        size_t k = json_is_array(vals) ? json_array_size(vals) : 0;
        if (!k) {
            kiln_perr(c, vals ? "values" : NULL, "expected \"values\": a non-empty array of "
                                                 "strings");
            goto next;
        }
        va->values = kiln_arena_calloc(c->arena, k, sizeof *va->values);
        if (!va->values) {
            kiln_pnomem(c);
            goto next;
        }
        size_t total = k - 1; /* the commas Excel joins them with */
        for (size_t j = 0; j < k; j++) {
            const json_t *e = json_array_get(vals, j);
            if (!json_is_string(e) || !json_string_length(e)) {
                size_t s3 = kiln_ptr_push(&c->ptr, "values");
                kiln_ptr_push_index(&c->ptr, j);
                kiln_perr(c, NULL, "expected a non-empty string");
                kiln_ptr_pop(&c->ptr, s3);
                continue;
            }
            va->values[j] = json_string_value(e);
            total += kiln_utf8_count(json_string_value(e), json_string_length(e));
        }
        va->value_count = k;
        if (total > 255)
            kiln_perr_limit(c, "values", 255, total,
                            "the values take %zu characters joined with commas; Excel allows "
                            "255",
                            total);
    next:
        if (c->errs->count == before)
            sh->validation_count++;
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_sheet_charts(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const extra[] = {"anchor", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "charts", &arr);
    if (!n)
        return;
    sh->charts = kiln_arena_calloc(c->arena, n, sizeof *sh->charts);
    if (!sh->charts)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "charts");
    for (size_t i = 0; i < n; i++) {
        size_t s2 = kiln_ptr_push_index(&c->ptr, i);
        kiln_parse_chart(c, json_array_get(arr, i), &sh->charts[i], KILN_IN_SHEET, extra);
        kiln_ptr_pop(&c->ptr, s2);
    }
    sh->chart_count = n;
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_sheet_images(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const allowed[] = {"image", "anchor", "scale", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "images", &arr);
    if (!n)
        return;
    sh->images = kiln_arena_calloc(c->arena, n, sizeof *sh->images);
    if (!sh->images)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "images");
    for (size_t i = 0; i < n; i++) {
        const json_t *im = json_array_get(arr, i);
        size_t s2 = kiln_ptr_push_index(&c->ptr, i);
        kiln_sheet_image *si = &sh->images[sh->image_count];
        if (!json_is_object(im)) {
            kiln_perr(c, NULL, "expected {\"image\": ..., \"anchor\": \"F2\"}");
            goto next;
        }
        kiln_check_members(c, im, allowed);
        si->scale = 1;
        kiln_get_number(c, im, "scale", 0.01, 100, &si->scale);
        int ok = ref_member(c, im, "anchor", &si->row, &si->col, 1) == 0;
        const json_t *img = json_object_get(im, "image");
        if (!img) {
            kiln_perr(c, NULL, "missing \"image\"");
            goto next;
        }
        size_t s3 = kiln_ptr_push(&c->ptr, "image");
        si->image = kiln_parse_image(c, img);
        kiln_ptr_pop(&c->ptr, s3);
        if (si->image && ok)
            sh->image_count++;
    next:
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_comments(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const allowed[] = {"cell", "text", "author", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "comments", &arr);
    if (!n)
        return;
    sh->comments = kiln_arena_calloc(c->arena, n, sizeof *sh->comments);
    if (!sh->comments)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "comments");
    for (size_t i = 0; i < n; i++) {
        const json_t *cm = json_array_get(arr, i);
        size_t s2 = kiln_ptr_push_index(&c->ptr, i), before = c->errs->count;
        kiln_comment *k = &sh->comments[sh->comment_count];
        if (!json_is_object(cm)) {
            kiln_perr(c, NULL, "expected {\"cell\": \"B2\", \"text\": ...}");
            goto next;
        }
        kiln_check_members(c, cm, allowed);
        ref_member(c, cm, "cell", &k->row, &k->col, 1);
        kiln_get_string(c, cm, "author", &k->author);
        if (kiln_get_string(c, cm, "text", &k->text) == 0 && !k->text)
            kiln_perr(c, NULL, "missing \"text\"");
    next:
        if (c->errs->count == before)
            sh->comment_count++;
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

/* Excel table names: a letter, '_' or '\' first, then letters, digits, '_'
 * and '.'; at most 255 characters; not something that reads as a cell. */
static int table_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255)
        return 0;
    unsigned char f = (unsigned char)s[0];
    if (!(f >= 0x80 || (f >= 'A' && f <= 'Z') || (f >= 'a' && f <= 'z') || f == '_' || f == '\\'))
        return 0;
    for (size_t i = 1; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!(ch >= 0x80 || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '\\'))
            return 0;
    }
    uint32_t r, col;
    if (kiln_cell_ref_parse(s, &r, &col) == 0)
        return 0;
    if (strcasecmp(s, "R") == 0 || strcasecmp(s, "C") == 0)
        return 0;
    return 1;
}

static void parse_sheet_table(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const allowed[] = {"name", "style", "total_row", NULL};
    const json_t *t = json_object_get(sheet, "table");
    if (!t)
        return;
    if (json_is_boolean(t)) {
        sh->table = json_is_true(t);
        return;
    }
    size_t saved = kiln_ptr_push(&c->ptr, "table");
    if (!json_is_object(t)) {
        kiln_perr(c, NULL, "expected true, false or {\"name\": ..., \"style\": ..., "
                           "\"total_row\": ...}");
        goto pop;
    }
    kiln_check_members(c, t, allowed);
    sh->table = 1;
    kiln_get_string(c, t, "name", &sh->table_name);
    if (sh->table_name && !table_name_ok(sh->table_name))
        kiln_perr(c, "name", "a table name starts with a letter or '_', holds only letters, "
                             "digits, '_' and '.', and does not read as a cell reference");
    kiln_get_string(c, t, "style", &sh->table_style);
    if (sh->table_style && !*sh->table_style)
        kiln_perr(c, "style", "expected a table style name such as \"Table Style Medium 2\"");
    kiln_get_bool(c, t, "total_row", &sh->table_total_row);
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_sheet(kiln_pctx *c, const json_t *s, kiln_sheet *sh, size_t index)
{
    static const char *const allowed[] = {
        "name",   "columns", "rows",     "data",                "header",
        "freeze", "autofilter", "table", "merges", "conditional_formats",
        "validations", "charts", "images", "comments",          "tab_color", NULL};
    static const char *const freeze_allowed[] = {"rows", "columns", NULL};
    sh->name = c->sheet_names ? c->sheet_names[index] : NULL;
    sh->tab_color = KILN_COLOR_NONE;
    sh->pointer = kiln_ptr_dup(c, NULL);
    c->cur_sheet = sh->name;
    if (!json_is_object(s)) {
        kiln_perr(c, NULL, "expected a sheet object");
        return;
    }
    kiln_check_members(c, s, allowed);
    const json_t *nm = json_object_get(s, "name");
    if (nm && !json_is_string(nm))
        kiln_perr(c, "name", "expected a string");
    kiln_parse_table_data(c, s, &sh->data);
    const json_t *fr = json_object_get(s, "freeze");
    if (fr) {
        size_t saved = kiln_ptr_push(&c->ptr, "freeze");
        if (!json_is_object(fr)) {
            kiln_perr(c, NULL, "expected {\"rows\": N, \"columns\": M}");
        } else {
            kiln_check_members(c, fr, freeze_allowed);
            int64_t r = 0, k = 0;
            kiln_get_int(c, fr, "rows", 0, c->lim.rows - 1, &r);
            kiln_get_int(c, fr, "columns", 0, c->lim.columns - 1, &k);
            sh->freeze_rows = (uint32_t)r;
            sh->freeze_cols = (uint32_t)k;
        }
        kiln_ptr_pop(&c->ptr, saved);
    }
    kiln_get_bool(c, s, "autofilter", &sh->autofilter);
    parse_sheet_table(c, s, sh);
    if (sh->table && sh->autofilter)
        kiln_perr(c, "autofilter", "\"autofilter\" and \"table\" exclude each other (a table "
                                   "has its own filter buttons)");
    parse_merges(c, s, sh);
    parse_cond_formats(c, s, sh);
    parse_validations(c, s, sh);
    parse_sheet_charts(c, s, sh);
    parse_sheet_images(c, s, sh);
    parse_comments(c, s, sh);
    kiln_get_color(c, s, "tab_color", &sh->tab_color);
}

static void parse_sheets(kiln_pctx *c, const json_t *arr)
{
    size_t saved = kiln_ptr_push(&c->ptr, "sheets");
    if (!json_is_array(arr)) {
        kiln_perr(c, NULL, "expected an array of sheets");
        goto pop;
    }
    size_t n = json_array_size(arr);
    if (n > c->lim.sheets) {
        kiln_perr_limit(c, NULL, c->lim.sheets, n, "%zu sheets, more than the %u allowed", n,
                        (unsigned)c->lim.sheets);
        goto pop;
    }
    collect_sheet_names(c, arr);
    c->doc->sheets = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *c->doc->sheets);
    if (!c->doc->sheets) {
        kiln_pnomem(c);
        goto pop;
    }
    c->doc->sheet_count = n;
    for (size_t i = 0; i < n && !c->nomem; i++) {
        size_t s2 = kiln_ptr_push_index(&c->ptr, i);
        parse_sheet(c, json_array_get(arr, i), &c->doc->sheets[i], i);
        kiln_ptr_pop(&c->ptr, s2);
    }
    c->cur_sheet = NULL;
    /* Excel table names are unique in a workbook. */
    for (size_t i = 0; i < n; i++) {
        const char *a = c->doc->sheets[i].table_name;
        for (size_t j = 0; a && j < i; j++) {
            const char *b = c->doc->sheets[j].table_name;
            if (b && strcasecmp(a, b) == 0) {
                kiln_ptr_push_index(&c->ptr, i);
                kiln_ptr_push(&c->ptr, "table");
                kiln_perr(c, "name", "another sheet's table is already named \"%s\"", b);
                kiln_ptr_pop(&c->ptr, saved + strlen("/sheets"));
                break;
            }
        }
    }
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
        parse_sheets(c, sheets);
    if (blocks && !c->nomem)
        kiln_parse_blocks(c, blocks);
    if (slides && !c->nomem)
        kiln_parse_slides(c, slides);
    if (json_array_size(sheets) == 0 && json_array_size(blocks) == 0 &&
        json_array_size(slides) == 0)
        kiln_perr(c, NULL, "a spec needs at least one of \"sheets\", \"blocks\", \"slides\", "
                           "non-empty");
}

void kiln_doc_free(kiln_doc *doc)
{
    if (!doc)
        return;
    struct kiln_doc_private *p = doc->priv;
    json_decref(p->root);
    json_decref(p->keepalive);
    kiln_arena_release(&p->arena); /* doc itself lives in the arena */
    free(p);
}

static kiln_status first_code(const kiln_errors *errs)
{
    return errs->count ? errs->items[0].code : KILN_E_INTERNAL;
}

kiln_status kiln_doc_parse(const char *json, size_t len, const kiln_parse_options *opt,
                           kiln_doc **out, kiln_errors *errs)
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
    if (len > lim->spec_bytes) {
        kiln_error e;
        kiln_error_limit(&e, KILN_E_LIMIT, "", lim->spec_bytes, len,
                         "the spec is %zu bytes, more than the %llu allowed", len,
                         (unsigned long long)lim->spec_bytes);
        kiln_errors_add(errs, &e);
        return KILN_E_LIMIT;
    }

    struct kiln_doc_private *priv = calloc(1, sizeof *priv);
    if (!priv) {
        kiln_errors_addf(errs, KILN_E_NOMEM, "", "out of memory");
        return KILN_E_NOMEM;
    }
    priv->limits = *lim;
    /* The model is at most a small multiple of the spec; the ceiling only
     * stops a runaway. */
    kiln_arena_init(&priv->arena, 0);
    kiln_doc *doc = kiln_arena_alloc(&priv->arena, sizeof *doc);
    priv->keepalive = json_array();
    if (!doc || !priv->keepalive) {
        kiln_errors_addf(errs, KILN_E_NOMEM, "", "out of memory");
        goto free_priv;
    }
    doc->priv = priv;

    json_error_t je;
    priv->root = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!priv->root) {
        int depth = strstr(je.text, "depth") != NULL;
        kiln_error e;
        kiln_error_limit(&e, depth ? KILN_E_LIMIT : KILN_E_INVALID_SPEC, "",
                         depth ? lim->json_depth : 0, 0,
                         "not valid JSON at line %d, column %d: %s", je.line, je.column, je.text);
        kiln_errors_add(errs, &e);
        goto free_priv;
    }
    uint64_t string_bytes = 0;
    kiln_json_scan(priv->root, "", lim, &string_bytes, errs, NULL);

    kiln_pctx *c = calloc(1, sizeof *c);
    if (!c) {
        kiln_errors_addf(errs, KILN_E_NOMEM, "", "out of memory");
        goto free_priv;
    }
    c->doc = doc;
    c->arena = &priv->arena;
    c->lim = *lim;
    c->errs = errs;
    c->scan_data = opt->scan_data_files;
    c->keepalive = priv->keepalive;
    c->base_dir = kiln_arena_strdup(&priv->arena, opt->base_dir ? opt->base_dir : ".");
    doc->base_dir = c->base_dir;
    if (!c->base_dir)
        kiln_pnomem(c);
    theme_defaults(c);
    page_defaults(&doc->page);
    if (!c->nomem)
        parse_root(c, priv->root);
    free(c);
    if (errs->count || errs->dropped)
        goto free_priv;
    *out = doc;
    return KILN_E_OK;

free_priv:
    json_decref(priv->root);
    json_decref(priv->keepalive);
    kiln_arena_release(&priv->arena);
    free(priv);
    return first_code(errs);
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
