/*
 * docx_toc.c - the table of contents: a TOC field whose entries are already
 * there, and the pre-pass that finds the headings and guesses their pages.
 *
 * A TOC written only as a field shows nothing until the user updates fields,
 * and viewers that never update them (LibreOffice converting to PDF, previews)
 * would show nothing at all. So the field's result is written out: one
 * paragraph per heading (styles TOC1..TOC6, a right tab with a dot leader at
 * the text width), each a hyperlink to the heading's _Toc bookmark followed
 * by a PAGEREF field, as Word itself writes a TOC; without headings, the text
 * Word writes then ("No table of contents entries found."). The field's
 * begin is marked dirty so Word refreshes the entries (and the page numbers)
 * when the document is opened.
 *
 * PAGE NUMBERS are an estimate, which Word corrects on that update, made by
 * laying the document out the way LibreOffice lays it out (measured against
 * its PDFs; Carlito has Calibri's metrics, and fonts it has no stand-in for
 * are drawn in DejaVu):
 *   - text is broken into lines word by word with Calibri's advance widths
 *     (regular and bold; other scripts at an average width; other fonts
 *     wider by DejaVu's average), in the width its paragraph has (indents,
 *     table columns); a line is as tall as its tallest font (Calibri's
 *     1.2207 em, DejaVu's 1.1641), times 259/240 in styles with Word's 1.08
 *     line spacing (templates/docx/styles.xml), single elsewhere;
 *   - the space between two paragraphs is the larger of the first one's
 *     space after and the second one's space before, none between two
 *     paragraphs of a style with contextual spacing (list items, code
 *     lines), and none at the top of a page the text flowed onto; a page
 *     break keeps the space before of what follows it, as does the first
 *     page; the paragraph holding a page break keeps its line on the page
 *     it ends;
 *   - paragraphs split between lines across pages with two lines at least
 *     on each page (widow and orphan control); headings (keep lines, keep
 *     with next) move to the next page with what must stay with them: the
 *     first lines of the paragraph after them, or a table's caption, header
 *     row and first row, or a drawing and its caption;
 *   - a table is laid out by docx_table_layout, the very layout
 *     docx_table.c writes (table_layout.h under the docx rules: column
 *     widths, narrowed margins and the font a table too wide is shrunk to,
 *     what each column of a row shows); its rows are as tall as their
 *     tallest cell's text breaks into lines as above, in the column's width
 *     less the margins, plus the cell margins, never split, with the
 *     header row repeated on each page;
 *   - images and charts take the size docx_drawing.c gives them.
 * Spacing and sizes are the styles' (styles.xml, docx_styles.c); the
 * constants below name where each comes from. The layout measures every
 * row, as the writer does; rows past the first ESTIMATE_ROWS_MAX of a table
 * are then placed at the average height of those. The whole
 * estimate is only made when the document has a TOC. With Calibri text it
 * finds LibreOffice's page for every heading of the samples; a page or so
 * off remains possible where LibreOffice's own rounding decides.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../layout/numfmt.h"
#include "docx_internal.h"
#include "../../common/banned.h"

#define ESTIMATE_ROWS_MAX 20000
/* A TOC field's result without entries, as Word (English) writes it. */
#define NO_ENTRIES_TEXT "No table of contents entries found."

/* Font metrics. Calibri (Carlito, which LibreOffice uses in its place, has
 * the same metrics): a line is (usWinAscent 1950 + usWinDescent 550) / 2048
 * em. LibreOffice has no metric-compatible stand-in for other fonts
 * (Calibri Light, Georgia, Consolas, ...) and draws them in DejaVu: lines of
 * (1901 + 483) / 2048 em, letters wider than Calibri's by the factors below
 * (averages over English text), DejaVu Sans Mono's 1233 / 2048 em for the
 * monospace font. */
#define LINE_EM 1.2207
#define OTHER_LINE_EM 1.1641
#define OTHER_WIDTH 1.245
#define OTHER_BOLD_WIDTH 1.375
#define MONO_CHAR_EM 0.602
#define BOLD_OTHER 1.03    /* bold letters of other alphabets are a little wider */
#define SCRIPT_FACTOR 0.65 /* superscript and subscript glyphs */

/* templates/docx/styles.xml */
#define AUTO_SPACING (259.0 / 240.0) /* docDefaults w:line="259" */
#define NORMAL_AFTER_PT 8.0          /* docDefaults w:after="160" */
#define CAPTION_AFTER_PT 10.0        /* Caption: after 200, single lines */
#define QUOTE_BEFORE_PT 10.0         /* Quote: before 200, after 160, indents 720 + 720 */
#define QUOTE_AFTER_PT 8.0
#define QUOTE_INDENT_PT 72.0
#define CODE_BEFORE_PT 6.0 /* Code: before 120, after 200, single lines */
#define CODE_AFTER_PT 10.0
#define CODE_INDENT_PT 22.4   /* indents 144 + 144 and border spaces 4 + 4 */
#define CODE_BORDER_PT 4.5    /* a border's space (4) and width (1/2) */
#define TOC_AFTER_PT 5.0      /* TOC1..6: after 100 */
#define TOC_INDENT_PT 11.0    /* TOCn: 220 twips more per level */
#define TOC_PAGE_ROOM_PT 24.0 /* the dot leader's least and a page number */
#define RULE_BORDER_PT 1.75   /* a rule's bottom border: space 1, width 3/4 */
#define TAB_STOP_PT 36.0      /* settings.xml w:defaultTabStop 720 */
/* Heading1..6: w:before, w:after; sizes as docx_styles.c scales them. */
static const double heading_before[7] = {0, 18, 12, 10, 8, 8, 8};
static const double heading_after[7] = {0, 6, 4, 3, 2, 2, 2};
static const double heading_pt[7] = {0, 16, 13, 12, 11, 11, 11};
#define CAPTION_PT 9.0 /* docx_styles.c, at an 11 pt body */
#define CODE_PT 10.0

/* docx_numbering.c: each list level indents 720 twips more. */
#define LIST_INDENT_PT 36.0

/* The KilnTable style: a row's height above its lines (cell margins 29 + 29
 * twips and a border of 1/2 pt). */
#define ROW_EXTRA_PT 3.42
#define TABLE_BORDER_PT 0.5

/* docx_drawing.c: room kept for a caption below a drawing, and the dpi of
 * an image that does not say. */
#define CAPTION_ROOM_PT 36.0
#define DEFAULT_DPI 96.0
/* A line holding a drawing is a little taller than the drawing (measured). */
#define DRAWING_EXTRA_PT 1.3

/* ---- measuring text ---- */

/* Advance of a code point in em. */
static double char_em(uint32_t cp, int bold, int mono)
{
    if (mono)
        return kiln_char_is_wide(cp) ? KILN_METRIC_WIDE_UNITS / KILN_METRIC_UNITS_PER_EM
                                     : MONO_CHAR_EM;
    if (cp >= 32 && cp < 127)
        return (bold ? kiln_calibri_bold : kiln_calibri_regular)[cp - 32] /
               KILN_METRIC_UNITS_PER_EM;
    double units;
    switch (cp) {
    case 0xA0: /* no-break space */
        units = kiln_calibri_regular[0];
        break;
    case 0xB7: /* middle dot */
        units = 517;
        break;
    case 0x2018:
    case 0x2019:
        units = 511;
        break;
    case 0x201C:
    case 0x201D:
        units = 857;
        break;
    case 0x2013:
    case 0x2022:
    case 0x2212:
        units = 1020;
        break;
    case 0x2014:
        units = 1854;
        break;
    case 0x2026:
        units = 1414;
        break;
    default:
        if (cp >= 0x300 && cp < 0x370) /* combining marks */
            return 0;
        if (kiln_char_is_wide(cp))
            return KILN_METRIC_WIDE_UNITS / KILN_METRIC_UNITS_PER_EM;
        units = KILN_METRIC_OTHER_UNITS;
        break;
    }
    return units / KILN_METRIC_UNITS_PER_EM * (bold ? BOLD_OTHER : 1.0);
}

/* The next code point of s[*i..len) (a bad byte counts as one character). */
static uint32_t next_code_point(const char *s, size_t len, size_t *i)
{
    const unsigned char *p = (const unsigned char *)s + *i;
    unsigned char ch = p[0];
    size_t n = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC0 ? 2 : 1;
    if (n > len - *i)
        n = len - *i;
    uint32_t cp = n == 1 ? ch : n == 4 ? ch & 0x07u : n == 3 ? ch & 0x0Fu : ch & 0x1Fu;
    for (size_t k = 1; k < n; k++)
        cp = (cp << 6) | (p[k] & 0x3Fu);
    *i += n;
    return cp;
}

/* How a stretch of text is set. */
typedef struct text_font {
    double size;  /* points: the line's height goes by it */
    double glyph; /* points the glyphs are drawn at (less for a superscript) */
    int bold, mono;
    int other; /* not Calibri: LibreOffice draws it in DejaVu */
} text_font;

/* Calibri or its stand-in, by name. */
static int is_calibri(const char *font)
{
    return font && (strcasecmp(font, "Calibri") == 0 || strcasecmp(font, "Carlito") == 0);
}

static double font_line_em(const text_font *f)
{
    return f->mono || f->other ? OTHER_LINE_EM : LINE_EM;
}

static double char_width(uint32_t cp, const text_font *f)
{
    double em = char_em(cp, f->bold, f->mono) * f->glyph;
    if (f->other && !f->mono)
        em *= f->bold ? OTHER_BOLD_WIDTH : OTHER_WIDTH;
    return em;
}

/*
 * Greedy line breaking, as LibreOffice and Word do without hyphenation: a
 * word goes on the line when it fits, else starts the next one; spaces at
 * the end of a line take no room; a word wider than the line breaks where
 * the line ends. A word that fits but for a fraction of a point wraps too
 * (LibreOffice's text positions are rounded: measured). Lines are measured
 * as they end, each by its tallest font.
 */
#define FIT_TOLERANCE_PT 0.1

typedef struct line_breaker {
    double width;   /* of a line, points */
    double spacing; /* line height / the font's single line height */
    double mark_h;  /* an empty line's height (the paragraph mark's font) */
    double height;  /* of the lines ended so far */
    size_t lines;
    double x;      /* the words on the current line */
    double space;  /* spaces after them */
    double word;   /* the word being read */
    double word_h; /* tallest font in the word, and on the line */
    double line_h;
} line_breaker;

static void breaker_init(line_breaker *b, double width, double spacing, const text_font *mark)
{
    memset(b, 0, sizeof *b);
    b->width = width > 1 ? width : 1;
    b->spacing = spacing;
    b->mark_h = mark->size * font_line_em(mark) * spacing;
}

static void end_line(line_breaker *b)
{
    b->height += b->line_h > 0 ? b->line_h : b->mark_h;
    b->lines++;
    b->x = b->space = 0;
    b->line_h = 0;
}

static void end_word(line_breaker *b)
{
    if (b->word <= 0 && b->word_h <= 0)
        return;
    if (b->x > 0 && b->x + b->space + b->word > b->width - FIT_TOLERANCE_PT)
        end_line(b);
    while (b->word > b->width) {
        b->line_h = fmax(b->line_h, b->word_h);
        end_line(b);
        b->word -= b->width;
    }
    b->x += (b->x > 0 ? b->space : 0) + b->word;
    b->line_h = fmax(b->line_h, b->word_h);
    b->word = b->word_h = b->space = 0;
}

static void add_char(line_breaker *b, uint32_t cp, const text_font *f)
{
    double h = f->size * font_line_em(f) * b->spacing;
    if (cp == '\n' || cp == '\r') {
        end_word(b);
        b->line_h = fmax(b->line_h, h);
        end_line(b);
    } else if (cp == ' ') {
        end_word(b);
        b->space += char_width(cp, f);
        b->line_h = fmax(b->line_h, h);
    } else if (cp == '\t') {
        end_word(b);
        double stop = (floor((b->x + b->space) / TAB_STOP_PT) + 1) * TAB_STOP_PT;
        if (stop > b->width) { /* the tab goes to the first stop of the next line */
            end_line(b);
            stop = fmin(TAB_STOP_PT, b->width);
        }
        b->x = stop;
        b->space = 0;
        b->line_h = fmax(b->line_h, h);
    } else if (kiln_char_is_wide(cp)) {
        /* A line may break before and after any wide character. */
        end_word(b);
        b->word = char_width(cp, f);
        b->word_h = h;
        end_word(b);
    } else {
        b->word += char_width(cp, f);
        b->word_h = fmax(b->word_h, h);
    }
}

static void add_text(line_breaker *b, const char *s, size_t len, const text_font *f)
{
    uint32_t prev = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp = next_code_point(s, len, &i);
        if (!(cp == '\n' && prev == '\r')) /* CR LF is one line break */
            add_char(b, cp, f);
        prev = cp;
    }
}

/* Ends the last line (a paragraph always has one). */
static void finish_lines(line_breaker *b)
{
    end_word(b);
    end_line(b);
}

/* ---- the layout model ---- */

/* What a paragraph style gives its text (templates/docx/styles.xml). */
typedef struct para_style {
    text_font font; /* of the paragraph mark, and of runs without looks of their own */
    double spacing; /* line height / the font's single line height */
    double before, after;
    double indent;  /* left and right indents together */
    int contextual; /* a style with contextual spacing (PARA_*), else 0 */
} para_style;

enum { PARA_LIST = 1, PARA_CODE = 2 };

typedef struct layout layout;

/* A table for the estimate: laid out as docx_table.c lays it out
 * (docx_table_layout), then its rows placed one by one. */
typedef struct table_estimate {
    layout *l;
    kiln_table_layout tl;
    kiln_calibri_metrics metrics; /* tl's */
    uint32_t wsrow;               /* the next row's worksheet row (kiln_table_layout_row) */
    double header_h;              /* 0 = no header row */
    size_t rows;                  /* rows placed */
    double rows_total;            /* their heights */
} table_estimate;

/* A table laid out ahead of being placed (plan_table). */
typedef struct table_plan {
    const kiln_table *table; /* NULL = none */
    table_estimate t;
    long cols;      /* columns shown; 0 = the table writes nothing; -1 = unreadable */
    double first_h; /* the first data row's height, 0 = none */
} table_plan;

struct layout {
    const docx_ctx *c;
    double body;          /* body font size */
    int body_other;       /* the theme's body font is not Calibri */
    int heading_other;    /* nor its heading font */
    double width, height; /* text area */
    double y;             /* bottom of the last line placed, from the top of the text area */
    double after;         /* space after the last paragraph placed */
    int contextual;       /* contextual style of the last paragraph placed, 0 = none */
    int keep_top_space;   /* the page began at the document's start or a page break */
    int after_table;      /* the last block was a table (docx_document.c then adds an
                             empty paragraph before a table without a caption) */
    unsigned page;
    size_t keep_chain; /* headings still to place in a keep-with-next run */
    table_plan plan;   /* the next table, measured ahead (plan_table) */
};

static double half_points(double pt)
{
    double half = floor(pt * 2.0 + 0.5) / 2.0;
    return half < 1 ? 1 : half;
}

/* A size of docx_styles.c: pt at an 11 pt body, scaled, in half points. */
static double scaled_size(const layout *l, double pt)
{
    return half_points(l->body * pt / DOCX_BODY_DEFAULT_PT);
}

static text_font body_font(const layout *l, double size)
{
    text_font f = {.size = size, .glyph = size, .other = l->body_other};
    return f;
}

static para_style normal_style(const layout *l)
{
    para_style s = {.font = body_font(l, l->body),
                    .spacing = AUTO_SPACING,
                    .after = NORMAL_AFTER_PT};
    return s;
}

static para_style heading_style(const layout *l, int level)
{
    int lv = level < 1 ? 1 : level > 6 ? 6 : level;
    double size = scaled_size(l, heading_pt[lv]);
    para_style s = {
        .font = {.size = size, .glyph = size, .bold = lv <= 5, .other = l->heading_other},
        .spacing = AUTO_SPACING,
        .before = heading_before[lv],
        .after = heading_after[lv]};
    return s;
}

static para_style caption_style(const layout *l)
{
    para_style s = {.font = body_font(l, scaled_size(l, CAPTION_PT)),
                    .spacing = 1.0,
                    .after = CAPTION_AFTER_PT};
    return s;
}

/* List Paragraph, with the indent of docx_numbering.c's level depth. */
static para_style list_style(const layout *l, int depth)
{
    para_style s = normal_style(l);
    s.contextual = PARA_LIST;
    s.indent = LIST_INDENT_PT * (depth + 1);
    if (s.indent > l->width - 72)
        s.indent = l->width > 144 ? l->width - 72 : 0;
    return s;
}

static para_style quote_style(const layout *l)
{
    para_style s = normal_style(l);
    s.before = QUOTE_BEFORE_PT;
    s.after = QUOTE_AFTER_PT;
    s.indent = QUOTE_INDENT_PT;
    return s;
}

/* A body line's height. */
static double body_line(const layout *l)
{
    text_font f = body_font(l, l->body);
    return l->body * font_line_em(&f) * AUTO_SPACING;
}

static void new_page(layout *l, int by_break)
{
    l->page++;
    l->y = 0;
    l->after = 0;
    l->contextual = 0;
    l->keep_top_space = by_break;
}

/* The space above a paragraph of style s where the layout stands. */
static double space_above(const layout *l, const para_style *s)
{
    if (l->y <= 0)
        return l->keep_top_space ? s->before : 0;
    if (s->contextual && s->contextual == l->contextual)
        return 0;
    return fmax(l->after, s->before);
}

/* After a paragraph of style s. */
static void placed(layout *l, const para_style *s)
{
    l->after = s->after;
    l->contextual = s->contextual;
    l->keep_top_space = 0;
    l->after_table = 0;
}

/* A line that passes the bottom of the text area by less than this still
 * fits (LibreOffice's positions are rounded: measured). */
#define BOTTOM_TOLERANCE_PT 1.0

/* Lines of one height that may split across pages, with widow and orphan
 * control (LibreOffice keeps two lines of a paragraph on each page): a
 * paragraph with room for only one line at the bottom of a page starts on
 * the next one, and one that would leave a single line over takes a line
 * with it. */
static void place_lines(layout *l, double space, size_t lines, double line_h)
{
    size_t left = lines;
    int first = 1;
    while (left > 0) {
        double room = l->height + BOTTOM_TOLERANCE_PT - l->y - (l->y > 0 ? space : 0);
        size_t fit = room >= line_h ? (size_t)(room / line_h) : 0;
        if (l->y <= 0 && fit == 0)
            fit = 1; /* a line taller than the page */
        if (fit >= left) {
            l->y += (l->y > 0 ? space : 0) + line_h * (double)left;
            return;
        }
        if (left - fit < 2 && left >= 2)
            fit = left - 2;
        if (first && fit < 2 && l->y > 0) {
            new_page(l, 0);
            space = 0;
            first = 0;
            continue;
        }
        if (fit == 0)
            fit = 1;
        l->y += (l->y > 0 ? space : 0) + line_h * (double)fit;
        left -= fit;
        new_page(l, 0);
        space = 0;
        first = 0;
    }
}

/* Something that never splits: it starts the next page when it does not
 * fit on this one. Returns the space to leave above it there. */
static double make_room(layout *l, double space, double h)
{
    if (l->y > 0 && l->y + space + h > l->height + BOTTOM_TOLERANCE_PT) {
        new_page(l, 0);
        return 0;
    }
    return space;
}

/* Lines and their height for text in style s, runs with their own looks. */
static void text_lines(const layout *l, const para_style *s, const kiln_text *t, double width,
                       line_breaker *b)
{
    breaker_init(b, width - s->indent, s->spacing, &s->font);
    double code_size = scaled_size(l, CODE_PT);
    for (size_t i = 0; t && i < t->run_count; i++) {
        const kiln_run *r = &t->runs[i];
        text_font f = s->font;
        if (r->flags & KILN_RUN_CODE) {
            f.mono = 1;
            f.size = code_size;
        }
        if (r->size > 0)
            f.size = r->size;
        if (r->font)
            f.other = !is_calibri(r->font);
        f.bold |= (r->flags & KILN_RUN_BOLD) != 0;
        f.glyph = r->flags & (KILN_RUN_SUPERSCRIPT | KILN_RUN_SUBSCRIPT) ? f.size * SCRIPT_FACTOR
                                                                         : f.size;
        add_text(b, r->text, r->len, &f);
    }
    finish_lines(b);
}

static void plain_lines(const para_style *s, const char *text, double width, line_breaker *b)
{
    breaker_init(b, width - s->indent, s->spacing, &s->font);
    if (text)
        add_text(b, text, strlen(text), &s->font);
    finish_lines(b);
}

/* A paragraph that may split across pages. */
static void place_paragraph(layout *l, const para_style *s, const line_breaker *b)
{
    double line_h = b->height / (double)(b->lines ? b->lines : 1);
    place_lines(l, space_above(l, s), b->lines, line_h);
    placed(l, s);
}

/* A paragraph kept whole on one page (keep lines). */
static void place_kept(layout *l, const para_style *s, double h)
{
    double space = make_room(l, space_above(l, s), h);
    l->y += space + (h < l->height ? h : l->height);
    placed(l, s);
}

/* A caption paragraph: "Table N: text" or "Figure N: text", or the text
 * alone when it starts with the label itself (docx_write_caption). */
static void caption_lines(const layout *l, const char *label, const char *text, line_breaker *b)
{
    para_style s = caption_style(l);
    breaker_init(b, l->width, s.spacing, &s.font);
    if (!text || strncasecmp(text, label, strlen(label)) != 0) {
        add_text(b, label, strlen(label), &s.font);
        add_text(b, " 00: ", 5, &s.font);
    }
    if (text)
        add_text(b, text, strlen(text), &s.font);
    finish_lines(b);
}

/* A TOC entry: the heading's text in the entry style's look, tabs and line
 * breaks as spaces (write_entry_text). */
static void entry_lines(const layout *l, const para_style *s, const kiln_text *t, line_breaker *b)
{
    breaker_init(b, l->width - s->indent, s->spacing, &s->font);
    for (size_t i = 0; i < t->run_count; i++) {
        const kiln_run *r = &t->runs[i];
        for (size_t k = 0; k < r->len;) {
            uint32_t cp = next_code_point(r->text, r->len, &k);
            add_char(b, cp == '\t' || cp == '\n' || cp == '\r' ? ' ' : cp, &s->font);
        }
    }
    finish_lines(b);
}

/* ---- tables ---- */

/* The next row's height: its tallest cell's lines (what each column shows,
 * kiln_table_layout_row, at the size docx_table.c gives the cell's runs, in
 * the column's width less the cell margins), single spaced, and the
 * margins. The lines are broken as LibreOffice draws them (the line breaker
 * above: Calibri Bold's own widths, DejaVu's for other fonts, tab stops),
 * not with the Calibri widths the layout sizes the columns with: those
 * only decide the widths, and the layout's slack is there for the
 * difference. */
static double row_height(table_estimate *t, int header, const kiln_cell *cells, size_t count)
{
    const kiln_table_layout *tl = &t->tl;
    /* Unshrunk, the runs take the paragraph style's size: the body's. */
    double size = tl->shrunk ? tl->size : t->l->body;
    double tallest = size * LINE_EM;
    const kiln_table_slot *slots = kiln_table_layout_row(&t->tl, t->wsrow, header, cells, count,
                                                         1);
    if (t->wsrow < UINT32_MAX)
        t->wsrow++;
    for (size_t i = 0; i < tl->ncols; i++) {
        const kiln_table_slot *slot = &slots[i];
        const kiln_cell *cell = slot->cell;
        if ((slot->kind != KILN_SLOT_CELL && slot->kind != KILN_SLOT_MERGE_TOP) || !cell ||
            cell->kind == KILN_CELL_BLANK)
            continue;
        char buf[KILN_NUMFMT_MAX];
        size_t len = 0;
        const char *text = kiln_cell_display(cell, slot->format, buf, sizeof buf, &len);
        if (len == 0)
            continue;
        int bold = header || (slot->style && slot->style->bold);
        double own = docx_table_run_size(tl, slot->style);
        text_font f = body_font(t->l, own > 0 ? own : size);
        f.bold = bold;
        line_breaker b;
        breaker_init(&b, fmax(slot->width - tl->pad, 1), 1.0, &f);
        add_text(&b, text, len, &f);
        finish_lines(&b);
        tallest = fmax(tallest, b.height);
    }
    return tallest + ROW_EXTRA_PT;
}

/* A row never splits, and the header row repeats on each new page. */
static void place_row(table_estimate *t, double h)
{
    layout *l = t->l;
    if (l->y > 0 && l->y + h > l->height) {
        new_page(l, 0);
        l->y = t->header_h;
    }
    l->y += h;
    t->rows++;
    t->rows_total += h;
}

static kiln_status reader_failed(const layout *l)
{
    return l->c->err && l->c->err->code != KILN_E_OK ? l->c->err->code : KILN_E_INPUT;
}

/* The table's layout, header row and first row, worked out once: the
 * heading before a table keeps with its first rows, so they are needed
 * before the table is placed. -1 when the rows cannot be read (err set). */
static long plan_table(layout *l, const kiln_flow_item *item)
{
    table_plan *plan = &l->plan;
    const kiln_table *table = item->block->table;
    if (plan->table == table)
        return plan->cols;
    memset(plan, 0, sizeof *plan); /* the last plan's layout is in the arena */
    plan->table = table;
    table_estimate *t = &plan->t;
    t->l = l;
    size_t shown;
    if (docx_table_layout(l->c, &table->data, item->sheet, item->block->pointer, &t->tl,
                          &t->metrics, &shown) != KILN_E_OK)
        return plan->cols = -1;
    plan->cols = (long)shown;
    if (shown == 0)
        return 0;
    if (t->tl.hdr)
        t->header_h = row_height(t, 1, t->tl.hdr, table->data.column_count);
    kiln_row_reader *reader = NULL;
    const kiln_cell *cells;
    size_t count;
    if (kiln_rows_open(l->c->doc, &table->data, &reader, l->c->err) != KILN_E_OK)
        return plan->cols = -1;
    int more = kiln_rows_next(reader, &cells, &count, l->c->err);
    if (more > 0)
        plan->first_h = row_height(t, 0, cells, count);
    kiln_rows_close(reader);
    if (more < 0)
        plan->cols = -1;
    return plan->cols;
}

/* The caption, the header row and the first row: what stays together. */
static double table_start(layout *l, const kiln_flow_item *item)
{
    const kiln_table *table = item->block->table;
    double h = 0;
    if (table->caption) {
        line_breaker b;
        caption_lines(l, "Table", table->caption, &b);
        h += b.height + CAPTION_AFTER_PT;
    }
    if (plan_table(l, item) > 0)
        h += TABLE_BORDER_PT + l->plan.t.header_h + l->plan.first_h;
    return h;
}

static kiln_status place_table(layout *l, const kiln_flow_item *item)
{
    const kiln_table *table = item->block->table;
    const kiln_table_data *d = &table->data;
    kiln_row_reader *reader = NULL;
    kiln_status st = KILN_E_OK;

    long cols = plan_table(l, item);
    if (cols < 0)
        return reader_failed(l);
    table_estimate *t = &l->plan.t;
    if (table->caption) {
        para_style cs = caption_style(l);
        line_breaker b;
        caption_lines(l, "Table", table->caption, &b);
        /* The caption keeps with the table's first rows. */
        double space = make_room(l, space_above(l, &cs), table_start(l, item));
        l->y += space + b.height;
        placed(l, &cs);
    } else if (l->after_table) {
        /* docx_document.c's empty paragraph between two tables */
        para_style ns = normal_style(l);
        place_lines(l, space_above(l, &ns), 1, body_line(l));
        placed(l, &ns);
    }
    if (cols == 0)
        goto done;

    /* The table starts below the space after the paragraph above it; its
     * header row and first row go together. */
    double space = make_room(l, l->y > 0 ? l->after : 0,
                             TABLE_BORDER_PT + t->header_h + l->plan.first_h);
    l->y += space + TABLE_BORDER_PT + t->header_h;

    const kiln_cell *cells;
    size_t count;
    if ((st = kiln_rows_open(l->c->doc, d, &reader, l->c->err)) != KILN_E_OK)
        return st;
    int more = kiln_rows_next(reader, &cells, &count, l->c->err);
    if (more > 0) {
        l->y += l->plan.first_h;
        t->rows = 1;
        t->rows_total = l->plan.first_h;
        more = kiln_rows_next(reader, &cells, &count, l->c->err);
    }
    for (; more > 0 && t->rows < ESTIMATE_ROWS_MAX;
         more = kiln_rows_next(reader, &cells, &count, l->c->err))
        place_row(t, row_height(t, 0, cells, count));
    if (more < 0) {
        st = reader_failed(l);
        goto close_reader;
    }
    /* Rows past the cap of an inline table: at the average height. */
    if (more > 0 && d->source == KILN_ROWS_INLINE && d->inline_row_count > t->rows && t->rows) {
        double avg = t->rows_total / (double)t->rows;
        for (size_t r = t->rows, n = d->inline_row_count; r < n; r++)
            place_row(t, avg);
    }
done:
    l->after = 0;
    l->contextual = 0;
    l->keep_top_space = 0;
    l->after_table = 1;
close_reader:
    kiln_rows_close(reader);
    return st;
}

/* ---- drawings ---- */

/* docx_drawing.c's fit: no wider than max_w, no taller than max_h. */
static double fitted_height(double w, double h, double max_w, double max_h)
{
    if (max_w > 0 && w > max_w) {
        h *= max_w / w;
        w = max_w;
    }
    if (max_h > 0 && h > max_h)
        h = max_h;
    return h;
}

static double image_height(const layout *l, const kiln_image *img, double width_pt, int captioned)
{
    double dx = img->dpi_x > 0 ? img->dpi_x : DEFAULT_DPI;
    double dy = img->dpi_y > 0 ? img->dpi_y : DEFAULT_DPI;
    double w = (img->width_px ? img->width_px : 1) * 72.0 / dx;
    double h = (img->height_px ? img->height_px : 1) * 72.0 / dy;
    if (width_pt > 0) {
        h *= width_pt / w;
        w = width_pt;
    }
    double max_h = captioned && l->height > 2 * CAPTION_ROOM_PT ? l->height - CAPTION_ROOM_PT
                                                                : l->height;
    return fitted_height(w, h, l->width, max_h);
}

static double chart_height(const layout *l, const kiln_chart *chart)
{
    double w = (chart->width_px ? chart->width_px : 480) * 0.75;
    double h = (chart->height_px ? chart->height_px : 288) * 0.75;
    return fitted_height(w, h, l->width, l->height);
}

/* A centered drawing paragraph, kept with its caption when it has one. */
static void place_drawing(layout *l, double h, const char *caption)
{
    para_style ns = normal_style(l);
    double space = space_above(l, &ns);
    line_breaker b = {0};
    para_style cs = caption_style(l);
    double caption_h = 0;
    if (caption) {
        caption_lines(l, "Figure", caption, &b);
        caption_h = fmax(ns.after, cs.before) + b.height;
    }
    h = fmin(h + DRAWING_EXTRA_PT, l->height);
    space = make_room(l, space, h + caption_h);
    l->y += space + h;
    placed(l, &ns);
    if (caption) {
        place_lines(l, space_above(l, &cs), b.lines, b.height / (double)b.lines);
        placed(l, &cs);
    }
}

/* ---- lists, code, the TOC ---- */

static void place_list(layout *l, const kiln_list *list, int depth)
{
    para_style s = list_style(l, depth);
    for (size_t i = 0; i < list->item_count; i++) {
        line_breaker b;
        text_lines(l, &s, &list->items[i].text, l->width, &b);
        place_paragraph(l, &s, &b);
        if (list->items[i].children)
            place_list(l, list->items[i].children, depth + 1);
    }
}

static para_style code_style(const layout *l)
{
    double size = scaled_size(l, CODE_PT);
    para_style s = {.font = {.size = size, .glyph = size, .mono = 1},
                    .spacing = 1.0,
                    .before = CODE_BEFORE_PT,
                    .after = CODE_AFTER_PT,
                    .indent = CODE_INDENT_PT,
                    .contextual = PARA_CODE};
    return s;
}

/* docx_document.c writes one Code paragraph per line (a final line feed
 * ends the last one). Their borders join into one box, which adds its
 * borders' room above the first line and below the last; a box split by a
 * page is closed at the bottom of the one page and opened again at the top
 * of the next, so a line fits only with the bottom border's room below it. */
static void place_code(layout *l, const char *code)
{
    para_style s = code_style(l);
    const char *p = code ? code : "";
    size_t len = strlen(p);
    if (len > 0 && p[len - 1] == '\n')
        len--;
    const char *end = p + len;
    int first = 1;
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        line_breaker b;
        breaker_init(&b, l->width - s.indent, s.spacing, &s.font);
        add_text(&b, p, (size_t)(stop - p), &s.font);
        finish_lines(&b);
        double line_h = b.height / (double)b.lines;
        double space = space_above(l, &s) + (first ? CODE_BORDER_PT : 0);
        for (size_t i = 0; i < b.lines; i++) {
            if (l->y > 0 &&
                l->y + space + line_h + CODE_BORDER_PT > l->height + BOTTOM_TOLERANCE_PT) {
                new_page(l, 0);
                l->y = CODE_BORDER_PT;
                space = 0;
            }
            l->y += space + line_h;
            space = 0;
        }
        placed(l, &s);
        first = 0;
        if (!nl)
            break;
        p = nl + 1;
    }
    l->y += CODE_BORDER_PT;
}

/* Headings of level <= levels: the TOC's entries. */
static void place_toc(layout *l, const kiln_block *b)
{
    int levels = b->level < 1 ? 3 : b->level > 6 ? 6 : b->level;
    if (b->title && *b->title) {
        para_style hs = heading_style(l, 1);
        line_breaker lb;
        plain_lines(&hs, b->title, l->width, &lb);
        /* keep with next: the title goes with the first entry */
        double space = make_room(l, space_above(l, &hs), lb.height + hs.after + l->body * 1.5);
        l->y += space + lb.height;
        placed(l, &hs);
    }
    para_style es = normal_style(l);
    es.after = TOC_AFTER_PT;
    size_t entries = 0;
    for (size_t i = 0; i < l->c->heading_count; i++) {
        const docx_heading *h = &l->c->headings[i];
        if (h->level > levels)
            continue;
        line_breaker lb;
        es.indent = TOC_INDENT_PT * (h->level - 1) + TOC_PAGE_ROOM_PT;
        entry_lines(l, &es, h->text, &lb);
        place_paragraph(l, &es, &lb);
        entries++;
    }
    if (entries == 0) {
        line_breaker lb;
        plain_lines(&es, NO_ENTRIES_TEXT, l->width, &lb);
        place_paragraph(l, &es, &lb);
    }
}

/* ---- keep with next ---- */

/* What of a paragraph must share a page with a heading kept with it: its
 * first two lines (orphan control), or all of it when it has three lines
 * or fewer (it cannot split with two lines on each page). */
static double kept_lines(const line_breaker *b)
{
    double line_h = b->height / (double)(b->lines ? b->lines : 1);
    return (b->lines <= 3 ? (double)b->lines : 2.0) * line_h;
}

/* How much of item index must share a page with the heading before it: the
 * kept lines of a paragraph, a quote or a list's first item; a table's
 * caption, header row and first row; a drawing and its caption. */
static double first_part(layout *l, size_t index)
{
    if (index >= l->c->flow.count)
        return 0;
    const kiln_block *b = l->c->flow.items[index].block;
    line_breaker lb;
    switch (b->kind) {
    case KILN_BLOCK_PARAGRAPH: {
        para_style s = normal_style(l);
        text_lines(l, &s, &b->text, l->width, &lb);
        return kept_lines(&lb);
    }
    case KILN_BLOCK_QUOTE: {
        para_style s = quote_style(l);
        text_lines(l, &s, &b->text, l->width, &lb);
        return s.before + kept_lines(&lb);
    }
    case KILN_BLOCK_LIST: {
        if (b->list.item_count == 0)
            return 0;
        para_style s = list_style(l, 0);
        text_lines(l, &s, &b->list.items[0].text, l->width, &lb);
        return kept_lines(&lb);
    }
    case KILN_BLOCK_RULE:
        return body_line(l) + RULE_BORDER_PT;
    case KILN_BLOCK_CODE:
        return CODE_BEFORE_PT + CODE_BORDER_PT + scaled_size(l, CODE_PT) * OTHER_LINE_EM;
    case KILN_BLOCK_TABLE:
        return b->table ? table_start(l, &l->c->flow.items[index]) : 0;
    case KILN_BLOCK_IMAGE:
    case KILN_BLOCK_CHART: {
        const char *caption = b->kind == KILN_BLOCK_IMAGE ? b->caption
                              : b->chart                  ? b->chart->caption
                                                          : NULL;
        double h = b->kind == KILN_BLOCK_IMAGE
                       ? (b->image ? image_height(l, b->image, b->width_pt, caption != NULL) : 0)
                       : (b->chart ? chart_height(l, b->chart) : 0);
        /* a captioned drawing keeps with its caption */
        if (caption) {
            caption_lines(l, "Figure", caption, &lb);
            h += NORMAL_AFTER_PT + lb.height;
        }
        return h + DRAWING_EXTRA_PT;
    }
    case KILN_BLOCK_TOC: {
        para_style s = heading_style(l, 1);
        return s.font.size * font_line_em(&s.font) * s.spacing + s.after + body_line(l);
    }
    case KILN_BLOCK_HEADING:
    case KILN_BLOCK_PAGE_BREAK:
        return 0;
    }
    return 0;
}

static void place_heading(layout *l, size_t index, docx_heading **next)
{
    const kiln_block *b = l->c->flow.items[index].block;
    para_style s = heading_style(l, b->level);
    line_breaker lb;
    text_lines(l, &s, &b->text, l->width, &lb);
    /* Keep with next: a heading never ends a page, and headings in a row
     * move together with the first part of what follows them. */
    if (l->keep_chain > 0) {
        l->keep_chain--;
    } else {
        double chain = space_above(l, &s) + lb.height;
        double after = s.after;
        size_t j = index + 1;
        for (; j < l->c->flow.count && l->c->flow.items[j].block->kind == KILN_BLOCK_HEADING;
             j++) {
            const kiln_block *n = l->c->flow.items[j].block;
            para_style ns = heading_style(l, n->level);
            line_breaker nb;
            text_lines(l, &ns, &n->text, l->width, &nb);
            chain += fmax(after, ns.before) + nb.height;
            after = ns.after;
        }
        l->keep_chain = j - index - 1;
        chain += after + first_part(l, j);
        if (l->y > 0 && l->y + chain > l->height + BOTTOM_TOLERANCE_PT)
            new_page(l, 0);
    }
    place_kept(l, &s, lb.height);
    (*next)->page = l->page;
    (*next)++;
}

static kiln_status place_item(layout *l, size_t index, docx_heading **next)
{
    const kiln_block *b = l->c->flow.items[index].block;
    line_breaker lb;
    switch (b->kind) {
    case KILN_BLOCK_HEADING:
        place_heading(l, index, next);
        break;
    case KILN_BLOCK_PARAGRAPH: {
        para_style s = normal_style(l);
        text_lines(l, &s, &b->text, l->width, &lb);
        place_paragraph(l, &s, &lb);
        break;
    }
    case KILN_BLOCK_LIST:
        place_list(l, &b->list, 0);
        break;
    case KILN_BLOCK_TABLE:
        if (b->table)
            return place_table(l, &l->c->flow.items[index]);
        break;
    case KILN_BLOCK_IMAGE:
        if (b->image)
            place_drawing(l, image_height(l, b->image, b->width_pt, b->caption != NULL),
                          b->caption);
        break;
    case KILN_BLOCK_CHART:
        if (b->chart)
            place_drawing(l, chart_height(l, b->chart), b->chart->caption);
        break;
    case KILN_BLOCK_PAGE_BREAK: {
        /* The break is in a paragraph of its own, whose line stays on this
         * page: when even that line does not fit, a page is left blank. */
        para_style s = normal_style(l);
        place_lines(l, space_above(l, &s), 1, body_line(l));
        new_page(l, 1);
        break;
    }
    case KILN_BLOCK_TOC:
        place_toc(l, b);
        break;
    case KILN_BLOCK_CODE:
        place_code(l, b->code);
        break;
    case KILN_BLOCK_QUOTE: {
        para_style s = quote_style(l);
        text_lines(l, &s, &b->text, l->width, &lb);
        place_paragraph(l, &s, &lb);
        if (b->attribution && *b->attribution) {
            breaker_init(&lb, l->width - s.indent, s.spacing, &s.font);
            add_text(&lb, "\xE2\x80\x94 ", 4, &s.font);
            add_text(&lb, b->attribution, strlen(b->attribution), &s.font);
            finish_lines(&lb);
            place_paragraph(l, &s, &lb);
        }
        break;
    }
    case KILN_BLOCK_RULE: {
        para_style s = normal_style(l);
        place_kept(l, &s, body_line(l) + RULE_BORDER_PT);
        break;
    }
    }
    return KILN_E_OK;
}

kiln_status docx_collect_headings(docx_ctx *c)
{
    size_t count = 0;
    int has_toc = 0;
    layout l = {0};

    for (size_t i = 0; i < c->flow.count; i++) {
        const kiln_block *b = c->flow.items[i].block;
        if (b->kind == KILN_BLOCK_HEADING)
            count++;
        else if (b->kind == KILN_BLOCK_TOC)
            has_toc = 1;
    }
    c->headings = NULL;
    c->heading_count = 0;
    c->heading_next = 0;
    if (count == 0 && !has_toc)
        return KILN_E_OK;
    if (count > 0) {
        c->headings = kiln_arena_calloc(c->arena, count, sizeof *c->headings);
        if (!c->headings)
            return kiln_error_set(c->err, KILN_E_NOMEM, NULL,
                                  "out of memory listing the headings");
    }

    size_t h = 0;
    for (size_t i = 0; i < c->flow.count; i++) {
        const kiln_block *b = c->flow.items[i].block;
        if (b->kind != KILN_BLOCK_HEADING)
            continue;
        c->headings[h].text = &b->text;
        c->headings[h].level = b->level < 1 ? 1 : b->level > 6 ? 6 : b->level;
        c->headings[h].bookmark = ++c->bookmark_count;
        c->headings[h].page = 1;
        h++;
    }
    c->heading_count = count;
    if (!has_toc || count == 0)
        return KILN_E_OK;

    l.c = c;
    l.body = half_points(c->doc->theme.font_size > 0 ? c->doc->theme.font_size
                                                     : DOCX_BODY_DEFAULT_PT);
    l.body_other = !is_calibri(c->doc->theme.font);
    l.heading_other = !is_calibri(c->doc->theme.heading_font);
    l.width = c->text_width_pt > 72 ? c->text_width_pt : 72;
    l.height = c->text_height_pt > 72 ? c->text_height_pt : 72;
    l.page = 1;
    l.keep_top_space = 1;
    docx_heading *next = c->headings;
    kiln_status st = KILN_E_OK;
    for (size_t i = 0; i < c->flow.count && st == KILN_E_OK; i++)
        st = place_item(&l, i, &next);
    return st;
}

/* ---- the TOC field ---- */

static void field_char(opc_xml *x, const char *type, int dirty, int web_hidden)
{
    opc_xml_start(x, "w:r");
    if (web_hidden) {
        opc_xml_start(x, "w:rPr");
        opc_xml_empty(x, "w:webHidden");
        opc_xml_end(x);
    }
    opc_xml_start(x, "w:fldChar");
    opc_xml_attr(x, "w:fldCharType", type);
    if (dirty)
        opc_xml_attr(x, "w:dirty", "true");
    opc_xml_end(x);
    opc_xml_end(x);
}

static void instr_text(opc_xml *x, const char *instr, int web_hidden)
{
    opc_xml_start(x, "w:r");
    if (web_hidden) {
        opc_xml_start(x, "w:rPr");
        opc_xml_empty(x, "w:webHidden");
        opc_xml_end(x);
    }
    opc_xml_start(x, "w:instrText");
    opc_xml_attr(x, "xml:space", "preserve");
    opc_xml_text(x, instr, strlen(instr));
    opc_xml_end(x);
    opc_xml_end(x);
}

/* A heading's text as one unformatted run: an entry takes the TOC style's
 * look, and tabs or line breaks in the heading become spaces. */
static void write_entry_text(opc_xml *x, const kiln_text *t)
{
    opc_xml_start(x, "w:r");
    for (size_t i = 0; i < t->run_count; i++) {
        const char *s = t->runs[i].text;
        size_t len = t->runs[i].len, start = 0;
        for (size_t j = 0; j < len; j++) {
            if (s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
                docx_write_t(x, s + start, j - start);
                docx_write_t(x, " ", 1);
                start = j + 1;
            }
        }
        docx_write_t(x, s + start, len - start);
    }
    opc_xml_end(x);
}

static void write_entry(docx_ctx *c, const docx_heading *h, const char *toc_instr,
                        int64_t tab_pos, int last)
{
    opc_xml *x = c->x;
    char style[16], anchor[24], instr[48], page[16];
    snprintf(style, sizeof style, DOCX_STYLE_TOC "%d", h->level);
    snprintf(anchor, sizeof anchor, "_Toc%08u", h->bookmark);
    snprintf(instr, sizeof instr, " PAGEREF %s \\h ", anchor);
    snprintf(page, sizeof page, "%u", h->page);

    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    opc_xml_val(x, "w:pStyle", "w:val", style);
    opc_xml_start(x, "w:tabs");
    opc_xml_start(x, "w:tab");
    opc_xml_attr(x, "w:val", "right");
    opc_xml_attr(x, "w:leader", "dot");
    opc_xml_attr_int(x, "w:pos", tab_pos);
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_end(x);

    if (toc_instr) {
        field_char(x, "begin", 1, 0);
        instr_text(x, toc_instr, 0);
        field_char(x, "separate", 0, 0);
    }
    opc_xml_start(x, "w:hyperlink");
    opc_xml_attr(x, "w:anchor", anchor);
    opc_xml_attr(x, "w:history", "1");
    write_entry_text(x, h->text);
    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:rPr");
    opc_xml_empty(x, "w:webHidden");
    opc_xml_end(x);
    opc_xml_empty(x, "w:tab");
    opc_xml_end(x);
    field_char(x, "begin", 0, 1);
    instr_text(x, instr, 1);
    field_char(x, "separate", 0, 1);
    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:rPr");
    opc_xml_empty(x, "w:webHidden");
    opc_xml_end(x);
    opc_xml_element_text(x, "w:t", page);
    opc_xml_end(x);
    field_char(x, "end", 0, 1);
    opc_xml_end(x); /* w:hyperlink */
    if (last)
        field_char(x, "end", 0, 0);
    opc_xml_end(x); /* w:p */
}

kiln_status docx_write_toc(docx_ctx *c, const kiln_block *toc)
{
    opc_xml *x = c->x;
    int levels = toc->level < 1 ? 3 : toc->level > 6 ? 6 : toc->level;
    char instr[48];
    snprintf(instr, sizeof instr, " TOC \\o \"1-%d\" \\h \\z \\u ", levels);
    int64_t tab_pos = (int64_t)(c->text_width_pt * DOCX_TWIPS_PER_PT + 0.5);

    /* Word keeps its own tables of contents in a content control of the
     * "Table of Contents" gallery: that is what gives the TOC its "Update
     * Table" button and lets Word find and replace it as one piece. */
    opc_xml_start(x, "w:sdt");
    opc_xml_start(x, "w:sdtPr");
    opc_xml_start(x, "w:docPartObj");
    opc_xml_val(x, "w:docPartGallery", "w:val", "Table of Contents");
    opc_xml_empty(x, "w:docPartUnique");
    opc_xml_end(x); /* w:docPartObj */
    opc_xml_end(x); /* w:sdtPr */
    opc_xml_start(x, "w:sdtContent");

    if (toc->title && *toc->title) {
        opc_xml_start(x, "w:p");
        opc_xml_start(x, "w:pPr");
        opc_xml_val(x, "w:pStyle", "w:val", DOCX_STYLE_TOC_HEADING);
        opc_xml_end(x);
        docx_write_text_run(c, toc->title, strlen(toc->title), NULL);
        opc_xml_end(x);
    }

    /* The last entry closes the field, so find it first. */
    size_t last = c->heading_count;
    for (size_t i = c->heading_count; i-- > 0;)
        if (c->headings[i].level <= levels) {
            last = i;
            break;
        }
    if (last == c->heading_count) {
        /* No entries: the result Word itself writes then (bold, as Word's),
         * so a viewer shows why the TOC is empty; the field is still dirty
         * and Word fills it in when headings have been added. */
        opc_xml_start(x, "w:p");
        field_char(x, "begin", 1, 0);
        instr_text(x, instr, 0);
        field_char(x, "separate", 0, 0);
        opc_xml_start(x, "w:r");
        opc_xml_start(x, "w:rPr");
        opc_xml_empty(x, "w:b");
        opc_xml_empty(x, "w:bCs");
        opc_xml_empty(x, "w:noProof");
        opc_xml_end(x);
        opc_xml_element_text(x, "w:t", NO_ENTRIES_TEXT);
        opc_xml_end(x); /* w:r */
        field_char(x, "end", 0, 0);
        opc_xml_end(x);
        goto close_sdt;
    }
    int first = 1;
    for (size_t i = 0; i <= last; i++) {
        const docx_heading *h = &c->headings[i];
        if (h->level > levels)
            continue;
        write_entry(c, h, first ? instr : NULL, tab_pos, i == last);
        first = 0;
    }
close_sdt:
    opc_xml_end(x); /* w:sdtContent */
    opc_xml_end(x); /* w:sdt */
    return KILN_E_OK;
}
