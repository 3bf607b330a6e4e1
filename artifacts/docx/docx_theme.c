/*
 * docx_theme.c - word/theme/theme1.xml, related from word/document.xml, from
 * templates/docx/theme1.xml with the spec's fonts (major = headings, minor =
 * body) and accent colors filled in. Styles name theme fonts and colors, so
 * Word's Design tab restyles a Kiln document the way it does its own.
 */
#include <stdio.h>

#include "docx_internal.h"

/* Office 2013's accents, for theme slots the spec's palette does not fill. */
static const int32_t office_accents[6] = {0x4472C4, 0xED7D31, 0xA5A5A5,
                                          0xFFC000, 0x5B9BD5, 0x70AD47};

kiln_status docx_theme_add(docx_ctx *c)
{
    const kiln_theme *t = &c->doc->theme;
    char accents[6][8];
    for (int i = 0; i < 6; i++) {
        int32_t rgb = i < t->accent_count && t->accent_colors[i] >= 0 ? t->accent_colors[i]
                                                                       : office_accents[i];
        snprintf(accents[i], sizeof accents[i], "%06X", (unsigned)(rgb & 0xFFFFFF));
    }
    const opc_var vars[] = {
        {"major_font", t->heading_font},
        {"minor_font", t->font},
        {"accent1", accents[0]},
        {"accent2", accents[1]},
        {"accent3", accents[2]},
        {"accent4", accents[3]},
        {"accent5", accents[4]},
        {"accent6", accents[5]},
    };
    return docx_template_part(c, "docx/theme1.xml", vars, sizeof vars / sizeof vars[0],
                              "word/theme/theme1.xml", OPC_CT_THEME, OPC_REL_THEME,
                              "theme/theme1.xml");
}
