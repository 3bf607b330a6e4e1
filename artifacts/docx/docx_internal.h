/*
 * docx_internal.h - what the files of the .docx writer share (artifacts/docx/).
 *
 * kiln_docx_write (docx_writer.c) builds the flow of blocks (artifacts/layout/flow.h),
 * writes word/document.xml first (which is when list instances, images,
 * charts and hyperlinks are met and their relationships declared), then the
 * parts that depend on what the document used, then the package (OPC layer,
 * artifacts/opc/). One file per part, as in libxlsxwriter:
 *
 *   docx_writer.c     kiln_docx_write: order of parts, the one place errors of
 *                     the parts meet the caller
 *   docx_document.c   word/document.xml: the body walk, headings (with TOC
 *                     bookmarks), paragraphs, code, quotes, rules, page
 *                     breaks, captions, the section properties
 *   docx_runs.c       runs and hyperlinks inside a paragraph (the body, lists,
 *                     table cells and the TOC all write text through it)
 *   docx_lists.c      list paragraphs; one w:num per list instance
 *   docx_table.c      tables: the layout of artifacts/layout/table_layout.h
 *                     written as w:tbl (grid, header repeat, cantSplit,
 *                     merged cells, the font a wide table is shrunk to)
 *   docx_drawing.c    inline images and charts (wp:inline)
 *   docx_toc.c        the TOC field with its entries already filled in
 *   docx_styles.c     word/styles.xml from templates/docx/styles.xml
 *   docx_numbering.c  word/numbering.xml
 *   docx_settings.c   word/settings.xml (templates/docx/settings.xml)
 *   docx_fonts.c      word/fontTable.xml (entries from templates/docx/fontTable.xml)
 *   docx_theme.c      word/theme/theme1.xml (templates/docx/theme1.xml)
 *   docx_header_footer.c  word/header1.xml, word/footer1.xml
 *   docx_footnotes.c  word/footnotes.xml and word/endnotes.xml (the separators
 *                     Word expects when settings name them)
 *
 * Nothing here is an interface outside artifacts/docx/.
 */
#ifndef KILN_DOCX_INTERNAL_H
#define KILN_DOCX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/arena.h"
#include "../../common/error.h"
#include "../layout/flow.h"
#include "../layout/list_marker.h"
#include "../layout/table_layout.h"
#include "../opc/opc.h"
#include "../render.h"
#include "../spec/spec.h"
#include "../layout/text_metrics.h"

#define DOCX_DOCUMENT_PART "word/document.xml"
/* English Metric Units: what DrawingML measures in. */
#define DOCX_EMU_PER_PT 12700
/* Twentieths of a point: what WordprocessingML measures most lengths in. */
#define DOCX_TWIPS_PER_PT 20
/* The body text size without a theme font_size (templates/docx/styles.xml),
 * what every other size scales with. */
#define DOCX_BODY_DEFAULT_PT 11.0

/* Style ids of templates/docx/styles.xml the body refers to. */
#define DOCX_STYLE_TITLE "Title"
#define DOCX_STYLE_SUBTITLE "Subtitle"
#define DOCX_STYLE_HEADING "Heading" /* + "1".."6" */
#define DOCX_STYLE_LIST_PARAGRAPH "ListParagraph"
#define DOCX_STYLE_CAPTION "Caption"
#define DOCX_STYLE_QUOTE "Quote"
#define DOCX_STYLE_CODE "Code"           /* paragraph style, monospace */
#define DOCX_STYLE_CODE_CHAR "CodeChar"  /* character style for inline code */
#define DOCX_STYLE_HYPERLINK "Hyperlink" /* character style */
#define DOCX_STYLE_TABLE_GRID "TableGrid"
#define DOCX_STYLE_TABLE "KilnTable" /* the header-row table style */
#define DOCX_STYLE_TOC_HEADING "TOCHeading"
#define DOCX_STYLE_TOC "TOC" /* + "1".."6" */
#define DOCX_STYLE_HEADER "Header"
#define DOCX_STYLE_FOOTER "Footer"

/* A list instance: one w:num in numbering.xml. */
typedef struct docx_num {
    unsigned num_id;       /* w:numId, from 1 */
    int ordered;           /* abstract numbering: DOCX_ABSTRACT_BULLET or _ORDERED */
    int start;             /* ordered: the first number */
    int64_t last;          /* ordered: the last number (start + items - 1) */
    int level;             /* 0-based w:ilvl the instance's items sit at */
    kiln_list_marks marks; /* ordered: its numbers' scheme, the level's own (1. a. i.)
                              unless that cannot number the whole list */
} docx_num;
#define DOCX_ABSTRACT_BULLET 0
#define DOCX_ABSTRACT_ORDERED 1

/* A heading met in the pre-pass, for the TOC's filled-in entries. */
typedef struct docx_heading {
    const kiln_text *text;
    int level;
    unsigned bookmark; /* _Toc<8 digits> name and w:id */
    unsigned page;     /* estimated page number (Word corrects it on update) */
} docx_heading;

typedef struct docx_ctx {
    const kiln_doc *doc;
    const kiln_render_options *opt;
    kiln_output *out;
    opc_package *pkg;
    kiln_arena *arena; /* lives for one render */
    kiln_error *err;
    const char *tmp_dir; /* scratch for embedded workbooks */
    kiln_flow flow;

    opc_xml *x;         /* word/document.xml while it is written */
    kiln_status status; /* the first failure met by a writer that returns
                           nothing (docx_write_runs: a hyperlink's relationship);
                           the body checks it after every block */

    docx_num *nums; /* list instances, in numId order */
    size_t num_count, num_cap;

    docx_heading *headings; /* every heading in flow order */
    size_t heading_count;
    size_t heading_next; /* the next heading the body writes */

    unsigned next_drawing_id; /* wp:docPr ids: unique in the document */
    unsigned image_count;     /* media/imageN */
    struct docx_media *media; /* images already in the package, reused when met again
                                 (docx_drawing.c) */
    size_t media_count, media_cap;
    unsigned chart_count;               /* charts/chartN */
    unsigned table_count, figure_count; /* caption numbers */
    unsigned bookmark_count;

    double text_width_pt; /* page width less margins */
    double text_height_pt;
    unsigned header_rid; /* rId of word/header1.xml, 0 = no header */
    unsigned footer_rid; /* rId of word/footer1.xml, 0 = no footer */
} docx_ctx;

/* ---- document.xml (docx_document.c) ---- */
kiln_status docx_document_write(docx_ctx *c);
/* A caption paragraph: "Table N: text" / "Figure N: text" with a SEQ field. */
void docx_write_caption(docx_ctx *c, const char *label, unsigned number, const char *text);
/* The pre-pass: headings and their estimated pages. */
kiln_status docx_collect_headings(docx_ctx *c);

/* ---- runs (docx_runs.c) ---- */
/* Runs of t into the open w:p (bold, italic, links as w:hyperlink, ...). */
void docx_write_runs(docx_ctx *c, const kiln_text *t);
/* One plain run; rstyle (a character style id) may be NULL. Tabs become
 * w:tab and line feeds w:br, as Word stores them. */
void docx_write_text_run(docx_ctx *c, const char *text, size_t len, const char *rstyle);
/* <w:t> for one stretch of text without tabs or line breaks (nothing when
 * len is 0; xml:space="preserve" when it starts or ends with a space). */
void docx_write_t(opc_xml *x, const char *s, size_t len);
/* attr="rIdN" on the open element. */
void docx_write_rid(opc_xml *x, const char *attr, unsigned rid);
/* The w:jc value of an alignment ("left", "center", "right", "both"), NULL
 * for none. */
const char *docx_jc_value(kiln_align align);

/* ---- lists (docx_lists.c) ---- */
/* A new list instance; returns its numId, 0 when out of memory. */
unsigned docx_num_new(docx_ctx *c, const kiln_list *list, int level);
kiln_status docx_write_list(docx_ctx *c, const kiln_list *list, const char *pointer);

/* ---- tables (docx_table.c) ---- */
/* sheet: the sheet the table shows (its merges become merged cells), NULL for
 * a table block. */
kiln_status docx_write_table(docx_ctx *c, const kiln_table *table, const kiln_sheet *sheet,
                             const char *pointer);
/* The table d laid out as docx_write_table writes it: measured under the
 * docx rules with Calibri's widths (metrics, which must outlive tl; the
 * layout is in c->arena) and fitted to the text width; *shown is the
 * number of columns shown, 0 when the table writes nothing. The TOC's page
 * estimate (docx_toc.c) lays its tables out through it, so that the two
 * never differ. */
kiln_status docx_table_layout(const docx_ctx *c, const kiln_table_data *d,
                              const kiln_sheet *sheet, const char *pointer, kiln_table_layout *tl,
                              kiln_calibri_metrics *metrics, size_t *shown);
/* The size docx_write_table gives a run of the table in style (NULL: none):
 * its own size, or 0 (the paragraph style's) when the table is not shrunk;
 * else that size scaled, in half points rounded down, and at least 1 pt. */
double docx_table_run_size(const kiln_table_layout *tl, const kiln_style *style);

/* ---- drawings (docx_drawing.c) ---- */
/* width_pt 0 = natural size (96 dpi unless the file says), fitted to the text width. */
/* keep_next: a caption follows, keep the drawing on its page. */
kiln_status docx_write_image(docx_ctx *c, const kiln_image *image, double width_pt, int keep_next,
                             const char *pointer);
kiln_status docx_write_chart(docx_ctx *c, const kiln_chart *chart, const kiln_sheet *sheet,
                             int keep_next, const char *pointer);

/* ---- table of contents (docx_toc.c) ---- */
kiln_status docx_write_toc(docx_ctx *c, const kiln_block *toc);

/* ---- the other parts ---- */
kiln_status docx_styles_add(docx_ctx *c);
kiln_status docx_numbering_add(docx_ctx *c);
kiln_status docx_settings_add(docx_ctx *c);
kiln_status docx_fonts_add(docx_ctx *c);
kiln_status docx_theme_add(docx_ctx *c);
kiln_status docx_header_footer_add(docx_ctx *c);
kiln_status docx_footnotes_add(docx_ctx *c);
/* A part from a template under templates/ (opc_template_write) added as
 * part_name, related from word/document.xml as rel_type -> rel_target
 * (docx_styles.c; shared by the parts that come from templates). */
kiln_status docx_template_part(docx_ctx *c, const char *template_name, const opc_var *vars,
                               size_t var_count, const char *part_name, const char *content_type,
                               const char *rel_type, const char *rel_target);

#endif
