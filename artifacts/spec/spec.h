/*
 * spec.h - the typed in-memory model of a Kiln document spec (docs/spec.md).
 *
 * kiln_doc_parse() turns JSON into this model and validates all of it before
 * any writer runs; a writer only ever sees a model that is valid. Everything
 * in the model (strings included) is owned by the kiln_doc and lives until
 * kiln_doc_free(): writers borrow, never free.
 *
 * Row data is the one exception to "all in memory": a table's rows may come
 * from a CSV or JSON Lines file, so they are read through a row reader
 * (kiln_rows_open/next/close) that yields typed cells one row at a time, the
 * same way whether the rows were inline JSON or a file. A million-row sheet
 * therefore never sits in memory as cells.
 *
 * Coordinates are 0-based (row 0 is Excel's row 1). Lengths are points.
 */
#ifndef KILN_SPEC_H
#define KILN_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/error.h"

#define KILN_SPEC_VERSION 1

/* ---- limits (docs/spec.md "Limits"; every one enforced and tested) ---- */
typedef struct kiln_limits {
    uint64_t spec_bytes;   /* size of the spec JSON */
    uint32_t json_depth;   /* nesting depth of the spec JSON */
    uint32_t sheets;       /* sheets per workbook */
    uint32_t rows;         /* rows per sheet, header row included */
    uint32_t columns;      /* columns per sheet */
    uint32_t cell_chars;   /* characters (code points) per cell */
    uint64_t string_bytes; /* bytes of all strings together */
    uint32_t images;       /* images per document */
    uint64_t image_bytes;  /* bytes per image */
    uint64_t images_bytes; /* bytes of all images together */
    uint32_t list_depth;   /* nesting of list items */
} kiln_limits;

#define KILN_LIMIT_SPEC_BYTES (64u << 20)
#define KILN_LIMIT_JSON_DEPTH 64
#define KILN_LIMIT_SHEETS 256
#define KILN_LIMIT_ROWS 1048576u
#define KILN_LIMIT_COLUMNS 16384u
#define KILN_LIMIT_CELL_CHARS 32767u
#define KILN_LIMIT_STRING_BYTES (256ull << 20)
#define KILN_LIMIT_IMAGES 1000
#define KILN_LIMIT_IMAGE_BYTES (20ull << 20)
#define KILN_LIMIT_IMAGES_BYTES (200ull << 20)
#define KILN_LIMIT_LIST_DEPTH 9
/* Characters of a formula (Excel's limit; fixed, not in kiln_limits). */
#define KILN_LIMIT_FORMULA_CHARS 8192u
/* Series of a chart (Excel's and PowerPoint's limit; fixed). */
#define KILN_LIMIT_CHART_SERIES 255u

/* The documented defaults above. */
kiln_limits kiln_limits_default(void);

/* ---- small shared types ---- */
#define KILN_COLOR_NONE (-1) /* a color is 0xRRGGBB, or KILN_COLOR_NONE */

typedef enum {
    KILN_ALIGN_DEFAULT,
    KILN_ALIGN_LEFT,
    KILN_ALIGN_CENTER,
    KILN_ALIGN_RIGHT,
    KILN_ALIGN_JUSTIFY
} kiln_align;
typedef enum {
    KILN_VALIGN_DEFAULT,
    KILN_VALIGN_TOP,
    KILN_VALIGN_MIDDLE,
    KILN_VALIGN_BOTTOM
} kiln_valign;
typedef enum {
    KILN_BORDER_DEFAULT,
    KILN_BORDER_NONE,
    KILN_BORDER_THIN,
    KILN_BORDER_MEDIUM,
    KILN_BORDER_THICK
} kiln_border;

/* A cell style; zero/NULL/KILN_COLOR_NONE members mean "not set". */
typedef struct kiln_style {
    uint8_t bold, italic, underline, strike, wrap;
    int32_t color; /* font color */
    int32_t fill;  /* background */
    double size;   /* points, 0 = inherit */
    const char *font;
    kiln_align align;
    kiln_valign valign;
    kiln_border border;
} kiln_style;

/* A 0-based inclusive cell range. */
typedef struct kiln_range {
    uint32_t first_row, first_col, last_row, last_col;
} kiln_range;

/* ---- cells ---- */
typedef enum {
    KILN_CELL_BLANK,
    KILN_CELL_NUMBER,
    KILN_CELL_STRING,
    KILN_CELL_BOOL,
    KILN_CELL_FORMULA,
    KILN_CELL_DATE,     /* number = Excel serial day (1900 system), whole */
    KILN_CELL_DATETIME, /* number = Excel serial day with fraction */
    KILN_CELL_URL
} kiln_cell_kind;

typedef struct kiln_cell {
    kiln_cell_kind kind;
    double number;              /* NUMBER; BOOL (0 or 1); DATE/DATETIME serial */
    const char *text;           /* STRING text; FORMULA formula without '='; URL the URL */
    size_t text_len;            /* bytes of text */
    const char *link_text;      /* URL: text shown; NULL = the URL itself */
    kiln_cell_kind cached_kind; /* FORMULA: BLANK (no cached value), NUMBER, STRING, BOOL */
    double cached_number;
    const char *cached_text;
    const char *number_format; /* the cell's own; NULL = the column's */
    const kiln_style *style;   /* the cell's own; NULL = none */
} kiln_cell;

/* ---- columns and tabular data (sheets and table blocks) ---- */
typedef enum {
    KILN_COL_AUTO,
    KILN_COL_STRING,
    KILN_COL_NUMBER,
    KILN_COL_INTEGER,
    KILN_COL_CURRENCY,
    KILN_COL_PERCENT,
    KILN_COL_DATE,
    KILN_COL_DATETIME,
    KILN_COL_BOOLEAN
} kiln_column_type;

typedef struct kiln_column {
    const char *header; /* NULL = none */
    const char *key;    /* member name for object rows: key, else header */
    kiln_column_type type;
    const char *number_format; /* effective: explicit, else the type's default, else NULL */
    double width;              /* characters; < 0 = compute from content */
    kiln_align align;
} kiln_column;

typedef enum { KILN_ROWS_INLINE, KILN_ROWS_CSV, KILN_ROWS_JSONL } kiln_rows_source;

typedef struct kiln_table_data {
    kiln_column *columns;
    size_t column_count;
    int header; /* write the header row first */
    kiln_rows_source source;
    size_t inline_row_count;  /* INLINE: number of data rows */
    const char *data_path;    /* CSV/JSONL: path to open (already checked) */
    char delimiter;           /* CSV: field separator */
    int data_header;          /* CSV: first record is a header */
    const char *pointer;      /* JSON Pointer of "rows" or "data", for errors */
    const void *private_rows; /* for kiln_rows_* only: INLINE the row array, CSV/JSONL the
                                 path relative to base_dir (re-walked without symlinks) */
} kiln_table_data;

/* ---- images ---- */
typedef enum { KILN_IMAGE_PNG, KILN_IMAGE_JPEG } kiln_image_format;

typedef struct kiln_image {
    kiln_image_format format;
    const unsigned char *data; /* the file's bytes */
    size_t size;
    uint32_t width_px, height_px;
    double dpi_x, dpi_y; /* 0 when the file does not say (writers assume 96) */
    const char *alt;     /* alternative text; "" when not given */
    const char *name;    /* file name for messages ("image3.png" for inline) */
} kiln_image;

/* ---- charts ---- */
typedef enum {
    KILN_CHART_COLUMN,
    KILN_CHART_BAR,
    KILN_CHART_LINE,
    KILN_CHART_PIE,
    KILN_CHART_DOUGHNUT,
    KILN_CHART_SCATTER,
    KILN_CHART_AREA
} kiln_chart_kind;
typedef enum {
    KILN_LEGEND_RIGHT,
    KILN_LEGEND_LEFT,
    KILN_LEGEND_TOP,
    KILN_LEGEND_BOTTOM,
    KILN_LEGEND_NONE
} kiln_legend;

typedef struct kiln_category {
    const char *text; /* always set (numbers formatted with %.15g) */
    double number;    /* is_number: the number; is_date: the date's serial */
    int is_number;
    int is_date; /* an ISO 8601 date ("2026-03-31", no time): when every category
                    is one, the chart has a date axis (chart_data.h) */
} kiln_category;

typedef struct kiln_series {
    const char *name;     /* NULL = "Series N" */
    const char *name_ref; /* sheet charts: cell reference for the name, or NULL */
    double *values;       /* value_count values, when not a range; NAN = a missing point */
    size_t value_count;
    const char *values_ref; /* sheet charts: range string, or NULL */
    int32_t color;
} kiln_series;

typedef struct kiln_chart {
    kiln_chart_kind kind;
    const char *title; /* NULL = none */
    int stacked;
    kiln_category *categories;
    size_t category_count;
    const char *categories_ref; /* sheet charts: range string, or NULL */
    kiln_series *series;
    size_t series_count;
    const char *x_title, *y_title;
    kiln_legend legend;
    int64_t anchor_row, anchor_col; /* sheet charts; -1 = beside the data */
    uint32_t width_px, height_px;   /* default 480 x 288 */
    const char *caption;            /* blocks: caption, or NULL */
    const char *pointer;
} kiln_chart;

/* ---- inline text ---- */
enum {
    KILN_RUN_BOLD = 1 << 0,
    KILN_RUN_ITALIC = 1 << 1,
    KILN_RUN_UNDERLINE = 1 << 2,
    KILN_RUN_STRIKE = 1 << 3,
    KILN_RUN_SUPERSCRIPT = 1 << 4,
    KILN_RUN_SUBSCRIPT = 1 << 5,
    KILN_RUN_CODE = 1 << 6
};

typedef struct kiln_run {
    const char *text;
    size_t len;
    unsigned flags; /* KILN_RUN_* */
    int32_t color;
    double size;      /* points, 0 = inherit */
    const char *font; /* NULL = inherit */
    const char *link; /* URL or NULL */
} kiln_run;

typedef struct kiln_text {
    kiln_run *runs;
    size_t run_count;
} kiln_text;

struct kiln_list;
typedef struct kiln_list_item {
    kiln_text text;
    struct kiln_list *children; /* NULL = none */
} kiln_list_item;

typedef struct kiln_list {
    int ordered;
    int start;
    kiln_list_item *items;
    size_t item_count;
} kiln_list;

/* ---- blocks ---- */
typedef enum {
    KILN_BLOCK_HEADING,
    KILN_BLOCK_PARAGRAPH,
    KILN_BLOCK_LIST,
    KILN_BLOCK_TABLE,
    KILN_BLOCK_IMAGE,
    KILN_BLOCK_CHART,
    KILN_BLOCK_PAGE_BREAK,
    KILN_BLOCK_TOC,
    KILN_BLOCK_CODE,
    KILN_BLOCK_QUOTE,
    KILN_BLOCK_RULE
} kiln_block_kind; /* markdown blocks are expanded into these by the parser */

typedef struct kiln_table {
    kiln_table_data data;
    const char *caption; /* NULL = none */
    const char *name;    /* NULL = none */
} kiln_table;

/* A block holds what its kind needs and no more: the members of the
 * different kinds share their storage (a spec may have a million blocks,
 * and a block with room for every kind's members was three times the size).
 * Read only the members of the block's kind. */
typedef struct kiln_block {
    kiln_block_kind kind;
    int level;           /* HEADING 1..6; TOC levels 1..6 */
    const char *pointer; /* JSON Pointer of the block (markdown: of the markdown block) */
    union {
        struct { /* HEADING, PARAGRAPH, QUOTE */
            kiln_text text;
            const char *attribution; /* QUOTE, or NULL */
            kiln_align align;        /* PARAGRAPH */
        };
        kiln_list list;    /* LIST */
        kiln_table *table; /* TABLE */
        struct {           /* IMAGE */
            kiln_image *image;
            const char *caption; /* or NULL (tables and charts carry their own) */
            double width_pt;     /* requested width, 0 = natural */
        };
        kiln_chart *chart; /* CHART */
        const char *title; /* TOC title */
        struct {           /* CODE */
            const char *code;
            const char *language; /* or NULL */
        };
    };
} kiln_block;

/* ---- slides ---- */
typedef enum {
    KILN_LAYOUT_TITLE,
    KILN_LAYOUT_SECTION,
    KILN_LAYOUT_CONTENT,
    KILN_LAYOUT_TWO_COLUMN,
    KILN_LAYOUT_TABLE,
    KILN_LAYOUT_IMAGE,
    KILN_LAYOUT_CHART,
    KILN_LAYOUT_BLANK
} kiln_layout;

typedef struct kiln_slide {
    kiln_layout layout;
    const char *title, *subtitle, *notes; /* NULL = none */
    kiln_list bullets, left, right;
    kiln_table *table;
    kiln_image *image;
    kiln_chart *chart;
    const char *pointer;
} kiln_slide;

/* ---- sheets ---- */
typedef enum { KILN_CF_CELL, KILN_CF_COLOR_SCALE, KILN_CF_DATA_BAR } kiln_cf_type;
typedef enum {
    KILN_CRIT_EQ,
    KILN_CRIT_NE,
    KILN_CRIT_GT,
    KILN_CRIT_GE,
    KILN_CRIT_LT,
    KILN_CRIT_LE,
    KILN_CRIT_BETWEEN,
    KILN_CRIT_NOT_BETWEEN
} kiln_criteria;

typedef struct kiln_cond_format {
    kiln_range range;
    kiln_cf_type type;
    kiln_criteria criteria; /* CELL */
    double value, maximum;  /* CELL (maximum for between) */
    kiln_style style;       /* CELL */
    int32_t colors[3];      /* COLOR_SCALE: color_count colors; DATA_BAR: colors[0] */
    int color_count;
} kiln_cond_format;

typedef struct kiln_validation {
    kiln_range range;
    const char **values;
    size_t value_count;
    const char *message; /* NULL = none */
} kiln_validation;

typedef struct kiln_merge {
    kiln_range range;
    kiln_cell value; /* BLANK when none */
} kiln_merge;

typedef struct kiln_sheet_image {
    kiln_image *image;
    uint32_t row, col;
    double scale; /* default 1 */
} kiln_sheet_image;

typedef struct kiln_comment {
    uint32_t row, col;
    const char *text;
    const char *author; /* NULL = metadata author */
} kiln_comment;

typedef struct kiln_sheet {
    const char *name;
    kiln_table_data data;
    uint32_t freeze_rows, freeze_cols;
    int autofilter;
    int table;               /* an Excel table over header + data */
    const char *table_name;  /* NULL = generated */
    const char *table_style; /* NULL = "Table Style Medium 2" */
    int table_total_row;
    kiln_merge *merges;
    size_t merge_count;
    kiln_cond_format *cond_formats;
    size_t cond_format_count;
    kiln_validation *validations;
    size_t validation_count;
    kiln_chart *charts;
    size_t chart_count;
    kiln_sheet_image *images;
    size_t image_count;
    kiln_comment *comments;
    size_t comment_count;
    int32_t tab_color;
    const char *pointer;
} kiln_sheet;

/* ---- the document ---- */
typedef struct kiln_metadata {
    const char *title, *author, *subject, *description, *company, *category;
    const char *keywords; /* joined with ", " */
    int has_created;
    int64_t created; /* seconds since the epoch, UTC (a zone offset applied;
                        no zone = the time taken as UTC) */
} kiln_metadata;

typedef struct kiln_theme {
    const char *font, *heading_font, *mono_font;
    double font_size;
    int32_t accent_colors[12];
    int accent_count;
    int32_t header_fill, header_font_color;
} kiln_theme;

typedef enum {
    KILN_PAGE_A4,
    KILN_PAGE_LETTER,
    KILN_PAGE_LEGAL,
    KILN_PAGE_A3,
    KILN_PAGE_A5
} kiln_page_size;

typedef struct kiln_page {
    kiln_page_size size;
    int landscape;
    double width_pt, height_pt;                                  /* after orientation */
    double margin_top, margin_bottom, margin_left, margin_right; /* points */
    const char *header_text; /* documents: text of the page header, one line, NULL =
                                none ("header": true gives the metadata title) */
    int page_numbers;        /* documents: "Page X of Y" footer (default 1) */
} kiln_page;

typedef struct kiln_doc {
    kiln_metadata metadata;
    kiln_theme theme; /* defaults filled in from templates/theme.json */
    kiln_page page;
    kiln_sheet *sheets;
    size_t sheet_count;
    kiln_block *blocks;
    size_t block_count;
    kiln_slide *slides;
    size_t slide_count;
    const char *base_dir; /* where relative paths were resolved */
    struct kiln_doc_private *priv;
} kiln_doc;

typedef struct kiln_parse_options {
    const char *base_dir; /* NULL = "." */
    kiln_limits limits;   /* start from kiln_limits_default() */
    int scan_data_files;  /* also read every CSV/JSONL file through to validate it */
} kiln_parse_options;

void kiln_parse_options_init(kiln_parse_options *opt);

/*
 * Parse and validate a spec. On success *out is a new document (free it with
 * kiln_doc_free) and KILN_E_OK is returned. On failure *out is NULL, errs
 * holds every error found (up to KILN_ERRORS_MAX) and the first error's code
 * is returned. json need not be NUL-terminated.
 */
kiln_status kiln_doc_parse(const char *json, size_t len, const kiln_parse_options *opt,
                           kiln_doc **out, kiln_errors *errs);

/*
 * The same for a spec that is already a jansson tree (a spec inside a JSON
 * request): the same validation, errors (codes, JSON Pointers, messages) and
 * model as kiln_doc_parse of its text, without the tree being written back to
 * text as a whole. spec is borrowed: it is never modified (each piece the
 * parser works on is its own copy) and nothing of the model points into it,
 * so the caller may free it as soon as this returns.
 *
 * limits.spec_bytes applies to the tree's compact JSON text (json_dumpb with
 * JSON_COMPACT: no whitespace), counted before anything else without being
 * kept, and only up to the limit: past it the error says "more than" as
 * kiln_doc_load's does. A tree that cannot be written as JSON (a string not
 * UTF-8, made with a _nocheck constructor; a value containing itself) is
 * refused at "" with KILN_E_INVALID_SPEC.
 */
struct json_t; /* jansson's json_t: writers need not include jansson.h */
kiln_status kiln_doc_parse_json(const struct json_t *spec, const kiln_parse_options *opt,
                                kiln_doc **out, kiln_errors *errs);

/* --base-dir's rule, for every relative path a spec or a batch names. */
/*
 * Check a spec path (no absolute path, no ".." component, not empty) and
 * open it relative to base_dir without following a symbolic link in any
 * component. Returns an fd (O_RDONLY, O_CLOEXEC) for a regular file, or -1
 * with a reason in why. *is_input is set to 1 when the path was acceptable but
 * the file could not be opened (KILN_E_INPUT), 0 when the path itself is
 * refused (KILN_E_INVALID_SPEC).
 */
int kiln_open_beneath(const char *base_dir, const char *rel, char *why, size_t why_cap,
                      int *is_input);

/* Read path ("-" = standard input, bounded by limits.spec_bytes) and parse it. */
kiln_status kiln_doc_load(const char *path, const kiln_parse_options *opt, kiln_doc **out,
                          kiln_errors *errs);

void kiln_doc_free(kiln_doc *doc);

/* ---- row readers ---- */
typedef struct kiln_row_reader kiln_row_reader;

/* Open a reader over a table's data rows (never the header row). */
kiln_status kiln_rows_open(const kiln_doc *doc, const kiln_table_data *table,
                           kiln_row_reader **out, kiln_error *err);
/*
 * Next row: returns 1 and sets *cells (column_count cells when columns are
 * given, else as many as the row has) and *count; 0 at the end; -1 on error
 * (err names the file, line and column). Cells and their strings stay valid
 * until the next call.
 */
int kiln_rows_next(kiln_row_reader *reader, const kiln_cell **cells, size_t *count,
                   kiln_error *err);
/* 0-based number of the row last returned (for messages). */
uint64_t kiln_rows_index(const kiln_row_reader *reader);
void kiln_rows_close(kiln_row_reader *reader);

/* The definition of a table's column i, NULL past the defined columns (rows
 * may be wider than the columns a table declares). */
const kiln_column *kiln_table_column(const kiln_table_data *table, size_t i);

/* ---- helpers shared by parser and writers ---- */
/* "B12" -> row 11, col 1. Returns 0 on success, -1 if not a valid reference. */
int kiln_cell_ref_parse(const char *ref, uint32_t *row, uint32_t *col);
/* "A1:D10" (or a single cell) -> range. 0 / -1. */
int kiln_range_parse(const char *ref, kiln_range *out);
/* Column letters for a 0-based column: 0 -> "A". buf needs 4 bytes. */
void kiln_col_name(uint32_t col, char buf[4]);
/* The serial of 9999-12-31, the last day Excel's 1900 date system holds. */
#define KILN_SERIAL_MAX 2958465
/* ISO 8601 date / date-time -> Excel 1900 serial; zone designator ignored; the
 * time rounded to the millisecond (Excel's precision). 0 / -1 (malformed, before
 * 1900-01-01, or rounding past 9999-12-31T23:59:59.999). */
int kiln_iso_to_serial(const char *iso, double *serial, int *has_time);

#endif
