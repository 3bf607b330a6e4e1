/*
 * templates.h - the files under templates/, built into the binary.
 *
 * Defaults live as readable files (templates/theme.json, and later the docx
 * and pptx parts) rather than as C string literals, so a designer can change
 * a color without reading C. The build embeds them with the assembler's
 * .incbin (common/templates.c): no generator step, and the binary needs
 * nothing on disk at run time.
 */
#ifndef KILN_TEMPLATES_H
#define KILN_TEMPLATES_H

#include <stddef.h>

/* Bytes of an embedded template by its path under templates/ ("theme.json");
 * NULL when there is none. The data is NUL-terminated (not counted in *len). */
const char *kiln_template(const char *name, size_t *len);

#endif
