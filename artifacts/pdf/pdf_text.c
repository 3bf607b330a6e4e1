/*
 * pdf_text.c - paragraphs: styled runs into lines, and lines onto a page.
 *
 * A paragraph is first cut into fragments: words (cut again after hyphens
 * and around every CJK character, since CJK text breaks between any two
 * characters), runs of spaces, and forced breaks. Each fragment carries its
 * face, size and color and knows whether a line may end after it. Lines are
 * then filled greedily, first fit, which is what word processors do for
 * body text; a word longer than a whole line is cut between characters.
 *
 * Drawing merges neighbouring fragments of one run into one text operator
 * (a line of plain text is one string in the page content, which keeps
 * files small), except on justified lines: libharu's fonts are two-byte
 * encoded, where PDF's word spacing (Tw) does not apply, so the extra space
 * is put between the words by placing each word itself.
 */
#include "pdf_internal.h"

#include <stdlib.h>
#include <string.h>
#include "../../common/banned.h"

#define LINK_COLOR 0x0563C1 /* Word's Hyperlink blue, as in the .docx */
#define CODE_BACKGROUND 0xF2F2F2
#define TAB_SPACES 4

static int is_cjk(uint32_t cp)
{
    return (cp >= 0x2E80 && cp <= 0x9FFF) || /* radicals, kana, CJK ideographs */
           (cp >= 0xAC00 && cp <= 0xD7AF) || /* Hangul syllables */
           (cp >= 0xF900 && cp <= 0xFAFF) || /* compatibility ideographs */
           (cp >= 0xFF00 && cp <= 0xFFEF) || /* full-width forms */
           (cp >= 0x20000 && cp <= 0x2FFFF);
}

/* CJK punctuation that may not begin a line (kinsoku): no break before it. */
static int no_break_before(uint32_t cp)
{
    static const uint32_t closing[] = {0x3001, 0x3002, 0xFF0C, 0xFF0E, 0xFF1A, 0xFF1B,
                                       0xFF01, 0xFF1F, 0xFF09, 0x300D, 0x300F, 0x3011,
                                       0x3009, 0x300B, 0x30FC, 0xFF5D, 0x3015};
    for (size_t i = 0; i < sizeof closing / sizeof closing[0]; i++)
        if (cp == closing[i])
            return 1;
    return 0;
}

static int is_hyphen(uint32_t cp)
{
    return cp == '-' || cp == 0x2010 || cp == 0x2013 || cp == 0x2014;
}

static kiln_status grow(void **items, size_t *cap, size_t need, size_t size, kiln_error *err)
{
    size_t cap2;
    void *p;

    if (need <= *cap)
        return KILN_E_OK;
    cap2 = *cap ? *cap * 2 : 16;
    while (cap2 < need)
        cap2 *= 2;
    p = realloc(*items, cap2 * size);
    if (!p)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory laying out text");
    *items = p;
    *cap = cap2;
    return KILN_E_OK;
}

static pdf_frag *frag_push(pdf_ctx *ctx, pdf_para *para)
{
    pdf_frag *f;
    if (grow((void **)&para->frags, &para->frag_cap, para->frag_count + 1, sizeof *f, ctx->err) !=
        KILN_E_OK)
        return NULL;
    f = &para->frags[para->frag_count++];
    memset(f, 0, sizeof *f);
    return f;
}

/* What a run looks like once resolved to a face. */
typedef struct run_look {
    pdf_face *face;
    double size, rise;
    int32_t color;
    unsigned flags;
    const char *link;
    const uint8_t *levels; /* bidi levels per byte of the run's text, or NULL */
    const char *base;      /* the run's text, where levels[0] belongs */
} run_look;

static kiln_status resolve_run(pdf_ctx *ctx, const kiln_run *run, const pdf_para_style *style,
                               run_look *look)
{
    unsigned flags = run ? run->flags : 0;
    unsigned face_style = style->style;
    pdf_family family = style->family;

    if (run && run->font)
        family = pdf_family_for_name(run->font);
    if (flags & KILN_RUN_CODE)
        family = ctx->mono_family;
    if (flags & KILN_RUN_BOLD)
        face_style |= PDF_STYLE_BOLD;
    if (flags & KILN_RUN_ITALIC)
        face_style |= PDF_STYLE_ITALIC;
    look->face = pdf_fonts_face(&ctx->fonts, family, face_style, ctx->err);
    if (!look->face)
        return ctx->err->code;
    look->size = run && run->size > 0 ? run->size : style->size;
    look->rise = 0;
    if (flags & KILN_RUN_SUPERSCRIPT) {
        look->rise = look->size * 0.33;
        look->size *= 0.65;
    } else if (flags & KILN_RUN_SUBSCRIPT) {
        look->rise = -look->size * 0.15;
        look->size *= 0.65;
    }
    if (flags & KILN_RUN_CODE)
        look->size *= 0.92; /* mono faces look larger than proportional ones */
    look->link = run ? run->link : NULL;
    look->color = run && run->color != KILN_COLOR_NONE ? run->color
                  : look->link                         ? LINK_COLOR
                                                       : style->color;
    look->flags = flags;
    if (look->link)
        look->flags |= KILN_RUN_UNDERLINE;
    return KILN_E_OK;
}

static pdf_frag *add_frag(pdf_ctx *ctx, pdf_para *para, const run_look *look, const char *text,
                          size_t len, int is_space)
{
    pdf_frag *f = frag_push(ctx, para);
    if (!f)
        return NULL;
    f->text = text;
    f->len = len;
    f->face = look->face;
    f->size = look->size;
    f->rise = look->rise;
    f->color = look->color;
    f->flags = look->flags;
    f->link = look->link;
    f->is_space = is_space;
    f->level = look->levels ? look->levels[text - look->base] : 0;
    if (is_space == 1) {
        /* a tab stands for TAB_SPACES spaces */
        double w = 0, space = pdf_char_width(&ctx->fonts, look->face, ' ', look->size);
        for (size_t i = 0; i < len; i++)
            w += text[i] == '\t' ? space * TAB_SPACES : space;
        f->width = w;
        f->break_after = 1;
    } else if (is_space == 2) {
        f->break_after = 1;
    } else {
        f->width = pdf_text_width(&ctx->fonts, look->face, text, len, look->size);
    }
    return f;
}

/* Cut one run's text into fragments (normal text). */
static kiln_status cut_run(pdf_ctx *ctx, pdf_para *para, const run_look *look, const char *s,
                           size_t len)
{
    size_t pos = 0;

    while (pos < len) {
        size_t start = pos;
        uint32_t cp = kiln_utf8_next(s, len, &pos);

        if (cp == '\n' || cp == 0x2028) {
            if (!add_frag(ctx, para, look, s + start, 0, 2))
                return KILN_E_NOMEM;
            continue;
        }
        if (cp == ' ' || cp == '\t' || cp == '\r') {
            while (pos < len && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\r'))
                pos++;
            if (!add_frag(ctx, para, look, s + start, pos - start, 1))
                return KILN_E_NOMEM;
            continue;
        }
        if (is_cjk(cp)) {
            pdf_frag *f;
            pdf_frag *prev = para->frag_count > 0 ? &para->frags[para->frag_count - 1] : NULL;
            /* a line may end before a CJK character, but never before closing
             * punctuation, even when it begins a run of its own */
            if (prev && prev->is_space == 0) {
                if (no_break_before(cp))
                    prev->break_after = 0;
                else if (prev->text + prev->len == s + start)
                    prev->break_after = 1;
            }
            f = add_frag(ctx, para, look, s + start, pos - start, 0);
            if (!f)
                return KILN_E_NOMEM;
            f->break_after = 1;
            /* closing punctuation after it keeps them together */
            if (pos < len) {
                size_t peek = pos;
                uint32_t next = kiln_utf8_next(s, len, &peek);
                if (no_break_before(next))
                    f->break_after = 0;
            }
            continue;
        }
        /* a word: up to a space, a break, a CJK character, or just after a
         * hyphen that follows something (a leading dash stays with its word) */
        for (size_t cp_start = start;;) {
            size_t here = pos;
            uint32_t next;
            if (is_hyphen(cp) && cp_start > start && pos < len)
                break; /* "well-known": a line may end after "well-" */
            if (pos >= len)
                break;
            next = kiln_utf8_next(s, len, &here);
            if (next == ' ' || next == '\t' || next == '\r' || next == '\n' || next == 0x2028 ||
                is_cjk(next))
                break;
            cp = next;
            cp_start = pos;
            pos = here;
        }
        {
            pdf_frag *f = add_frag(ctx, para, look, s + start, pos - start, 0);
            if (!f)
                return KILN_E_NOMEM;
            f->break_after = is_hyphen(cp) && pos < len;
        }
    }
    return KILN_E_OK;
}

/* Cut preformatted text: every line feed breaks, spaces are kept as text. */
static kiln_status cut_preformatted(pdf_ctx *ctx, pdf_para *para, const run_look *look,
                                    const char *s, size_t len)
{
    size_t start = 0;

    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '\n')
            continue;
        size_t end = i;
        if (end > start && s[end - 1] == '\r')
            end--;
        if (memchr(s + start, '\t', end - start)) {
            /* expand tabs to the next multiple of TAB_SPACES columns */
            size_t cols = 0, n = 0;
            char *copy = kiln_arena_alloc(ctx->arena, (end - start) * TAB_SPACES + 1);
            if (!copy)
                return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory");
            for (size_t k = start; k < end; k++) {
                if (s[k] == '\t') {
                    do {
                        copy[n++] = ' ';
                        cols++;
                    } while (cols % TAB_SPACES);
                } else {
                    copy[n++] = s[k];
                    if (((unsigned char)s[k] & 0xC0) != 0x80)
                        cols++;
                }
            }
            if (n > 0 && !add_frag(ctx, para, look, copy, n, 0))
                return KILN_E_NOMEM;
        } else if (end > start) {
            if (!add_frag(ctx, para, look, s + start, end - start, 0))
                return KILN_E_NOMEM;
        }
        if (i < len && !add_frag(ctx, para, look, s + i, 0, 2))
            return KILN_E_NOMEM;
        start = i + 1;
    }
    return KILN_E_OK;
}

/* Split fragment index fi so that its first part fits in room (at least one
 * character). The second part is inserted after it. */
static kiln_status split_frag(pdf_ctx *ctx, pdf_para *para, size_t fi, double room)
{
    pdf_frag *f = &para->frags[fi];
    size_t pos = 0, cut = 0;
    double w = 0;

    while (pos < f->len) {
        size_t at = pos;
        uint32_t cp = kiln_utf8_next(f->text, f->len, &pos);
        double cw = pdf_char_width(&ctx->fonts, f->face, cp, f->size);
        if (cut > 0 && w + cw > room) {
            pos = at;
            break;
        }
        w += cw;
        cut = pos;
    }
    if (cut >= f->len)
        return KILN_E_OK;
    if (!frag_push(ctx, para))
        return KILN_E_NOMEM;
    f = &para->frags[fi]; /* the array may have moved */
    memmove(&para->frags[fi + 2], &para->frags[fi + 1],
            (para->frag_count - fi - 2) * sizeof para->frags[0]);
    para->frags[fi + 1] = *f;
    para->frags[fi + 1].text = f->text + cut;
    para->frags[fi + 1].len = f->len - cut;
    para->frags[fi + 1].width = pdf_text_width(&ctx->fonts, f->face, f->text + cut, f->len - cut,
                                               f->size);
    f->len = cut;
    f->width = w;
    f->break_after = 1;
    return KILN_E_OK;
}

static kiln_status line_push(pdf_ctx *ctx, pdf_para *para, size_t first, size_t end,
                             int ends_paragraph, const pdf_para_style *style)
{
    pdf_line *line;
    double natural = 0, ascent = 0, descent = 0, biggest = 0;
    size_t last = end;

    if (grow((void **)&para->lines, &para->line_cap, para->line_count + 1, sizeof *line,
             ctx->err) != KILN_E_OK)
        return KILN_E_NOMEM;
    /* trailing spaces and breaks do not count */
    while (last > first && para->frags[last - 1].is_space)
        last--;
    for (size_t i = first; i < end; i++) {
        const pdf_frag *f = &para->frags[i];
        if (i < last)
            natural += f->width;
        if (f->size > biggest)
            biggest = f->size;
        if (f->face->ascent * f->size + f->rise > ascent)
            ascent = f->face->ascent * f->size + f->rise;
        if (f->face->descent * f->size + f->rise < descent)
            descent = f->face->descent * f->size + f->rise;
    }
    if (biggest == 0) { /* an empty line keeps the paragraph's own height */
        pdf_face *face = pdf_fonts_face(&ctx->fonts, style->family, style->style, ctx->err);
        if (!face)
            return ctx->err->code;
        biggest = style->size;
        ascent = face->ascent * style->size;
        descent = face->descent * style->size;
    }
    line = &para->lines[para->line_count++];
    line->first = first;
    line->count = end - first;
    line->width = natural;
    line->ascent = ascent;
    line->descent = descent;
    line->height = biggest * style->leading;
    if (line->height < ascent - descent)
        line->height = ascent - descent;
    line->ends_paragraph = ends_paragraph;
    return KILN_E_OK;
}

static kiln_status break_lines(pdf_ctx *ctx, pdf_para *para, const pdf_para_style *style,
                               double width)
{
    size_t line_start = 0, i = 0;
    double x = 0;
    size_t last_break = (size_t)-1; /* a line may end after this fragment */
    kiln_status st;

    while (i < para->frag_count) {
        pdf_frag *f = &para->frags[i];

        if (f->is_space == 2) {
            st = line_push(ctx, para, line_start, i + 1, 1, style);
            if (st != KILN_E_OK)
                return st;
            line_start = ++i;
            x = 0;
            last_break = (size_t)-1;
            continue;
        }
        /* leading spaces of a wrapped line vanish */
        if (f->is_space && i == line_start && line_start > 0 &&
            !para->frags[line_start - 1].is_space && !style->preserve_spaces) {
            line_start = ++i;
            continue;
        }
        if (f->is_space || x + f->width <= width + 0.01) {
            x += f->width;
            if (f->break_after)
                last_break = i;
            i++;
            continue;
        }
        /* f does not fit */
        if (last_break != (size_t)-1 && last_break >= line_start) {
            st = line_push(ctx, para, line_start, last_break + 1, 0, style);
            if (st != KILN_E_OK)
                return st;
            line_start = i = last_break + 1;
            x = 0;
            last_break = (size_t)-1;
            continue;
        }
        /* one word wider than the line: cut it */
        st = split_frag(ctx, para, i, width - x);
        if (st != KILN_E_OK)
            return st;
        if (i == line_start || para->frags[i].width <= width - x + 0.01) {
            /* its first part goes on this line */
            st = line_push(ctx, para, line_start, i + 1, 0, style);
            line_start = i = i + 1;
        } else {
            st = line_push(ctx, para, line_start, i, 0, style);
            line_start = i;
        }
        if (st != KILN_E_OK)
            return st;
        x = 0;
        last_break = (size_t)-1;
    }
    if (line_start < para->frag_count || para->line_count == 0)
        return line_push(ctx, para, line_start, para->frag_count, 1, style);
    para->lines[para->line_count - 1].ends_paragraph = 1;
    return KILN_E_OK;
}

static void para_reset(pdf_para *para, const pdf_para_style *style, double width)
{
    para->frag_count = 0;
    para->line_count = 0;
    para->bidi = 0;
    para->width = width;
    para->align = style->align == KILN_ALIGN_DEFAULT ? KILN_ALIGN_LEFT : style->align;
}

kiln_status pdf_para_layout(pdf_ctx *ctx, const kiln_text *text, const pdf_para_style *style,
                            double width, pdf_para *para)
{
    pdf_bidi_text bidi;
    kiln_status st;

    para_reset(para, style, width);
    st = pdf_bidi_prepare(ctx, text, &bidi);
    if (st != KILN_E_OK)
        return st;
    para->bidi = bidi.levels != NULL;
    if (bidi.rtl && style->align == KILN_ALIGN_DEFAULT)
        para->align = KILN_ALIGN_RIGHT; /* a right-to-left paragraph starts at the right */
    for (size_t r = 0; r < bidi.text.run_count; r++) {
        const kiln_run *run = &bidi.text.runs[r];
        run_look look = {0};
        st = resolve_run(ctx, run, style, &look);
        if (st != KILN_E_OK)
            return st;
        /* code keeps its logical order (and may hold tab-expanded copies) */
        look.levels = bidi.levels && !style->preserve_spaces ? bidi.levels[r] : NULL;
        look.base = run->text;
        st = style->preserve_spaces ? cut_preformatted(ctx, para, &look, run->text, run->len)
                                    : cut_run(ctx, para, &look, run->text, run->len);
        if (st != KILN_E_OK)
            return st;
    }
    return break_lines(ctx, para, style, width);
}

kiln_status pdf_para_layout_plain(pdf_ctx *ctx, const char *s, size_t len,
                                  const pdf_para_style *style, double width, pdf_para *para)
{
    kiln_run run = {.text = s, .len = len, .color = KILN_COLOR_NONE};
    kiln_text text = {.runs = &run, .run_count = 1};
    return pdf_para_layout(ctx, &text, style, width, para);
}

double pdf_para_height(const pdf_para *para, size_t first, size_t count)
{
    double h = 0;
    for (size_t i = first; i < first + count && i < para->line_count; i++)
        h += para->lines[i].height;
    return h;
}

double pdf_para_max_width(const pdf_para *para)
{
    double w = 0;
    for (size_t i = 0; i < para->line_count; i++)
        if (para->lines[i].width > w)
            w = para->lines[i].width;
    return w;
}

void pdf_para_release(pdf_para *para)
{
    free(para->frags);
    free(para->lines);
    memset(para, 0, sizeof *para);
}

static int same_look(const pdf_frag *a, const pdf_frag *b)
{
    /* tabs are drawn as advances, not glyphs: never inside a merged string */
    if (b->is_space && (memchr(b->text, '\t', b->len) || memchr(b->text, '\r', b->len)))
        return 0;
    if (a->is_space && (memchr(a->text, '\t', a->len) || memchr(a->text, '\r', a->len)))
        return 0;
    return a->face == b->face && a->size == b->size && a->rise == b->rise &&
           a->color == b->color && a->flags == b->flags && a->link == b->link &&
           a->text + a->len == b->text;
}

/* Underline, strike-through and code shading for fragments [from, to). */
static void decorate(pdf_ctx *ctx, const pdf_frag *f, double x, double w, double baseline)
{
    HPDF_Page page = ctx->page;
    if (f->flags & KILN_RUN_CODE) {
        pdf_set_fill(page, CODE_BACKGROUND);
        HPDF_Page_Rectangle(page, (HPDF_REAL)x,
                            (HPDF_REAL)(baseline + f->face->descent * f->size), (HPDF_REAL)w,
                            (HPDF_REAL)((f->face->ascent - f->face->descent) * f->size));
        HPDF_Page_Fill(page);
    }
    if (f->flags & (KILN_RUN_UNDERLINE | KILN_RUN_STRIKE)) {
        pdf_set_stroke(page, f->color);
        HPDF_Page_SetLineWidth(page, (HPDF_REAL)(f->size * 0.06));
        if (f->flags & KILN_RUN_UNDERLINE) {
            HPDF_Page_MoveTo(page, (HPDF_REAL)x, (HPDF_REAL)(baseline - f->size * 0.12));
            HPDF_Page_LineTo(page, (HPDF_REAL)(x + w), (HPDF_REAL)(baseline - f->size * 0.12));
        }
        if (f->flags & KILN_RUN_STRIKE) {
            HPDF_Page_MoveTo(page, (HPDF_REAL)x, (HPDF_REAL)(baseline + f->size * 0.3));
            HPDF_Page_LineTo(page, (HPDF_REAL)(x + w), (HPDF_REAL)(baseline + f->size * 0.3));
        }
        HPDF_Page_Stroke(page);
    }
}

/* Draw fragments [first, last) of a line holding right-to-left text in
 * display order: UAX #9 rule L2 reverses, from the highest level down to the
 * lowest odd one, every run of fragments at that level or above; a
 * right-to-left fragment's characters are drawn reversed. */
static kiln_status draw_bidi_line(pdf_ctx *ctx, const pdf_para *para, size_t first, size_t last,
                                  double pen, double baseline, double gap)
{
    size_t count = last - first, *order;
    uint8_t top_level = 0, low_odd = 255;
    kiln_status st = KILN_E_OK;

    if (count == 0)
        return KILN_E_OK;
    order = malloc(count * sizeof *order);
    if (!order)
        return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory drawing text");
    for (size_t k = 0; k < count; k++) {
        uint8_t lv = para->frags[first + k].level;
        order[k] = first + k;
        if (lv > top_level)
            top_level = lv;
        if ((lv & 1) && lv < low_odd)
            low_odd = lv;
    }
    for (int lv = top_level; lv >= low_odd && lv > 0; lv--) {
        for (size_t k = 0; k < count;) {
            size_t end = k;
            while (end < count && para->frags[order[end]].level >= lv)
                end++;
            for (size_t a = k, b = end; b > a + 1; a++, b--) {
                size_t t = order[a];
                order[a] = order[b - 1];
                order[b - 1] = t;
            }
            k = end > k ? end : k + 1;
        }
    }
    for (size_t k = 0; k < count && st == KILN_E_OK; k++) {
        const pdf_frag *f = &para->frags[order[k]];
        if (f->is_space) {
            pen += f->width + (f->is_space == 1 ? gap : 0);
            continue;
        }
        decorate(ctx, f, pen, f->width, baseline + f->rise);
        if (f->level & 1) {
            char stack[256], *buf = f->len <= sizeof stack ? stack : malloc(f->len);
            if (!buf) {
                st = kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory drawing text");
                break;
            }
            pdf_utf8_reverse(f->text, f->len, buf);
            pdf_draw_text(ctx, ctx->page, f->face, f->size, f->color, pen, baseline + f->rise,
                          buf, f->len);
            if (buf != stack)
                free(buf);
        } else {
            pdf_draw_text(ctx, ctx->page, f->face, f->size, f->color, pen, baseline + f->rise,
                          f->text, f->len);
        }
        if (f->link)
            st = pdf_add_link(ctx, pen, baseline + f->face->descent * f->size, pen + f->width,
                              baseline + f->face->ascent * f->size, f->link, 0);
        pen += f->width;
    }
    free(order);
    return st;
}

kiln_status pdf_para_draw(pdf_ctx *ctx, const pdf_para *para, size_t first, size_t count,
                          double x, double y_top)
{
    double top = y_top;
    kiln_status st;

    for (size_t li = first; li < first + count && li < para->line_count; li++) {
        const pdf_line *line = &para->lines[li];
        size_t end = line->first + line->count, last = end, spaces = 0;
        double baseline = top - (line->height - (line->ascent - line->descent)) / 2 -
                          line->ascent;
        double pen = x, gap = 0;
        int justify = 0;

        while (last > line->first && para->frags[last - 1].is_space)
            last--;
        if (para->align == KILN_ALIGN_RIGHT)
            pen = x + para->width - line->width;
        else if (para->align == KILN_ALIGN_CENTER)
            pen = x + (para->width - line->width) / 2;
        else if (para->align == KILN_ALIGN_JUSTIFY && !line->ends_paragraph) {
            for (size_t i = line->first; i < last; i++)
                spaces += para->frags[i].is_space == 1;
            if (spaces > 0 && para->width > line->width) {
                gap = (para->width - line->width) / (double)spaces;
                justify = 1;
            }
        }
        if (pen < x)
            pen = x;
        if (para->bidi) {
            st = draw_bidi_line(ctx, para, line->first, last, pen, baseline, justify ? gap : 0);
            if (st != KILN_E_OK)
                return st;
            top -= line->height;
            continue;
        }
        for (size_t i = line->first; i < last;) {
            const pdf_frag *f = &para->frags[i];
            size_t j = i + 1;
            double w = f->width;

            if (f->is_space) {
                double advance = f->width + (justify && f->is_space == 1 ? gap : 0);
                /* an underline or strike-through runs on across the space
                 * between two words that both have it */
                if (justify && i > line->first && i + 1 < last) {
                    const pdf_frag *before = &para->frags[i - 1], *after = &para->frags[i + 1];
                    unsigned lines = KILN_RUN_UNDERLINE | KILN_RUN_STRIKE;
                    if ((before->flags & lines) &&
                        (before->flags & lines) == (after->flags & lines) &&
                        before->color == after->color && before->size == after->size) {
                        pdf_frag gap_look = *before;
                        gap_look.flags &= lines;
                        decorate(ctx, &gap_look, pen, advance, baseline + before->rise);
                    }
                }
                pen += advance;
                i++;
                continue;
            }
            /* merge the following fragments of the same run into one string */
            if (!justify) {
                while (j < last && same_look(&para->frags[j - 1], &para->frags[j]) &&
                       para->frags[j].is_space != 2) {
                    w += para->frags[j].width;
                    j++;
                }
                while (j > i + 1 && para->frags[j - 1].is_space) { /* never end on spaces */
                    j--;
                    w -= para->frags[j].width;
                }
            }
            decorate(ctx, f, pen, w, baseline + f->rise);
            pdf_draw_text(ctx, ctx->page, f->face, f->size, f->color, pen, baseline + f->rise,
                          f->text,
                          (size_t)(para->frags[j - 1].text + para->frags[j - 1].len - f->text));
            if (f->link) {
                st = pdf_add_link(ctx, pen, baseline + f->face->descent * f->size, pen + w,
                                  baseline + f->face->ascent * f->size, f->link, 0);
                if (st != KILN_E_OK)
                    return st;
            }
            pen += w;
            i = j;
        }
        top -= line->height;
    }
    return KILN_E_OK;
}
