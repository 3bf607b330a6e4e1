/*
 * docx_theme.c - word/theme/theme1.xml, related from word/document.xml, from
 * templates/docx/theme1.xml with the spec's fonts (major = headings, minor =
 * body) and accent colors filled in. Styles name theme fonts and colors, so
 * Word's Design tab restyles a Kiln document the way it does its own.
 */
#include "docx_internal.h"
#include "../../common/banned.h"

kiln_status docx_theme_add(docx_ctx *c)
{
    opc_theme_vars tv;
    opc_theme_vars_init(&tv, &c->doc->theme);
    return docx_template_part(c, "docx/theme1.xml", tv.vars, OPC_THEME_VAR_COUNT,
                              "word/theme/theme1.xml", OPC_CT_THEME, OPC_REL_THEME,
                              "theme/theme1.xml");
}
