/*
 * pptx_text.c - text bodies of slides: paragraphs and runs as DrawingML
 * writes them, and the fit.
 *
 * Why Kiln fits text itself: a body's a:normAutofit tells PowerPoint to
 * shrink text that overflows, but PowerPoint only works the shrink out when
 * the user edits the text; until then it draws the fontScale written in the
 * file (none = 100%), so an overfull slide opens overfull (python-pptx #969).
 * Kiln therefore measures the text with Calibri's advance widths (the
 * default theme font; text_metrics.h), breaks it into lines the way the
 * placeholder will, and writes the scale that makes it fit, stepping through
 * the same scales PowerPoint does (first line spacing, then font size).
 *
 * When the bullets of a slide do not fit even at PPTX_FIT_MIN_SCALE, the
 * slide is split (pptx_slide.c) at the last top-level bullet that fits at
 * full size, and the rest continues on the next slide. A single paragraph
 * too long for a slide by itself is shrunk down to 25%, PowerPoint's own
 * floor; beyond that it overflows the placeholder, and the render reports
 * the slide (kiln_render_result.overflow_slides).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <fribidi.h>

#include "pptx_internal.h"

#include "../../common/utf8.h"
#include "../../common/banned.h"

/* Line height of a font at 100% line spacing, in em: Calibri's ascent and
 * descent with its line gap (2500/2048 = 1.22); PowerPoint's single spacing
 * is 1.2 em for most fonts. */
#define LINE_EM 1.2
/* Consolas (the theme's mono font) advance: 1126/2048 em per character. */
#define MONO_EM (1126.0 / 2048.0)

/* The scales PowerPoint steps through when it fits text (fontScale,
 * lnSpcReduction), down to its floor of 25%. */
static const struct {
    unsigned font_scale, line_reduce;
} fit_steps[] = {
    {100000, 0},    {92500, 10000}, {85000, 20000}, {77500, 20000},
    {70000, 20000}, {62500, 20000}, {55000, 20000}, {47500, 20000},
    {40000, 20000}, {32500, 20000}, {25000, 20000},
};
#define FIT_STEP_COUNT (sizeof fit_steps / sizeof fit_steps[0])

/* ---- measuring ---- */

/* Advance of one character in em. */
static double char_em(uint32_t cp, int bold, int mono)
{
    if (kiln_char_is_wide(cp))
        return KILN_METRIC_WIDE_UNITS / KILN_METRIC_UNITS_PER_EM;
    if (mono)
        return MONO_EM;
    if (cp == '\t')
        cp = ' ';
    if (cp >= 32 && cp < 127)
        return (bold ? kiln_calibri_bold : kiln_calibri_regular)[cp - 32] /
               KILN_METRIC_UNITS_PER_EM;
    if (cp >= 0x300 && cp < 0x370) /* combining marks take no room */
        return 0;
    if (cp == 0xA0)
        return kiln_calibri_regular[0] / KILN_METRIC_UNITS_PER_EM;
    return KILN_METRIC_OTHER_UNITS / KILN_METRIC_UNITS_PER_EM;
}

/* Greedy line breaking of one paragraph, the way a text box wraps: at
 * spaces, and between wide (CJK) characters; a word longer than the line is
 * cut. Fed one run at a time (a paragraph's runs differ in weight and size);
 * widths in points. */
typedef struct line_breaker {
    double width;   /* room for a line */
    double line;    /* width of the current line, up to the last break */
    double word;    /* width of the word being read */
    double space;   /* spaces between the line and the word */
    unsigned lines; /* lines finished */
    double tallest; /* the largest font size on the current line (pt) */
    double height;  /* the height of the lines finished (pt, at 100% spacing) */
} line_breaker;

static void finish_line(line_breaker *b)
{
    b->lines++;
    b->height += b->tallest * LINE_EM;
    b->line = 0;
    b->space = 0;
}

/* Put the word just read on the line, or on a new one. */
static void place_word(line_breaker *b)
{
    if (b->word <= 0)
        return;
    if (b->line > 0 && b->line + b->space + b->word > b->width) {
        double tallest = b->tallest;
        finish_line(b);
        b->tallest = tallest;
    }
    /* A word wider than a whole line is cut into line-wide pieces. */
    while (b->word > b->width && b->width > 0) {
        b->word -= b->width;
        finish_line(b);
    }
    b->line += (b->line > 0 ? b->space : 0) + b->word;
    b->word = 0;
    b->space = 0;
}

static void break_text(line_breaker *b, const char *s, size_t len, double size_pt, int bold,
                       int mono)
{
    size_t pos = 0;
    if (size_pt > b->tallest)
        b->tallest = size_pt;
    while (pos < len) {
        uint32_t cp = kiln_utf8_next(s, len, &pos);
        if (cp == '\n' || cp == '\r' || cp == 0x2028) {
            place_word(b);
            double tallest = b->tallest;
            finish_line(b);
            b->tallest = tallest;
            if (cp == '\r' && pos < len && s[pos] == '\n')
                pos++;
            continue;
        }
        double w = char_em(cp, bold, mono) * size_pt;
        if (cp == ' ' || cp == '\t') {
            place_word(b);
            b->space += w;
        } else if (kiln_char_is_wide(cp)) {
            place_word(b);
            b->word = w;
            place_word(b);
        } else {
            b->word += w;
        }
    }
}

/* Height in points of paragraph p set at scale (font_scale / 100000) in a
 * box of text width box_w (points), at 100% line spacing. */
static double para_lines_height(const pptx_para *p, double box_w, double base_pt, double scale)
{
    line_breaker b;
    memset(&b, 0, sizeof b);
    double indent = p->bullet == PPTX_BULLET_NONE
                        ? 0
                        : (double)pptx_body_mar_l[p->level] / PPTX_EMU_PER_PT;
    b.width = box_w - indent;
    if (b.width < 12)
        b.width = 12;
    int mono_all = (p->flags & KILN_RUN_CODE) != 0;
    int bold_all = (p->flags & KILN_RUN_BOLD) != 0;
    if (p->text) {
        for (size_t i = 0; i < p->text->run_count; i++) {
            const kiln_run *r = &p->text->runs[i];
            double size = (r->size > 0 ? r->size : base_pt) * scale;
            break_text(&b, r->text, r->len, size, bold_all || (r->flags & KILN_RUN_BOLD),
                       mono_all || (r->flags & KILN_RUN_CODE));
        }
    } else if (p->plain) {
        break_text(&b, p->plain, p->plain_len, base_pt * scale, bold_all, mono_all);
    }
    if (b.tallest <= 0)
        b.tallest = base_pt * scale; /* an empty paragraph is one line */
    place_word(&b);
    finish_line(&b);
    return b.height;
}

/* Height of paras[0..n) at one fit step, in points; *fitting (when given)
 * gets how many of them fit in box_h. The measure stops at the first
 * paragraph that passes box_h (the result is then only known to be more
 * than box_h): a slide is filled from a long run of paragraphs one slide at
 * a time, and measuring all that remain for each slide would make the deck
 * cost the square of its paragraphs. */
static double paras_height(const pptx_para *paras, size_t n, double box_w,
                           const unsigned size_per_level[9], unsigned font_scale,
                           unsigned line_reduce, size_t *fitting, double box_h)
{
    double scale = font_scale / 100000.0;
    double spacing = PPTX_LINE_SPACING_PCT / 100000.0 * (1.0 - line_reduce / 100000.0);
    double total = 0;
    if (fitting)
        *fitting = 0;
    for (size_t i = 0; i < n; i++) {
        const pptx_para *p = &paras[i];
        int level = p->level < 0 ? 0 : p->level > 8 ? 8 : p->level;
        double base = size_per_level[level] / 100.0;
        /* PowerPoint leaves out the space before the first paragraph of a box. */
        double before = i == 0 ? 0
                               : (level == 0 ? PPTX_BODY_SPC_BEF_LVL1 : PPTX_BODY_SPC_BEF_OTHER) /
                                     100.0 * scale;
        total += before + para_lines_height(p, box_w, base, scale) * spacing;
        if (total > box_h)
            break;
        if (fitting)
            *fitting = i + 1;
    }
    return total;
}

pptx_fit pptx_text_fit(const pptx_para *paras, size_t n, int64_t cx, int64_t cy,
                       const unsigned size_per_level[9], unsigned min_scale)
{
    pptx_fit fit = {100000, 0, n, 0};
    double box_w = (double)(cx - 2 * PPTX_INSET_X) / PPTX_EMU_PER_PT;
    double box_h = (double)(cy - 2 * PPTX_INSET_Y) / PPTX_EMU_PER_PT;
    if (n == 0)
        return fit;

    for (size_t s = 0; s < FIT_STEP_COUNT && fit_steps[s].font_scale >= min_scale; s++) {
        if (paras_height(paras, n, box_w, size_per_level, fit_steps[s].font_scale,
                         fit_steps[s].line_reduce, NULL, box_h) <= box_h) {
            fit.font_scale = fit_steps[s].font_scale;
            fit.line_reduce = fit_steps[s].line_reduce;
            return fit;
        }
    }

    /* Too much for one slide: this slide takes what fits at full size, the
     * rest continues. A split inside a nested group would part the children
     * from their parent, so it moves back to the last top-level paragraph. */
    size_t k = 0;
    paras_height(paras, n, box_w, size_per_level, 100000, 0, &k, box_h);
    if (k > 0 && k < n && paras[k].level > 0) {
        size_t j = k;
        while (j > 0 && paras[j].level > 0)
            j--;
        if (j > 0)
            k = j;
    }
    if (k > 0) {
        fit.count = k;
        return fit;
    }

    /* Not even the first paragraph fits at full size: it goes alone, shrunk. */
    fit.count = 1;
    for (size_t s = 0; s < FIT_STEP_COUNT; s++) {
        fit.font_scale = fit_steps[s].font_scale;
        fit.line_reduce = fit_steps[s].line_reduce;
        if (paras_height(paras, 1, box_w, size_per_level, fit.font_scale, fit.line_reduce, NULL,
                         box_h) <= box_h)
            return fit;
    }
    fit.overflow = 1;
    return fit;
}

pptx_fit pptx_text_fit_plain(const char *s, size_t len, unsigned size_pt100, int bold, int64_t cx,
                             int64_t cy)
{
    pptx_fit fit = {100000, 0, 1, 0};
    pptx_para p;
    memset(&p, 0, sizeof p);
    p.plain = s;
    p.plain_len = len;
    p.flags = bold ? KILN_RUN_BOLD : 0;
    unsigned sizes[9];
    for (int i = 0; i < 9; i++)
        sizes[i] = size_pt100;
    double box_w = (double)(cx - 2 * PPTX_INSET_X) / PPTX_EMU_PER_PT;
    double box_h = (double)(cy - 2 * PPTX_INSET_Y) / PPTX_EMU_PER_PT;
    for (size_t st = 0; st < FIT_STEP_COUNT; st++) {
        fit.font_scale = fit_steps[st].font_scale;
        fit.line_reduce = fit_steps[st].line_reduce;
        if (paras_height(&p, 1, box_w, sizes, fit.font_scale, fit.line_reduce, NULL, box_h) <=
            box_h)
            return fit;
    }
    fit.overflow = 1;
    return fit;
}

/* ---- writing ---- */

static void write_body_pr(opc_xml *x, const pptx_fit *fit)
{
    opc_xml_start(x, "a:bodyPr");
    if (fit && fit->font_scale < 100000) {
        opc_xml_start(x, "a:normAutofit");
        opc_xml_attr_uint(x, "fontScale", fit->font_scale);
        if (fit->line_reduce)
            opc_xml_attr_uint(x, "lnSpcReduction", fit->line_reduce);
        opc_xml_end(x);
    } else if (fit && fit->line_reduce) {
        opc_xml_start(x, "a:normAutofit");
        opc_xml_attr_uint(x, "lnSpcReduction", fit->line_reduce);
        opc_xml_end(x);
    }
    opc_xml_end(x);
    opc_xml_empty(x, "a:lstStyle");
}

/* Text with line feeds as a:br (one paragraph, several lines); rpr writes
 * the run properties. */
typedef struct run_props {
    unsigned flags;
    int32_t color;
    double size;
    const char *font;
    unsigned link_rid;
} run_props;

static void write_rpr(pptx_slide *s, const char *element, const run_props *rp)
{
    opc_xml *x = s->x;
    opc_xml_start(x, element);
    opc_xml_attr(x, "lang", "en-US");
    if (rp->size > 0) {
        double sz = round(rp->size * 100);
        if (sz < 100)
            sz = 100;
        if (sz > 400000)
            sz = 400000;
        opc_xml_attr_int(x, "sz", (int64_t)sz);
    }
    if (rp->flags & KILN_RUN_BOLD)
        opc_xml_attr(x, "b", "1");
    if (rp->flags & KILN_RUN_ITALIC)
        opc_xml_attr(x, "i", "1");
    if (rp->flags & KILN_RUN_UNDERLINE || rp->link_rid)
        opc_xml_attr(x, "u", "sng");
    if (rp->flags & KILN_RUN_STRIKE)
        opc_xml_attr(x, "strike", "sngStrike");
    if (rp->flags & KILN_RUN_SUPERSCRIPT)
        opc_xml_attr(x, "baseline", "30000");
    else if (rp->flags & KILN_RUN_SUBSCRIPT)
        opc_xml_attr(x, "baseline", "-25000");
    if (rp->color >= 0) {
        opc_xml_start(x, "a:solidFill");
        opc_xml_start(x, "a:srgbClr");
        opc_xml_attr_color(x, "val", rp->color);
        opc_xml_end(x);
        opc_xml_end(x);
    }
    const char *font = rp->font;
    if (!font && (rp->flags & KILN_RUN_CODE))
        font = s->c->doc->theme.mono_font;
    if (font) {
        opc_xml_start(x, "a:latin");
        opc_xml_attr(x, "typeface", font);
        opc_xml_end(x);
        opc_xml_start(x, "a:cs");
        opc_xml_attr(x, "typeface", font);
        opc_xml_end(x);
    }
    if (rp->link_rid) {
        char rid[24];
        snprintf(rid, sizeof rid, "rId%u", rp->link_rid);
        opc_xml_start(x, "a:hlinkClick");
        opc_xml_attr(x, "r:id", rid);
        opc_xml_end(x);
    }
    opc_xml_end(x);
}

static void write_runs_text(pptx_slide *s, const char *text, size_t len, const run_props *rp)
{
    opc_xml *x = s->x;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != '\n' && text[i] != '\r')
            continue;
        if (i > start) {
            opc_xml_start(x, "a:r");
            write_rpr(s, "a:rPr", rp);
            opc_xml_start(x, "a:t");
            opc_xml_text(x, text + start, i - start);
            opc_xml_end(x);
            opc_xml_end(x);
        }
        if (i < len) {
            if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
                i++;
            opc_xml_start(x, "a:br");
            write_rpr(s, "a:rPr", rp);
            opc_xml_end(x);
        }
        start = i + 1;
    }
}

/* The relationship of an external link from the slide; 0 (status set) on
 * failure. */
static unsigned link_rid(pptx_slide *s, const char *url)
{
    unsigned rid = opc_rel_add(s->c->pkg, s->part, OPC_REL_HYPERLINK, url, 1, s->c->err);
    if (rid == 0 && s->status == KILN_E_OK)
        s->status = KILN_E_NOMEM;
    return rid;
}

int pptx_text_is_rtl(const char *s, size_t len, int *decided)
{
    size_t pos = 0;
    while (pos < len) {
        FriBidiCharType type = fribidi_get_bidi_type(kiln_utf8_next(s, len, &pos));
        if (FRIBIDI_IS_STRONG(type) && FRIBIDI_IS_LETTER(type)) {
            *decided = 1;
            return FRIBIDI_IS_RTL(type) ? 1 : 0;
        }
    }
    return 0;
}

static int para_is_rtl(const pptx_para *p)
{
    int decided = 0, rtl = 0;
    if (p->text)
        for (size_t i = 0; i < p->text->run_count && !decided; i++)
            rtl = pptx_text_is_rtl(p->text->runs[i].text, p->text->runs[i].len, &decided);
    else if (p->plain)
        rtl = pptx_text_is_rtl(p->plain, p->plain_len, &decided);
    return rtl;
}

/* A right-to-left paragraph reads from the right: PowerPoint lays it out
 * right to left, and aligned right, only when told (rtl, algn). A centred
 * placeholder (the title slide's) stays centred. */
static void write_rtl(opc_xml *x, int centred)
{
    if (!centred)
        opc_xml_attr(x, "algn", "r");
    opc_xml_attr(x, "rtl", "1");
}

/* The autonumbering scheme (ST_TextAutonumberScheme) of a list's marks. */
static const char *autonum_type(kiln_list_marks marks)
{
    return marks == KILN_MARKS_LETTERS ? "alphaLcPeriod"
           : marks == KILN_MARKS_ROMAN ? "romanLcPeriod"
                                       : "arabicPeriod";
}

/* The numbers PowerPoint's autonumbering counts (ST_TextBulletStartAtNum). */
#define AUTONUM_MIN 1
#define AUTONUM_MAX 32767

/* One a:p. start_at: a numbered item's run's first number; 0 = a number
 * autonumbering cannot show (a list from 0, or past 32767), written out
 * before the text instead. */
static void write_para(pptx_slide *s, const pptx_para *p, int64_t start_at)
{
    opc_xml *x = s->x;
    int level = p->level < 0 ? 0 : p->level > 8 ? 8 : p->level;
    int rtl = para_is_rtl(p);
    int literal = p->bullet == PPTX_BULLET_NUMBER && start_at == 0;
    opc_xml_start(x, "a:p");
    if (level > 0 || p->bullet != PPTX_BULLET_CHAR || rtl) {
        opc_xml_start(x, "a:pPr");
        if (p->bullet == PPTX_BULLET_NONE) {
            opc_xml_attr(x, "marL", "0");
            opc_xml_attr(x, "indent", "0");
        }
        if (level > 0)
            opc_xml_attr_int(x, "lvl", level);
        if (rtl)
            write_rtl(x, 0);
        if (p->bullet == PPTX_BULLET_NONE || literal) {
            opc_xml_empty(x, "a:buNone");
        } else if (p->bullet == PPTX_BULLET_NUMBER) {
            opc_xml_start(x, "a:buFont");
            opc_xml_attr(x, "typeface", "+mj-lt");
            opc_xml_end(x);
            opc_xml_start(x, "a:buAutoNum");
            opc_xml_attr(x, "type", autonum_type(p->marks));
            if (start_at != 1)
                opc_xml_attr_int(x, "startAt", start_at);
            opc_xml_end(x);
        }
        opc_xml_end(x);
    }
    run_props rp = {p->flags, KILN_COLOR_NONE, 0, NULL, 0};
    if (literal) {
        char marker[KILN_LIST_MARKER_MAX], number[KILN_LIST_MARKER_MAX + 1];
        kiln_list_marker(p->marks, level, p->number, marker, sizeof marker);
        int n = snprintf(number, sizeof number, "%s ", marker);
        write_runs_text(s, number, (size_t)n, &rp);
    }
    if (p->text) {
        for (size_t i = 0; i < p->text->run_count; i++) {
            const kiln_run *r = &p->text->runs[i];
            run_props rr = {p->flags | r->flags, r->color, r->size, r->font, 0};
            if (r->link)
                rr.link_rid = link_rid(s, r->link);
            write_runs_text(s, r->text, r->len, &rr);
        }
    } else if (p->plain) {
        write_runs_text(s, p->plain, p->plain_len, &rp);
    }
    opc_xml_end(x);
}

void pptx_text_body(pptx_slide *s, const pptx_para *paras, size_t n, const pptx_fit *fit)
{
    opc_xml *x = s->x;
    opc_xml_start(x, "p:txBody");
    write_body_pr(x, fit);
    if (n == 0) {
        opc_xml_start(x, "a:p");
        opc_xml_end(x);
    }
    /* Numbered items: PowerPoint numbers consecutive paragraphs of one
     * scheme and level from their startAt, so each run of a list's items on
     * this slide carries the number of its first item (a continuation slide
     * goes on counting where the last one stopped). LibreOffice, though,
     * counts every numbered paragraph of a level in the body as one
     * sequence, until a shallower paragraph, and honours only the first
     * run's startAt: so only the first run of a level is autonumbered, and
     * a later one (another list) has its numbers written out, as have
     * numbers autonumbering cannot count (from 0, or past 32767). */
    int64_t run_start[9] = {0}, run_next[9] = {0};
    int runs_seen[9] = {0}, run_written[9] = {0};
    for (size_t i = 0; i < n; i++) {
        const pptx_para *p = &paras[i];
        int level = p->level < 0 ? 0 : p->level > 8 ? 8 : p->level;
        /* A paragraph ends the runs of the levels below it. */
        for (int l = level + 1; l < 9; l++)
            run_next[l] = 0, runs_seen[l] = 0;
        int64_t start_at = 1;
        if (p->bullet == PPTX_BULLET_NUMBER) {
            if (run_next[level] == 0 || p->number != run_next[level]) {
                run_start[level] = p->number;
                run_written[level] = runs_seen[level]++ > 0 || p->number < AUTONUM_MIN;
            }
            run_next[level] = p->number + 1;
            start_at = run_written[level] || p->number > AUTONUM_MAX ? 0 : run_start[level];
        } else {
            run_next[level] = 0;
        }
        write_para(s, p, start_at);
    }
    opc_xml_end(x);
}

void pptx_text_body_plain(pptx_slide *s, const char *text, const pptx_fit *fit)
{
    opc_xml *x = s->x;
    opc_xml_start(x, "p:txBody");
    write_body_pr(x, fit);
    run_props rp = {0, KILN_COLOR_NONE, 0, NULL, 0};
    const char *p = text ? text : "";
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > 0 && p[len - 1] == '\r')
            len--;
        opc_xml_start(x, "a:p");
        int decided = 0;
        if (pptx_text_is_rtl(p, len, &decided)) {
            opc_xml_start(x, "a:pPr");
            write_rtl(x, s->layout == PPTX_LAYOUT_TITLE && !s->notes);
            opc_xml_end(x);
        }
        write_runs_text(s, p, len, &rp);
        opc_xml_end(x);
        if (!nl)
            break;
        p = nl + 1;
    }
    opc_xml_end(x);
}
