/*
 * parse_content.c - the report and deck side of the spec: blocks, lists,
 * runs, slides (with the table data, charts and images they share with
 * sheets in parse_table_data.c, parse_chart.c and parse_image.c).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "markdown.h"
#include "spec_internal.h"
#include "../../common/banned.h"

/* ---- text and runs ---- */

static int url_ok(const char *u)
{
    static const char *const schemes[] = {"http://", "https://", "mailto:", "ftp://", NULL};
    for (int i = 0; schemes[i]; i++) {
        size_t n = strlen(schemes[i]);
        if (strncasecmp(u, schemes[i], n) == 0 && u[n])
            return 1;
    }
    return 0;
}

static void parse_run(kiln_pctx *c, const json_t *r, kiln_run *run)
{
    static const char *const allowed[] = {"text",   "bold",        "italic",    "underline",
                                          "strike", "superscript", "subscript", "code",
                                          "color",  "size",        "font",      "link",
                                          NULL};
    static const struct {
        const char *name;
        unsigned flag;
    } flags[] = {{"bold", KILN_RUN_BOLD},
                 {"italic", KILN_RUN_ITALIC},
                 {"underline", KILN_RUN_UNDERLINE},
                 {"strike", KILN_RUN_STRIKE},
                 {"superscript", KILN_RUN_SUPERSCRIPT},
                 {"subscript", KILN_RUN_SUBSCRIPT},
                 {"code", KILN_RUN_CODE}};
    run->color = KILN_COLOR_NONE;
    if (!json_is_object(r)) {
        kiln_perr(c, NULL, "expected a run object {\"text\": ...}");
        return;
    }
    kiln_check_members(c, r, allowed);
    const json_t *t = json_object_get(r, "text");
    if (!json_is_string(t))
        kiln_perr(c, t ? "text" : NULL, t ? "expected a string" : "missing \"text\"");
    else {
        run->text = kiln_pstrdup(c, t);
        run->len = json_string_length(t);
    }
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        int b = 0;
        kiln_get_bool(c, r, flags[i].name, &b);
        if (b)
            run->flags |= flags[i].flag;
    }
    if ((run->flags & KILN_RUN_SUPERSCRIPT) && (run->flags & KILN_RUN_SUBSCRIPT))
        kiln_perr(c, "subscript", "\"superscript\" and \"subscript\" exclude each other");
    kiln_get_color(c, r, "color", &run->color);
    kiln_get_number(c, r, "size", 1, 409, &run->size);
    kiln_get_string(c, r, "font", &run->font);
    kiln_get_string(c, r, "link", &run->link);
    if (run->link && !url_ok(run->link)) {
        kiln_perr(c, "link",
                  "expected a URL starting with http://, https://, mailto: or "
                  "ftp://");
        run->link = NULL;
    }
}

static int text_run(kiln_pctx *c, const json_t *s, kiln_text *out)
{
    out->runs = kiln_arena_calloc(c->arena, 1, sizeof *out->runs);
    if (!out->runs) {
        kiln_pnomem(c);
        return -1;
    }
    out->runs[0].text = kiln_pstrdup(c, s);
    out->runs[0].len = json_string_length(s);
    if (!out->runs[0].text)
        return -1;
    out->runs[0].color = KILN_COLOR_NONE;
    out->run_count = 1;
    return 0;
}

int kiln_parse_text(kiln_pctx *c, const json_t *obj, kiln_text *out, int required)
{
    const json_t *t = json_object_get(obj, "text");
    const json_t *runs = json_object_get(obj, "runs");
    if (t && runs) {
        kiln_perr(c, "runs", "give either \"text\" or \"runs\", not both");
        return -1;
    }
    if (t) {
        if (!json_is_string(t)) {
            kiln_perr(c, "text", "expected a string");
            return -1;
        }
        return text_run(c, t, out);
    }
    if (runs) {
        size_t saved = kiln_ptr_push(&c->ptr, "runs");
        size_t n = json_is_array(runs) ? json_array_size(runs) : 0;
        if (!n) {
            kiln_perr(c, NULL,
                      json_is_array(runs) ? "expected at least one run"
                                          : "expected an array of runs");
            kiln_ptr_pop(&c->ptr, saved);
            return -1;
        }
        out->runs = kiln_arena_calloc(c->arena, n, sizeof *out->runs);
        if (!out->runs) {
            kiln_pnomem(c);
            kiln_ptr_pop(&c->ptr, saved);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            size_t s2 = kiln_ptr_push_index(&c->ptr, i);
            parse_run(c, json_array_get(runs, i), &out->runs[i]);
            kiln_ptr_pop(&c->ptr, s2);
        }
        out->run_count = n;
        kiln_ptr_pop(&c->ptr, saved);
        return 0;
    }
    if (required) {
        kiln_perr(c, NULL, "missing \"text\" or \"runs\"");
        return -1;
    }
    return 0;
}

/* ---- lists ---- */

static void parse_list(kiln_pctx *c, const json_t *v, const char *const *members, kiln_list *list,
                       uint32_t depth);

/* The items of a list, at nesting depth (the top level is 1). */
static void parse_list_items(kiln_pctx *c, const json_t *arr, kiln_list *list, uint32_t depth)
{
    static const char *const allowed[] = {"text", "runs", "items", NULL};
    static const char *const nested_m[] = {"ordered", "start", "items", NULL};
    if (!json_is_array(arr)) {
        kiln_perr(c, NULL, "expected an array of list items");
        return;
    }
    if (depth > c->lim.list_depth) {
        kiln_perr_limit(c, NULL, c->lim.list_depth, depth,
                        "lists nested %u levels deep; at most %u are allowed", (unsigned)depth,
                        (unsigned)c->lim.list_depth);
        return;
    }
    size_t n = json_array_size(arr);
    if (n == 0) {
        kiln_perr(c, NULL, "expected at least one list item (an empty list would show nothing)");
        return;
    }
    list->items = kiln_arena_calloc(c->arena, n, sizeof *list->items);
    if (!list->items) {
        kiln_pnomem(c);
        return;
    }
    list->item_count = n;
    for (size_t i = 0; i < n && !c->nomem; i++) {
        const json_t *it = json_array_get(arr, i);
        kiln_list_item *li = &list->items[i];
        size_t saved = kiln_ptr_push_index(&c->ptr, i);
        if (json_is_string(it)) {
            text_run(c, it, &li->text);
        } else if (json_is_object(it)) {
            kiln_check_members(c, it, allowed);
            kiln_parse_text(c, it, &li->text, 1);
            const json_t *sub = json_object_get(it, "items");
            if (sub) {
                li->children = kiln_arena_calloc(c->arena, 1, sizeof *li->children);
                if (!li->children) {
                    kiln_pnomem(c);
                } else {
                    /* A nested list numbers as its parent does and counts
                     * from 1, unless it says otherwise for itself. */
                    li->children->ordered = list->ordered;
                    li->children->start = 1;
                    size_t s2 = kiln_ptr_push(&c->ptr, "items");
                    parse_list(c, sub, nested_m, li->children, depth + 1);
                    kiln_ptr_pop(&c->ptr, s2);
                }
            }
        } else {
            kiln_perr(c, NULL,
                      "expected a list item: a string or {\"text\": ..., \"items\": "
                      "[...]}");
        }
        kiln_ptr_pop(&c->ptr, saved);
    }
}

/*
 * A list: an array of items, or an object saying how the list numbers,
 * {"ordered": true, "start": N, "items": [...]}, whose members are members
 * (a list block's also include "type"). list->ordered and list->start hold
 * the defaults on entry.
 */
static void parse_list(kiln_pctx *c, const json_t *v, const char *const *members, kiln_list *list,
                       uint32_t depth)
{
    if (json_is_array(v)) {
        parse_list_items(c, v, list, depth);
        return;
    }
    if (!json_is_object(v)) {
        kiln_perr(c, NULL,
                  "expected an array of list items, or a list {\"ordered\": ..., "
                  "\"items\": [...]}");
        return;
    }
    kiln_check_members(c, v, members);
    kiln_get_bool(c, v, "ordered", &list->ordered);
    int64_t start = list->start;
    kiln_get_int(c, v, "start", 0, 2147483647, &start);
    list->start = (int)start;
    const json_t *items = json_object_get(v, "items");
    if (!items) {
        kiln_perr(c, NULL, "missing \"items\"");
        return;
    }
    size_t saved = kiln_ptr_push(&c->ptr, "items");
    parse_list_items(c, items, list, depth);
    kiln_ptr_pop(&c->ptr, saved);
}

/* ---- tables (blocks and slides) ---- */

static kiln_table *parse_table(kiln_pctx *c, const json_t *obj)
{
    kiln_table *t = kiln_arena_alloc(c->arena, sizeof *t);
    if (!t) {
        kiln_pnomem(c);
        return NULL;
    }
    kiln_parse_table_data(c, obj, &t->data);
    kiln_get_string(c, obj, "caption", &t->caption);
    if (kiln_get_string(c, obj, "name", &t->name) == 0 && t->name) {
        /* The name becomes a sheet name in xlsx, so it follows those rules. */
        const char *problem = kiln_sheet_name_problem(t->name, strlen(t->name));
        if (problem)
            kiln_perr(c, "name", "%s", problem);
    }
    return t;
}

/* ---- blocks ---- */

typedef struct block_vec {
    kiln_block *items;
    size_t count, cap;
} block_vec;

static kiln_block *vec_push(kiln_pctx *c, block_vec *v, size_t more)
{
    if (v->count + more > v->cap) {
        size_t cap = v->cap ? v->cap : 16;
        while (cap < v->count + more)
            cap *= 2;
        kiln_block *n = kiln_arena_calloc(c->arena, cap, sizeof *n);
        if (!n) {
            kiln_pnomem(c);
            return NULL;
        }
        if (v->count)
            memcpy(n, v->items, v->count * sizeof *n);
        v->items = n;
        v->cap = cap;
    }
    kiln_block *b = &v->items[v->count];
    v->count += more;
    return b;
}

static const char *const block_types[] = {"heading", "paragraph",  "list", "table", "image",
                                          "chart",   "page_break", "toc",  "code",  "quote",
                                          "rule",    "markdown",   NULL};

static void parse_block(kiln_pctx *c, const json_t *b, block_vec *vec)
{
    static const char *const heading_m[] = {"type", "level", "text", "runs", NULL};
    static const char *const para_m[] = {"type", "text", "runs", "align", NULL};
    static const char *const list_m[] = {"type", "ordered", "start", "items", NULL};
    static const char *const table_m[] = {"type",    "columns", "rows", "data",
                                          "caption", "header",  "name", NULL};
    static const char *const image_m[] = {"type", "image", "caption", "width", NULL};
    static const char *const chart_extra[] = {"type", "caption", NULL};
    static const char *const bare_m[] = {"type", NULL};
    static const char *const toc_m[] = {"type", "title", "levels", NULL};
    static const char *const code_m[] = {"type", "text", "language", NULL};
    static const char *const quote_m[] = {"type", "text", "runs", "attribution", NULL};
    static const char *const md_m[] = {"type", "text", NULL};
    static const char *const aligns[] = {"left", "center", "right", "justify", NULL};

    if (!json_is_object(b)) {
        kiln_perr(c, NULL, "expected a block object with a \"type\"");
        return;
    }
    int type = -1;
    if (kiln_get_enum(c, b, "type", block_types, &type) != 0)
        return;
    if (type < 0) {
        kiln_perr(c, NULL, "missing \"type\"");
        return;
    }
    if (type == 11) { /* markdown */
        kiln_check_members(c, b, md_m);
        const json_t *t = json_object_get(b, "text");
        if (!json_is_string(t)) {
            kiln_perr(c, t ? "text" : NULL, t ? "expected a string" : "missing \"text\"");
            return;
        }
        kiln_block *blocks = NULL;
        size_t n = 0;
        kiln_error e;
        const char *ptr = kiln_ptr_dup(c, NULL);
        if (!ptr)
            return;
        if (kiln_markdown_to_blocks(c->arena, json_string_value(t), json_string_length(t), ptr,
                                    &c->lim, &blocks, &n, &e) != KILN_E_OK) {
            if (!e.pointer[0])
                snprintf(e.pointer, sizeof e.pointer, "%s/text", ptr);
            kiln_errors_add(c->errs, &e);
            return;
        }
        kiln_block *dst = n ? vec_push(c, vec, n) : NULL;
        if (dst)
            memcpy(dst, blocks, n * sizeof *dst);
        return;
    }
    kiln_block *bl = vec_push(c, vec, 1);
    if (!bl)
        return;
    bl->pointer = kiln_ptr_dup(c, NULL);
    switch (type) {
    case 0: {
        bl->kind = KILN_BLOCK_HEADING;
        kiln_check_members(c, b, heading_m);
        int64_t lv = 1;
        kiln_get_int(c, b, "level", 1, 6, &lv);
        bl->level = (int)lv;
        kiln_parse_text(c, b, &bl->text, 1);
        break;
    }
    case 1: {
        bl->kind = KILN_BLOCK_PARAGRAPH;
        kiln_check_members(c, b, para_m);
        kiln_parse_text(c, b, &bl->text, 1);
        int a = -1;
        kiln_get_enum(c, b, "align", aligns, &a);
        bl->align = a < 0 ? KILN_ALIGN_DEFAULT : (kiln_align)(a + 1);
        break;
    }
    case 2:
        bl->kind = KILN_BLOCK_LIST;
        bl->list.start = 1;
        parse_list(c, b, list_m, &bl->list, 1);
        break;
    case 3:
        bl->kind = KILN_BLOCK_TABLE;
        kiln_check_members(c, b, table_m);
        bl->table = parse_table(c, b);
        break;
    case 4: {
        bl->kind = KILN_BLOCK_IMAGE;
        kiln_check_members(c, b, image_m);
        kiln_get_string(c, b, "caption", &bl->caption);
        kiln_get_length(c, b, "width", 1, 14400, &bl->width_pt);
        const json_t *im = json_object_get(b, "image");
        if (!im) {
            kiln_perr(c, NULL, "missing \"image\"");
            break;
        }
        size_t saved = kiln_ptr_push(&c->ptr, "image");
        bl->image = kiln_parse_image(c, im);
        kiln_ptr_pop(&c->ptr, saved);
        break;
    }
    case 5:
        bl->kind = KILN_BLOCK_CHART;
        bl->chart = kiln_arena_alloc(c->arena, sizeof *bl->chart);
        if (!bl->chart) {
            kiln_pnomem(c);
            break;
        }
        kiln_parse_chart(c, b, bl->chart, KILN_IN_BLOCK, chart_extra);
        break;
    case 6:
        bl->kind = KILN_BLOCK_PAGE_BREAK;
        kiln_check_members(c, b, bare_m);
        break;
    case 7: {
        bl->kind = KILN_BLOCK_TOC;
        kiln_check_members(c, b, toc_m);
        bl->title = "Contents";
        kiln_get_string(c, b, "title", &bl->title);
        int64_t lv = 3;
        kiln_get_int(c, b, "levels", 1, 6, &lv);
        bl->level = (int)lv;
        break;
    }
    case 8:
        bl->kind = KILN_BLOCK_CODE;
        kiln_check_members(c, b, code_m);
        if (kiln_get_string(c, b, "text", &bl->code) == 0 && !bl->code)
            kiln_perr(c, NULL, "missing \"text\"");
        kiln_get_string(c, b, "language", &bl->language);
        break;
    case 9:
        bl->kind = KILN_BLOCK_QUOTE;
        kiln_check_members(c, b, quote_m);
        kiln_parse_text(c, b, &bl->text, 1);
        kiln_get_string(c, b, "attribution", &bl->attribution);
        break;
    case 10:
        bl->kind = KILN_BLOCK_RULE;
        kiln_check_members(c, b, bare_m);
        break;
    }
}

void kiln_parse_blocks(kiln_pctx *c, const json_t *arr)
{
    /* A table block's rows are read a row at a time (kiln_parse_table_data). */
    static const char *const block_holes[] = {"rows", NULL};
    size_t saved = kiln_ptr_push(&c->ptr, "blocks");
    if (!json_is_array(arr)) {
        kiln_perr(c, NULL, "expected an array of blocks");
        kiln_ptr_pop(&c->ptr, saved);
        return;
    }
    block_vec vec = {0};
    kiln_pwalk w;
    /* Room for one block each; a markdown block's grow it. */
    size_t n = kiln_pwalk_init(&w, c, arr);
    if (n && !vec_push(c, &vec, n))
        goto pop;
    vec.count = 0;
    while (!c->nomem && kiln_pwalk_next(&w)) {
        size_t s2 = kiln_ptr_push_index(&c->ptr, w.index), mark = c->hole_count;
        json_t *b = kiln_pwalk_load(&w, block_holes, c->ptr.buf);
        if (b)
            parse_block(c, b, &vec);
        json_decref(b);
        kiln_phole_pop(c, mark);
        kiln_ptr_pop(&c->ptr, s2);
    }
    c->doc->blocks = vec.items;
    c->doc->block_count = vec.count;
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

/* ---- slides ---- */

/* Which of a slide's content members each layout takes (notes go on any),
 * and the member it requires. Indexed by kiln_layout. */
enum {
    SM_TITLE = 1 << 0,
    SM_SUBTITLE = 1 << 1,
    SM_BULLETS = 1 << 2,
    SM_LEFT = 1 << 3,
    SM_RIGHT = 1 << 4,
    SM_TABLE = 1 << 5,
    SM_IMAGE = 1 << 6,
    SM_CHART = 1 << 7
};

static const char *const slide_members[] = {"title", "subtitle", "bullets", "left",
                                            "right", "table",    "image",   "chart"};

static const struct {
    unsigned takes;
    unsigned needs;
    const char *says; /* for messages */
} slide_layouts[] = {
    [KILN_LAYOUT_TITLE] = {SM_TITLE | SM_SUBTITLE, 0, "title, subtitle and notes"},
    [KILN_LAYOUT_SECTION] = {SM_TITLE | SM_SUBTITLE, 0, "title, subtitle and notes"},
    [KILN_LAYOUT_CONTENT] = {SM_TITLE | SM_BULLETS, 0, "title, bullets and notes"},
    [KILN_LAYOUT_TWO_COLUMN] = {SM_TITLE | SM_LEFT | SM_RIGHT, 0, "title, left, right and notes"},
    [KILN_LAYOUT_TABLE] = {SM_TITLE | SM_TABLE, SM_TABLE, "title, table and notes"},
    [KILN_LAYOUT_IMAGE] = {SM_TITLE | SM_IMAGE, SM_IMAGE, "title, image and notes"},
    [KILN_LAYOUT_CHART] = {SM_TITLE | SM_CHART, SM_CHART, "title, chart and notes"},
    [KILN_LAYOUT_BLANK] = {0, 0, "notes only"},
};

static void parse_slide(kiln_pctx *c, const json_t *s, kiln_slide *sl)
{
    static const char *const allowed[] = {"layout", "title", "subtitle", "bullets",
                                          "left",   "right", "table",    "image",
                                          "chart",  "notes", NULL};
    static const char *const layouts[] = {"title", "section", "content", "two_column", "table",
                                          "image", "chart",   "blank",   NULL};
    static const char *const table_m[] = {"columns", "rows", "data", "caption",
                                          "header",  "name", NULL};
    sl->layout = KILN_LAYOUT_CONTENT;
    sl->pointer = kiln_ptr_dup(c, NULL);
    if (!json_is_object(s)) {
        kiln_perr(c, NULL, "expected a slide object");
        return;
    }
    kiln_check_members(c, s, allowed);
    int layout = KILN_LAYOUT_CONTENT;
    int layout_ok = kiln_get_enum(c, s, "layout", layouts, &layout) == 0;
    sl->layout = (kiln_layout)layout;
    /* Each layout takes only the members it shows (docs/spec.md "Slides");
     * with an unknown layout there is no telling, so every member is read. */
    unsigned takes = layout_ok ? slide_layouts[layout].takes : ~0u;
    for (size_t i = 0; layout_ok && i < sizeof slide_members / sizeof slide_members[0]; i++) {
        int present = json_object_get(s, slide_members[i]) != NULL;
        unsigned bit = 1u << i;
        if (present && !(takes & bit))
            kiln_perr(c, slide_members[i], "a \"%s\" slide does not show \"%s\" (it takes %s)",
                      layouts[layout], slide_members[i], slide_layouts[layout].says);
        else if (!present && (slide_layouts[layout].needs & bit))
            kiln_perr(c, NULL, "a \"%s\" slide needs \"%s\"", layouts[layout], slide_members[i]);
    }
    if (takes & SM_TITLE)
        kiln_get_string(c, s, "title", &sl->title);
    if (takes & SM_SUBTITLE)
        kiln_get_string(c, s, "subtitle", &sl->subtitle);
    kiln_get_string(c, s, "notes", &sl->notes);
    const struct {
        const char *name;
        unsigned bit;
        kiln_list *target;
    } lists[] = {{"bullets", SM_BULLETS, &sl->bullets},
                 {"left", SM_LEFT, &sl->left},
                 {"right", SM_RIGHT, &sl->right}};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        const json_t *items = json_object_get(s, lists[i].name);
        if (!items || !(takes & lists[i].bit))
            continue;
        /* Items, or {"ordered": true, "start": N, "items": [...]}: a list
         * block without "type". */
        static const char *const slide_list_m[] = {"ordered", "start", "items", NULL};
        size_t saved = kiln_ptr_push(&c->ptr, lists[i].name);
        lists[i].target->start = 1;
        parse_list(c, items, slide_list_m, lists[i].target, 1);
        kiln_ptr_pop(&c->ptr, saved);
    }
    const json_t *t = json_object_get(s, "table");
    if (t && (takes & SM_TABLE)) {
        size_t saved = kiln_ptr_push(&c->ptr, "table");
        if (!json_is_object(t))
            kiln_perr(c, NULL, "expected a table object");
        else {
            kiln_check_members(c, t, table_m);
            sl->table = parse_table(c, t);
        }
        kiln_ptr_pop(&c->ptr, saved);
    }
    const json_t *im = json_object_get(s, "image");
    if (im && (takes & SM_IMAGE)) {
        size_t saved = kiln_ptr_push(&c->ptr, "image");
        sl->image = kiln_parse_image(c, im);
        kiln_ptr_pop(&c->ptr, saved);
    }
    const json_t *ch = json_object_get(s, "chart");
    if (ch && (takes & SM_CHART)) {
        size_t saved = kiln_ptr_push(&c->ptr, "chart");
        sl->chart = kiln_arena_alloc(c->arena, sizeof *sl->chart);
        if (!sl->chart)
            kiln_pnomem(c);
        else
            kiln_parse_chart(c, ch, sl->chart, KILN_IN_SLIDE, NULL);
        kiln_ptr_pop(&c->ptr, saved);
    }
}

void kiln_parse_slides(kiln_pctx *c, const json_t *arr)
{
    static const char *const slide_holes[] = {"table/rows", NULL};
    size_t saved = kiln_ptr_push(&c->ptr, "slides");
    if (!json_is_array(arr)) {
        kiln_perr(c, NULL, "expected an array of slides");
        kiln_ptr_pop(&c->ptr, saved);
        return;
    }
    kiln_pwalk w;
    size_t n = kiln_pwalk_init(&w, c, arr);
    c->doc->slides = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *c->doc->slides);
    if (!c->doc->slides) {
        kiln_pnomem(c);
        kiln_ptr_pop(&c->ptr, saved);
        return;
    }
    c->doc->slide_count = n;
    while (!c->nomem && kiln_pwalk_next(&w)) {
        size_t i = w.index, s2 = kiln_ptr_push_index(&c->ptr, i), mark = c->hole_count;
        json_t *sl = kiln_pwalk_load(&w, slide_holes, c->ptr.buf);
        c->doc->slides[i].layout = KILN_LAYOUT_CONTENT;
        if (sl)
            parse_slide(c, sl, &c->doc->slides[i]);
        else
            c->doc->slides[i].pointer = kiln_ptr_dup(c, NULL);
        json_decref(sl);
        kiln_phole_pop(c, mark);
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}
