/*
 * docx_runs.c - runs of text inside a w:p, for every part of the body that
 * writes text (the body's paragraphs, list items, table cells, the TOC's
 * entries), so none of them calls back into docx_document.c.
 *
 * Each to match what Word itself writes: the rPr children in schema order
 * (rStyle, rFonts, b, i, strike, color, sz, u, vertAlign); inline code is
 * the CodeChar character style; a link is a w:hyperlink over an external
 * relationship, with the Hyperlink character style; neighbouring runs with
 * the same link share one w:hyperlink. Tabs and line feeds become w:tab and
 * w:br.
 */
#include <stdio.h>
#include <string.h>

#include "docx_internal.h"
#include "../../common/banned.h"

void docx_write_t(opc_xml *x, const char *s, size_t len)
{
    if (len == 0)
        return;
    opc_xml_start(x, "w:t");
    if (s[0] == ' ' || s[len - 1] == ' ')
        opc_xml_attr(x, "xml:space", "preserve");
    opc_xml_text(x, s, len);
    opc_xml_end(x);
}

/* The content of a run: text split at tabs (w:tab) and line breaks (w:br;
 * CR LF, LF and CR each count as one). */
static void write_run_content(opc_xml *x, const char *s, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch != '\t' && ch != '\n' && ch != '\r')
            continue;
        docx_write_t(x, s + start, i - start);
        if (ch == '\t') {
            opc_xml_empty(x, "w:tab");
        } else {
            opc_xml_empty(x, "w:br");
            if (ch == '\r' && i + 1 < len && s[i + 1] == '\n')
                i++;
        }
        start = i + 1;
    }
    docx_write_t(x, s + start, len - start);
}

void docx_write_text_run(docx_ctx *c, const char *text, size_t len, const char *rstyle)
{
    opc_xml *x = c->x;
    opc_xml_start(x, "w:r");
    if (rstyle) {
        opc_xml_start(x, "w:rPr");
        opc_xml_val(x, "w:rStyle", "w:val", rstyle);
        opc_xml_end(x);
    }
    write_run_content(x, text, len);
    opc_xml_end(x);
}

static void write_font(opc_xml *x, const char *font)
{
    opc_xml_start(x, "w:rFonts");
    opc_xml_attr(x, "w:ascii", font);
    opc_xml_attr(x, "w:hAnsi", font);
    opc_xml_attr(x, "w:eastAsia", font);
    opc_xml_attr(x, "w:cs", font);
    opc_xml_end(x);
}

static void write_run_props(docx_ctx *c, const kiln_run *r)
{
    opc_xml *x = c->x;
    unsigned f = r->flags;
    const char *rstyle = r->link               ? DOCX_STYLE_HYPERLINK
                         : (f & KILN_RUN_CODE) ? DOCX_STYLE_CODE_CHAR
                                               : NULL;
    /* Code inside a link keeps the Hyperlink style and takes the mono font
     * directly, since a run has one character style. */
    const char *font = r->font                            ? r->font
                       : (r->link && (f & KILN_RUN_CODE)) ? c->doc->theme.mono_font
                                                          : NULL;
    if (!rstyle && !font && r->color == KILN_COLOR_NONE && r->size <= 0 &&
        !(f & (KILN_RUN_BOLD | KILN_RUN_ITALIC | KILN_RUN_STRIKE | KILN_RUN_UNDERLINE |
               KILN_RUN_SUPERSCRIPT | KILN_RUN_SUBSCRIPT)))
        return;
    opc_xml_start(x, "w:rPr");
    if (rstyle)
        opc_xml_val(x, "w:rStyle", "w:val", rstyle);
    if (font)
        write_font(x, font);
    if (f & KILN_RUN_BOLD)
        opc_xml_empty(x, "w:b");
    if (f & KILN_RUN_ITALIC)
        opc_xml_empty(x, "w:i");
    if (f & KILN_RUN_STRIKE)
        opc_xml_empty(x, "w:strike");
    if (r->color != KILN_COLOR_NONE) {
        opc_xml_start(x, "w:color");
        opc_xml_attr_color(x, "w:val", r->color);
        opc_xml_end(x);
    }
    if (r->size > 0) {
        /* Half-points; the spec allows 1..409 pt. */
        opc_xml_val_int(x, "w:sz", "w:val", (int64_t)(r->size * 2 + 0.5));
    }
    if (f & KILN_RUN_UNDERLINE)
        opc_xml_val(x, "w:u", "w:val", "single");
    if (f & KILN_RUN_SUPERSCRIPT)
        opc_xml_val(x, "w:vertAlign", "w:val", "superscript");
    else if (f & KILN_RUN_SUBSCRIPT)
        opc_xml_val(x, "w:vertAlign", "w:val", "subscript");
    opc_xml_end(x);
}

static void write_run(docx_ctx *c, const kiln_run *r)
{
    opc_xml_start(c->x, "w:r");
    write_run_props(c, r);
    write_run_content(c->x, r->text, r->len);
    opc_xml_end(c->x);
}

void docx_write_rid(opc_xml *x, const char *attr, unsigned rid)
{
    char buf[24];
    snprintf(buf, sizeof buf, "rId%u", rid);
    opc_xml_attr(x, attr, buf);
}

void docx_write_runs(docx_ctx *c, const kiln_text *t)
{
    opc_xml *x = c->x;
    size_t i = 0;
    while (i < t->run_count) {
        const kiln_run *r = &t->runs[i];
        if (!r->link) {
            write_run(c, r);
            i++;
            continue;
        }
        unsigned rid = 0;
        if (c->status == KILN_E_OK) {
            rid = opc_rel_add(c->pkg, DOCX_DOCUMENT_PART, OPC_REL_HYPERLINK, r->link, 1, c->err);
            if (rid == 0)
                c->status = c->err && c->err->code != KILN_E_OK ? c->err->code : KILN_E_NOMEM;
        }
        if (rid == 0)
            return; /* the render fails; the part is discarded */
        opc_xml_start(x, "w:hyperlink");
        docx_write_rid(x, "r:id", rid);
        opc_xml_attr(x, "w:history", "1");
        size_t j = i;
        while (j < t->run_count && t->runs[j].link &&
               (t->runs[j].link == r->link || strcmp(t->runs[j].link, r->link) == 0))
            write_run(c, &t->runs[j++]);
        opc_xml_end(x);
        i = j;
    }
}

const char *docx_jc_value(kiln_align align)
{
    switch (align) {
    case KILN_ALIGN_LEFT:
        return "left";
    case KILN_ALIGN_CENTER:
        return "center";
    case KILN_ALIGN_RIGHT:
        return "right";
    case KILN_ALIGN_JUSTIFY:
        return "both";
    default:
        return NULL;
    }
}
