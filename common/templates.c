/* templates.c - see templates.h. Each entry embeds one file from templates/. */
#include "templates.h"

#include <string.h>
#include "banned.h"

/* KILN_EMBED(sym, path): defines sym_start/sym_end around the file's bytes
 * plus a terminating NUL, in read-only data. */
#define KILN_EMBED(sym, path)                           \
    __asm__(".section .rodata\n"                        \
            ".balign 16\n"                              \
            ".global " #sym "_start\n" #sym "_start:\n" \
            ".incbin \"" path "\"\n"                    \
            ".global " #sym "_end\n" #sym "_end:\n"     \
            ".byte 0\n"                                 \
            ".previous\n");                             \
    extern const char sym##_start[], sym##_end[];

KILN_EMBED(kiln_tpl_theme, "templates/theme.json")
KILN_EMBED(kiln_tpl_docx_styles, "templates/docx/styles.xml")
KILN_EMBED(kiln_tpl_docx_settings, "templates/docx/settings.xml")
KILN_EMBED(kiln_tpl_docx_theme, "templates/docx/theme1.xml")
KILN_EMBED(kiln_tpl_docx_fonts, "templates/docx/fontTable.xml")
KILN_EMBED(kiln_tpl_pptx_slide_master, "templates/pptx/slideMaster1.xml")
KILN_EMBED(kiln_tpl_pptx_layout1, "templates/pptx/slideLayout1.xml")
KILN_EMBED(kiln_tpl_pptx_layout2, "templates/pptx/slideLayout2.xml")
KILN_EMBED(kiln_tpl_pptx_layout3, "templates/pptx/slideLayout3.xml")
KILN_EMBED(kiln_tpl_pptx_layout4, "templates/pptx/slideLayout4.xml")
KILN_EMBED(kiln_tpl_pptx_layout5, "templates/pptx/slideLayout5.xml")
KILN_EMBED(kiln_tpl_pptx_layout6, "templates/pptx/slideLayout6.xml")
KILN_EMBED(kiln_tpl_pptx_theme, "templates/pptx/theme1.xml")
KILN_EMBED(kiln_tpl_pptx_notes_master, "templates/pptx/notesMaster1.xml")
KILN_EMBED(kiln_tpl_pptx_pres_props, "templates/pptx/presProps.xml")
KILN_EMBED(kiln_tpl_pptx_view_props, "templates/pptx/viewProps.xml")
KILN_EMBED(kiln_tpl_pptx_table_styles, "templates/pptx/tableStyles.xml")
/* Not a template, but embedded the same way: the `import kiln` helper module
 * the sandbox runner writes into each job's root (exec/run.c). */
KILN_EMBED(kiln_python_kiln_py, "exec/python/kiln.py")
KILN_EMBED(kiln_python_session_py, "exec/python/kiln_session.py")
/* The MCP tools' definitions (docs/tools/mcp.json, made by `make tools`). */
KILN_EMBED(kiln_tools_mcp, "docs/tools/mcp.json")

static const struct {
    const char *name;
    const char *start;
    const char *end;
} templates[] = {
    {"theme.json", kiln_tpl_theme_start, kiln_tpl_theme_end},
    {"docx/styles.xml", kiln_tpl_docx_styles_start, kiln_tpl_docx_styles_end},
    {"docx/settings.xml", kiln_tpl_docx_settings_start, kiln_tpl_docx_settings_end},
    {"docx/theme1.xml", kiln_tpl_docx_theme_start, kiln_tpl_docx_theme_end},
    {"docx/fontTable.xml", kiln_tpl_docx_fonts_start, kiln_tpl_docx_fonts_end},
    {"pptx/slideMaster1.xml", kiln_tpl_pptx_slide_master_start, kiln_tpl_pptx_slide_master_end},
    {"pptx/slideLayout1.xml", kiln_tpl_pptx_layout1_start, kiln_tpl_pptx_layout1_end},
    {"pptx/slideLayout2.xml", kiln_tpl_pptx_layout2_start, kiln_tpl_pptx_layout2_end},
    {"pptx/slideLayout3.xml", kiln_tpl_pptx_layout3_start, kiln_tpl_pptx_layout3_end},
    {"pptx/slideLayout4.xml", kiln_tpl_pptx_layout4_start, kiln_tpl_pptx_layout4_end},
    {"pptx/slideLayout5.xml", kiln_tpl_pptx_layout5_start, kiln_tpl_pptx_layout5_end},
    {"pptx/slideLayout6.xml", kiln_tpl_pptx_layout6_start, kiln_tpl_pptx_layout6_end},
    {"pptx/theme1.xml", kiln_tpl_pptx_theme_start, kiln_tpl_pptx_theme_end},
    {"pptx/notesMaster1.xml", kiln_tpl_pptx_notes_master_start, kiln_tpl_pptx_notes_master_end},
    {"pptx/presProps.xml", kiln_tpl_pptx_pres_props_start, kiln_tpl_pptx_pres_props_end},
    {"pptx/viewProps.xml", kiln_tpl_pptx_view_props_start, kiln_tpl_pptx_view_props_end},
    {"pptx/tableStyles.xml", kiln_tpl_pptx_table_styles_start, kiln_tpl_pptx_table_styles_end},
    {"python/kiln.py", kiln_python_kiln_py_start, kiln_python_kiln_py_end},
    {"python/kiln_session.py", kiln_python_session_py_start, kiln_python_session_py_end},
    {"tools/mcp.json", kiln_tools_mcp_start, kiln_tools_mcp_end},
};

const char *kiln_template(const char *name, size_t *len)
{
    for (size_t i = 0; i < sizeof templates / sizeof templates[0]; i++) {
        if (strcmp(templates[i].name, name) == 0) {
            if (len)
                *len = (size_t)(templates[i].end - templates[i].start);
            return templates[i].start;
        }
    }
    return NULL;
}
