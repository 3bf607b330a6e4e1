/*
 * pptx_writer.c - kiln_pptx_write: a validated kiln_doc into a .pptx file.
 *
 * The order of the work, and why:
 *   1. the deck (pptx_deck.c): the slides to make, whatever the spec holds,
 *      and their plan (pptx_slide.c: each text's split over its slides, and
 *      the deck-size limit checked before anything is written); then the
 *      early ceiling check: the images go into the zip stored as
 *      they are, so when their bytes alone pass the output limit the render
 *      fails before any XML is written;
 *   2. the package relationship to ppt/presentation.xml, then the master
 *      with its layouts and theme (presentation.xml's rId1, as PowerPoint
 *      writes it);
 *   3. the slides, item by item (pptx_slide.c), each declaring its
 *      relationships (layout, notes, images, charts, links) as it goes; the
 *      notes master comes with the first notes;
 *   4. presProps, viewProps, the theme and table styles, then
 *      presentation.xml, which lists the slides now that they are known;
 *   5. core and app properties, then the zip, into the size-enforced output
 *      (opc_package_write stops as soon as the ceiling would pass).
 * Every failure returns through the cleanup labels below, which free the
 * package and the render's arena; kiln_render aborts the output.
 */
#include <string.h>

#include "../../common/output.h"
#include "pptx_internal.h"
#include "../../common/banned.h"

static uint64_t deck_image_bytes(const pptx_deck *deck, int *has_chart)
{
    uint64_t total = 0;
    *has_chart = 0;
    /* An image used twice is stored once (pptx_slide.c), so count each once. */
    for (size_t i = 0; i < deck->count; i++) {
        const kiln_image *img = deck->items[i].image;
        if (deck->items[i].chart)
            *has_chart = 1;
        if (!img)
            continue;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            const kiln_image *other = deck->items[j].image;
            seen = other && other->format == img->format && other->size == img->size &&
                   memcmp(other->data, img->data, img->size) == 0;
        }
        if (!seen)
            total += img->size;
    }
    return total;
}

kiln_status kiln_pptx_write(const kiln_doc *doc, kiln_output *out, const kiln_render_options *opt,
                            kiln_render_result *result, kiln_error *err)
{
    kiln_arena arena;
    pptx_ctx c = {0};
    pptx_deck deck;
    kiln_status st;
    int has_chart = 0;

    kiln_arena_init(&arena, 0);
    c.doc = doc;
    c.opt = opt;
    c.out = out;
    c.arena = &arena;
    c.err = err;
    c.result = result;
    /* Scratch files (the charts' embedded workbooks) go beside the output by
     * default, on the same filesystem, for the reason xlsx_writer.c gives. */
    c.tmp_dir = opt && opt->tmp_dir && *opt->tmp_dir ? opt->tmp_dir : kiln_output_dir_path(out);

    st = pptx_deck_build(doc, &arena, &deck, err);
    if (st != KILN_E_OK || (st = pptx_deck_plan(&c, &deck)) != KILN_E_OK)
        goto cleanup_arena;
    uint64_t image_bytes = deck_image_bytes(&deck, &has_chart);
    if ((st = opc_precheck(out, image_bytes, has_chart, c.tmp_dir, err)) != KILN_E_OK)
        goto cleanup_arena;

    c.pkg = opc_package_new();
    if (!c.pkg) {
        st = pptx_nomem(&c, NULL);
        goto cleanup_arena;
    }
    if (opc_rel_add(c.pkg, "", OPC_REL_OFFICE_DOCUMENT, PPTX_PRESENTATION_PART, 0, err) == 0) {
        st = KILN_E_NOMEM;
        goto cleanup_package;
    }
    if ((st = pptx_master_add(&c)) != KILN_E_OK)
        goto cleanup_package;

    for (size_t i = 0; i < deck.count; i++)
        if ((st = pptx_slide_write_item(&c, &deck.items[i])) != KILN_E_OK) {
            kiln_error_locate(err, deck.items[i].pointer);
            goto cleanup_package;
        }

    if ((st = pptx_props_add(&c)) != KILN_E_OK || (st = pptx_presentation_add(&c)) != KILN_E_OK)
        goto cleanup_package;
    opc_app_deck counts = {c.slide_count, c.notes_count};
    if ((st = opc_core_add(c.pkg, &doc->metadata, err)) != KILN_E_OK ||
        (st = opc_app_add(c.pkg, &doc->metadata, &counts, err)) != KILN_E_OK)
        goto cleanup_package;

    st = opc_package_write(c.pkg, out, err);

cleanup_package:
    opc_package_free(c.pkg);
cleanup_arena:
    kiln_arena_release(&arena);
    return st;
}
