/*
 * pptx_internal.h - what the files of the .pptx writer share (artifacts/pptx/).
 *
 * kiln_pptx_write (pptx_writer.c) turns the spec into a list of deck items
 * (pptx_deck.c: slides as they are, or blocks and sheets mapped onto slides),
 * then writes each item as one slide, or as several when its bullets or its
 * table do not fit on one (continuation slides repeat the title and a
 * table's header row). The parts that do not depend on the content (the
 * slide master, its layouts, the theme, the notes master, presentation
 * properties, table styles) come from readable XML under templates/pptx/
 * with the spec's theme filled in; the presentation part, which lists the
 * slides, is written last. One file per part, as in the docx writer:
 *
 *   pptx_writer.c        kiln_pptx_write: the order of the parts, the one
 *                        place errors meet the caller
 *   pptx_deck.c          the spec's slides, blocks or sheets as deck items
 *   pptx_slide.c         ppt/slides/slideN.xml: placeholders, pictures,
 *                        chart frames, the slide number; continuations
 *   pptx_shapes.c        what every shape tree and graphic frame starts with
 *   pptx_text.c          text bodies: paragraphs and runs, and the fit
 *                        (font scale computed from font metrics)
 *   pptx_table.c         tables as graphic frames, a slide's worth of rows
 *                        at a time (the layout of
 *                        artifacts/layout/table_layout.h)
 *   pptx_notes.c         ppt/notesSlides/notesSlideN.xml
 *   pptx_master.c        slide master, layouts, themes, notes master,
 *                        presProps, viewProps, tableStyles (templates/pptx/)
 *   pptx_presentation.c  ppt/presentation.xml
 *   pptx_error.c         pptx_nomem, which every file reports through
 *
 * Geometry is in EMU (914400 per inch, 12700 per point). The placeholder
 * rectangles below are the ones templates/pptx/ declares; the writer needs
 * them to fit text and place pictures, and the tests check the two agree.
 *
 * Nothing here is an interface outside artifacts/pptx/.
 */
#ifndef KILN_PPTX_INTERNAL_H
#define KILN_PPTX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/arena.h"
#include "../../common/error.h"
#include "../layout/list_marker.h"
#include "../opc/opc.h"
#include "../render.h"
#include "../spec/spec.h"
#include "../layout/text_metrics.h"

#define PPTX_NS_P "http://schemas.openxmlformats.org/presentationml/2006/main"
#define PPTX_NS_A "http://schemas.openxmlformats.org/drawingml/2006/main"
#define PPTX_NS_C "http://schemas.openxmlformats.org/drawingml/2006/chart"

#define PPTX_PRESENTATION_PART "ppt/presentation.xml"
#define PPTX_MASTER_PART "ppt/slideMasters/slideMaster1.xml"
#define PPTX_NOTES_MASTER_PART "ppt/notesMasters/notesMaster1.xml"

#define PPTX_PML "application/vnd.openxmlformats-officedocument.presentationml."
#define PPTX_CT_PRESENTATION PPTX_PML "presentation.main+xml"
#define PPTX_CT_SLIDE PPTX_PML "slide+xml"
#define PPTX_CT_SLIDE_LAYOUT PPTX_PML "slideLayout+xml"
#define PPTX_CT_SLIDE_MASTER PPTX_PML "slideMaster+xml"
#define PPTX_CT_NOTES_SLIDE PPTX_PML "notesSlide+xml"
#define PPTX_CT_NOTES_MASTER PPTX_PML "notesMaster+xml"
#define PPTX_CT_PRES_PROPS PPTX_PML "presProps+xml"
#define PPTX_CT_VIEW_PROPS PPTX_PML "viewProps+xml"
#define PPTX_CT_TABLE_STYLES PPTX_PML "tableStyles+xml"

/* ---- geometry ---- */
#define PPTX_EMU_PER_PT 12700
#define PPTX_EMU_PER_INCH 914400
#define PPTX_SLIDE_CX 12192000 /* 16:9, 13.333 x 7.5 in */
#define PPTX_SLIDE_CY 6858000
#define PPTX_NOTES_CX 6858000 /* notes pages are portrait 7.5 x 10 in */
#define PPTX_NOTES_CY 9144000

/* Ids the master and its layouts take in presentation.xml / the master's
 * sldLayoutIdLst (PowerPoint's own numbering: >= 2^31, unique across both). */
#define PPTX_MASTER_ID 2147483648u
/* The first slide id: ids below 256 are reserved (ECMA-376 19.2.1.33). */
#define PPTX_FIRST_SLIDE_ID 256u
/* The most slides a deck may have, continuations included (docs/spec.md
 * "Limits"): a sheet of 200,000 rows would otherwise become ~15,000 slides. */
#define PPTX_MAX_SLIDES 5000u

typedef struct pptx_rect {
    int64_t x, y, cx, cy;
} pptx_rect;

/* The layouts of templates/pptx/, numbered as their parts:
 * ppt/slideLayouts/slideLayoutN.xml. */
typedef enum {
    PPTX_LAYOUT_TITLE = 1,       /* "Title Slide": ctrTitle + subTitle (idx 1) */
    PPTX_LAYOUT_CONTENT = 2,     /* "Title and Content": title + obj body (idx 1) */
    PPTX_LAYOUT_SECTION = 3,     /* "Section Header": title + body (idx 1) */
    PPTX_LAYOUT_TWO_CONTENT = 4, /* "Two Content": title + obj (idx 1) + obj (idx 2) */
    PPTX_LAYOUT_TITLE_ONLY = 5,  /* "Title Only": title */
    PPTX_LAYOUT_BLANK = 6,       /* "Blank": nothing but the footers */
} pptx_layout;
#define PPTX_LAYOUT_COUNT 6

/* Footer placeholders every layout (and the master) has, with these idx. */
#define PPTX_IDX_DATE 10
#define PPTX_IDX_FOOTER 11
#define PPTX_IDX_SLIDE_NUMBER 12

/* What a layout declares: its name, the title placeholder, up to two body
 * placeholders, and the text style of the bodies (font size per level, in
 * hundredths of a point as sz= writes them). Defined in pptx_master.c; the
 * templates under templates/pptx/ hold the same numbers. */
typedef struct pptx_layout_info {
    const char *name;       /* cSld name= : "Title Slide", ... */
    const char *file;       /* template: "pptx/slideLayout1.xml" */
    const char *title_type; /* ph type of the title: "ctrTitle" / "title"; NULL = none */
    pptx_rect title;
    unsigned title_size;   /* title font size, 1/100 pt */
    int body_count;        /* 0, 1 or 2 */
    const char *body_type; /* ph type= of the bodies: "subTitle", "body", or NULL
                              (an obj placeholder: type omitted) */
    pptx_rect body[2];     /* idx 1 and idx 2 */
    unsigned body_size[9]; /* body font size per level, 1/100 pt */
    int body_bullets;      /* 1 when the body's paragraphs are bulleted by default */
} pptx_layout_info;

extern const pptx_layout_info pptx_layouts[PPTX_LAYOUT_COUNT + 1]; /* [0] unused */

/* The master's body style (templates/pptx/slideMaster1.xml bodyStyle), which
 * text fitting measures with: left margin per level, spacing before a
 * paragraph (hundredths of a point) and the line spacing (percent * 1000). */
#define PPTX_BODY_LEVELS 9
extern const int64_t pptx_body_mar_l[PPTX_BODY_LEVELS]; /* marL in EMU */
#define PPTX_BODY_INDENT (-228600)                      /* hanging indent, EMU */
#define PPTX_BODY_SPC_BEF_LVL1 1000                     /* 10 pt */
#define PPTX_BODY_SPC_BEF_OTHER 500                     /* 5 pt */
#define PPTX_LINE_SPACING_PCT 90000                     /* lnSpc 90% */
/* Text box insets (bodyPr defaults): 0.1 in left and right, 0.05 in top and bottom. */
#define PPTX_INSET_X 91440
#define PPTX_INSET_Y 45720

/* ---- the deck (pptx_deck.c) ---- */
/* One paragraph of a text body. */
typedef struct pptx_para {
    const kiln_text *text; /* runs; NULL = plain below */
    const char *plain;     /* plain text when text is NULL */
    size_t plain_len;
    int level;             /* 0-based indent level, 0..8 */
    int bullet;            /* PPTX_BULLET_* */
    int64_t number;        /* PPTX_BULLET_NUMBER: this item's number (a list may start
                              at 2147483647, so its items count past int) */
    kiln_list_marks marks; /* PPTX_BULLET_NUMBER: its list's scheme (1. a. i. by level,
                              digits where the level's cannot number the whole list) */
    unsigned flags;        /* KILN_RUN_* laid over every run (quotes: italic; code:
                              KILN_RUN_CODE, set in the mono font) */
    const char *pointer;   /* the block (or slide) it came from, for errors */
} pptx_para;
#define PPTX_BULLET_NONE 0   /* a paragraph: no bullet, no hanging indent */
#define PPTX_BULLET_CHAR 1   /* the level's bullet from the master */
#define PPTX_BULLET_NUMBER 2 /* an ordered list item: "1." "a." "i." by level */

typedef struct pptx_paras {
    pptx_para *items;
    size_t count;
} pptx_paras;

/* One slide as the spec (or the mapping) asks for it; the writer may make
 * several of it (continuations). */
typedef struct pptx_item {
    pptx_layout layout;
    const char *title;            /* NULL = none */
    const char *subtitle;         /* title and section slides; NULL = none */
    pptx_paras body;              /* content: the bullets; two-column: the left */
    pptx_paras right;             /* two-column: the right */
    const kiln_table_data *table; /* a table's rows (a table block's or a sheet's) */
    const kiln_sheet *sheet;      /* the sheet a table or chart belongs to, else NULL */
    const kiln_image *image;
    const char *image_alt;   /* alternative text (the image's, else the caption) */
    const kiln_chart *chart; /* with a table: the chart to set beside it when the
                                table fits half a slide (a sheet's first chart) */
    const char *notes;       /* speaker notes; NULL = none */
    const char *pointer;     /* JSON Pointer of what the slide came from */
    /* Text items: the slides the text is split over, set by pptx_deck_plan. */
    const struct pptx_text_slide *plan;
    size_t plan_count;
} pptx_item;

typedef struct pptx_deck {
    pptx_item *items;
    size_t count;
} pptx_deck;

/* Build the deck for doc; everything comes from arena and borrows the doc's
 * strings. KILN_E_NOMEM only. */
kiln_status pptx_deck_build(const kiln_doc *doc, kiln_arena *arena, pptx_deck *deck,
                            kiln_error *err);

/* ---- the writer's state ---- */
struct pptx_media;

typedef struct pptx_ctx {
    const kiln_doc *doc;
    const kiln_render_options *opt;
    kiln_output *out;
    opc_package *pkg;
    kiln_arena *arena; /* lives for one render */
    kiln_error *err;
    const char *tmp_dir;        /* scratch for embedded workbooks */
    kiln_render_result *result; /* warnings for the caller (text that overflowed) */

    unsigned slide_count; /* slides written: ppt/slides/slideN.xml */
    unsigned *slide_rids; /* presentation.xml's rId of slide i (0-based) */
    size_t slide_rid_cap;
    unsigned notes_count;     /* notesSlideN */
    unsigned chart_count;     /* charts/chartN */
    unsigned image_count;     /* media/imageN */
    struct pptx_media *media; /* images already in the package (by data pointer) */
    size_t media_count, media_cap;
    unsigned master_rid;       /* presentation.xml -> slideMaster1 */
    unsigned notes_master_rid; /* presentation.xml -> notesMaster1, 0 = none yet */
} pptx_ctx;

/* ---- one slide being written (pptx_slide.c) ---- */
typedef struct pptx_slide {
    pptx_ctx *c;
    opc_xml *x;             /* the slide part while it is written */
    char part[48];          /* "ppt/slides/slide12.xml" */
    unsigned number;        /* 1-based slide number */
    pptx_layout layout;     /* the slide's layout */
    int notes;              /* 1: the notes slide of slide `number` */
    unsigned next_shape_id; /* cNvPr ids, unique on the slide; 1 is the tree */
    kiln_status status;     /* the first failure of a call that returns nothing (a
                               hyperlink's relationship); checked when the slide ends */
} pptx_slide;

/* Plan the deck before any slide is written: split each text item's
 * paragraphs over its slides (item->plan), and count the slides the deck
 * needs at least (a table's rows in the spec at the most a slide can hold),
 * so a deck past PPTX_MAX_SLIDES fails at once (KILN_E_LIMIT, naming the
 * item where the count passes it) instead of after 5,000 slides. */
kiln_status pptx_deck_plan(pptx_ctx *c, pptx_deck *deck);
/* Write every slide of item (continuations included; text items as
 * planned). */
kiln_status pptx_slide_write_item(pptx_ctx *c, const pptx_item *item);

/* ---- shape trees and frames (pptx_shapes.c) ---- */
/* <p:cSld><p:spTree> with the tree's own group properties: how every slide
 * and notes slide begins (the caller closes both). */
void pptx_write_tree_start(opc_xml *x);
/* <element> (p:xfrm, a:xfrm) holding r's a:off and a:ext. */
void pptx_write_xfrm(opc_xml *x, const char *element, pptx_rect r);
/* A graphic frame (a table or a chart) in placeholder idx of s, named
 * "<kind> N", at frame, up to <a:graphicData uri=uri> open: the caller
 * writes the table or chart and closes graphicData, graphic and the frame.
 * descr (alternative text) NULL = none. */
void pptx_write_frame_start(pptx_slide *s, const char *kind, int idx, const char *descr,
                            pptx_rect frame, const char *uri);

/* ---- text bodies (pptx_text.c) ---- */
/* How a text body is set after fitting. */
typedef struct pptx_fit {
    unsigned font_scale;  /* normAutofit fontScale, percent * 1000 (100000 = none) */
    unsigned line_reduce; /* normAutofit lnSpcReduction, percent * 1000 */
    size_t count;         /* paragraphs that fit (from the first given) */
    int overflow;         /* 1 when even the smallest scale does not fit count >= 1 */
} pptx_fit;

/* How many of paras[0..n) go on one slide in a body placeholder of the given
 * size (EMU, insets not yet taken off) whose font sizes per level are
 * size_per_level (1/100 pt), and the scale they are set at: the scales
 * PowerPoint itself steps through (100%, 92.5% with 10% less line spacing, ...).
 * When all n fit at min_scale or above, count = n at the largest scale that
 * fits. Otherwise the slide takes what fits at full size, ending
 * before a top-level paragraph when it can (the rest continues on the next
 * slide). When not even paras[0] fits at full size, count = 1 and the scale
 * steps down to 25%, PowerPoint's floor; overflow = 1 when it still does not
 * fit. The writer passes PPTX_FIT_MIN_SCALE for an item's first slide, and
 * 100000 (full size only) for the slides after a split, so every slide of a
 * split item is set alike instead of the last one crammed small. */
#define PPTX_FIT_MIN_SCALE 55000
pptx_fit pptx_text_fit(const pptx_para *paras, size_t n, int64_t cx, int64_t cy,
                       const unsigned size_per_level[9], unsigned min_scale);
/* The scale a single-paragraph text of size_pt100 fits at in cx x cy
 * (titles): down to 25%, overflow set when even that does not fit. */
pptx_fit pptx_text_fit_plain(const char *s, size_t len, unsigned size_pt100, int bold, int64_t cx,
                             int64_t cy);

/* Write <p:txBody> with a:bodyPr (normAutofit with the fit's scale when
 * it is below 100%), a:lstStyle and one a:p per paragraph. Hyperlinks in the
 * runs become relationships of s->part. An empty list writes one empty a:p
 * (a txBody needs one). */
void pptx_text_body(pptx_slide *s, const pptx_para *paras, size_t n, const pptx_fit *fit);
/* 1 when the text's first strong letter is right-to-left (Hebrew, Arabic):
 * its paragraph's direction, as the bidi algorithm takes it (rule P2).
 * *decided is set when a strong letter was found. */
int pptx_text_is_rtl(const char *s, size_t len, int *decided);
/* <p:txBody> with one paragraph of plain text (titles, subtitles, notes:
 * line feeds start new paragraphs). fit NULL = no autofit element. */
void pptx_text_body_plain(pptx_slide *s, const char *text, const pptx_fit *fit);

/* ---- tables (pptx_table.c) ---- */
typedef struct pptx_table pptx_table; /* a table being laid out over slides */

/*
 * Measure the table (column widths from the columns' widths or from the
 * text of the header and the first rows, font size reduced from 14 pt down
 * to 10 pt when the columns are too wide for area.cx) and open its rows.
 * sheet: the sheet the rows belong to (its merges), or NULL. pointer names
 * the table for errors. KILN_E_NOMEM; KILN_E_INPUT when a data file cannot
 * be read.
 */
kiln_status pptx_table_open(pptx_ctx *c, const kiln_table_data *data, const kiln_sheet *sheet,
                            pptx_rect area, const char *pointer, pptx_table **out);
/* Write one slide's graphic frame (shape id s->next_shape_id++, in the
 * content placeholder idx 1): the header row, then as many rows as fit the
 * area's height (at least one). *more = 1 when rows remain for another
 * slide. */
kiln_status pptx_table_write(pptx_slide *s, pptx_table *t, int *more);
void pptx_table_close(pptx_table *t);
/* The fewest slides the table's rows can take in an area area_cy tall, for
 * the deck's plan: its rows in the spec at the most a slide could hold (every
 * row as short as a row can be); 1 when its rows come from a data file (they
 * are counted as they are written). */
uint64_t pptx_table_min_slides(const kiln_table_data *d, int64_t area_cy);
/* Whether the whole table (header and every row) fits on one slide in the
 * area it was opened with, in one column group: reads the rows, so a table
 * probed is closed afterwards, never written. Stops reading at the first row
 * that does not fit. */
kiln_status pptx_table_fits_one_slide(pptx_table *t, int *fits);

/* ---- notes (pptx_notes.c) ---- */
/* notesSlideN.xml for slide s (text = the speaker notes), related both ways
 * with the slide; the first call adds the notes master. */
kiln_status pptx_notes_add(pptx_slide *s, const char *text);

/* ---- the fixed parts (pptx_master.c) ---- */
/* Master, its layouts and theme, related from presentation.xml (rId1 for the
 * master, as PowerPoint writes it); sets c->master_rid. */
kiln_status pptx_master_add(pptx_ctx *c);
/* The notes master and its theme (on the first slide with notes); sets
 * c->notes_master_rid. */
kiln_status pptx_notes_master_add(pptx_ctx *c);
/* presProps, viewProps, theme relationship and tableStyles, related from
 * presentation.xml after the slides, as PowerPoint orders them. */
kiln_status pptx_props_add(pptx_ctx *c);
/* The table style every table names (tableStyles.xml defines it). */
#define PPTX_TABLE_STYLE_ID \
    "{5C22544A-7EE6-4342-B048-85BDC9FD1C3A}" /* Medium Style 2 - Accent 1 */

/* ---- presentation.xml (pptx_presentation.c) ---- */
kiln_status pptx_presentation_add(pptx_ctx *c);

/* ---- errors (pptx_error.c) ---- */
kiln_status pptx_nomem(pptx_ctx *c, const char *pointer);

#endif
