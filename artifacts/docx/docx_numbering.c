/*
 * docx_numbering.c - word/numbering.xml: two list definitions and one list
 * instance per list of the document.
 *
 * The definitions (w:abstractNum) are fixed: DOCX_ABSTRACT_BULLET, bullets
 * cycling through "•", "◦", "▪" over nine levels, and DOCX_ABSTRACT_ORDERED,
 * numbers cycling through 1., a., i. The bullets are plain Unicode
 * characters in the paragraph's own font rather than Word's usual Symbol or
 * Wingdings code points, which show as boxes or letters wherever those
 * fonts are missing (LibreOffice on Linux, most web previews). Each level
 * indents 720 twips (half an inch) more, with the marker hanging 360 into it,
 * as Word's own lists do. "hybridMultilevel" is what Word writes for the
 * lists its ribbon buttons make.
 *
 * The instances (w:num) come from ctx->nums, one per list the body met. In
 * Word, every instance of one definition shares its counters: a second
 * numbered list would carry on from the first. A w:lvlOverride with a
 * w:startOverride is what restarts an instance, so every ordered instance
 * gets one at the level its items sit at, starting at the list's start.
 * Bullets have nothing to restart. A list whose numbers its level's letters
 * or roman numerals cannot write (list_marker.h) also redefines that level
 * as decimal in its override, as the other writers number it.
 *
 * Element order (wml.xsd, CT_Numbering): every w:abstractNum, then every
 * w:num.
 */
#include <math.h>

#include "docx_internal.h"
#include "../../common/banned.h"

#define NS_W "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
#define LEVELS 9
#define INDENT_STEP 720 /* twips per level */
#define HANGING 360

static const char *const bullet_text[3] = {"\xE2\x80\xA2",  /* U+2022 bullet */
                                           "\xE2\x97\xA6",  /* U+25E6 white bullet */
                                           "\xE2\x96\xAA"}; /* U+25AA small square */
static const char *const ordered_format[3] = {"decimal", "lowerLetter", "lowerRoman"};
/* w:lvlText "%N." shows level N's own counter (levels count from 1 here). */
static const char *const ordered_text[LEVELS] = {"%1.", "%2.", "%3.", "%4.", "%5.",
                                                 "%6.", "%7.", "%8.", "%9."};

/* One level of a definition; format: its w:numFmt ("bullet" for bullets);
 * hanging: how far the marker hangs into the indent, in twips. The marker
 * starts where the level's default one does, so a wider hanging moves the
 * level's text right instead of the marker into the margin. */
static void write_level(opc_xml *x, int ordered, int level, const char *format, long hanging)
{
    opc_xml_start(x, "w:lvl");
    opc_xml_attr_int(x, "w:ilvl", level);
    opc_xml_val_int(x, "w:start", "w:val", 1);
    opc_xml_val(x, "w:numFmt", "w:val", format);
    opc_xml_val(x, "w:lvlText", "w:val", ordered ? ordered_text[level] : bullet_text[level % 3]);
    opc_xml_val(x, "w:lvlJc", "w:val", "left");
    opc_xml_start(x, "w:pPr");
    opc_xml_start(x, "w:ind");
    opc_xml_attr_int(x, "w:left", (int)(INDENT_STEP * (level + 1) - HANGING + hanging));
    opc_xml_attr_int(x, "w:hanging", (int)hanging);
    opc_xml_end(x); /* w:ind */
    opc_xml_end(x); /* w:pPr */
    opc_xml_end(x); /* w:lvl */
}

/* The space between a marker and its item's text, in points: a marker that
 * leaves less than MARKER_GAP_MIN_PT in the default hanging gets a hanging
 * that leaves MARKER_GAP_PT (what "10." leaves in the default at 11 pt). */
#define MARKER_GAP_MIN_PT 2.0
#define MARKER_GAP_PT 4.0

/* Width of a marker in points at size, in Calibri's advances (the theme
 * font; other fonts are estimated by it, as table columns are). */
static double marker_width_pt(const char *marker, double size)
{
    double units = 0;
    for (const unsigned char *p = (const unsigned char *)marker; *p; p++)
        units += *p >= 32 && *p < 127 ? kiln_calibri_regular[*p - 32] : KILN_METRIC_OTHER_UNITS;
    return units * size / KILN_METRIC_UNITS_PER_EM;
}

/* The hanging (twips) an ordered instance's widest marker needs, at least
 * HANGING, so a list of 100 items or one in roman numerals never runs its
 * numbers into its text (Word would push the text to the next tab stop on
 * the wide ones only). Digits are all one width, so the last number of a
 * list in digits is its widest; letters (78 markers at most) and roman
 * numerals (3999) are measured one by one. */
static long instance_hanging(const docx_num *n, double size)
{
    char marker[KILN_LIST_MARKER_MAX];
    double widest = 0;
    int64_t from = n->marks == KILN_MARKS_DIGITS ? n->last : n->start;
    for (int64_t k = from; k <= n->last; k++) {
        kiln_list_marker(n->marks, n->level, k, marker, sizeof marker);
        double w = marker_width_pt(marker, size);
        if (w > widest)
            widest = w;
    }
    if ((widest + MARKER_GAP_MIN_PT) * DOCX_TWIPS_PER_PT <= HANGING)
        return HANGING;
    return (long)ceil((widest + MARKER_GAP_PT) * DOCX_TWIPS_PER_PT / 10.0) * 10;
}

static void write_abstract(opc_xml *x, int abstract_id, const char *nsid)
{
    int ordered = abstract_id == DOCX_ABSTRACT_ORDERED;
    opc_xml_start(x, "w:abstractNum");
    opc_xml_attr_int(x, "w:abstractNumId", abstract_id);
    /* nsid identifies the definition when lists are pasted between
     * documents; any value unique within the document will do. */
    opc_xml_val(x, "w:nsid", "w:val", nsid);
    opc_xml_val(x, "w:multiLevelType", "w:val", "hybridMultilevel");
    for (int level = 0; level < LEVELS; level++)
        write_level(x, ordered, level, ordered ? ordered_format[level % 3] : "bullet", HANGING);
    opc_xml_end(x);
}

static void write_num(opc_xml *x, const docx_num *n, double size)
{
    int ordered = n->ordered != 0;
    opc_xml_start(x, "w:num");
    opc_xml_attr_uint(x, "w:numId", n->num_id);
    opc_xml_val_int(x, "w:abstractNumId", "w:val",
                    ordered ? DOCX_ABSTRACT_ORDERED : DOCX_ABSTRACT_BULLET);
    if (ordered) {
        int level = n->level < 0 ? 0 : n->level >= LEVELS ? LEVELS - 1 : n->level;
        /* ordered_format[0] is decimal: a list the level's letters or roman
         * numerals cannot number counts in digits instead */
        int digits = n->marks == KILN_MARKS_DIGITS && level % 3 != 0;
        long hanging = instance_hanging(n, size);
        opc_xml_start(x, "w:lvlOverride");
        opc_xml_attr_int(x, "w:ilvl", level);
        opc_xml_val_int(x, "w:startOverride", "w:val", n->start < 0 ? 0 : n->start);
        /* CT_NumLvl: startOverride, then the level redefined for this list
         * alone when its scheme or its hanging differs from the definition */
        if (digits || hanging != HANGING)
            write_level(x, 1, level, digits ? "decimal" : ordered_format[level % 3], hanging);
        opc_xml_end(x);
    }
    opc_xml_end(x);
}

kiln_status docx_numbering_add(docx_ctx *c)
{
    const kiln_theme *theme = &c->doc->theme;
    double body_pt = theme->font_size > 0 ? theme->font_size : DOCX_BODY_DEFAULT_PT;
    opc_xml *x = opc_xml_new();
    if (!x)
        return kiln_error_set(c->err, KILN_E_NOMEM, NULL, "out of memory writing numbering");
    opc_xml_start(x, "w:numbering");
    opc_xml_attr(x, "xmlns:w", NS_W);
    write_abstract(x, DOCX_ABSTRACT_BULLET, "4B494C30");  /* "KIL0" */
    write_abstract(x, DOCX_ABSTRACT_ORDERED, "4B494C31"); /* "KIL1" */
    for (size_t i = 0; i < c->num_count; i++)
        write_num(x, &c->nums[i], body_pt);
    opc_xml_end(x);
    kiln_status st = opc_xml_finish(x, c->pkg, "word/numbering.xml", OPC_CT_DOCX_NUMBERING,
                                    c->err);
    if (st != KILN_E_OK)
        return st;
    if (opc_rel_add(c->pkg, DOCX_DOCUMENT_PART, OPC_REL_NUMBERING, "numbering.xml", 0, c->err) ==
        0)
        return KILN_E_NOMEM;
    return KILN_E_OK;
}
