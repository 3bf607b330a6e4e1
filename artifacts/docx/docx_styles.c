/*
 * docx_styles.c - word/styles.xml from templates/docx/styles.xml.
 *
 * The template holds every style the body refers to (DOCX_STYLE_* in
 * docx_internal.h) with Word's built-in ids and names; this file only works
 * out the values its placeholders take from the spec's theme:
 *
 *   - sizes: the body size, and every other size in proportion to it, so a
 *     spec with a 12 pt body gets headings as much larger as Word's own
 *     defaults are over its 11 pt body (Heading 1 16 pt, caption 9 pt, ...);
 *     rounded to the half-points w:sz counts in;
 *   - heading colors: the first accent color darkened the way Word's
 *     w:themeShade darkens a theme color (luminance scaled in HSL), because
 *     the template names the theme color too and Word shows that one: the
 *     value written beside it must be the same color, for readers that do
 *     not resolve themes;
 *   - tab stops of the header, footer and TOC styles from the page's text
 *     width, so a right tab sits on the right margin whatever the page.
 *
 * docx_template_part, shared with docx_settings.c, is the one place a
 * template becomes a part with its relationship.
 */
#include <math.h>
#include <stdio.h>

#include "docx_internal.h"

#include "../../common/color.h"
#include "../../common/banned.h"

/* Sizes relative to the body, from Word's defaults over an 11 pt body. */
#define TITLE_PT 28.0
#define SUBTITLE_PT 14.0
#define CODE_PT 10.0
#define CAPTION_PT 9.0
#define SMALL_PT 9.0 /* page header and footer */
static const double heading_pt[6] = {16.0, 13.0, 12.0, 11.0, 11.0, 11.0};

/* What Word's w:themeShade="BF" and "7F" leave of the luminance. */
#define SHADE_BF (191.0 / 255.0)
#define SHADE_7F (127.0 / 255.0)

/* Word's limit for a font size: 1638 pt, 3276 half-points. */
#define HALF_POINTS_MAX 3276

kiln_status docx_template_part(docx_ctx *c, const char *template_name, const opc_var *vars,
                               size_t var_count, const char *part_name, const char *content_type,
                               const char *rel_type, const char *rel_target)
{
    opc_xml *x = opc_xml_new_bare();
    if (!x)
        return kiln_error_set(c->err, KILN_E_NOMEM, NULL, "out of memory writing %s", part_name);
    kiln_status st = opc_template_write(x, template_name, vars, var_count, c->err);
    if (st != KILN_E_OK) {
        opc_xml_free(x);
        return st;
    }
    st = opc_xml_finish(x, c->pkg, part_name, content_type, c->err);
    if (st != KILN_E_OK)
        return st;
    /* opc_rel_add fails only for want of memory, and has said so in err. */
    if (opc_rel_add(c->pkg, DOCX_DOCUMENT_PART, rel_type, rel_target, 0, c->err) == 0)
        return KILN_E_NOMEM;
    return KILN_E_OK;
}

/* body_pt * (pt / 11) in half-points, as text. */
static void scaled_size(char *buf, size_t cap, double body_pt, double pt)
{
    long half = lround(body_pt * pt / DOCX_BODY_DEFAULT_PT * 2.0);
    if (half < 2)
        half = 2;
    if (half > HALF_POINTS_MAX)
        half = HALF_POINTS_MAX;
    snprintf(buf, cap, "%ld", half);
}

static void color_text(char buf[8], int32_t rgb)
{
    snprintf(buf, 8, "%06X", (unsigned)(rgb & 0xFFFFFF));
}

static void twips_text(char *buf, size_t cap, double pt)
{
    long twips = lround(pt * DOCX_TWIPS_PER_PT);
    snprintf(buf, cap, "%ld", twips > 0 ? twips : 1);
}

kiln_status docx_styles_add(docx_ctx *c)
{
    const kiln_theme *t = &c->doc->theme;
    const kiln_page *pg = &c->doc->page;
    double body = t->font_size > 0 ? t->font_size : DOCX_BODY_DEFAULT_PT;

    char sz_body[12], sz_title[12], sz_subtitle[12], sz_code[12], sz_caption[12], sz_small[12],
        sz_h[6][12];
    scaled_size(sz_body, sizeof sz_body, body, DOCX_BODY_DEFAULT_PT);
    scaled_size(sz_title, sizeof sz_title, body, TITLE_PT);
    scaled_size(sz_subtitle, sizeof sz_subtitle, body, SUBTITLE_PT);
    scaled_size(sz_code, sizeof sz_code, body, CODE_PT);
    scaled_size(sz_caption, sizeof sz_caption, body, CAPTION_PT);
    scaled_size(sz_small, sizeof sz_small, body, SMALL_PT);
    for (int i = 0; i < 6; i++)
        scaled_size(sz_h[i], sizeof sz_h[i], body, heading_pt[i]);

    int32_t accent1 = t->accent_count > 0 && t->accent_colors[0] >= 0 ? t->accent_colors[0]
                                                                      : 0x4472C4;
    char accent[8], heading_color[8], heading_color_dark[8], header_fill[8], header_font[8];
    color_text(accent, accent1);
    color_text(heading_color, kiln_color_lum(accent1, SHADE_BF, 0));
    color_text(heading_color_dark, kiln_color_lum(accent1, SHADE_7F, 0));
    color_text(header_fill, t->header_fill >= 0 ? t->header_fill : accent1);
    color_text(header_font, t->header_font_color >= 0 ? t->header_font_color : 0xFFFFFF);

    /* The body writer's text width when it has worked it out, else the same
     * from the page; styles may be added before or after the body. */
    double width = c->text_width_pt > 0 ? c->text_width_pt
                                        : pg->width_pt - pg->margin_left - pg->margin_right;
    if (width < 72)
        width = 72;
    char tab_center[24], tab_right[24], toc_tab[24];
    twips_text(tab_center, sizeof tab_center, width / 2);
    twips_text(tab_right, sizeof tab_right, width);
    /* Half a point short of the margin, as Word places its TOC tab: a tab
     * exactly on the margin can wrap the page number in some layouts. */
    twips_text(toc_tab, sizeof toc_tab, width - 0.5);

    const opc_var vars[] = {
        {"font", t->font},
        {"heading_font", t->heading_font},
        {"mono_font", t->mono_font},
        {"sz_body", sz_body},
        {"sz_title", sz_title},
        {"sz_subtitle", sz_subtitle},
        {"sz_h1", sz_h[0]},
        {"sz_h2", sz_h[1]},
        {"sz_h3", sz_h[2]},
        {"sz_h4", sz_h[3]},
        {"sz_h5", sz_h[4]},
        {"sz_h6", sz_h[5]},
        {"sz_code", sz_code},
        {"sz_caption", sz_caption},
        {"sz_small", sz_small},
        {"accent1", accent},
        {"heading_color", heading_color},
        {"heading_color_dark", heading_color_dark},
        {"header_fill", header_fill},
        {"header_font_color", header_font},
        {"tab_center", tab_center},
        {"tab_right", tab_right},
        {"toc_tab", toc_tab},
    };
    return docx_template_part(c, "docx/styles.xml", vars, sizeof vars / sizeof vars[0],
                              "word/styles.xml", OPC_CT_DOCX_STYLES, OPC_REL_STYLES,
                              "styles.xml");
}
