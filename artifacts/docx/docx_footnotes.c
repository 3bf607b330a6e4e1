/*
 * docx_footnotes.c - word/footnotes.xml and word/endnotes.xml.
 *
 * The spec has no footnotes yet, but Word writes these two parts in every
 * document it saves: each holds the separator (the short rule above the
 * notes, w:id -1) and the continuation separator (the full-width rule when
 * a note runs onto the next page, w:id 0), and settings.xml names them in
 * w:footnotePr / w:endnotePr. With them in place, a footnote the user
 * inserts later in Word looks as it does in any other document, and
 * settings.xml (templates/docx/settings.xml) never names a missing note.
 * w:id is ST_DecimalNumber, so -1 is valid; it is what Word itself uses.
 */
#include "docx_internal.h"
#include "../../common/banned.h"

#define NS_W "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

/* One separator note: <w:footnote w:type=".." w:id=".."> holding a paragraph
 * with no space after it and one run with the separator mark. */
static void separator(opc_xml *x, const char *note, const char *type, int id)
{
    opc_xml_start(x, note);
    opc_xml_attr(x, "w:type", type);
    opc_xml_attr_int(x, "w:id", id);
    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    opc_xml_start(x, "w:spacing");
    opc_xml_attr(x, "w:after", "0");
    opc_xml_attr(x, "w:line", "240");
    opc_xml_attr(x, "w:lineRule", "auto");
    opc_xml_end(x); /* w:spacing */
    opc_xml_end(x); /* w:pPr */
    opc_xml_start(x, "w:r");
    opc_xml_empty(x, id < 0 ? "w:separator" : "w:continuationSeparator");
    opc_xml_end(x); /* w:r */
    opc_xml_end(x); /* w:p */
    opc_xml_end(x); /* note */
}

static kiln_status notes_add(docx_ctx *c, const char *root, const char *note, const char *part,
                             const char *content_type, const char *rel_type,
                             const char *rel_target)
{
    opc_xml *x = opc_xml_new();
    if (!x)
        return kiln_error_set(c->err, KILN_E_NOMEM, NULL, "out of memory writing %s", part);
    opc_xml_start(x, root);
    opc_xml_attr(x, "xmlns:r", OPC_NS_R);
    opc_xml_attr(x, "xmlns:w", NS_W);
    separator(x, note, "separator", -1);
    separator(x, note, "continuationSeparator", 0);
    opc_xml_end(x);
    kiln_status st = opc_xml_finish(x, c->pkg, part, content_type, c->err);
    if (st != KILN_E_OK)
        return st;
    if (opc_rel_add(c->pkg, DOCX_DOCUMENT_PART, rel_type, rel_target, 0, c->err) == 0)
        return KILN_E_NOMEM;
    return KILN_E_OK;
}

kiln_status docx_footnotes_add(docx_ctx *c)
{
    kiln_status st = notes_add(c, "w:footnotes", "w:footnote", "word/footnotes.xml",
                               OPC_CT_DOCX_FOOTNOTES, OPC_REL_FOOTNOTES, "footnotes.xml");
    if (st != KILN_E_OK)
        return st;
    return notes_add(c, "w:endnotes", "w:endnote", "word/endnotes.xml", OPC_CT_DOCX_ENDNOTES,
                     OPC_REL_ENDNOTES, "endnotes.xml");
}
