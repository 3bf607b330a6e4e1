/*
 * fuzz_markdown.c - markdown blocks on their own (md4c plus
 * artifacts/spec/markdown.c), without the JSON layer in front: every byte string
 * is either turned into blocks or rejected with an error.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "artifacts/spec/markdown.h"
#include "artifacts/spec/spec_internal.h"
#include "../common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every run is NUL-terminated at its length. */
static void check_text(const kiln_text *t)
{
    for (size_t k = 0; k < t->run_count; k++)
        if (strlen(t->runs[k].text) != t->runs[k].len)
            abort();
}

static void check_list(const kiln_list *l)
{
    for (size_t i = 0; i < l->item_count; i++) {
        check_text(&l->items[i].text);
        if (l->items[i].children)
            check_list(l->items[i].children);
    }
}

/* What came out, each block by its kind (a block's members share a union). */
static void check_block(const kiln_block *b)
{
    switch (b->kind) {
    case KILN_BLOCK_HEADING:
    case KILN_BLOCK_PARAGRAPH:
    case KILN_BLOCK_QUOTE:
        check_text(&b->text);
        break;
    case KILN_BLOCK_LIST:
        check_list(&b->list);
        break;
    case KILN_BLOCK_TABLE:
        if (((const kiln_inline_rows *)b->table->data.private_rows)->count !=
            b->table->data.inline_row_count)
            abort();
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kiln_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.rows = 200;
    lim.columns = 32;
    lim.cell_chars = 256;
    lim.list_depth = 5;

    kiln_arena arena;
    kiln_arena_init(&arena, 64u << 20);
    kiln_block *blocks = NULL;
    size_t count = 0;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_status st = kiln_markdown_to_blocks(&arena, (const char *)data, size, "/blocks/0", &lim,
                                             &blocks, &count, &err);
    if (st == KILN_E_OK) {
        for (size_t i = 0; i < count; i++)
            check_block(&blocks[i]);
    } else if (err.code != st || st == KILN_E_INTERNAL ||
               strcmp(err.pointer, "/blocks/0/text") != 0) {
        abort();
    }
    kiln_arena_release(&arena);
    return 0;
}
