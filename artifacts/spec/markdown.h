/*
 * markdown.h - a `markdown` block becomes ordinary blocks.
 *
 * Assistants write Markdown naturally; md4c (CommonMark + GitHub tables and
 * strikethrough) parses it and this module builds the same kiln_block values
 * the JSON blocks would have produced, so every writer gets real headings,
 * lists and tables without knowing Markdown exists.
 */
#ifndef KILN_MARKDOWN_H
#define KILN_MARKDOWN_H

#include <jansson.h>
#include <stddef.h>

#include "../../common/arena.h"
#include "../../common/error.h"
#include "spec.h"

/*
 * Parse len bytes of Markdown into *blocks / *count, allocated in arena.
 * pointer: the JSON Pointer of the markdown block; every produced block gets
 * it, and errors name its text member (pointer + "/text"). limits: list
 * nesting and cell-size limits apply.
 * Table rows are kept as every inline table's are (kiln_inline_rows, in
 * arena): the model holds no JSON tree.
 * Returns KILN_E_OK, or an error in err (KILN_E_NOMEM, KILN_E_LIMIT,
 * KILN_E_INVALID_SPEC).
 */
kiln_status kiln_markdown_to_blocks(kiln_arena *arena, const char *text, size_t len,
                                    const char *pointer, const kiln_limits *limits,
                                    kiln_block **blocks, size_t *count, kiln_error *err);

#endif
