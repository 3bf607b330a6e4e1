/*
 * merge_walk.h - a sheet's merged ranges, walked alongside its rows.
 *
 * The document writers' table layout (table_layout.h, for .docx, .pptx and
 * .pdf) streams a table's rows and never holds them, so the sheet's merges
 * (kiln_sheet.merges) are walked in step: the ranges are sorted by first
 * row (then first column) once, and each row, visited in order, learns
 * which range covers each of its columns. Rows
 * are numbered as in the worksheet the .xlsx writer makes: row 0 is the
 * header row when the table has one, else the first data row.
 *
 * The walk knows ranges only. What the layout keeps per range (where its
 * cell goes, its width, the look of its first row for the rows below) it
 * keeps in its own array indexed by the range's index in the walk: range k
 * is walk->merges[k], and every index the walk hands out is such a k.
 */
#ifndef KILN_MERGE_WALK_H
#define KILN_MERGE_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/arena.h"
#include "../../common/error.h"
#include "../spec/spec.h"

/* No range: what kiln_merge_walk_at returns for an uncovered column. */
#define KILN_MERGE_NONE SIZE_MAX

/*
 * A walk over count ranges. A zeroed walk is a valid walk over none (every
 * row is free of merges). Read merges, count, active and active_count; the
 * rest is the walk's own.
 */
typedef struct kiln_merge_walk {
    const kiln_merge **merges; /* count ranges, by first row then first column
                                  (borrowed from the model) */
    size_t count;
    size_t *active; /* the indices of the active_count ranges covering
                       the current row, in the order they started */
    size_t active_count;
    size_t next;   /* the first range whose rows have not started */
    size_t *cover; /* per worksheet column: 1 + the index of the range
                      covering it in the current row, 0 = none */
    size_t cover_cols;
} kiln_merge_walk;

/*
 * Index merges[count] (a sheet's merges; none for a table block) into walk,
 * positioned before row 0. The walk's arrays come from arena and point into
 * merges: it lives as long as both. KILN_E_NOMEM (nothing is reported: the
 * caller says what it was doing), else KILN_E_OK.
 */
kiln_status kiln_merge_walk_init(kiln_merge_walk *walk, const kiln_merge *merges, size_t count,
                                 kiln_arena *arena);

/* Back to before row 0, for another pass over the rows. */
void kiln_merge_walk_rewind(kiln_merge_walk *walk);

/*
 * Move to worksheet row `row`: call it for every row, in order, from 0 (a
 * range that ends before the first row asked for is skipped). Ranges
 * normally never overlap (the parser rejects it); in a model built by hand
 * the range started later covers the columns they share, which are left
 * uncovered once it ends.
 */
void kiln_merge_walk_row(kiln_merge_walk *walk, uint32_t row);

/* The index of the range covering column `col` in the current row, or
 * KILN_MERGE_NONE. */
size_t kiln_merge_walk_at(const kiln_merge_walk *walk, size_t col);

/* A one-cell "merge": it only gives the cell its value and style. */
int kiln_merge_is_single(const kiln_merge *m);

/*
 * What a merged range shows in its top-left cell, as the .xlsx writer
 * leaves it: the merge's own value, in the merge's format; else the
 * top-left cell's own value and style (own, NULL when the row is shorter)
 * when it has either; else the merge's (blank, perhaps styled) value.
 * *merge_look says whether the merge's format is the one shown. The result
 * is m's value or own.
 */
const kiln_cell *kiln_merge_shown(const kiln_merge *m, const kiln_cell *own, int *merge_look);

/*
 * The column range r shows in when it shows in one only, counting the
 * columns d defines (the grid may still grow when it defines none) and not
 * the hidden ones (width 0); else KILN_MERGE_NONE.
 */
size_t kiln_merge_single_column(const kiln_table_data *d, const kiln_range *r);

#endif
