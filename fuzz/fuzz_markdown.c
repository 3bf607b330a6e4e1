/*
 * fuzz_markdown.c - markdown blocks on their own (md4c plus
 * artifacts/markdown.c), without the JSON layer in front: every byte string
 * is either turned into blocks or rejected with an error.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "artifacts/markdown.h"
#include "artifacts/spec_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    kiln_status st = kiln_markdown_to_blocks(&arena, (const char *)data, size, "/blocks/0",
                                             &lim, &blocks, &count, &err);
    if (st == KILN_E_OK) {
        /* walk what came out: every run is NUL-terminated at its length */
        for (size_t i = 0; i < count; i++) {
            const kiln_text *t = &blocks[i].text;
            for (size_t k = 0; k < t->run_count; k++)
                if (strlen(t->runs[k].text) != t->runs[k].len)
                    abort();
            if (blocks[i].kind == KILN_BLOCK_TABLE &&
                ((const kiln_inline_rows *)blocks[i].table->data.private_rows)->count !=
                    blocks[i].table->data.inline_row_count)
                abort();
        }
    } else if (err.code != st || st == KILN_E_INTERNAL || strcmp(err.pointer, "/blocks/0/text") != 0) {
        abort();
    }
    kiln_arena_release(&arena);
    return 0;
}
