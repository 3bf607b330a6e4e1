/*
 * flow.h - the blocks a document writer (.docx, .pdf) renders, whatever the
 * spec holds (docs/spec.md "Mapping between formats").
 *
 * A spec with blocks flows as its blocks. Without blocks, each sheet becomes
 * a level-1 heading (the sheet name), its table and its charts; and each
 * slide a section: the title as a heading (level 1 for title and section
 * slides, 2 otherwise), the subtitle as a paragraph, bullets (and the two
 * columns of a two-column slide) as lists, the table, image and chart, and
 * the notes as a quote. The writers see one sequence of items either way.
 */
#ifndef KILN_FLOW_H
#define KILN_FLOW_H

#include <stddef.h>

#include "../../common/arena.h"
#include "../../common/error.h"
#include "../spec/spec.h"

typedef struct kiln_flow_item {
    const kiln_block *block; /* a doc block, or one made up for a sheet or a slide */
    const kiln_sheet *sheet; /* the sheet a chart or table came from, else NULL
                                (chart ranges resolve against it) */
} kiln_flow_item;

typedef struct kiln_flow {
    kiln_flow_item *items;
    size_t count;
} kiln_flow;

/* Build the flow for doc; everything made up comes from arena (borrowing the
 * doc's strings), so it lives as long as both. KILN_E_NOMEM only. */
kiln_status kiln_flow_build(const kiln_doc *doc, kiln_arena *arena, kiln_flow *flow,
                            kiln_error *err);

#endif
