/*
 * merge_walk.c - a sheet's merged ranges, walked alongside its rows
 * (merge_walk.h).
 *
 * The ranges are sorted once; the walk then keeps the ranges covering the
 * current row (active) and, per worksheet column, the one covering it
 * (cover), so a row asks about a column in constant time. Moving to the
 * next row drops the ranges that ended and takes in the ones that start.
 */
#include <stdlib.h>
#include <string.h>

#include "merge_walk.h"
#include "../../common/banned.h"

static int range_order(const void *a, const void *b)
{
    const kiln_merge *ma = *(const kiln_merge *const *)a;
    const kiln_merge *mb = *(const kiln_merge *const *)b;
    const kiln_range *x = &ma->range, *y = &mb->range;
    if (x->first_row != y->first_row)
        return x->first_row < y->first_row ? -1 : 1;
    if (x->first_col != y->first_col)
        return x->first_col < y->first_col ? -1 : 1;
    /* Only overlapping ranges tie: keep the model's order, whatever qsort does. */
    if (ma != mb)
        return ma < mb ? -1 : 1;
    return 0;
}

kiln_status kiln_merge_walk_init(kiln_merge_walk *walk, const kiln_merge *merges, size_t count,
                                 kiln_arena *arena)
{
    memset(walk, 0, sizeof *walk);
    if (count == 0)
        return KILN_E_OK;
    size_t cols = 0;
    for (size_t i = 0; i < count; i++) {
        size_t last = (size_t)merges[i].range.last_col + 1;
        if (last > cols)
            cols = last;
    }
    const kiln_merge **sorted = kiln_arena_calloc(arena, count, sizeof *sorted);
    size_t *active = kiln_arena_calloc(arena, count, sizeof *active);
    size_t *cover = kiln_arena_calloc(arena, cols, sizeof *cover);
    if (!sorted || !active || !cover)
        return KILN_E_NOMEM;
    for (size_t i = 0; i < count; i++)
        sorted[i] = &merges[i];
    qsort(sorted, count, sizeof *sorted, range_order);
    walk->merges = sorted;
    walk->count = count;
    walk->active = active;
    walk->cover = cover;
    walk->cover_cols = cols;
    return KILN_E_OK;
}

void kiln_merge_walk_rewind(kiln_merge_walk *walk)
{
    if (walk->cover)
        memset(walk->cover, 0, walk->cover_cols * sizeof *walk->cover);
    walk->next = 0;
    walk->active_count = 0;
}

/* Mark range k's columns as covered by it (on), or clear the ones it still
 * covers (off): a column a range started later took over stays with that. */
static void cover_range(kiln_merge_walk *walk, size_t k, int on)
{
    const kiln_range *r = &walk->merges[k]->range;
    for (size_t col = r->first_col; col <= r->last_col; col++)
        if (on)
            walk->cover[col] = k + 1;
        else if (walk->cover[col] == k + 1)
            walk->cover[col] = 0;
}

void kiln_merge_walk_row(kiln_merge_walk *walk, uint32_t row)
{
    if (walk->count == 0)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < walk->active_count; i++) {
        size_t k = walk->active[i];
        if (walk->merges[k]->range.last_row < row)
            cover_range(walk, k, 0);
        else
            walk->active[kept++] = k;
    }
    while (walk->next < walk->count && walk->merges[walk->next]->range.first_row <= row) {
        size_t k = walk->next++;
        if (walk->merges[k]->range.last_row < row)
            continue;
        cover_range(walk, k, 1);
        walk->active[kept++] = k;
    }
    walk->active_count = kept;
}

size_t kiln_merge_walk_at(const kiln_merge_walk *walk, size_t col)
{
    if (col >= walk->cover_cols || walk->cover[col] == 0)
        return KILN_MERGE_NONE;
    return walk->cover[col] - 1;
}

int kiln_merge_is_single(const kiln_merge *m)
{
    return m->range.first_row == m->range.last_row && m->range.first_col == m->range.last_col;
}

const kiln_cell *kiln_merge_shown(const kiln_merge *m, const kiln_cell *own, int *merge_look)
{
    if (m->value.kind != KILN_CELL_BLANK || !own ||
        (own->kind == KILN_CELL_BLANK && !own->style)) {
        *merge_look = 1;
        return &m->value;
    }
    *merge_look = 0;
    return own;
}

size_t kiln_merge_single_column(const kiln_table_data *d, const kiln_range *r)
{
    size_t found = KILN_MERGE_NONE;
    for (size_t col = r->first_col; col <= r->last_col; col++) {
        if (d->column_count && col >= d->column_count)
            break;
        if (col < d->column_count && d->columns[col].width == 0)
            continue;
        if (found != KILN_MERGE_NONE)
            return KILN_MERGE_NONE;
        found = col;
    }
    return found;
}
