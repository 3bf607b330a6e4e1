/*
 * docx_drawing.c - inline images and charts: a centered paragraph holding
 * one run with a w:drawing/wp:inline, as Word writes a picture or a chart
 * inserted in line with text.
 *
 * Images: each distinct image (the same kiln_image, or the same bytes met
 * again) is one part, word/media/imageN.png|jpeg, stored uncompressed (PNG
 * and JPEG are compressed already) and related once from the document;
 * every use refers to that one relationship. An image shows at the width
 * asked for, else at its natural size (its pixels at the file's dpi, 96
 * when the file does not say), and is scaled down, keeping its aspect
 * ratio, to fit the text width and the page's text height.
 *
 * Charts: the chart's data resolved to literal values (chart_data.h), a
 * chart part with its embedded workbook (opc_chart_add), and a c:chart
 * reference to it. A chart's size is its pixels at 96 dpi, scaled down the
 * same way to the text width.
 *
 * The a:, pic: and c: namespaces are declared on the elements that use them,
 * as Word does, so the fragment does not depend on the root; wp: and r: come
 * from the w:document root.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "docx_internal.h"
#include "../../common/banned.h"

#define NS_A "http://schemas.openxmlformats.org/drawingml/2006/main"
#define NS_PIC "http://schemas.openxmlformats.org/drawingml/2006/picture"
#define NS_C "http://schemas.openxmlformats.org/drawingml/2006/chart"

#define DEFAULT_DPI 96.0
#define PT_PER_INCH 72.0
#define DEFAULT_CHART_WIDTH_PX 480
#define DEFAULT_CHART_HEIGHT_PX 288
/* Room kept under a full-height image for its caption line. */
#define CAPTION_ROOM_PT 36.0

/* An image part already in the package. */
typedef struct docx_media {
    const kiln_image *image;
    unsigned rid;
} docx_media;

static kiln_status nomem(docx_ctx *c, const char *pointer)
{
    return kiln_error_set(c->err, KILN_E_NOMEM, pointer, "out of memory writing a drawing");
}

static int64_t emu(double pt)
{
    double e = round(pt * DOCX_EMU_PER_PT);
    return e < 1 ? 1 : (int64_t)e;
}

/* Scale w x h (points) down, keeping the ratio, to at most max_w x max_h
 * (0 = no bound). */
static void fit(double *w, double *h, double max_w, double max_h)
{
    if (max_w > 0 && *w > max_w) {
        *h *= max_w / *w;
        *w = max_w;
    }
    if (max_h > 0 && *h > max_h) {
        *w *= max_h / *h;
        *h = max_h;
    }
}

static unsigned next_id(docx_ctx *c)
{
    /* Word numbers drawing objects from 1. */
    if (c->next_drawing_id == 0)
        c->next_drawing_id = 1;
    return c->next_drawing_id++;
}

/* <w:p><w:pPr><w:jc center/></w:pPr><w:r><w:rPr><w:noProof/></w:rPr>
 * <w:drawing><wp:inline ...> up to wp:docPr included. keep_next keeps the
 * drawing on the page of the caption below it, so a caption never sits alone
 * at the top of a page. */
static void write_inline_start(docx_ctx *c, int64_t cx, int64_t cy, unsigned id, const char *name,
                               const char *descr, int keep_next)
{
    opc_xml *x = c->x;
    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    if (keep_next)
        opc_xml_empty(x, "w:keepNext");
    opc_xml_val(x, "w:jc", "w:val", "center");
    opc_xml_end(x);
    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:rPr");
    opc_xml_empty(x, "w:noProof");
    opc_xml_end(x);
    opc_xml_start(x, "w:drawing");
    opc_xml_start(x, "wp:inline");
    opc_xml_attr(x, "distT", "0");
    opc_xml_attr(x, "distB", "0");
    opc_xml_attr(x, "distL", "0");
    opc_xml_attr(x, "distR", "0");
    opc_xml_start(x, "wp:extent");
    opc_xml_attr_int(x, "cx", cx);
    opc_xml_attr_int(x, "cy", cy);
    opc_xml_end(x);
    opc_xml_start(x, "wp:effectExtent");
    opc_xml_attr(x, "l", "0");
    opc_xml_attr(x, "t", "0");
    opc_xml_attr(x, "r", "0");
    opc_xml_attr(x, "b", "0");
    opc_xml_end(x);
    opc_xml_start(x, "wp:docPr");
    opc_xml_attr_uint(x, "id", id);
    opc_xml_attr(x, "name", name);
    if (descr && *descr)
        opc_xml_attr(x, "descr", descr);
    opc_xml_end(x);
}

/* Close wp:inline, w:drawing, w:r and w:p. */
static void write_inline_end(docx_ctx *c)
{
    for (int i = 0; i < 4; i++)
        opc_xml_end(c->x);
}

/* The relationship of image's part, adding the part the first time. 0 on
 * failure (c->err set). */
static unsigned image_rid(docx_ctx *c, const kiln_image *image, const char *pointer)
{
    for (size_t i = 0; i < c->media_count; i++) {
        const kiln_image *seen = c->media[i].image;
        if (seen == image || (seen->format == image->format && seen->size == image->size &&
                              memcmp(seen->data, image->data, image->size) == 0))
            return c->media[i].rid;
    }
    if (c->media_count == c->media_cap) {
        size_t cap = c->media_cap ? c->media_cap * 2 : 8;
        docx_media *grown = kiln_arena_calloc(c->arena, cap, sizeof *grown);
        if (!grown) {
            nomem(c, pointer);
            return 0;
        }
        if (c->media_count)
            memcpy(grown, c->media, c->media_count * sizeof *grown);
        c->media = grown;
        c->media_cap = cap;
    }

    int png = image->format == KILN_IMAGE_PNG;
    const char *ext = png ? "png" : "jpeg";
    const char *type = png ? OPC_CT_PNG : OPC_CT_JPEG;
    unsigned n = ++c->image_count;
    char part[64], target[64];
    snprintf(part, sizeof part, "word/media/image%u.%s", n, ext);
    snprintf(target, sizeof target, "media/image%u.%s", n, ext);
    if (opc_default_add(c->pkg, ext, type, c->err) != KILN_E_OK)
        return 0;
    if (opc_part_add_copy(c->pkg, part, type, image->data, image->size, 0, c->err) != KILN_E_OK)
        return 0;
    unsigned rid = opc_rel_add(c->pkg, DOCX_DOCUMENT_PART, OPC_REL_IMAGE, target, 0, c->err);
    if (!rid)
        return 0;
    c->media[c->media_count++] = (docx_media){image, rid};
    return rid;
}

kiln_status docx_write_image(docx_ctx *c, const kiln_image *image, double width_pt, int keep_next,
                             const char *pointer)
{
    unsigned rid = image_rid(c, image, pointer);
    if (!rid)
        return c->err && c->err->code != KILN_E_OK ? c->err->code : KILN_E_NOMEM;

    /* The natural size in points; the aspect ratio is taken from it, so an
     * image with different horizontal and vertical dpi keeps its shape. */
    double dpi_x = image->dpi_x > 0 ? image->dpi_x : DEFAULT_DPI;
    double dpi_y = image->dpi_y > 0 ? image->dpi_y : DEFAULT_DPI;
    double w = (image->width_px ? image->width_px : 1) / dpi_x * PT_PER_INCH;
    double h = (image->height_px ? image->height_px : 1) / dpi_y * PT_PER_INCH;
    if (width_pt > 0) {
        h *= width_pt / w;
        w = width_pt;
    }
    double max_h = c->text_height_pt > 2 * CAPTION_ROOM_PT ? c->text_height_pt - CAPTION_ROOM_PT
                                                           : c->text_height_pt;
    fit(&w, &h, c->text_width_pt, max_h);
    int64_t cx = emu(w), cy = emu(h);

    unsigned id = next_id(c);
    char name[32];
    snprintf(name, sizeof name, "Picture %u", id);
    opc_xml *x = c->x;
    write_inline_start(c, cx, cy, id, name, image->alt, keep_next);
    opc_xml_start(x, "wp:cNvGraphicFramePr");
    opc_xml_start(x, "a:graphicFrameLocks");
    opc_xml_attr(x, "xmlns:a", NS_A);
    opc_xml_attr(x, "noChangeAspect", "1");
    opc_xml_end(x);
    opc_xml_end(x);

    opc_xml_start(x, "a:graphic");
    opc_xml_attr(x, "xmlns:a", NS_A);
    opc_xml_start(x, "a:graphicData");
    opc_xml_attr(x, "uri", NS_PIC);
    opc_xml_start(x, "pic:pic");
    opc_xml_attr(x, "xmlns:pic", NS_PIC);
    opc_xml_start(x, "pic:nvPicPr");
    opc_xml_start(x, "pic:cNvPr");
    opc_xml_attr(x, "id", "0");
    opc_xml_attr(x, "name", image->name && *image->name ? image->name : name);
    if (image->alt && *image->alt)
        opc_xml_attr(x, "descr", image->alt);
    opc_xml_end(x);
    opc_xml_empty(x, "pic:cNvPicPr");
    opc_xml_end(x); /* pic:nvPicPr */
    opc_xml_start(x, "pic:blipFill");
    opc_xml_start(x, "a:blip");
    docx_write_rid(x, "r:embed", rid);
    opc_xml_end(x);
    opc_xml_start(x, "a:stretch");
    opc_xml_empty(x, "a:fillRect");
    opc_xml_end(x);
    opc_xml_end(x); /* pic:blipFill */
    opc_xml_start(x, "pic:spPr");
    opc_xml_start(x, "a:xfrm");
    opc_xml_start(x, "a:off");
    opc_xml_attr(x, "x", "0");
    opc_xml_attr(x, "y", "0");
    opc_xml_end(x);
    opc_xml_start(x, "a:ext");
    opc_xml_attr_int(x, "cx", cx);
    opc_xml_attr_int(x, "cy", cy);
    opc_xml_end(x);
    opc_xml_end(x); /* a:xfrm */
    opc_xml_start(x, "a:prstGeom");
    opc_xml_attr(x, "prst", "rect");
    opc_xml_empty(x, "a:avLst");
    opc_xml_end(x);
    opc_xml_end(x); /* pic:spPr */
    opc_xml_end(x); /* pic:pic */
    opc_xml_end(x); /* a:graphicData */
    opc_xml_end(x); /* a:graphic */
    write_inline_end(c);
    return opc_xml_failed(x) ? nomem(c, pointer) : KILN_E_OK;
}

kiln_status docx_write_chart(docx_ctx *c, const kiln_chart *chart, const kiln_sheet *sheet,
                             int keep_next, const char *pointer)
{
    kiln_chart_data data;
    kiln_status st = kiln_chart_data_resolve(c->doc, sheet, chart, &c->doc->theme, c->arena,
                                             &data, c->err);
    if (st != KILN_E_OK)
        return st;
    unsigned n = ++c->chart_count;
    if ((st = opc_chart_add(c->pkg, "word", n, &data, &c->doc->theme, 0, c->tmp_dir, c->err)) !=
        KILN_E_OK)
        return st;
    char target[48];
    snprintf(target, sizeof target, "charts/chart%u.xml", n);
    unsigned rid = opc_rel_add(c->pkg, DOCX_DOCUMENT_PART, OPC_REL_CHART, target, 0, c->err);
    if (!rid)
        return c->err && c->err->code != KILN_E_OK ? c->err->code : KILN_E_NOMEM;

    uint32_t wpx = chart->width_px ? chart->width_px : DEFAULT_CHART_WIDTH_PX;
    uint32_t hpx = chart->height_px ? chart->height_px : DEFAULT_CHART_HEIGHT_PX;
    double w = wpx / DEFAULT_DPI * PT_PER_INCH, h = hpx / DEFAULT_DPI * PT_PER_INCH;
    fit(&w, &h, c->text_width_pt, c->text_height_pt);

    unsigned id = next_id(c);
    char name[32];
    snprintf(name, sizeof name, "Chart %u", id);
    /* Alternative text: what the chart shows, as far as the spec says. */
    const char *descr = chart->title ? chart->title : chart->caption;
    opc_xml *x = c->x;
    write_inline_start(c, emu(w), emu(h), id, name, descr, keep_next);
    opc_xml_empty(x, "wp:cNvGraphicFramePr");
    opc_xml_start(x, "a:graphic");
    opc_xml_attr(x, "xmlns:a", NS_A);
    opc_xml_start(x, "a:graphicData");
    opc_xml_attr(x, "uri", NS_C);
    opc_xml_start(x, "c:chart");
    opc_xml_attr(x, "xmlns:c", NS_C);
    docx_write_rid(x, "r:id", rid);
    opc_xml_end(x);
    opc_xml_end(x); /* a:graphicData */
    opc_xml_end(x); /* a:graphic */
    write_inline_end(c);
    return opc_xml_failed(x) ? nomem(c, pointer ? pointer : chart->pointer) : KILN_E_OK;
}
