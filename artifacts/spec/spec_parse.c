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
 * This file is the top of the parser (metadata, theme, page, the document's
 * life cycle); parse_sheet.c holds sheets, parse_content.c blocks, slides
 * and text, with parse_table_data.c, parse_chart.c and parse_image.c under
 * both, and parse_state.c the helpers they all use (spec_internal.h gives
 * the layers).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/templates.h"
#include "markdown.h"
#include "spec_internal.h"
#include "../../common/banned.h"

void kiln_parse_options_init(kiln_parse_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->limits = kiln_limits_default();
}

/* ---- metadata, theme, page ---- */

static void parse_metadata(kiln_pctx *c, const json_t *m)
{
    static const char *const allowed[] = {"title",       "author",  "subject",
                                          "description", "company", "category",
                                          "keywords",    "created", NULL};
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
        if (!json_is_string(cr) || kiln_iso_parse_zone(json_string_value(cr), &y, &mo, &d, &h,
                                                       &mi, &sec, &has_time, &zone) != 0) {
            kiln_perr(c, "created",
                      "expected an ISO 8601 date or date-time such as \"2026-03-01\" or "
                      "\"2026-03-01T09:30:00Z\"");
        } else {
            /* A point in time, unlike a cell's date-time: a zone offset is
             * applied to reach UTC (09:00+05:00 is 04:00Z); without a zone
             * the time is taken as UTC. */
            md->has_created = 1;
            md->created = kiln_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 +
                          mi * 60 + (int64_t)sec - (int64_t)zone * 60;
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
    static const char *const allowed[] = {
        "font",          "heading_font", "mono_font",         "font_size",
        "accent_colors", "header_fill",  "header_font_color", NULL};
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
        [KILN_PAGE_A4] = {595.28, 841.89}, [KILN_PAGE_LETTER] = {612, 792},
        [KILN_PAGE_LEGAL] = {612, 1008},   [KILN_PAGE_A3] = {841.89, 1190.55},
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
    static const char *const allowed[] = {"version", "metadata", "theme",  "page",
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
        kiln_perr(c, NULL,
                  "a spec needs at least one of \"sheets\", \"blocks\", \"slides\", "
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
static int check_size(size_t len, const json_t *tree, const kiln_limits *lim, kiln_errors *errs)
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
        kiln_perr_syntax(c, &se);
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
            root = kiln_pload_tree(c, tree, root_holes, "");
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

kiln_status kiln_doc_parse_json(const json_t *spec, const kiln_parse_options *opt, kiln_doc **out,
                                kiln_errors *errs)
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
                         "the spec is more than the %llu bytes allowed", (unsigned long long)max);
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
