/*
 * pptx_master.c - the parts of a deck that do not depend on its content:
 * the slide master with its six layouts and theme, the notes master with
 * its theme, presentation and view properties, and the table styles. Each
 * comes from a template under templates/pptx/; only the theme has values
 * from the spec (fonts and accent colors).
 *
 * pptx_layouts and pptx_body_mar_l repeat the numbers the templates declare
 * (placeholder rectangles, font sizes, the body's left margins), because the
 * slide writer fits text and places pictures with them; the tests check that
 * the two agree.
 */
#include <stdio.h>

#include "pptx_internal.h"
#include "../../common/banned.h"

/* Font sizes per level, 1/100 pt. The master's bodyStyle (content bodies):
 * 28, 24, then 20 pt. The title slide's subtitle and the section header's
 * text set every level to 24 pt in their layouts. */
/* clang-format off: the geometry macros and the layout table, a row a line */
#define CONTENT_SIZES                                        \
    {                                                        \
        2800, 2400, 2000, 2000, 2000, 2000, 2000, 2000, 2000 \
    }
#define PLAIN_SIZES                                          \
    {                                                        \
        2400, 2400, 2400, 2400, 2400, 2400, 2400, 2400, 2400 \
    }

/* Office 2013's 16:9 rectangles, in EMU. */
#define RECT_TITLE                        \
    {                                     \
        838200, 365125, 10515600, 1325563 \
    }
#define RECT_BODY                          \
    {                                      \
        838200, 1825625, 10515600, 4351338 \
    }
#define RECT_HALF_LEFT                    \
    {                                     \
        838200, 1825625, 5181600, 4351338 \
    }
#define RECT_HALF_RIGHT                    \
    {                                      \
        6172200, 1825625, 5181600, 4351338 \
    }
#define RECT_NONE  \
    {              \
        0, 0, 0, 0 \
    }

const pptx_layout_info pptx_layouts[PPTX_LAYOUT_COUNT + 1] = {
    [PPTX_LAYOUT_TITLE] =
        {
            .name = "Title Slide",
            .file = "pptx/slideLayout1.xml",
            .title_type = "ctrTitle",
            .title = {1524000, 1122363, 9144000, 2387600},
            .title_size = 6000,
            .body_count = 1,
            .body_type = "subTitle",
            .body = {{1524000, 3602038, 9144000, 1655762}, RECT_NONE},
            .body_size = PLAIN_SIZES,
            .body_bullets = 0,
        },
    [PPTX_LAYOUT_CONTENT] =
        {
            .name = "Title and Content",
            .file = "pptx/slideLayout2.xml",
            .title_type = "title",
            .title = RECT_TITLE,
            .title_size = 4400,
            .body_count = 1,
            .body_type = NULL,
            .body = {RECT_BODY, RECT_NONE},
            .body_size = CONTENT_SIZES,
            .body_bullets = 1,
        },
    [PPTX_LAYOUT_SECTION] =
        {
            .name = "Section Header",
            .file = "pptx/slideLayout3.xml",
            .title_type = "title",
            .title = {831850, 1709738, 10515600, 2852737},
            .title_size = 6000,
            .body_count = 1,
            .body_type = "body",
            .body = {{831850, 4589463, 10515600, 1500187}, RECT_NONE},
            .body_size = PLAIN_SIZES,
            .body_bullets = 0,
        },
    [PPTX_LAYOUT_TWO_CONTENT] =
        {
            .name = "Two Content",
            .file = "pptx/slideLayout4.xml",
            .title_type = "title",
            .title = RECT_TITLE,
            .title_size = 4400,
            .body_count = 2,
            .body_type = NULL,
            .body = {RECT_HALF_LEFT, RECT_HALF_RIGHT},
            .body_size = CONTENT_SIZES,
            .body_bullets = 1,
        },
    [PPTX_LAYOUT_TITLE_ONLY] =
        {
            .name = "Title Only",
            .file = "pptx/slideLayout5.xml",
            .title_type = "title",
            .title = RECT_TITLE,
            .title_size = 4400,
            .body_count = 0,
            .body_type = NULL,
            .body = {RECT_NONE, RECT_NONE},
            .body_size = CONTENT_SIZES,
            .body_bullets = 0,
        },
    [PPTX_LAYOUT_BLANK] =
        {
            .name = "Blank",
            .file = "pptx/slideLayout6.xml",
            .title_type = NULL,
            .title = RECT_NONE,
            .title_size = 0,
            .body_count = 0,
            .body_type = NULL,
            .body = {RECT_NONE, RECT_NONE},
            .body_size = CONTENT_SIZES,
            .body_bullets = 0,
        },
};
/* clang-format on */

/* marL of the master's bodyStyle levels: a quarter inch for the bullet,
 * then half an inch more per level. */
const int64_t pptx_body_mar_l[PPTX_BODY_LEVELS] = {228600,  685800,  1143000, 1600200, 2057400,
                                                   2514600, 2971800, 3429000, 3886200};

/* Write templates/<template_name> as part_name. The caller relates it. */
static kiln_status template_part(pptx_ctx *c, const char *template_name, const opc_var *vars,
                                 size_t var_count, const char *part_name,
                                 const char *content_type)
{
    opc_xml *x = opc_xml_new_bare();
    if (!x)
        return pptx_nomem(c, NULL);
    kiln_status st = opc_template_write(x, template_name, vars, var_count, c->err);
    if (st != KILN_E_OK) {
        opc_xml_free(x);
        return st;
    }
    return opc_xml_finish(x, c->pkg, part_name, content_type, c->err);
}

/* A relationship; opc_rel_add fails only for want of memory, and has said
 * so in err. */
static kiln_status relate(pptx_ctx *c, const char *source, const char *type, const char *target,
                          unsigned *rid)
{
    unsigned id = opc_rel_add(c->pkg, source, type, target, 0, c->err);
    if (id == 0)
        return KILN_E_NOMEM;
    if (rid)
        *rid = id;
    return KILN_E_OK;
}

/* The theme template filled in from the spec's theme, as part_name. */
static kiln_status theme_part(pptx_ctx *c, const char *part_name)
{
    opc_theme_vars tv;
    opc_theme_vars_init(&tv, &c->doc->theme);
    return template_part(c, "pptx/theme1.xml", tv.vars, OPC_THEME_VAR_COUNT, part_name,
                         OPC_CT_THEME);
}

kiln_status pptx_master_add(pptx_ctx *c)
{
    /* First, so that it is presentation.xml's rId1, as PowerPoint has it. */
    kiln_status st = relate(c, PPTX_PRESENTATION_PART, OPC_REL_SLIDE_MASTER,
                            "slideMasters/slideMaster1.xml", &c->master_rid);
    if (st != KILN_E_OK)
        return st;
    st = template_part(c, "pptx/slideMaster1.xml", NULL, 0, PPTX_MASTER_PART,
                       PPTX_CT_SLIDE_MASTER);
    if (st != KILN_E_OK)
        return st;

    /* The master's sldLayoutIdLst names its layouts rId1..rId6 in order,
     * and its theme follows them: declare them in that order. */
    for (int n = 1; n <= PPTX_LAYOUT_COUNT; n++) {
        char target[48], part[48];
        snprintf(target, sizeof target, "../slideLayouts/slideLayout%d.xml", n);
        snprintf(part, sizeof part, "ppt/slideLayouts/slideLayout%d.xml", n);
        st = template_part(c, pptx_layouts[n].file, NULL, 0, part, PPTX_CT_SLIDE_LAYOUT);
        if (st == KILN_E_OK)
            st = relate(c, PPTX_MASTER_PART, OPC_REL_SLIDE_LAYOUT, target, NULL);
        if (st == KILN_E_OK)
            st = relate(c, part, OPC_REL_SLIDE_MASTER, "../slideMasters/slideMaster1.xml", NULL);
        if (st != KILN_E_OK)
            return st;
    }
    st = theme_part(c, "ppt/theme/theme1.xml");
    if (st != KILN_E_OK)
        return st;
    return relate(c, PPTX_MASTER_PART, OPC_REL_THEME, "../theme/theme1.xml", NULL);
}

kiln_status pptx_notes_master_add(pptx_ctx *c)
{
    kiln_status st = template_part(c, "pptx/notesMaster1.xml", NULL, 0, PPTX_NOTES_MASTER_PART,
                                   PPTX_CT_NOTES_MASTER);
    if (st == KILN_E_OK)
        st = theme_part(c, "ppt/theme/theme2.xml");
    if (st == KILN_E_OK)
        st = relate(c, PPTX_NOTES_MASTER_PART, OPC_REL_THEME, "../theme/theme2.xml", NULL);
    if (st == KILN_E_OK)
        st = relate(c, PPTX_PRESENTATION_PART, OPC_REL_NOTES_MASTER,
                    "notesMasters/notesMaster1.xml", &c->notes_master_rid);
    return st;
}

kiln_status pptx_props_add(pptx_ctx *c)
{
    kiln_status st = template_part(c, "pptx/presProps.xml", NULL, 0, "ppt/presProps.xml",
                                   PPTX_CT_PRES_PROPS);
    if (st == KILN_E_OK)
        st = relate(c, PPTX_PRESENTATION_PART, OPC_REL_PRES_PROPS, "presProps.xml", NULL);
    if (st == KILN_E_OK)
        st = template_part(c, "pptx/viewProps.xml", NULL, 0, "ppt/viewProps.xml",
                           PPTX_CT_VIEW_PROPS);
    if (st == KILN_E_OK)
        st = relate(c, PPTX_PRESENTATION_PART, OPC_REL_VIEW_PROPS, "viewProps.xml", NULL);
    /* theme1.xml was written with the master; presentation.xml relates to
     * it too, after the properties, as PowerPoint orders them. */
    if (st == KILN_E_OK)
        st = relate(c, PPTX_PRESENTATION_PART, OPC_REL_THEME, "theme/theme1.xml", NULL);
    if (st == KILN_E_OK)
        st = template_part(c, "pptx/tableStyles.xml", NULL, 0, "ppt/tableStyles.xml",
                           PPTX_CT_TABLE_STYLES);
    if (st == KILN_E_OK)
        st = relate(c, PPTX_PRESENTATION_PART, OPC_REL_TABLE_STYLES, "tableStyles.xml", NULL);
    return st;
}
