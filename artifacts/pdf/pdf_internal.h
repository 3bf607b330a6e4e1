/*
 * pdf_internal.h - the PDF writer's shared context: a small layout engine
 * over libharu.
 *
 * libharu draws glyphs, lines and images and writes the file; everything a
 * report needs above that (measuring text, breaking lines, paginating,
 * tables, charts) is Kiln's. The files, in reading order:
 *
 *   pdf_writer.c   kiln_pdf_write: the libharu document, metadata, the
 *                  passes below, page furniture, saving through kiln_output
 *   pdf_fonts.c    the font faces: DejaVu Sans/Serif/Mono (4 styles each)
 *                  embedded via libharu, metrics and glyph coverage from
 *                  FreeType, the CJK fallback face, missing-glyph reports
 *   pdf_font_trim.c  fonts copied without what embedding does not need
 *   pdf_bidi.c     right-to-left text: levels, Arabic shaping (FriBidi)
 *   pdf_text.c     paragraphs: styled runs -> fragments -> lines (breaks at
 *                  spaces, after hyphens, between CJK characters, inside
 *                  over-long words), and drawing lines (justify, underline,
 *                  strike, links)
 *   pdf_page.c     pages, the space left on them, the links on them (what
 *                  the flow, the tables and the paragraphs all ask for)
 *   pdf_layout.c   the flow: the cursor, headings (keep with next,
 *                  outline), paragraphs (widows and orphans), lists, code,
 *                  quotes, rules, page breaks, captions, the TOC
 *   pdf_table.c    tables: the layout of artifacts/layout/table_layout.h
 *                  measured with these fonts, wrapped cells, header shading
 *                  and borders, the header row repeated on every page
 *   pdf_image.c    PNG and JPEG images as XObjects (transparency flattened
 *                  so libharu never writes an uncompressed alpha mask)
 *   pdf_chart.c    charts as vector graphics
 *
 * Coordinates are PDF points with y growing upwards; the layout cursor
 * ctx->y is the top of the space still free on the current page and moves
 * down. Every length is in points.
 */
#ifndef KILN_PDF_INTERNAL_H
#define KILN_PDF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <ft2build.h>
#include FT_FREETYPE_H
#include <hpdf.h>

#include "../../common/arena.h"
#include "../../common/error.h"
#include "../../common/utf8.h"
#include "../layout/chart_data.h"
#include "../layout/flow.h"
#include "../render.h"
#include "../spec/spec.h"

/* ------------------------------------------------------------------ fonts */

typedef enum { PDF_FAMILY_SANS, PDF_FAMILY_SERIF, PDF_FAMILY_MONO, PDF_FAMILY__COUNT } pdf_family;

enum { PDF_STYLE_BOLD = 1, PDF_STYLE_ITALIC = 2, PDF_STYLE__COUNT = 4 };

/* One font file in one style, loaded on first use. */
typedef struct pdf_face {
    HPDF_Font font;         /* libharu's, UTF-8 encoded, embedded (subset) */
    FT_Face ft;             /* FreeType's view of the same file: metrics, coverage */
    const char *file;       /* path, for messages */
    double ascent, descent; /* per point of size; descent is negative */
    int16_t *widths;        /* per BMP code point: advance in 1/1000 em as libharu writes
                               it into /W; PDF_WIDTH_UNKNOWN until looked up,
                               PDF_WIDTH_MISSING when the face has no glyph */
    uint8_t *drawn;         /* bitmap of the BMP code points drawn in this face */
    unsigned style;         /* PDF_STYLE_* it was loaded for */
} pdf_face;

#define PDF_WIDTH_UNKNOWN INT16_MIN
#define PDF_WIDTH_MISSING (INT16_MIN + 1)

typedef struct pdf_fonts {
    HPDF_Doc pdf;
    FT_Library ft;
    pdf_face *faces[PDF_FAMILY__COUNT][PDF_STYLE__COUNT];
    pdf_face *fallback; /* CJK and whatever else the main faces lack; NULL = none */
    int fallback_tried;
    /* characters no face could draw: counted, the first one remembered */
    uint64_t missing_count;
    uint32_t missing_first;
} pdf_fonts;

/* The family a font name maps to: names with "mono", "courier", "consolas",
 * "code" -> MONO; "serif" (not "sans serif"), "times", "georgia", "cambria",
 * "garamond", "book", "palatino", "minion" -> SERIF; anything else SANS. */
pdf_family pdf_family_for_name(const char *font_name);

kiln_status pdf_fonts_init(pdf_fonts *fonts, HPDF_Doc pdf, kiln_error *err);
void pdf_fonts_release(pdf_fonts *fonts);
/* Copy face index of the font file at path, without what an embedded font
 * does not need, into an anonymous memory file (pdf_font_trim.c). Returns
 * its descriptor and names it in out_path ("/proc/self/fd/N"), or -1 when
 * that cannot be done (the caller then embeds the original file). */
int pdf_font_trim(const char *path, int index, char *out_path, size_t out_cap);

/* The face for family and style (PDF_STYLE_* bits), loading it on first use.
 * NULL with err set (KILN_E_INTERNAL naming the font file) when it cannot load. */
pdf_face *pdf_fonts_face(pdf_fonts *fonts, pdf_family family, unsigned style, kiln_error *err);

/* Mend what libharu 2.3.0 would write wrong: embed every part of composite
 * glyphs, and replace its malformed ToUnicode maps. Call once, after the last
 * text is drawn and before saving. */
kiln_status pdf_fonts_finish(pdf_fonts *fonts, kiln_error *err);

/* Advance of code point cp in face at size (points), falling back to the
 * fallback face, then to the width of '?' (what pdf_draw_text draws). */
double pdf_char_width(pdf_fonts *fonts, pdf_face *face, uint32_t cp, double size);
/* Width of a UTF-8 string, the same way. */
double pdf_text_width(pdf_fonts *fonts, pdf_face *face, const char *s, size_t len, double size);

/* ------------------------------------------------------------------ context */

typedef struct pdf_heading_mark { /* a heading, for the outline and the TOC */
    const char *text;             /* UTF-8, NUL-terminated (arena) */
    int level;                    /* 1..6 */
    size_t page;                  /* 0-based page index */
    double y;                     /* top of the heading on that page */
} pdf_heading_mark;

typedef struct pdf_link { /* an internal or external link, placed at the end */
    size_t page;
    double x0, y0, x1, y1; /* the clickable rectangle */
    const char *uri;       /* external; NULL = internal */
    size_t heading;        /* internal: index into ctx->headings */
} pdf_link;

typedef struct pdf_ctx {
    const kiln_doc *doc;
    const kiln_render_options *opt;
    kiln_error *err;
    kiln_arena *arena; /* per-render allocations */
    HPDF_Doc pdf;
    pdf_fonts fonts;

    /* pages */
    HPDF_Page page;   /* current page; NULL before the first */
    HPDF_Page *pages; /* every page so far (for footers, links, the TOC) */
    size_t page_count, page_cap;
    double page_w, page_h;
    double left, right, top, bottom; /* the text area: x from left to right, y from
                                        bottom (above the footer) to top */
    double y;                        /* top of the free space on the current page */
    double header_baseline, footer_baseline, furniture_size; /* page header and footer */
    int page_fresh; /* nothing placed on the current page yet */

    /* typography from the theme */
    pdf_family body_family, heading_family, mono_family;
    double body_size; /* theme font size (x 1.5 for slides) */
    int slides;       /* a deck: each slide a landscape page */
    int32_t accents[12];
    int accent_count;
    int32_t header_fill, header_font_color;

    /* collected while laying out, used at the end */
    pdf_heading_mark *headings;
    size_t heading_count, heading_cap;
    pdf_link *links;
    size_t link_count, link_cap;
    size_t table_number, figure_number; /* captions: "Table N", "Figure N" */
    struct pdf_image_cache *images;     /* pdf_image.c's: each kiln_image loaded once */

    const kiln_flow *flow;     /* what is being laid out (the TOC looks ahead) */
    size_t flow_heading_count; /* headings of the flow laid out so far */
    struct pdf_toc_entry *toc; /* TOC lines waiting for their page numbers */
    size_t toc_count, toc_cap;
} pdf_ctx;

/* ---- pages (pdf_page.c) ---- */
/* Start a new page (and remember it). KILN_E_LIMIT past PDF_MAX_PAGES. */
kiln_status pdf_new_page(pdf_ctx *ctx);
/* Space left on the current page (0 before the first page). */
double pdf_space_left(const pdf_ctx *ctx);
/* Make sure height fits below the cursor: a new page when it does not and the
 * current page already holds something. */
kiln_status pdf_ensure_space(pdf_ctx *ctx, double height);
/* Remember a link rectangle on the current page. */
kiln_status pdf_add_link(pdf_ctx *ctx, double x0, double y0, double x1, double y1,
                         const char *uri, size_t heading);

/* Most pages one document may have (docs/spec.md "Limits"). */
#define PDF_MAX_PAGES 20000u

/* Colors are 0xRRGGBB (KILN_COLOR_NONE = not set). */
void pdf_set_fill(HPDF_Page page, int32_t rgb);
void pdf_set_stroke(HPDF_Page page, int32_t rgb);

/* Draw a UTF-8 string with its left end at x and its baseline at y on page.
 * Characters face lacks are drawn in the fallback face; characters no face
 * has are drawn as '?' and counted in fonts->missing_count. */
void pdf_draw_text(pdf_ctx *ctx, HPDF_Page page, pdf_face *face, double size, int32_t color,
                   double x, double y, const char *s, size_t len);

/* ------------------------------------------------------------------ paragraphs */

typedef struct pdf_para_style {
    pdf_family family;
    unsigned style;      /* PDF_STYLE_* applied to every run (headings: bold) */
    double size;         /* points */
    double leading;      /* line height as a multiple of size (1.25 typical) */
    int32_t color;       /* default text color */
    kiln_align align;    /* LEFT/CENTER/RIGHT/JUSTIFY (DEFAULT = LEFT) */
    int preserve_spaces; /* code: keep runs of spaces and break only at line feeds
                            and, for over-long lines, anywhere */
} pdf_para_style;

typedef struct pdf_frag { /* a piece of one run drawn in one face */
    const char *text;     /* UTF-8, borrowed from the spec or the arena */
    size_t len;
    pdf_face *face;
    double size; /* after super/subscript */
    double rise; /* baseline shift (superscript > 0) */
    double width;
    int32_t color;
    unsigned flags;   /* KILN_RUN_UNDERLINE / STRIKE / CODE */
    const char *link; /* URL or NULL */
    int is_space;     /* 1: spaces, a break opportunity that vanishes at a line
                         end; 2: a forced line break (no text) */
    uint8_t level;    /* bidi embedding level: odd = right to left */
    int break_after;  /* a line may end after this fragment */
} pdf_frag;

typedef struct pdf_line {
    size_t first, count;    /* fragments */
    double width;           /* natural width without trailing spaces */
    double ascent, descent; /* largest in the line (descent negative) */
    double height;          /* line advance */
    int ends_paragraph;     /* last line of the paragraph, or before a hard break:
                               never justified */
} pdf_line;

typedef struct pdf_para {
    pdf_frag *frags;
    size_t frag_count, frag_cap;
    pdf_line *lines;
    size_t line_count, line_cap;
    double width; /* the width the lines were broken for */
    kiln_align align;
    int bidi; /* holds right-to-left text: lines are reordered when drawn */
} pdf_para;

/* A paragraph's runs made ready for right-to-left text (pdf_bidi.c). */
typedef struct pdf_bidi_text {
    kiln_text text;         /* the runs to lay out: the input itself, or copies with
                               Arabic shaped and brackets mirrored (arena) */
    const uint8_t **levels; /* per run, per byte: the embedding level; NULL when the
                               text has no right-to-left characters */
    int rtl;                /* the paragraph's base direction is right to left */
} pdf_bidi_text;

kiln_status pdf_bidi_prepare(pdf_ctx *ctx, const kiln_text *in, pdf_bidi_text *out);
/* The characters of s in reverse order into out (len bytes). Returns len. */
size_t pdf_utf8_reverse(const char *s, size_t len, char *out);

/* Break text (styled runs) into lines width points wide. The para's arrays
 * are its own (malloc'd): a later layout into the same para reuses them, so a
 * table can lay out a million cells in one para; pdf_para_release frees them.
 * Start from a zeroed pdf_para. The fragments borrow the text, which must
 * stay valid while the para is drawn. KILN_E_NOMEM. */
kiln_status pdf_para_layout(pdf_ctx *ctx, const kiln_text *text, const pdf_para_style *style,
                            double width, pdf_para *para);
/* The same for one plain UTF-8 string (cells, captions, labels, code). */
kiln_status pdf_para_layout_plain(pdf_ctx *ctx, const char *s, size_t len,
                                  const pdf_para_style *style, double width, pdf_para *para);
/* Height of lines [first, first + count). */
double pdf_para_height(const pdf_para *para, size_t first, size_t count);
/* Draw lines [first, first + count) on the current page with the top of the
 * first line at y_top and the lines' left edge at x; records link rectangles. */
kiln_status pdf_para_draw(pdf_ctx *ctx, const pdf_para *para, size_t first, size_t count,
                          double x, double y_top);
/* Widest line, for measuring content (table columns, chart labels). */
double pdf_para_max_width(const pdf_para *para);
void pdf_para_release(pdf_para *para);

/* ------------------------------------------------------------------ blocks */

/* Lay out one flow item at the cursor (pdf_layout.c). */
kiln_status pdf_layout_item(pdf_ctx *ctx, const kiln_flow_item *item, const kiln_flow_item *next);
/* Before any page is laid out: KILN_E_LIMIT, naming the block where the
 * count passes, when the flow certainly needs more than PDF_MAX_PAGES pages
 * (its text at the least height it can take, its page breaks, and one page
 * for each of `slides`). A 20,000-page PDF is refused at once instead of
 * after 20,000 pages of layout. */
kiln_status pdf_check_page_limit(pdf_ctx *ctx, const kiln_flow *flow, size_t slides);
/* The least height, in points, the table's rows in the spec (and its header)
 * can take, whatever their text: for pdf_check_page_limit. */
double pdf_table_min_height(const kiln_table_data *d);
/* The TOC block: reserves its lines during layout, fills page numbers and
 * links in at the end (pdf_layout.c). */
kiln_status pdf_toc_finish(pdf_ctx *ctx);

/* A table block or a sheet's table (pdf_table.c). caption may be NULL. */
kiln_status pdf_table_layout(pdf_ctx *ctx, const kiln_table_data *data, const kiln_sheet *sheet,
                             const char *caption);

/* An image fitted to max_w x max_h (pdf_image.c). Loaded once per kiln_image
 * and reused. width_pt 0 = natural size (at its dpi, 96 when unknown). */
kiln_status pdf_image_load(pdf_ctx *ctx, const kiln_image *image, HPDF_Image *out);
void pdf_image_fit(const kiln_image *image, double width_pt, double max_w, double max_h,
                   double *w, double *h);

/* A chart drawn in the box whose top-left corner is (x, y_top) (pdf_chart.c). */
kiln_status pdf_chart_draw(pdf_ctx *ctx, const kiln_chart_data *data, double x, double y_top,
                           double width, double height);

#endif
