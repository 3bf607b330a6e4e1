/*
 * docx_writer.c - kiln_docx_write: a validated kiln_doc into a .docx file.
 *
 * The order of the work, and why:
 *   1. the flow (artifacts/layout/flow.h): the blocks to render, whatever the spec
 *      holds; then the early ceiling check: the images go into the zip
 *      stored as they are, so when their bytes alone pass the output limit
 *      the render fails before any XML is written;
 *   2. the package relationship to the main part first (rId1, as Word writes
 *      it), then the parts whose content does not depend on the body, each
 *      declaring its relationship from document.xml in a fixed order:
 *      styles, settings (with fontTable and theme), footnotes and endnotes,
 *      header and footer. The header and footer must be known before the
 *      body, whose section properties name their relationship ids;
 *   3. the headings pre-pass (docx_toc.c), then word/document.xml, which
 *      meets the lists, hyperlinks, images and charts and declares their
 *      relationships and parts as it goes;
 *   4. numbering.xml, which exists only after the body made its list
 *      instances;
 *   5. core and app properties, then the zip, into the size-enforced
 *      output (opc_package_write stops as soon as the ceiling would pass).
 * Every failure returns through the cleanup labels below, which free the
 * package and the render's arena; kiln_render aborts the output.
 */
#include "../../common/output.h"
#include "../render.h"
#include "docx_internal.h"
#include "../../common/banned.h"

static uint64_t flow_image_bytes(const kiln_flow *flow, int *has_chart)
{
    uint64_t total = 0;
    *has_chart = 0;
    for (size_t i = 0; i < flow->count; i++) {
        const kiln_block *b = flow->items[i].block;
        if (b->kind == KILN_BLOCK_IMAGE && b->image)
            total += b->image->size;
        else if (b->kind == KILN_BLOCK_CHART && b->chart)
            *has_chart = 1;
    }
    return total;
}

static kiln_status nomem(kiln_error *err, const char *what)
{
    return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory %s", what);
}

kiln_status kiln_docx_write(const kiln_doc *doc, kiln_output *out, const kiln_render_options *opt,
                            kiln_render_result *result, kiln_error *err)
{
    (void)result; /* nothing to report besides success */
    kiln_arena arena;
    docx_ctx c = {0};
    kiln_status st;
    int has_chart = 0;

    kiln_arena_init(&arena, 0);
    c.doc = doc;
    c.opt = opt;
    c.out = out;
    c.arena = &arena;
    c.err = err;
    c.next_drawing_id = 1;
    c.text_width_pt = doc->page.width_pt - doc->page.margin_left - doc->page.margin_right;
    c.text_height_pt = doc->page.height_pt - doc->page.margin_top - doc->page.margin_bottom;
    /* Scratch files (the charts' embedded workbooks) go beside the output by
     * default, on the same filesystem, for the reason xlsx_writer.c gives. */
    c.tmp_dir = opt && opt->tmp_dir && *opt->tmp_dir ? opt->tmp_dir : kiln_output_dir_path(out);

    st = kiln_flow_build(doc, &arena, &c.flow, err);
    if (st != KILN_E_OK)
        goto cleanup_arena;
    uint64_t image_bytes = flow_image_bytes(&c.flow, &has_chart);
    if ((st = opc_precheck(out, image_bytes, has_chart, c.tmp_dir, err)) != KILN_E_OK)
        goto cleanup_arena;

    c.pkg = opc_package_new();
    if (!c.pkg) {
        st = nomem(err, "creating the package");
        goto cleanup_arena;
    }
    if (opc_rel_add(c.pkg, "", OPC_REL_OFFICE_DOCUMENT, DOCX_DOCUMENT_PART, 0, err) == 0) {
        st = KILN_E_NOMEM;
        goto cleanup_package;
    }

    if ((st = docx_styles_add(&c)) != KILN_E_OK || (st = docx_settings_add(&c)) != KILN_E_OK ||
        (st = docx_fonts_add(&c)) != KILN_E_OK || (st = docx_theme_add(&c)) != KILN_E_OK ||
        (st = docx_footnotes_add(&c)) != KILN_E_OK ||
        (st = docx_header_footer_add(&c)) != KILN_E_OK)
        goto cleanup_package;

    if ((st = docx_collect_headings(&c)) != KILN_E_OK ||
        (st = docx_document_write(&c)) != KILN_E_OK)
        goto cleanup_package;
    if ((st = docx_numbering_add(&c)) != KILN_E_OK)
        goto cleanup_package;

    if ((st = opc_core_add(c.pkg, &doc->metadata, err)) != KILN_E_OK ||
        (st = opc_app_add(c.pkg, &doc->metadata, NULL, err)) != KILN_E_OK)
        goto cleanup_package;

    st = opc_package_write(c.pkg, out, err);

cleanup_package:
    opc_package_free(c.pkg);
cleanup_arena:
    kiln_arena_release(&arena);
    return st;
}
