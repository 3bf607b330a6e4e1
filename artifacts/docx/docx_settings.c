/*
 * docx_settings.c - word/settings.xml, related from word/document.xml, from
 * templates/docx/settings.xml as it is.
 *
 * settings.xml names the footnote and endnote separators (ids -1 and 0), so
 * docx_footnotes_add must add word/footnotes.xml and word/endnotes.xml to
 * any package this adds settings to.
 */
#include "docx_internal.h"
#include "../../common/banned.h"

kiln_status docx_settings_add(docx_ctx *c)
{
    return docx_template_part(c, "docx/settings.xml", NULL, 0, "word/settings.xml",
                              OPC_CT_DOCX_SETTINGS, OPC_REL_SETTINGS, "settings.xml");
}
