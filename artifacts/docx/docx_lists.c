/*
 * docx_lists.c - list paragraphs, and the list instances numbering.xml is
 * written from (docx_numbering.c).
 *
 * Word restarts a numbered list only when its paragraphs point at a new
 * w:num, so every kiln_list is an instance of its own: each top-level list
 * and each nested child list gets one docx_num (at the nesting depth its
 * items sit at). Two numbered lists in a row therefore both start at their
 * own "start", and a nested numbered list restarts at every parent item.
 * Items are List Paragraph paragraphs with w:numPr (w:ilvl = the depth,
 * 0..8); an item's nested list follows it directly.
 */
#include <string.h>

#include "docx_internal.h"
#include "../../common/banned.h"

#define DOCX_MAX_LEVEL 8 /* w:ilvl is 0..8 */

unsigned docx_num_new(docx_ctx *c, const kiln_list *list, int level)
{
    if (c->num_count == c->num_cap) {
        /* Instances live in the render's arena; doubling keeps the copies
         * linear in the number of lists. */
        size_t cap = c->num_cap ? c->num_cap * 2 : 16;
        docx_num *nums = kiln_arena_calloc(c->arena, cap, sizeof *nums);
        if (!nums) {
            kiln_error_set(c->err, KILN_E_NOMEM, NULL, "out of memory numbering a list");
            return 0;
        }
        if (c->num_count)
            memcpy(nums, c->nums, c->num_count * sizeof *nums);
        c->nums = nums;
        c->num_cap = cap;
    }
    docx_num *n = &c->nums[c->num_count++];
    n->num_id = (unsigned)c->num_count;
    n->ordered = list->ordered ? DOCX_ABSTRACT_ORDERED : DOCX_ABSTRACT_BULLET;
    n->start = list->start;
    n->level = level < 0 ? 0 : level > DOCX_MAX_LEVEL ? DOCX_MAX_LEVEL : level;
    n->last = (int64_t)list->start + (int64_t)list->item_count - 1;
    n->marks = kiln_list_marks_of(list, n->level);
    return n->num_id;
}

static void write_item(docx_ctx *c, const kiln_list_item *item, unsigned num_id, int level)
{
    opc_xml *x = c->x;
    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    opc_xml_val(x, "w:pStyle", "w:val", DOCX_STYLE_LIST_PARAGRAPH);
    opc_xml_start(x, "w:numPr");
    opc_xml_val_int(x, "w:ilvl", "w:val", level);
    opc_xml_val_int(x, "w:numId", "w:val", num_id);
    opc_xml_end(x);
    opc_xml_end(x);
    docx_write_runs(c, &item->text);
    opc_xml_end(x);
}

static kiln_status write_list_at(docx_ctx *c, const kiln_list *list, int depth)
{
    if (list->item_count == 0)
        return KILN_E_OK;
    int level = depth > DOCX_MAX_LEVEL ? DOCX_MAX_LEVEL : depth;
    unsigned num_id = docx_num_new(c, list, level);
    if (num_id == 0)
        return KILN_E_NOMEM;
    for (size_t i = 0; i < list->item_count; i++) {
        const kiln_list_item *item = &list->items[i];
        write_item(c, item, num_id, level);
        if (c->status != KILN_E_OK)
            return c->status;
        if (item->children) {
            kiln_status st = write_list_at(c, item->children, depth + 1);
            if (st != KILN_E_OK)
                return st;
        }
    }
    return KILN_E_OK;
}

kiln_status docx_write_list(docx_ctx *c, const kiln_list *list, const char *pointer)
{
    (void)pointer; /* nothing here fails on the spec's account */
    return write_list_at(c, list, 0);
}
