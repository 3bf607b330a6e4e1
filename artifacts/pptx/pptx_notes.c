/*
 * pptx_notes.c - ppt/notesSlides/notesSlideN.xml: a slide's speaker notes.
 *
 * A notes slide holds two placeholders of the notes master: the slide's
 * picture (sldImg, drawn by the application from the slide itself) and the
 * notes text (body idx 1), one paragraph per line of the spec's notes. It is
 * related to the notes master and to its slide, and the slide to it; the
 * notes master is added with the first notes of the deck.
 */
#include <stdio.h>

#include "pptx_internal.h"
#include "../../common/banned.h"

static void notes_placeholder_start(opc_xml *x, unsigned id, const char *name, const char *type,
                                    int idx, int image)
{
    opc_xml_start(x, "p:sp");
    opc_xml_start(x, "p:nvSpPr");
    opc_xml_start(x, "p:cNvPr");
    opc_xml_attr_uint(x, "id", id);
    opc_xml_attr(x, "name", name);
    opc_xml_end(x);
    opc_xml_start(x, "p:cNvSpPr");
    opc_xml_start(x, "a:spLocks");
    opc_xml_attr(x, "noGrp", "1");
    if (image) {
        opc_xml_attr(x, "noRot", "1");
        opc_xml_attr(x, "noChangeAspect", "1");
    }
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_start(x, "p:nvPr");
    opc_xml_start(x, "p:ph");
    opc_xml_attr(x, "type", type);
    if (idx > 0)
        opc_xml_attr_int(x, "idx", idx);
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_end(x); /* p:nvSpPr */
    opc_xml_empty(x, "p:spPr");
}

kiln_status pptx_notes_add(pptx_slide *s, const char *text)
{
    pptx_ctx *c = s->c;
    kiln_status st;
    if (!c->notes_master_rid && (st = pptx_notes_master_add(c)) != KILN_E_OK)
        return st;

    unsigned n = ++c->notes_count;
    char part[48], target[48];
    snprintf(part, sizeof part, "ppt/notesSlides/notesSlide%u.xml", n);
    if (!opc_rel_add(c->pkg, part, OPC_REL_NOTES_MASTER, "../notesMasters/notesMaster1.xml", 0,
                     c->err))
        return pptx_nomem(c, NULL);
    snprintf(target, sizeof target, "../slides/slide%u.xml", s->number);
    if (!opc_rel_add(c->pkg, part, OPC_REL_SLIDE, target, 0, c->err))
        return pptx_nomem(c, NULL);
    snprintf(target, sizeof target, "../notesSlides/notesSlide%u.xml", n);
    if (!opc_rel_add(c->pkg, s->part, OPC_REL_NOTES_SLIDE, target, 0, c->err))
        return pptx_nomem(c, NULL);

    /* The text body is written by pptx_text.c through a slide view of this
     * part: same writer, the notes part's name for any relationship. */
    pptx_slide notes = *s;
    notes.x = opc_xml_new();
    if (!notes.x)
        return pptx_nomem(c, NULL);
    snprintf(notes.part, sizeof notes.part, "%s", part);
    notes.status = KILN_E_OK;
    notes.notes = 1;
    opc_xml *x = notes.x;
    opc_xml_start(x, "p:notes");
    opc_xml_attr(x, "xmlns:a", PPTX_NS_A);
    opc_xml_attr(x, "xmlns:r", OPC_NS_R);
    opc_xml_attr(x, "xmlns:p", PPTX_NS_P);
    pptx_write_tree_start(x);
    notes_placeholder_start(x, 2, "Slide Image Placeholder 1", "sldImg", 0, 1);
    opc_xml_end(x); /* p:sp */
    notes_placeholder_start(x, 3, "Notes Placeholder 2", "body", 1, 0);
    pptx_text_body_plain(&notes, text, NULL);
    opc_xml_end(x); /* p:sp */
    opc_xml_end(x); /* p:spTree */
    opc_xml_end(x); /* p:cSld */
    opc_xml_start(x, "p:clrMapOvr");
    opc_xml_empty(x, "a:masterClrMapping");
    opc_xml_end(x);
    if (notes.status != KILN_E_OK || opc_xml_failed(x)) {
        st = notes.status != KILN_E_OK ? notes.status : opc_xml_error(x, NULL, c->err);
        opc_xml_free(x);
        return st == KILN_E_NOMEM ? pptx_nomem(c, NULL) : st;
    }
    return opc_xml_finish(x, c->pkg, part, PPTX_CT_NOTES_SLIDE, c->err);
}
