/* templates.c - see templates.h. Each entry embeds one file from templates/. */
#include "templates.h"

#include <string.h>

/* KILN_EMBED(sym, path): defines sym_start/sym_end around the file's bytes
 * plus a terminating NUL, in read-only data. */
#define KILN_EMBED(sym, path)                                       \
    __asm__(".section .rodata\n"                                     \
            ".balign 16\n"                                           \
            ".global " #sym "_start\n"                               \
            #sym "_start:\n"                                         \
            ".incbin \"" path "\"\n"                                 \
            ".global " #sym "_end\n"                                 \
            #sym "_end:\n"                                           \
            ".byte 0\n"                                              \
            ".previous\n");                                          \
    extern const char sym##_start[], sym##_end[];

KILN_EMBED(kiln_tpl_theme, "templates/theme.json")
KILN_EMBED(kiln_tpl_docx_styles, "templates/docx/styles.xml")
KILN_EMBED(kiln_tpl_docx_settings, "templates/docx/settings.xml")
KILN_EMBED(kiln_tpl_docx_theme, "templates/docx/theme1.xml")
KILN_EMBED(kiln_tpl_docx_fonts, "templates/docx/fontTable.xml")

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
