/*
 * flow.c - kiln_flow_build: the blocks a document writer renders (flow.h).
 *
 * A spec with blocks flows as its blocks, and only them: its sheets and
 * slides are left out, as docs/spec.md "Mapping between formats" says.
 *
 * Without blocks, the sheets come first, then the slides, each turned into
 * blocks made up in the arena (borrowing the doc's strings and tables):
 *   - a sheet: a level-1 heading with its name, a table block over its data
 *     (named after the sheet, no caption), then one chart block per chart,
 *     with the flow item's sheet set so that ranges resolve against it;
 *   - a slide: its title as a heading, level 1 for the title and section
 *     layouts (they open a part of the deck) and level 2 for every other
 *     layout (they sit inside one); the subtitle as a paragraph; the bullets,
 *     then the left and right columns, as lists; the table, the image (at its
 *     natural size) and the chart; the speaker notes as a quote last. A
 *     member the slide lacks adds nothing, so a blank slide without notes
 *     adds no block at all.
 */
#include "flow.h"

#include <string.h>
#include "../../common/banned.h"

/* Items are appended into an array sized up front: the count is known
 * before anything is made, so there is no growing and no quadratic copy. */
typedef struct flow_builder {
    kiln_arena *arena;
    kiln_flow *flow;
    size_t cap;
} flow_builder;

static size_t sheet_item_count(const kiln_sheet *sheet)
{
    return 2 + sheet->chart_count; /* heading, table, charts */
}

static size_t slide_item_count(const kiln_slide *slide)
{
    return (slide->title != NULL) + (slide->subtitle != NULL) + (slide->bullets.item_count > 0) +
           (slide->left.item_count > 0) + (slide->right.item_count > 0) + (slide->table != NULL) +
           (slide->image != NULL) + (slide->chart != NULL) + (slide->notes != NULL);
}

/* A new block for the next item, or NULL when out of memory. */
static kiln_block *add_block(flow_builder *b, kiln_block_kind kind, const char *pointer,
                             const kiln_sheet *sheet)
{
    kiln_block *block = kiln_arena_alloc(b->arena, sizeof *block);
    if (!block || b->flow->count >= b->cap)
        return NULL;
    block->kind = kind;
    block->pointer = pointer;
    block->align = KILN_ALIGN_DEFAULT;
    kiln_flow_item *item = &b->flow->items[b->flow->count++];
    item->block = block;
    item->sheet = sheet;
    return block;
}

/* A kiln_text of one plain run over s (borrowed). 0 / -1 out of memory. */
static int plain_text(flow_builder *b, const char *s, kiln_text *text)
{
    kiln_run *run = kiln_arena_alloc(b->arena, sizeof *run);
    if (!run)
        return -1;
    run->text = s;
    run->len = strlen(s);
    run->color = KILN_COLOR_NONE;
    text->runs = run;
    text->run_count = 1;
    return 0;
}

static int add_text_block(flow_builder *b, kiln_block_kind kind, int level, const char *s,
                          const char *pointer)
{
    kiln_block *block = add_block(b, kind, pointer, NULL);
    if (!block)
        return -1;
    block->level = level;
    return plain_text(b, s, &block->text);
}

static int add_list_block(flow_builder *b, const kiln_list *list, const char *pointer)
{
    if (list->item_count == 0)
        return 0;
    kiln_block *block = add_block(b, KILN_BLOCK_LIST, pointer, NULL);
    if (!block)
        return -1;
    block->list = *list;
    return 0;
}

static int add_sheet(flow_builder *b, const kiln_sheet *sheet)
{
    /* The parser names every sheet; "Sheet" only guards a model built by hand. */
    const char *name = sheet->name ? sheet->name : "Sheet";
    if (add_text_block(b, KILN_BLOCK_HEADING, 1, name, sheet->pointer) != 0)
        return -1;

    kiln_table *table = kiln_arena_alloc(b->arena, sizeof *table);
    kiln_block *block = add_block(b, KILN_BLOCK_TABLE, sheet->pointer, sheet);
    if (!table || !block)
        return -1;
    table->data = sheet->data;
    table->name = name;
    table->caption = NULL;
    block->table = table;

    for (size_t i = 0; i < sheet->chart_count; i++) {
        const kiln_chart *chart = &sheet->charts[i];
        block = add_block(b, KILN_BLOCK_CHART, chart->pointer ? chart->pointer : sheet->pointer,
                          sheet);
        if (!block)
            return -1;
        block->chart = (kiln_chart *)chart; /* the block never writes through it */
    }
    return 0;
}

static int add_slide(flow_builder *b, const kiln_slide *slide)
{
    const char *p = slide->pointer;
    if (slide->title) {
        int level = slide->layout == KILN_LAYOUT_TITLE || slide->layout == KILN_LAYOUT_SECTION
                        ? 1
                        : 2;
        if (add_text_block(b, KILN_BLOCK_HEADING, level, slide->title, p) != 0)
            return -1;
    }
    if (slide->subtitle && add_text_block(b, KILN_BLOCK_PARAGRAPH, 0, slide->subtitle, p) != 0)
        return -1;
    if (add_list_block(b, &slide->bullets, p) != 0 || add_list_block(b, &slide->left, p) != 0 ||
        add_list_block(b, &slide->right, p) != 0)
        return -1;
    kiln_block *block;
    if (slide->table) {
        if (!(block = add_block(b, KILN_BLOCK_TABLE, p, NULL)))
            return -1;
        block->table = slide->table;
    }
    if (slide->image) {
        if (!(block = add_block(b, KILN_BLOCK_IMAGE, p, NULL)))
            return -1;
        block->image = slide->image;
    }
    if (slide->chart) {
        if (!(block = add_block(b, KILN_BLOCK_CHART, p, NULL)))
            return -1;
        block->chart = slide->chart;
    }
    if (slide->notes && add_text_block(b, KILN_BLOCK_QUOTE, 0, slide->notes, p) != 0)
        return -1;
    return 0;
}

kiln_status kiln_flow_build(const kiln_doc *doc, kiln_arena *arena, kiln_flow *flow,
                            kiln_error *err)
{
    flow_builder b = {arena, flow, 0};
    flow->items = NULL;
    flow->count = 0;

    if (doc->block_count > 0) {
        b.cap = doc->block_count;
    } else {
        for (size_t i = 0; i < doc->sheet_count; i++)
            b.cap += sheet_item_count(&doc->sheets[i]);
        for (size_t i = 0; i < doc->slide_count; i++)
            b.cap += slide_item_count(&doc->slides[i]);
    }
    if (b.cap == 0)
        return KILN_E_OK;
    flow->items = kiln_arena_calloc(arena, b.cap, sizeof *flow->items);
    if (!flow->items)
        goto fail_nomem;

    if (doc->block_count > 0) {
        for (size_t i = 0; i < doc->block_count; i++) {
            flow->items[i].block = &doc->blocks[i];
            flow->items[i].sheet = NULL;
        }
        flow->count = doc->block_count;
        return KILN_E_OK;
    }
    for (size_t i = 0; i < doc->sheet_count; i++)
        if (add_sheet(&b, &doc->sheets[i]) != 0)
            goto fail_nomem;
    for (size_t i = 0; i < doc->slide_count; i++)
        if (add_slide(&b, &doc->slides[i]) != 0)
            goto fail_nomem;
    return KILN_E_OK;

fail_nomem:
    flow->items = NULL;
    flow->count = 0;
    return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory laying out the document");
}
