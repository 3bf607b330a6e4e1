/*
 * opc_template.c - a part written from a file under templates/ with its
 * {{name}} placeholders filled in (see opc.h).
 *
 * The template's own bytes are trusted markup and copied as they are; each
 * value goes through the escaping path, escaped so it is safe both in
 * character data and in an attribute value, since a placeholder may sit in
 * either. A placeholder with no value, a "{{" never closed, or a missing
 * template is a bug in Kiln, not in the spec: KILN_E_INTERNAL naming it.
 *
 * Comments (<!-- ... -->) are for the people who edit the templates; they are
 * dropped, so a part carries only what Word reads, and placeholders named in
 * a comment are never filled in.
 */
#include "opc.h"
#include "opc_internal.h"

#include <stdio.h>
#include <string.h>

#include "../../common/templates.h"
#include "../../common/banned.h"

static const opc_var *find_var(const opc_var *vars, size_t var_count, const char *name,
                               size_t len)
{
    for (size_t i = 0; i < var_count; i++)
        if (strncmp(vars[i].name, name, len) == 0 && vars[i].name[len] == '\0')
            return &vars[i];
    return NULL;
}

kiln_status opc_template_write_bytes(opc_xml *x, const char *template_name, const char *bytes,
                                     size_t len, const opc_var *vars, size_t var_count,
                                     kiln_error *err)
{
    const char *p = bytes, *end = bytes + len;
    while (p < end) {
        const char *open = memmem(p, (size_t)(end - p), "{{", 2);
        const char *comment = memmem(p, (size_t)((open ? open : end) - p), "<!--", 4);
        if (comment) {
            const char *comment_end = memmem(comment + 4, (size_t)(end - comment - 4), "-->", 3);
            if (!comment_end)
                return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                      "template %s: a comment is never closed", template_name);
            opc_xml_raw(x, p, (size_t)(comment - p));
            p = comment_end + 3;
            /* the line the comment stood on goes with it */
            if (p < end && *p == '\n')
                p++;
            continue;
        }
        if (!open) {
            opc_xml_raw(x, p, (size_t)(end - p));
            break;
        }
        opc_xml_raw(x, p, (size_t)(open - p));
        const char *name = open + 2;
        const char *close = memmem(name, (size_t)(end - name), "}}", 2);
        if (!close)
            return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                  "template %s: a \"{{\" is never closed", template_name);
        size_t name_len = (size_t)(close - name);
        const opc_var *var = find_var(vars, var_count, name, name_len);
        if (!var)
            return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                  "template %s: no value for placeholder {{%.*s}}", template_name,
                                  (int)(name_len > 64 ? 64 : name_len), name);
        if (var->value) /* NULL is an empty value */
            opc_xml_text_anywhere(x, var->value, strlen(var->value));
        p = close + 2;
    }
    return KILN_E_OK;
}

kiln_status opc_template_write(opc_xml *x, const char *template_name, const opc_var *vars,
                               size_t var_count, kiln_error *err)
{
    size_t len = 0;
    const char *bytes = kiln_template(template_name, &len);
    if (!bytes)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "template %s is not built in",
                              template_name);
    return opc_template_write_bytes(x, template_name, bytes, len, vars, var_count, err);
}

/* Office 2013's accents, for theme slots the spec's palette does not fill. */
static const int32_t office_accents[6] = {0x4472C4, 0xED7D31, 0xA5A5A5,
                                          0xFFC000, 0x5B9BD5, 0x70AD47};

void opc_theme_vars_init(opc_theme_vars *tv, const kiln_theme *theme)
{
    static const char *const accent_names[6] = {"accent1", "accent2", "accent3",
                                                "accent4", "accent5", "accent6"};
    tv->vars[0].name = "major_font";
    tv->vars[0].value = theme->heading_font;
    tv->vars[1].name = "minor_font";
    tv->vars[1].value = theme->font;
    for (int i = 0; i < 6; i++) {
        int32_t rgb = i < theme->accent_count && theme->accent_colors[i] >= 0
                          ? theme->accent_colors[i]
                          : office_accents[i];
        snprintf(tv->accents[i], sizeof tv->accents[i], "%06X", (unsigned)(rgb & 0xFFFFFF));
        tv->vars[2 + i].name = accent_names[i];
        tv->vars[2 + i].value = tv->accents[i];
    }
}
