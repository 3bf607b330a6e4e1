/*
 * docx_header_footer.c - word/header1.xml (the page header text, right-
 * aligned) and word/footer1.xml ("Page X of Y", centered).
 *
 * ORDER: call docx_header_footer_add BEFORE word/document.xml is written.
 * The body's w:sectPr names the header and footer by relationship id
 * (w:headerReference / w:footerReference r:id="rIdN"), so this function
 * declares the relationships from word/document.xml and leaves their
 * numbers in ctx->header_rid and ctx->footer_rid (0 = no header / no
 * footer) for the body writer to use.
 *
 * The page numbers are complex fields (begin, instruction, separate, result,
 * end), as Word writes them, each with a cached result of "1": Word and
 * LibreOffice compute the fields on every page as they lay it out, and a
 * viewer that shows cached results instead still shows "Page 1 of 1"
 * rather than "Page  of ".
 */
#include <string.h>

#include "docx_internal.h"
#include "../../common/banned.h"

#define NS_W "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

static void start_part(opc_xml *x, const char *root)
{
    opc_xml_start(x, root);
    opc_xml_attr(x, "xmlns:r", OPC_NS_R);
    opc_xml_attr(x, "xmlns:w", NS_W);
}

static void start_paragraph(opc_xml *x, const char *style, const char *jc)
{
    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    opc_xml_val(x, "w:pStyle", "w:val", style);
    opc_xml_val(x, "w:jc", "w:val", jc);
    opc_xml_end(x);
}

static void text_run(opc_xml *x, const char *text, size_t len)
{
    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:t");
    opc_xml_attr(x, "xml:space", "preserve");
    opc_xml_text(x, text, len);
    opc_xml_end(x);
    opc_xml_end(x);
}

/* Text as runs, with tabs as w:tab and line feeds as w:br (how Word stores
 * them: a tab or line feed inside w:t is shown as a space). */
static void text_runs(opc_xml *x, const char *text)
{
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, "\t\n\r");
        if (len > 0)
            text_run(x, p, len);
        p += len;
        if (!*p)
            break;
        if (*p == '\r' && p[1] == '\n')
            p++;
        opc_xml_start(x, "w:r");
        opc_xml_empty(x, *p == '\t' ? "w:tab" : "w:br");
        opc_xml_end(x);
        p++;
    }
}

static void field_char(opc_xml *x, const char *type)
{
    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:fldChar");
    opc_xml_attr(x, "w:fldCharType", type);
    opc_xml_end(x);
    opc_xml_end(x);
}

/* A complex field: instruction (" PAGE ") and its cached result. */
static void field(opc_xml *x, const char *instruction, const char *cached)
{
    field_char(x, "begin");
    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:instrText");
    opc_xml_attr(x, "xml:space", "preserve");
    opc_xml_text(x, instruction, strlen(instruction));
    opc_xml_end(x);
    opc_xml_end(x);
    field_char(x, "separate");
    text_run(x, cached, strlen(cached));
    field_char(x, "end");
}

static kiln_status header_add(docx_ctx *c, const char *text)
{
    opc_xml *x = opc_xml_new();
    if (!x)
        return kiln_error_set(c->err, KILN_E_NOMEM, NULL, "out of memory writing the header");
    start_part(x, "w:hdr");
    start_paragraph(x, DOCX_STYLE_HEADER, "right");
    text_runs(x, text);
    opc_xml_end(x); /* w:p */
    opc_xml_end(x); /* w:hdr */
    kiln_status st = opc_xml_finish(x, c->pkg, "word/header1.xml", OPC_CT_DOCX_HEADER, c->err);
    if (st != KILN_E_OK)
        return st;
    c->header_rid = opc_rel_add(c->pkg, DOCX_DOCUMENT_PART, OPC_REL_HEADER, "header1.xml", 0,
                                c->err);
    return c->header_rid ? KILN_E_OK : KILN_E_NOMEM;
}

static kiln_status footer_add(docx_ctx *c)
{
    opc_xml *x = opc_xml_new();
    if (!x)
        return kiln_error_set(c->err, KILN_E_NOMEM, NULL, "out of memory writing the footer");
    start_part(x, "w:ftr");
    start_paragraph(x, DOCX_STYLE_FOOTER, "center");
    text_run(x, "Page ", 5);
    field(x, " PAGE ", "1");
    text_run(x, " of ", 4);
    field(x, " NUMPAGES ", "1");
    opc_xml_end(x); /* w:p */
    opc_xml_end(x); /* w:ftr */
    kiln_status st = opc_xml_finish(x, c->pkg, "word/footer1.xml", OPC_CT_DOCX_FOOTER, c->err);
    if (st != KILN_E_OK)
        return st;
    c->footer_rid = opc_rel_add(c->pkg, DOCX_DOCUMENT_PART, OPC_REL_FOOTER, "footer1.xml", 0,
                                c->err);
    return c->footer_rid ? KILN_E_OK : KILN_E_NOMEM;
}

kiln_status docx_header_footer_add(docx_ctx *c)
{
    const kiln_page *pg = &c->doc->page;
    c->header_rid = 0;
    c->footer_rid = 0;
    if (pg->header_text && *pg->header_text) {
        kiln_status st = header_add(c, pg->header_text);
        if (st != KILN_E_OK)
            return st;
    }
    if (pg->page_numbers)
        return footer_add(c);
    return KILN_E_OK;
}
