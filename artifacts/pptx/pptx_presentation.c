/*
 * pptx_presentation.c - ppt/presentation.xml, written last: it lists every
 * slide, and how many slides an item takes is known only once it is written.
 *
 * Element order is the schema's (PowerPoint refuses others): the master,
 * the notes master, the slides, then the slide and notes page sizes and
 * the default text style. Slide ids start at 256 (ids below are reserved)
 * and go up by one; the master's id, 2^31, sits above every slide id and
 * below its layouts' ids, as PowerPoint numbers them.
 */
#include <stdio.h>

#include "pptx_internal.h"
#include "../../common/banned.h"

static void write_rid(opc_xml *x, unsigned rid)
{
    char text[24];
    snprintf(text, sizeof text, "rId%u", rid);
    opc_xml_attr(x, "r:id", text);
}

/* PowerPoint's default text style: 18 pt in the body font, half an inch of
 * indent per level, for text outside placeholders. */
static void write_default_text_style(opc_xml *x)
{
    opc_xml_start(x, "p:defaultTextStyle");
    opc_xml_start(x, "a:defPPr");
    opc_xml_start(x, "a:defRPr");
    opc_xml_attr(x, "lang", "en-US");
    opc_xml_end(x);
    opc_xml_end(x);
    for (int level = 1; level <= 9; level++) {
        char name[24]; /* "a:lvl9pPr"; room to spare for the format checker */
        snprintf(name, sizeof name, "a:lvl%dpPr", level);
        opc_xml_start(x, name);
        opc_xml_attr_int(x, "marL", (int64_t)(level - 1) * 457200);
        opc_xml_attr(x, "algn", "l");
        opc_xml_attr(x, "defTabSz", "914400");
        opc_xml_attr(x, "rtl", "0");
        opc_xml_attr(x, "eaLnBrk", "1");
        opc_xml_attr(x, "latinLnBrk", "0");
        opc_xml_attr(x, "hangingPunct", "1");
        opc_xml_start(x, "a:defRPr");
        opc_xml_attr(x, "sz", "1800");
        opc_xml_attr(x, "kern", "1200");
        opc_xml_start(x, "a:solidFill");
        opc_xml_start(x, "a:schemeClr");
        opc_xml_attr(x, "val", "tx1");
        opc_xml_end(x);
        opc_xml_end(x);
        static const char *const scripts[3] = {"a:latin", "a:ea", "a:cs"};
        static const char *const faces[3] = {"+mn-lt", "+mn-ea", "+mn-cs"};
        for (int i = 0; i < 3; i++) {
            opc_xml_start(x, scripts[i]);
            opc_xml_attr(x, "typeface", faces[i]);
            opc_xml_end(x);
        }
        opc_xml_end(x); /* a:defRPr */
        opc_xml_end(x);
    }
    opc_xml_end(x);
}

kiln_status pptx_presentation_add(pptx_ctx *c)
{
    opc_xml *x = opc_xml_new();
    if (!x)
        return pptx_nomem(c, NULL);
    opc_xml_start(x, "p:presentation");
    opc_xml_attr(x, "xmlns:a", PPTX_NS_A);
    opc_xml_attr(x, "xmlns:r", OPC_NS_R);
    opc_xml_attr(x, "xmlns:p", PPTX_NS_P);
    opc_xml_attr(x, "saveSubsetFonts", "1");

    opc_xml_start(x, "p:sldMasterIdLst");
    opc_xml_start(x, "p:sldMasterId");
    opc_xml_attr_uint(x, "id", PPTX_MASTER_ID);
    write_rid(x, c->master_rid);
    opc_xml_end(x);
    opc_xml_end(x);

    if (c->notes_master_rid) {
        opc_xml_start(x, "p:notesMasterIdLst");
        opc_xml_start(x, "p:notesMasterId");
        write_rid(x, c->notes_master_rid);
        opc_xml_end(x);
        opc_xml_end(x);
    }

    if (c->slide_count) {
        opc_xml_start(x, "p:sldIdLst");
        for (unsigned i = 0; i < c->slide_count; i++) {
            opc_xml_start(x, "p:sldId");
            opc_xml_attr_uint(x, "id", PPTX_FIRST_SLIDE_ID + i);
            write_rid(x, c->slide_rids[i]);
            opc_xml_end(x);
        }
        opc_xml_end(x);
    }

    /* 16:9 has no name of its own in the schema's list: no type= (custom). */
    opc_xml_start(x, "p:sldSz");
    opc_xml_attr_int(x, "cx", PPTX_SLIDE_CX);
    opc_xml_attr_int(x, "cy", PPTX_SLIDE_CY);
    opc_xml_end(x);
    opc_xml_start(x, "p:notesSz");
    opc_xml_attr_int(x, "cx", PPTX_NOTES_CX);
    opc_xml_attr_int(x, "cy", PPTX_NOTES_CY);
    opc_xml_end(x);
    write_default_text_style(x);
    return opc_xml_finish(x, c->pkg, PPTX_PRESENTATION_PART, PPTX_CT_PRESENTATION, c->err);
}
