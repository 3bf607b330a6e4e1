/*
 * xlsx_internal.h - what the files of the xlsx writer share (artifacts/xlsx/).
 * In layers, each file calling only files of the layers below it (make
 * check's cycles part, tests/check_cycles.py, fails on a call back up):
 *
 *   top     xlsx_writer.c   kiln_xlsx_write: workbook, properties, memory
 *                           mode, the sheet loop (cells, header, freeze,
 *                           filter, table, merges, conditional formats,
 *                           validations, images, comments).
 *   middle  xlsx_charts.c   native charts and the hidden sheet holding
 *                           literal data.
 *   bottom  xlsx_map.c      which sheets the workbook gets: doc sheets as they
 *                           are, or table blocks / slides mapped to sheets;
 *                           sheet-name rules.
 *           xlsx_formats.c  a cache of lxw_format per distinct look, so
 *                           thousands of styled cells share a handful of
 *                           formats.
 *           xlsx_autofit.c  column widths from content (a Calibri 11 pixel
 *                           table).
 *           xlsx_lxw_error.c  the one place lxw_error becomes kiln_error.
 *           xlsx_xstring.c  cell text as SpreadsheetML stores it
 *                           (xlsx_xstring.h, also used by opc/).
 *
 * Nothing here is an interface outside artifacts/xlsx/.
 */
#ifndef KILN_XLSX_INTERNAL_H
#define KILN_XLSX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <xlsxwriter.h>

#include "../../common/arena.h"
#include "../../common/error.h"
#include "../spec/spec.h"
#include "xlsx_xstring.h"

/* Excel's hyperlink limits (libxlsxwriter checks them too, but prints). */
#define XLSX_MAX_URLS_PER_SHEET 65530u
#define XLSX_MAX_URL_CHARS 2079u
/* A sheet name's limit in code points, and a buffer for the UTF-8 of one. */
#define XLSX_SHEET_NAME_MAX 31
#define XLSX_SHEET_NAME_BUF (XLSX_SHEET_NAME_MAX * 4 + 1)
/* The hidden sheet holding charts' literal data and long validation lists. */
#define XLSX_DATA_SHEET "_kiln_data"

/* ---- the plan: one entry per worksheet the workbook gets (xlsx_map.c) ---- */
typedef struct xlsx_plan_sheet {
    char name[XLSX_SHEET_NAME_BUF];
    const kiln_sheet *sheet;     /* a doc sheet, or NULL for a mapped one */
    const kiln_table_data *data; /* rows to write; NULL = none */
    const kiln_chart **charts;   /* charts placed on this sheet */
    size_t chart_count, chart_cap;
    int text_sheet;      /* the fallback sheet listing the text */
    const char *pointer; /* for errors */
    lxw_worksheet *ws;
} xlsx_plan_sheet;

typedef struct xlsx_plan {
    xlsx_plan_sheet *sheets;
    size_t count;
} xlsx_plan;

/* Build the plan for doc. Allocations come from arena. */
kiln_status xlsx_plan_build(const kiln_doc *doc, kiln_arena *arena, xlsx_plan *plan,
                            kiln_error *err);
/* The plan sheet whose name equals name ignoring ASCII case, or NULL. */
xlsx_plan_sheet *xlsx_plan_find(xlsx_plan *plan, const char *name);
/* Copy src into dst (XLSX_SHEET_NAME_BUF bytes) under Excel's sheet-name
 * rules; the result may be empty. */
void xlsx_sheet_name_sanitize(char *dst, const char *src, size_t src_len);
/* ASCII-case-insensitive equality (Excel folds case; see xlsx_map.c). */
int xlsx_name_equal(const char *a, const char *b);

/* ---- formats (xlsx_formats.c) ---- */
typedef struct xlsx_fmt_key {
    kiln_style style;          /* font may be NULL */
    const char *number_format; /* NULL = General */
    kiln_align col_align;      /* the column's, under the style's */
    uint8_t header, link, merge;
} xlsx_fmt_key;

typedef struct xlsx_formats xlsx_formats;

xlsx_formats *xlsx_formats_new(lxw_workbook *wb, const kiln_theme *theme);
void xlsx_formats_free(xlsx_formats *f);
/* The format for key, created on first use; NULL means "no format needed"
 * (plain General cell in the default font) or out of memory (*oom set). */
lxw_format *xlsx_formats_get(xlsx_formats *f, const xlsx_fmt_key *key, int *oom);
/* A dxf format (conditional formats) for style; NULL on out of memory. */
lxw_format *xlsx_formats_dxf(xlsx_formats *f, const kiln_style *style);
/* kiln color to libxlsxwriter's (which reads 0x000000 as "unset"). */
lxw_color_t xlsx_color(int32_t color);

/* ---- autofit (xlsx_autofit.c) ---- */
typedef struct xlsx_numfmt_info {
    uint8_t kind; /* XLSX_NF_* */
    uint8_t decimals;
    uint8_t thousands;
    uint16_t literal_px; /* currency symbols, quoted text, '%' */
    uint16_t date_px;    /* DATE: the width of the format's rendering */
} xlsx_numfmt_info;

enum { XLSX_NF_GENERAL, XLSX_NF_NUMBER, XLSX_NF_PERCENT, XLSX_NF_DATE, XLSX_NF_TEXT };

/* Classify a number format once (per column / per distinct cell format). */
void xlsx_numfmt_analyse(const char *fmt, xlsx_numfmt_info *out);
/* 1 when fmt formats dates or times (y, d, h, s outside quotes). */
int xlsx_numfmt_is_date(const char *fmt);
/* Pixel width of text as Calibri 11 shows it (widest line; long texts are
 * measured in part and estimated for the rest). */
uint32_t xlsx_text_px(const char *s, size_t len);
/* Pixel width of a number as shown under a format. */
uint32_t xlsx_number_px(double v, const xlsx_numfmt_info *nf);
/* Column width in characters for a content width in pixels (<= 255). */
double xlsx_px_to_width(uint32_t px);

/* ---- charts (xlsx_charts.c) ---- */
typedef struct xlsx_chart_ctx {
    lxw_workbook *wb;
    const kiln_doc *doc;
    kiln_arena *arena;
    xlsx_plan *plan;
    const kiln_theme *theme;
    lxw_worksheet *data_ws; /* the hidden sheet for literal data, or NULL */
    const char *data_name;
    uint32_t data_row;           /* next free row of data_ws */
    lxw_format *date_format;     /* literal date categories on data_ws, made on first use */
    lxw_error lxw_err;           /* the library error behind a KILN_E_WRITE */
    struct xlsx_ref_range *refs; /* ranges of the sheets' cells charts read */
    size_t ref_count, ref_cap;
    char *esc; /* scratch for xlsx_xstring (malloc) */
    size_t esc_cap;
} xlsx_chart_ctx;

/* 1 when the chart has literal categories or values (needs the data sheet). */
int xlsx_chart_needs_data(const kiln_chart *chart);
/* Create chart, fill it, insert it into sheet at (row, col). */
kiln_status xlsx_chart_insert(xlsx_chart_ctx *ctx, xlsx_plan_sheet *sheet,
                              const kiln_chart *chart, uint32_t row, uint32_t col,
                              kiln_error *err);

/* In-memory mode, once every sheet is written: give the charts' cell ranges
 * their cached values, formula results included (libxlsxwriter's own cache
 * would show a formula cell as 0). */
kiln_status xlsx_chart_fill_caches(xlsx_chart_ctx *ctx, kiln_error *err);

/* ---- text: xlsx_xstring (xlsx_xstring.h) ---- */

/* ---- errors (xlsx_lxw_error.c) ---- */
/* The one translation of a libxlsxwriter error into a kiln_error. */
kiln_status xlsx_lxw_error(kiln_error *err, lxw_error e, const char *pointer, const char *what);

#endif
