/*
 * docx_fonts.c - word/fontTable.xml, related from word/document.xml.
 *
 * The font table lists each font the document uses once, with what Word
 * needs to substitute a similar font when the reader lacks it (panose1,
 * family, pitch). Those facts live in a readable catalogue,
 * templates/docx/fontTable.xml, itself a valid font table: the entry of each
 * used font is copied from it, and a font the catalogue does not know gets a
 * plain entry (its name, and monospace or not by its role). The catalogue is
 * parsed rather than filled in like the other templates because the body,
 * heading and monospace fonts are often the same font, and a font must not
 * be listed twice.
 */
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "../../common/templates.h"
#include "docx_internal.h"
#include "../../common/banned.h"

#define NS_W "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
#define CATALOGUE "docx/fontTable.xml"

/* The catalogue's w:font element for name, or NULL. */
static xmlNodePtr catalogue_entry(xmlDocPtr catalogue, const char *name)
{
    xmlNodePtr root = xmlDocGetRootElement(catalogue);
    for (xmlNodePtr n = root ? root->children : NULL; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE || !xmlStrEqual(n->name, BAD_CAST "font"))
            continue;
        xmlChar *entry_name = xmlGetNsProp(n, BAD_CAST "name", BAD_CAST NS_W);
        int same = entry_name && xmlStrEqual(entry_name, BAD_CAST name);
        xmlFree(entry_name);
        if (same)
            return n;
    }
    return NULL;
}

/* Copy a catalogue entry as it is written there (trusted markup: the
 * catalogue is built into Kiln). 0, or -1 when out of memory. */
static int copy_entry(opc_xml *x, xmlDocPtr catalogue, xmlNodePtr entry)
{
    xmlBufferPtr buf = xmlBufferCreate();
    if (!buf)
        return -1;
    int len = xmlNodeDump(buf, catalogue, entry, 0, 0);
    if (len >= 0)
        opc_xml_raw(x, (const char *)xmlBufferContent(buf), (size_t)xmlBufferLength(buf));
    xmlBufferFree(buf);
    return len < 0 ? -1 : 0;
}

static void plain_entry(opc_xml *x, const char *name, int monospace)
{
    opc_xml_start(x, "w:font");
    opc_xml_attr(x, "w:name", name);
    opc_xml_val(x, "w:charset", "w:val", "00");
    opc_xml_val(x, "w:family", "w:val", monospace ? "modern" : "auto");
    opc_xml_val(x, "w:pitch", "w:val", monospace ? "fixed" : "variable");
    opc_xml_end(x);
}

kiln_status docx_fonts_add(docx_ctx *c)
{
    const kiln_theme *t = &c->doc->theme;
    const char *fonts[3] = {t->font, t->heading_font, t->mono_font};
    kiln_status st = KILN_E_OK;
    size_t len = 0;
    const char *bytes = kiln_template(CATALOGUE, &len);
    if (!bytes)
        return kiln_error_set(c->err, KILN_E_INTERNAL, NULL, "template %s is not built in",
                              CATALOGUE);
    xmlDocPtr catalogue = xmlReadMemory(bytes, (int)len, CATALOGUE, "UTF-8",
                                        XML_PARSE_NONET | XML_PARSE_NOBLANKS | XML_PARSE_NOERROR |
                                            XML_PARSE_NOWARNING);
    if (!catalogue)
        return kiln_error_set(c->err, KILN_E_INTERNAL, NULL, "template %s is not well-formed XML",
                              CATALOGUE);
    opc_xml *x = opc_xml_new();
    if (!x) {
        st = kiln_error_set(c->err, KILN_E_NOMEM, NULL, "out of memory writing the font table");
        goto free_catalogue;
    }
    opc_xml_start(x, "w:fonts");
    opc_xml_attr(x, "xmlns:w", NS_W);
    for (int i = 0; i < 3; i++) {
        int listed = 0;
        for (int j = 0; j < i; j++)
            listed |= strcmp(fonts[j], fonts[i]) == 0;
        if (listed)
            continue;
        xmlNodePtr entry = catalogue_entry(catalogue, fonts[i]);
        if (!entry)
            plain_entry(x, fonts[i], i == 2);
        else if (copy_entry(x, catalogue, entry) != 0) {
            opc_xml_free(x);
            st = kiln_error_set(c->err, KILN_E_NOMEM, NULL,
                                "out of memory writing the font table");
            goto free_catalogue;
        }
    }
    opc_xml_end(x);
    st = opc_xml_finish(x, c->pkg, "word/fontTable.xml", OPC_CT_DOCX_FONT_TABLE, c->err);
    if (st == KILN_E_OK && opc_rel_add(c->pkg, DOCX_DOCUMENT_PART, OPC_REL_FONT_TABLE,
                                       "fontTable.xml", 0, c->err) == 0)
        st = KILN_E_NOMEM;
free_catalogue:
    xmlFreeDoc(catalogue);
    return st;
}
