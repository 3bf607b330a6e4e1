/*
 * pptx_deck.c - what goes on the slides, whatever the spec holds
 * (docs/spec.md "Mapping between formats").
 *
 * A spec with slides is a deck already: each slide keeps its layout, and
 * its lists become paragraphs with their nesting levels. A spec without
 * slides but with blocks is split at level-1 headings: the first opens the
 * deck as a title slide (whatever comes before it follows it), each later
 * one a section header; the paragraphs and lists under a heading become the
 * bullets of a content slide titled by the nearest heading (a level-2 or
 * deeper heading starts a new one, and one with nothing under it is a Title
 * Only slide of its own, so no heading the agenda lists is lost); each
 * table, image and chart gets a slide of its own, titled by its caption or
 * else the nearest heading; a table of contents becomes an agenda slide
 * listing the level-1 and level-2 headings (fewer when its levels say so).
 * A spec with only sheets gives each sheet a slide with its table and its
 * first chart side by side when the table fits half a slide; a longer
 * table takes whole slides (continued as it needs) and the chart a slide
 * after it; the sheet's other charts follow, a slide each.
 */
#include <stdint.h>
#include <string.h>

#include "pptx_internal.h"
#include "../../common/banned.h"

typedef struct deck_builder {
    const kiln_doc *doc;
    kiln_arena *arena;
    kiln_error *err;
    pptx_item *items;
    size_t count, cap;
    /* blocks: the bullets collected for the next content slide */
    pptx_para *paras;
    size_t para_count, para_cap;
    const char *heading;         /* the nearest heading's text */
    const char *heading_pointer; /* ... and its block */
    int heading_unshown;         /* a level-2+ heading no slide carries yet */
    const char *pending_pointer; /* where the collected bullets started */
    int failed;
} deck_builder;

static pptx_item *new_item(deck_builder *b, pptx_layout layout, const char *pointer)
{
    if (b->failed)
        return NULL;
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        pptx_item *items = kiln_arena_calloc(b->arena, cap, sizeof *items);
        if (!items) {
            b->failed = 1;
            return NULL;
        }
        if (b->count)
            memcpy(items, b->items, b->count * sizeof *items);
        b->items = items;
        b->cap = cap;
    }
    pptx_item *it = &b->items[b->count++];
    memset(it, 0, sizeof *it);
    it->layout = layout;
    it->pointer = pointer;
    return it;
}

static pptx_para *new_para(deck_builder *b)
{
    if (b->failed)
        return NULL;
    if (b->para_count == b->para_cap) {
        size_t cap = b->para_cap ? b->para_cap * 2 : 16;
        pptx_para *paras = kiln_arena_calloc(b->arena, cap, sizeof *paras);
        if (!paras) {
            b->failed = 1;
            return NULL;
        }
        if (b->para_count)
            memcpy(paras, b->paras, b->para_count * sizeof *paras);
        b->paras = paras;
        b->para_cap = cap;
    }
    pptx_para *p = &b->paras[b->para_count++];
    memset(p, 0, sizeof *p);
    return p;
}

/* The paragraphs collected so far, handed over (the builder starts afresh). */
static pptx_paras take_paras(deck_builder *b)
{
    pptx_paras out = {b->paras, b->para_count};
    b->paras = NULL;
    b->para_count = b->para_cap = 0;
    return out;
}

/* Items of list (and their children) as paragraphs at their levels;
 * pointer: the list's block or slide. */
static void add_list(deck_builder *b, const kiln_list *list, int level, const char *pointer)
{
    kiln_list_marks marks = kiln_list_marks_of(list, level);
    for (size_t i = 0; i < list->item_count && !b->failed; i++) {
        pptx_para *p = new_para(b);
        if (!p)
            return;
        p->pointer = pointer;
        p->text = &list->items[i].text;
        p->level = level > 8 ? 8 : level;
        p->bullet = list->ordered ? PPTX_BULLET_NUMBER : PPTX_BULLET_CHAR;
        p->number = (int64_t)list->start + (int64_t)i;
        p->marks = marks;
        if (list->items[i].children)
            add_list(b, list->items[i].children, level + 1, pointer);
    }
}

static pptx_paras list_paras(deck_builder *b, const kiln_list *list, const char *pointer)
{
    add_list(b, list, 0, pointer);
    return take_paras(b);
}

/* ---- slides as they are ---- */

static void map_slides(deck_builder *b)
{
    for (size_t i = 0; i < b->doc->slide_count && !b->failed; i++) {
        const kiln_slide *sl = &b->doc->slides[i];
        pptx_layout layout;
        switch (sl->layout) {
        case KILN_LAYOUT_TITLE:
            layout = PPTX_LAYOUT_TITLE;
            break;
        case KILN_LAYOUT_SECTION:
            layout = PPTX_LAYOUT_SECTION;
            break;
        case KILN_LAYOUT_TWO_COLUMN:
            /* As a content slide without bullets: nothing for the columns. */
            layout = sl->left.item_count || sl->right.item_count ? PPTX_LAYOUT_TWO_CONTENT
                                                                 : PPTX_LAYOUT_TITLE_ONLY;
            break;
        case KILN_LAYOUT_BLANK:
            layout = PPTX_LAYOUT_BLANK;
            break;
        case KILN_LAYOUT_CONTENT:
            /* A content slide without bullets is a title: Title Only, so no
             * empty "Click to add text" box is left on it. */
            layout = sl->bullets.item_count ? PPTX_LAYOUT_CONTENT : PPTX_LAYOUT_TITLE_ONLY;
            break;
        default: /* table, image, chart: the object in the content placeholder */
            layout = PPTX_LAYOUT_CONTENT;
            break;
        }
        pptx_item *it = new_item(b, layout, sl->pointer);
        if (!it)
            return;
        it->title = sl->title;
        it->subtitle = sl->subtitle;
        it->notes = sl->notes;
        if (sl->layout == KILN_LAYOUT_TWO_COLUMN) {
            it->body = list_paras(b, &sl->left, sl->pointer);
            it->right = list_paras(b, &sl->right, sl->pointer);
        } else if (sl->layout == KILN_LAYOUT_CONTENT) {
            it->body = list_paras(b, &sl->bullets, sl->pointer);
        }
        if (sl->table)
            it->table = &sl->table->data;
        it->image = sl->image;
        if (sl->image)
            it->image_alt = sl->image->alt && *sl->image->alt ? sl->image->alt : sl->title;
        it->chart = sl->chart;
    }
}

/* ---- blocks ---- */

/* The text of a heading's runs, as one string. */
static const char *plain_text(deck_builder *b, const kiln_text *t)
{
    size_t len = 0;
    for (size_t i = 0; i < t->run_count; i++)
        len += t->runs[i].len;
    char *s = kiln_arena_alloc(b->arena, len + 1);
    if (!s) {
        b->failed = 1;
        return NULL;
    }
    len = 0;
    for (size_t i = 0; i < t->run_count; i++) {
        memcpy(s + len, t->runs[i].text, t->runs[i].len);
        len += t->runs[i].len;
    }
    s[len] = '\0';
    return s;
}

/* The bullets collected under the nearest heading become a content slide. */
static void flush_bullets(deck_builder *b)
{
    if (b->para_count == 0 || b->failed)
        return;
    pptx_item *it = new_item(b, PPTX_LAYOUT_CONTENT, b->pending_pointer);
    if (!it)
        return;
    it->title = b->heading;
    it->body = take_paras(b);
    b->heading_unshown = 0;
}

/* A heading that met the next heading (or the end) with nothing under it
 * gets a slide of its own, its title alone. */
static void flush_heading(deck_builder *b)
{
    if (!b->heading_unshown || b->failed)
        return;
    pptx_item *it = new_item(b, PPTX_LAYOUT_TITLE_ONLY, b->heading_pointer);
    if (it)
        it->title = b->heading;
    b->heading_unshown = 0;
}

/* A slide of its own (table, image, chart) titled by its caption, else by
 * the nearest heading, which it then shows. */
static pptx_item *object_item(deck_builder *b, const kiln_block *bl, const char *caption)
{
    flush_bullets(b);
    /* A captioned object does not show the heading: the heading's own
     * slide comes first, in the order of the blocks. */
    if (caption)
        flush_heading(b);
    pptx_item *it = new_item(b, PPTX_LAYOUT_CONTENT, bl->pointer);
    if (!it)
        return NULL;
    it->title = caption ? caption : b->heading;
    if (!caption)
        b->heading_unshown = 0;
    return it;
}

static void collect_para(deck_builder *b, const kiln_block *bl, const kiln_text *text,
                         const char *plain, unsigned flags)
{
    if (b->para_count == 0)
        b->pending_pointer = bl->pointer;
    pptx_para *p = new_para(b);
    if (!p)
        return;
    p->pointer = bl->pointer;
    p->text = text;
    p->plain = plain;
    p->plain_len = plain ? strlen(plain) : 0;
    p->bullet = PPTX_BULLET_NONE;
    p->flags = flags;
}

/* 1 when the last top-level paragraph collected is a numbered item: a
 * numbered list that follows at once would read, in PowerPoint, as the same
 * list counting on (it numbers consecutive numbered paragraphs of a level as
 * one sequence), so an empty unnumbered paragraph goes between, which ends
 * the sequence and leaves the gap a new list wants (pptx_text.c writes the
 * new list's numbers out, for the viewers that would count on anyway). */
static int last_top_numbered(const deck_builder *b)
{
    for (size_t i = b->para_count; i-- > 0;)
        if (b->paras[i].level == 0)
            return b->paras[i].bullet == PPTX_BULLET_NUMBER;
    return 0;
}

/* The agenda a table of contents becomes: the level-1 headings (and deeper
 * ones down to the TOC's levels) as bullets. */
static void add_agenda(deck_builder *b, const kiln_block *toc)
{
    pptx_item *it = new_item(b, PPTX_LAYOUT_CONTENT, toc->pointer);
    if (!it)
        return;
    it->title = toc->title && *toc->title ? toc->title : "Contents";
    int max_level = toc->level >= 1 ? toc->level : 1;
    /* Deeper levels would crowd an agenda; two are plenty. */
    if (max_level > 2)
        max_level = 2;
    for (size_t i = 0; i < b->doc->block_count && !b->failed; i++) {
        const kiln_block *h = &b->doc->blocks[i];
        if (h->kind != KILN_BLOCK_HEADING || h->level > max_level)
            continue;
        pptx_para *p = new_para(b);
        if (!p)
            return;
        p->pointer = h->pointer;
        p->text = &h->text;
        p->level = h->level - 1;
        p->bullet = PPTX_BULLET_CHAR;
    }
    it->body = take_paras(b);
    if (it->body.count == 0)
        it->layout = PPTX_LAYOUT_TITLE_ONLY;
}

static void map_blocks(deck_builder *b)
{
    const kiln_metadata *md = &b->doc->metadata;
    /* The deck opens with its title slide: the first level-1 heading when it
     * is the document's title (nothing but pictures before it, such as a
     * logo, which then follow it), else the metadata title, with every
     * level-1 heading a section; without a metadata title, the first level-1
     * heading wherever it is. */
    size_t first_h1 = SIZE_MAX;
    int text_before = 0;
    for (size_t i = 0; i < b->doc->block_count && first_h1 == SIZE_MAX; i++) {
        const kiln_block *bl = &b->doc->blocks[i];
        if (bl->kind == KILN_BLOCK_HEADING && bl->level == 1)
            first_h1 = i;
        else if (bl->kind != KILN_BLOCK_IMAGE)
            text_before = 1;
    }
    if (text_before && md->title)
        first_h1 = SIZE_MAX; /* a chapter, not the title */
    const char *deck_title = md->title;
    const char *title_pointer = "/metadata/title";
    if (first_h1 != SIZE_MAX) {
        deck_title = plain_text(b, &b->doc->blocks[first_h1].text);
        title_pointer = b->doc->blocks[first_h1].pointer;
    }
    if (deck_title && !b->failed) {
        pptx_item *it = new_item(b, PPTX_LAYOUT_TITLE, title_pointer);
        if (!it)
            return;
        it->title = deck_title;
        it->subtitle = md->subject ? md->subject : md->author;
    }
    b->heading = md->title ? md->title : deck_title;
    for (size_t i = 0; i < b->doc->block_count && !b->failed; i++) {
        const kiln_block *bl = &b->doc->blocks[i];
        pptx_item *it;
        switch (bl->kind) {
        case KILN_BLOCK_HEADING:
            flush_bullets(b);
            flush_heading(b);
            b->heading = plain_text(b, &bl->text);
            b->heading_pointer = bl->pointer;
            if (bl->level == 1 && i != first_h1) {
                it = new_item(b, PPTX_LAYOUT_SECTION, bl->pointer);
                if (!it)
                    return;
                it->title = b->heading;
            }
            b->heading_unshown = bl->level > 1;
            break;
        case KILN_BLOCK_PARAGRAPH:
            collect_para(b, bl, &bl->text, NULL, 0);
            break;
        case KILN_BLOCK_QUOTE:
            collect_para(b, bl, &bl->text, NULL, KILN_RUN_ITALIC);
            if (bl->attribution && !b->failed) {
                const char *attr = kiln_arena_printf(b->arena, "\u2014 %s", bl->attribution);
                if (!attr)
                    b->failed = 1;
                else
                    collect_para(b, bl, NULL, attr, KILN_RUN_ITALIC);
            }
            break;
        case KILN_BLOCK_CODE:
            collect_para(b, bl, NULL, bl->code ? bl->code : "", KILN_RUN_CODE);
            break;
        case KILN_BLOCK_LIST:
            if (b->para_count == 0)
                b->pending_pointer = bl->pointer;
            if (bl->list.ordered && b->para_count && last_top_numbered(b))
                collect_para(b, bl, NULL, "", 0); /* see last_top_numbered */
            add_list(b, &bl->list, 0, bl->pointer);
            break;
        case KILN_BLOCK_PAGE_BREAK:
            flush_bullets(b);
            break;
        case KILN_BLOCK_TOC:
            flush_bullets(b);
            add_agenda(b, bl);
            break;
        case KILN_BLOCK_TABLE:
            if (!(it = object_item(b, bl, bl->table->caption)))
                return;
            it->table = &bl->table->data;
            break;
        case KILN_BLOCK_IMAGE:
            if (!(it = object_item(b, bl, bl->caption)))
                return;
            it->image = bl->image;
            it->image_alt = bl->image->alt && *bl->image->alt ? bl->image->alt : bl->caption;
            break;
        case KILN_BLOCK_CHART:
            if (!(it = object_item(b, bl, bl->chart->caption)))
                return;
            it->chart = bl->chart;
            break;
        case KILN_BLOCK_RULE:
            break;
        }
    }
    flush_bullets(b);
    flush_heading(b);
}

/* ---- sheets ---- */

static void map_sheets(deck_builder *b)
{
    for (size_t i = 0; i < b->doc->sheet_count && !b->failed; i++) {
        const kiln_sheet *sh = &b->doc->sheets[i];
        int has_table = sh->data.column_count > 0 || sh->data.source != KILN_ROWS_INLINE ||
                        sh->data.inline_row_count > 0;
        if (has_table || sh->chart_count == 0) {
            pptx_item *it = new_item(b, has_table ? PPTX_LAYOUT_CONTENT : PPTX_LAYOUT_TITLE_ONLY,
                                     sh->pointer);
            if (!it)
                return;
            it->title = sh->name;
            it->sheet = sh;
            if (has_table)
                it->table = &sh->data;
            /* The first chart goes beside the table when the table fits half
             * the slide (pptx_slide.c), else on a slide after it. */
            if (has_table && sh->chart_count)
                it->chart = &sh->charts[0];
        }
        for (size_t j = has_table ? 1 : 0; j < sh->chart_count && !b->failed; j++) {
            pptx_item *it = new_item(b, PPTX_LAYOUT_CONTENT, sh->charts[j].pointer);
            if (!it)
                return;
            it->title = sh->name;
            it->sheet = sh;
            it->chart = &sh->charts[j];
        }
    }
}

kiln_status pptx_deck_build(const kiln_doc *doc, kiln_arena *arena, pptx_deck *deck,
                            kiln_error *err)
{
    deck_builder b;
    memset(&b, 0, sizeof b);
    b.doc = doc;
    b.arena = arena;
    b.err = err;
    if (doc->slide_count)
        map_slides(&b);
    else if (doc->block_count)
        map_blocks(&b);
    else
        map_sheets(&b);
    if (b.failed)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory planning the slides");
    deck->items = b.items;
    deck->count = b.count;
    return KILN_E_OK;
}
