/*
 * chart_data.h - a chart's numbers, resolved to literal values.
 *
 * A chart in a block or a slide carries its numbers; a chart on a sheet may
 * instead name ranges of the sheets' cells ("Data!B2:B13"). The .xlsx writer
 * keeps such ranges as references, but a document or a deck has no cells to
 * point at, so the docx, pdf and pptx writers first resolve every chart into
 * this one literal form: categories and series values read from the sheet
 * rows (through the row readers) when they were ranges. The chart XML and the
 * embedded workbook behind it are written from this form only.
 */
#ifndef KILN_CHART_DATA_H
#define KILN_CHART_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/arena.h"
#include "../../common/error.h"
#include "../spec/spec.h"

/* The number format of literal ISO date categories (the spec's date default). */
#define KILN_CHART_DATE_FORMAT "yyyy-mm-dd"

typedef struct kiln_chart_series_data {
    const char *name;     /* never NULL: the literal name, the named cell's text, or "Series N" */
    const double *values; /* value_count values; NAN = an empty or non-numeric cell */
    int32_t color;        /* explicit color, else the theme accent for its position */
    const char *number_format; /* the values' number format (a range's column format), or NULL */
} kiln_chart_series_data;

typedef struct kiln_chart_data {
    const kiln_chart *chart;        /* kind, title, axes, legend, size, caption */
    size_t point_count;             /* categories and values per series */
    const char **categories;        /* point_count texts (numbers as shown); NULL when the
                                       chart has no categories (then "1", "2", ... are used) */
    const double *category_numbers; /* point_count numbers when categories_numeric, or
                                       the dates' serials when categories_dates */
    int categories_numeric;         /* every category is a number (required for scatter) */
    int categories_dates;           /* column, bar, line and area charts: every category is a
                                       date of a whole day (a date cell, or an ISO date): the
                                       chart gets a date axis, its points in date order */
    const char *category_format;    /* categories_dates: the dates' number format (the first
                                       category cell's, "yyyy-mm-dd" for ISO dates) */
    kiln_chart_series_data *series;
    size_t series_count;
    const kiln_metadata *metadata; /* the document's (author, created), for the embedded
                                      workbook's properties; NULL = none */
} kiln_chart_data;

/*
 * Resolve chart into data. own_sheet is the sheet the chart belongs to (for
 * ranges without a sheet name), or NULL for block and slide charts. Range
 * cells are read from the sheets' rows (the header row, when a sheet has one,
 * is row 1 as in the workbook). Everything allocated comes from arena.
 * KILN_E_NOMEM; KILN_E_INPUT when a data file cannot be read.
 */
kiln_status kiln_chart_data_resolve(const kiln_doc *doc, const kiln_sheet *own_sheet,
                                    const kiln_chart *chart, const kiln_theme *theme,
                                    kiln_arena *arena, kiln_chart_data *out, kiln_error *err);

#endif
