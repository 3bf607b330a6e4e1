/*
 * table_layout.h - a table laid out once, in points, for the writers that
 * emit it (docx_table.c as WordprocessingML, pptx_table.c as DrawingML
 * tables, pdf_table.c as drawing).
 *
 * A table's rows may come from a CSV or JSON Lines file of any length, so
 * they are never held: kiln_table_layout_init reads them once through the row
 * reader to measure (how many columns, each column's widest line, widest
 * word and widest number, which columns hold only numbers), the writer then
 * fits the widths to the room it has (kiln_table_layout_fit: wanted widths when
 * they fit, else each column its need plus a share of the rest in
 * proportion to what it lacks, narrower padding and a smaller font when
 * even the needs do not fit, and only then a cap on the widest columns, the
 * "water level") and reads the rows a second time itself, asking for each
 * one what goes where (kiln_table_layout_row: which cell each column shows, the
 * merged ranges' spans and the rows they continue in, the number format,
 * the horizontal and vertical alignment).
 *
 * Text is measured through the writer's kiln_text_metrics: the PDF writer
 * measures with the fonts it embeds, the Office writers with Calibri's
 * advance widths (kiln_calibri_metrics). Where the writers' conventions
 * differ (their padding, their smallest font, whether a number may break,
 * whether a narrow table is widened to the room), the difference is a field
 * of kiln_table_rules, so each rule is written once and each writer says
 * which it follows.
 *
 * Merges (a sheet's "merges"; table blocks have none) are numbered as in
 * the worksheet the .xlsx writer makes: row 0 is the header row when the
 * table has one, else the first data row (merge_walk.h). A merged cell
 * shows what Excel shows: the merge's value in the merge's format (centered
 * both ways unless its style says otherwise, no column number format), else
 * the top-left cell's own value and style. Cells a merge covers are not
 * measured; a range that shows in one column is measured in it, one over
 * several wraps inside them (or widens them, rules.widen_for_merges).
 */
#ifndef KILN_TABLE_LAYOUT_H
#define KILN_TABLE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/arena.h"
#include "../../common/error.h"
#include "../spec/spec.h"
#include "merge_walk.h"

/* ---- text metrics ---- */

/*
 * How a writer measures text. face() resolves the face a cell's text is set
 * in (style may be NULL: the body font; bold: the header row or the style's
 * bold); it returns NULL on failure, with the error recorded by the writer
 * in the kiln_error the table was given. advance() is a code point's
 * advance in that face at size points, in points (a tab's included, 0 for
 * what is not drawn). breaks_after says which characters a line may break
 * after (each is a word of its own); NULL: kiln_char_is_wide's.
 */
typedef struct kiln_text_metrics {
    void *ctx;
    const void *(*face)(void *ctx, const kiln_style *style, int bold);
    double (*advance)(void *ctx, const void *face, uint32_t cp, double size);
    int (*breaks_after)(uint32_t cp);
} kiln_text_metrics;

/* Calibri's advance widths (text_metrics.h), for writers without font
 * files. bold_factor: what bold text is wider by when measured with the
 * regular widths; 0: with Calibri Bold's own widths. */
typedef struct kiln_calibri_face {
    const unsigned short *widths; /* kiln_calibri_regular or kiln_calibri_bold */
    double factor;
} kiln_calibri_face;
typedef struct kiln_calibri_metrics {
    kiln_text_metrics m;
    kiln_calibri_face regular, bold;
} kiln_calibri_metrics;
void kiln_calibri_metrics_init(kiln_calibri_metrics *cm, double bold_factor);

/* The widest line and the widest word of s[len] in face at size points. */
void kiln_text_extent(const kiln_text_metrics *m, const void *face, double size, const char *s,
                      size_t len, double *line_max, double *word_max);

/* The lines s[len] takes when broken greedily between words in width
 * points (line feeds break too; a word wider than a line breaks inside). */
unsigned kiln_text_line_count(const kiln_text_metrics *m, const void *face, double size,
                              const char *s, size_t len, double width);

/* ---- rules ---- */

typedef enum {
    KILN_SHRINK_HALF_POINTS, /* narrower padding, then half a point at a time (docx, pdf) */
    KILN_SHRINK_STEPS        /* from the measuring size down by font_step (pptx) */
} kiln_table_shrink;

typedef struct kiln_table_rules {
    double base_pt;             /* the table's font size, what its text is measured at */
    double body_pt;             /* a cell's own size is scaled by base_pt / body_pt */
    uint32_t measure_rows;      /* data rows measured, 0 = all (past them the rows are
                                   read on only when they may be wider than those seen) */
    int numbers_whole;          /* a number or a date needs its whole line (it never breaks) */
    double pad_pt;              /* left + right padding of a cell */
    double narrow_pad_pt;       /* the narrower padding tried before the font shrinks */
    double slack_pt;            /* added to measured text so that a line measured to fit
                                   does not wrap where the renderer measures a little wider */
    int slack_scales;           /* the slack shrinks with the font */
    double min_text_pt;         /* the narrowest column's text; 0 = two digits of the body font */
    int min_need;               /* the floor holds for the need too, not only the want */
    int explicit_floored;       /* an explicit width is held to the floor as well */
    int explicit_excel_px;      /* an explicit width (Excel characters) is 7 px a character
                                   plus 5 px at 11 pt, scaled with the font; else characters
                                   of the body font's digit plus the padding */
    int explicit_holds_numbers; /* an explicit width never narrower than its widest number */
    int explicit_gives_up;      /* when the wants do not fit, an explicit width first gives
                                   up what its content leaves blank */
    double word_cap;            /* the share of the room a word of text may claim (a longer
                                   one breaks inside); 0 = no cap */
    int widen_for_merges;       /* a range over several columns widens them for its text */
    int fill_width;             /* a table narrower than the room is widened to all of it */
    int numbers_keep_need;      /* the water level caps text columns only */
    kiln_table_shrink shrink;
    double min_font_pt;  /* the smallest the font shrinks to */
    double wrap_font_pt; /* KILN_SHRINK_STEPS: below this only for needs that do not fit */
    double font_step_pt; /* KILN_SHRINK_STEPS */
    int mixed_per_cell;  /* an untyped column of numbers and text aligns each cell
                            (numbers right, as Excel's General); else all left */
} kiln_table_rules;

/* ---- the layout ---- */

typedef struct kiln_table_col {
    const kiln_column *def; /* NULL past the defined columns */
    double text_want;       /* widest line, points at the measuring size */
    double text_need;       /* widest word (of text only, rules.numbers_whole) */
    double num_need;        /* widest number or date (rules.numbers_whole) */
    int has_numeric, has_text;
    int hidden;        /* not shown: width 0 (hidden in Excel), or set by the writer */
    kiln_align align;  /* the column's; DEFAULT: per cell (rules.mixed_per_cell) */
    double want, need; /* points, at the trial size and padding (kiln_table_layout_trial) */
    double x, width;   /* placed: points from the table's left edge */
} kiln_table_col;

/* A merged range laid out (spans[k] lays out walk.merges[k]). */
typedef struct kiln_table_span {
    const kiln_merge *merge;
    size_t lead_col;             /* the first shown column: where the cell goes */
    size_t shown;                /* shown columns; 0 = nothing shown */
    size_t measure_col;          /* the one column it shows in, KILN_MERGE_NONE when several */
    double text_want, text_need; /* several columns: what its text wants and needs */
    double x, width;             /* of its shown columns together */
    kiln_style look;             /* the top-left's look (font dropped), for the rows below */
    int has_look;
    int merge_look; /* shown in the merge's format */
} kiln_table_span;

typedef enum {
    KILN_SLOT_HIDDEN,      /* the column is not shown */
    KILN_SLOT_CELL,        /* an ordinary cell (cell NULL: past a short row) */
    KILN_SLOT_MERGE_TOP,   /* a range's cell in its first row, at its lead column */
    KILN_SLOT_MERGE_BELOW, /* a range's cell in a row below its first, at its lead column */
    KILN_SLOT_COVERED      /* a column a range covers, not its lead column */
} kiln_slot_kind;

/* What column i of a row shows (kiln_table_layout_row). */
typedef struct kiln_table_slot {
    kiln_slot_kind kind;
    size_t merge;              /* the covering range's index, else KILN_MERGE_NONE */
    double x, width;           /* the column's, or the range's shown columns' together */
    const kiln_cell *cell;     /* what it shows (borrowed from the row); NULL = nothing */
    const kiln_column *format; /* the number format to show it with (NULL: the header
                                  row, the merge's format) */
    const kiln_style *style;   /* the cell's style, below a range's first row its top-left
                                  look; NULL = none */
    int merge_look;            /* shown in the merge's format: centered both ways */
    int open_below;            /* the range goes on in the next row */
    kiln_align align;          /* resolved: the style's, a merge's center, the column's,
                                  else the cell's own (numbers right) */
    kiln_valign valign;        /* resolved: the style's, else middle for a merge's look */
} kiln_table_slot;

typedef struct kiln_table_layout {
    /* set by kiln_table_layout_init, read by the writer */
    const kiln_table_data *d;
    kiln_table_rules rules;
    kiln_table_col *cols;
    size_t ncols, shown;  /* shown: columns not hidden in the spec */
    const kiln_cell *hdr; /* the header row's cells, NULL = no header row */
    kiln_merge_walk walk;
    kiln_table_span *spans;
    /* set by kiln_table_layout_fit */
    double size;       /* the table's font size, points */
    double pad;        /* the cells' left + right padding */
    double width;      /* the shown columns together */
    double need_total; /* what the shown columns need together */
    int shrunk;        /* size is not base_pt */
    int repeat_head;   /* the header row repeats on every page or slide */
    /* the layout's own */
    const kiln_doc *doc;
    const kiln_text_metrics *metrics;
    kiln_arena *arena;
    kiln_error *err;
    const char *pointer;
    size_t cap;
    kiln_table_slot *slots;
    double digit; /* the body font's digit at the trial size */
    int widened;  /* widen_for_merges done */
} kiln_table_layout;

/* 1 when the table block or sheet d shows a header row: it says so and
 * defines columns (their headers may be blank). */
int kiln_table_has_header(const kiln_table_data *d);

/*
 * Measure d (sheet: the sheet it shows, for its merges; NULL for a table
 * block) with metrics under rules. header: whether row 0 is the header row
 * (kiln_table_has_header, or stricter). Everything is allocated in arena,
 * which must outlive t; errors go to err at pointer. A table with no
 * columns has ncols 0.
 */
kiln_status kiln_table_layout_init(kiln_table_layout *t, const kiln_doc *doc,
                                   const kiln_table_data *d, const kiln_sheet *sheet, int header,
                                   const kiln_table_rules *rules,
                                   const kiln_text_metrics *metrics, kiln_arena *arena,
                                   kiln_error *err, const char *pointer);

/*
 * Every shown column's want and need at font size and padding pad, in a
 * room of avail points (the floors, explicit widths and word cap of the
 * rules applied); returns the wants' sum and sets *need_total. For a writer
 * that plans with the widths itself (pptx_table.c's column groups);
 * kiln_table_layout_fit uses it.
 */
double kiln_table_layout_trial(kiln_table_layout *t, double size, double pad, double avail,
                               double *need_total);

/*
 * The font size and the widths of the shown columns in avail points (the
 * comment at the top); then the spans placed and the merge walk rewound
 * for the writing pass; columns are placed from x = origin. Returns the
 * number of columns shown. Call it again
 * after hiding columns (col.hidden) to fit the rest.
 */
size_t kiln_table_layout_fit(kiln_table_layout *t, double avail, double origin);

/* At least n columns (a writer that needs a grid where the table has no
 * columns at all); the new ones are empty, shown and left-aligned. */
kiln_status kiln_table_layout_min_cols(kiln_table_layout *t, size_t n);

/* The header row repeats unless it takes more than half of page_height. */
void kiln_table_layout_head_repeat(kiln_table_layout *t, double head_height, double page_height);

/*
 * Row wsrow (the worksheet row: 0 is the header row when there is one;
 * call it for every row, in order, after kiln_table_layout_fit) with cells[count]
 * (NULL for an empty row): what each of the ncols columns shows. merges 0:
 * without the sheet's merges (an empty filler row). The slots are the
 * table's, valid until the next call; their cells are the row's.
 */
const kiln_table_slot *kiln_table_layout_row(kiln_table_layout *t, uint32_t wsrow, int header,
                                             const kiln_cell *cells, size_t count, int merges);

/* A cell's own size scaled with the table's font: size when it has none. */
double kiln_table_layout_cell_size(const kiln_table_layout *t, double size,
                                   const kiln_style *style);

/* The sum of per_col over the columns slot spans (its shown columns), for
 * a writer that rounds each column's width to its own unit. */
int64_t kiln_table_layout_slot_sum(const kiln_table_layout *t, size_t col,
                                   const kiln_table_slot *slot, const int64_t *per_col);

#endif
