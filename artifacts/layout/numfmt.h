/*
 * numfmt.h - show a cell's value the way Excel would under a number format.
 *
 * A sheet keeps numbers as numbers and lets Excel format them; a Word table,
 * a PDF table or a slide has only text, so the docx, pdf and pptx writers
 * turn each cell into the text Excel would show: "#,##0.00" gives
 * "1,234.50", "0.0%" gives "12.5%", "$#,##0;[Red]-$#,##0" gives "-$1,235",
 * "yyyy-mm-dd" gives "2026-11-29". The subset handled is what the spec's
 * column types produce plus the codes people commonly write: sections
 * (positive;negative;zero;text), digit placeholders 0 # ?, thousands
 * separators and trailing-comma scaling, percent, decimals, scientific (E+),
 * fractions ("# ?/?", "# ??/??", "# ?/8"), quoted literals and backslash
 * escapes, [color] and [$...] locale tags (ignored except for the currency
 * symbol), @ in text sections, and the date/time codes y m d h s AM/PM with
 * elapsed [h]. General formats like
 * Excel's General in a cell: integers below 10^15 in full, other numbers in
 * at most 11 characters (numfmt.c says exactly how).
 */
#ifndef KILN_NUMFMT_H
#define KILN_NUMFMT_H

#include <stddef.h>

#include "../spec/spec.h"

/* Largest text kiln_format_value writes (NUL included) for a number. */
#define KILN_NUMFMT_MAX 128

/*
 * The text of number under format (NULL or "General" = General), into buf of
 * cap bytes (at least KILN_NUMFMT_MAX). Returns the length written.
 */
size_t kiln_format_number(double number, const char *format, char *buf, size_t cap);

/*
 * The text of a cell in a column: the cell's own number format, else the
 * column's; strings as they are; booleans TRUE/FALSE; dates and date-times
 * under their format (default "yyyy-mm-dd" / "yyyy-mm-dd hh:mm"); formulas
 * show their cached value (empty without one); URLs their link text.
 * Returns a pointer to the text (either the cell's own string or buf) and
 * sets *len. col may be NULL.
 */
const char *kiln_cell_display(const kiln_cell *cell, const kiln_column *col, char *buf,
                              size_t cap, size_t *len);

/* The number format a cell's number is shown under: the cell's own, else the
 * column's; a date or date-time takes the column's only when it shows dates,
 * else "yyyy-mm-dd" / "yyyy-mm-dd hh:mm" (as the xlsx writer stores them).
 * NULL = General. col may be NULL. */
const char *kiln_cell_number_format(const kiln_cell *cell, const kiln_column *col);

/* 1 when format shows numbers as dates or times (y, m, d, h, s codes). */
int kiln_format_is_date(const char *format);

/* 1 when a cell of this column is usually right-aligned (numbers, dates). */
int kiln_column_is_numeric(const kiln_column *col);

/* 1 when the cell shows a number: a number, a date or date-time, or a
 * formula whose cached value is a number (what a table right-aligns and
 * never breaks across lines). */
int kiln_cell_is_numeric(const kiln_cell *cell);

#endif
