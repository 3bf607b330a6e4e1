/*
 * pptx_shapes.c - the XML every shape tree and graphic frame starts with,
 * shared by the slides (pptx_slide.c), the notes slides (pptx_notes.c) and
 * the tables (pptx_table.c), so that none of them calls back into another.
 */
#include <stdio.h>

#include "pptx_internal.h"
#include "../../common/banned.h"

void pptx_write_tree_start(opc_xml *x)
{
    opc_xml_start(x, "p:cSld");
    opc_xml_start(x, "p:spTree");
    opc_xml_start(x, "p:nvGrpSpPr");
    opc_xml_start(x, "p:cNvPr");
    opc_xml_attr(x, "id", "1");
    opc_xml_attr(x, "name", "");
    opc_xml_end(x);
    opc_xml_empty(x, "p:cNvGrpSpPr");
    opc_xml_empty(x, "p:nvPr");
    opc_xml_end(x);
    opc_xml_start(x, "p:grpSpPr");
    opc_xml_start(x, "a:xfrm");
    static const char *const group_xfrm[4] = {"a:off", "a:ext", "a:chOff", "a:chExt"};
    for (int i = 0; i < 4; i++) {
        opc_xml_start(x, group_xfrm[i]);
        opc_xml_attr(x, i % 2 ? "cx" : "x", "0");
        opc_xml_attr(x, i % 2 ? "cy" : "y", "0");
        opc_xml_end(x);
    }
    opc_xml_end(x);
    opc_xml_end(x);
}

void pptx_write_xfrm(opc_xml *x, const char *element, pptx_rect r)
{
    opc_xml_start(x, element);
    opc_xml_start(x, "a:off");
    opc_xml_attr_int(x, "x", r.x);
    opc_xml_attr_int(x, "y", r.y);
    opc_xml_end(x);
    opc_xml_start(x, "a:ext");
    opc_xml_attr_int(x, "cx", r.cx);
    opc_xml_attr_int(x, "cy", r.cy);
    opc_xml_end(x);
    opc_xml_end(x);
}

void pptx_write_frame_start(pptx_slide *s, const char *kind, int idx, const char *descr,
                            pptx_rect frame, const char *uri)
{
    opc_xml *x = s->x;
    unsigned id = s->next_shape_id++;
    char name[48];
    snprintf(name, sizeof name, "%s %u", kind, id - 1);
    opc_xml_start(x, "p:graphicFrame");
    opc_xml_start(x, "p:nvGraphicFramePr");
    opc_xml_start(x, "p:cNvPr");
    opc_xml_attr_uint(x, "id", id);
    opc_xml_attr(x, "name", name);
    if (descr)
        opc_xml_attr(x, "descr", descr);
    opc_xml_end(x);
    opc_xml_start(x, "p:cNvGraphicFramePr");
    opc_xml_start(x, "a:graphicFrameLocks");
    opc_xml_attr(x, "noGrp", "1");
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_start(x, "p:nvPr");
    opc_xml_start(x, "p:ph");
    /* As in the layout (and as PowerPoint writes an object put there): the
     * placeholders of a two-content slide are half size. */
    if (pptx_layouts[s->layout].body_count == 2)
        opc_xml_attr(x, "sz", "half");
    opc_xml_attr_int(x, "idx", idx);
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_end(x); /* p:nvGraphicFramePr */
    pptx_write_xfrm(x, "p:xfrm", frame);
    opc_xml_start(x, "a:graphic");
    opc_xml_start(x, "a:graphicData");
    opc_xml_attr(x, "uri", uri);
}
