/*
 * test_merge_walk.c - kiln_merge_walk: a sheet's merged ranges walked row
 * by row (sorted by first row then column, whatever the model's order),
 * adjacent and overlapping ranges, ranges that started before the first row
 * walked, rewinding for a second pass; and what a merged range shows
 * (kiln_merge_shown), the one-cell "merge", the one column a range shows
 * in. The merges are built by hand, so they may overlap as the parser
 * never lets them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "artifacts/layout/merge_walk.h"
#include "artifacts/spec/spec.h"
#include "common/banned.h"

#define NONE KILN_MERGE_NONE

static kiln_merge merge(uint32_t first_row, uint32_t first_col, uint32_t last_row,
                        uint32_t last_col)
{
    kiln_merge m;
    memset(&m, 0, sizeof m);
    m.range.first_row = first_row;
    m.range.first_col = first_col;
    m.range.last_row = last_row;
    m.range.last_col = last_col;
    m.value.kind = KILN_CELL_BLANK;
    return m;
}

/* The index in the walk of merges[i] (the walk sorts them). */
static size_t index_of(const kiln_merge_walk *walk, const kiln_merge *m)
{
    for (size_t k = 0; k < walk->count; k++)
        if (walk->merges[k] == m)
            return k;
    fail_msg("merge not in the walk");
    return NONE;
}

/* Each of cols[0..n) covered by the range at `want` (NONE: uncovered). */
static void assert_row(const kiln_merge_walk *walk, const size_t *want, size_t n)
{
    for (size_t col = 0; col < n; col++)
        if (kiln_merge_walk_at(walk, col) != want[col]) {
            print_error("column %zu: range %zu, expected %zu\n", col,
                        kiln_merge_walk_at(walk, col), want[col]);
            fail();
        }
}

static void test_empty_walk(void **state)
{
    (void)state;
    kiln_arena arena;
    kiln_arena_init(&arena, 0);
    kiln_merge_walk walk;
    assert_int_equal(kiln_merge_walk_init(&walk, NULL, 0, &arena), KILN_E_OK);
    assert_int_equal(walk.count, 0);
    kiln_merge_walk_row(&walk, 0);
    assert_int_equal(kiln_merge_walk_at(&walk, 0), NONE);
    kiln_merge_walk_rewind(&walk);

    /* A zeroed walk is one over no ranges. */
    kiln_merge_walk zero;
    memset(&zero, 0, sizeof zero);
    kiln_merge_walk_row(&zero, 3);
    assert_int_equal(kiln_merge_walk_at(&zero, 0), NONE);
    assert_int_equal(zero.active_count, 0);
    kiln_arena_release(&arena);
}

/* Given out of order; adjacent side by side and one above the other. */
static void test_sorted_and_adjacent(void **state)
{
    (void)state;
    kiln_merge merges[] = {
        merge(2, 0, 3, 1), /* below the first: rows 2-3, A:B */
        merge(0, 2, 0, 3), /* beside it: row 0, C:D */
        merge(0, 0, 1, 1), /* rows 0-1, A:B */
    };
    kiln_arena arena;
    kiln_arena_init(&arena, 0);
    kiln_merge_walk walk;
    assert_int_equal(kiln_merge_walk_init(&walk, merges, 3, &arena), KILN_E_OK);
    assert_int_equal(walk.count, 3);
    assert_ptr_equal(walk.merges[0], &merges[2]);
    assert_ptr_equal(walk.merges[1], &merges[1]);
    assert_ptr_equal(walk.merges[2], &merges[0]);

    kiln_merge_walk_row(&walk, 0);
    assert_row(&walk, (size_t[]){0, 0, 1, 1, NONE}, 5);
    assert_int_equal(walk.active_count, 2);
    kiln_merge_walk_row(&walk, 1);
    assert_row(&walk, (size_t[]){0, 0, NONE, NONE, NONE}, 5);
    assert_int_equal(walk.active_count, 1);
    assert_int_equal(walk.active[0], 0);
    kiln_merge_walk_row(&walk, 2); /* one ends, the next starts in the same columns */
    assert_row(&walk, (size_t[]){2, 2, NONE, NONE, NONE}, 5);
    kiln_merge_walk_row(&walk, 3);
    assert_row(&walk, (size_t[]){2, 2, NONE, NONE, NONE}, 5);
    kiln_merge_walk_row(&walk, 4);
    assert_row(&walk, (size_t[]){NONE, NONE, NONE, NONE, NONE}, 5);
    assert_int_equal(walk.active_count, 0);
    /* Far past the last column any range covers. */
    assert_int_equal(kiln_merge_walk_at(&walk, 1000), NONE);
    kiln_arena_release(&arena);
}

/* The range started later covers the shared columns; when it ends they are
 * left uncovered, even though the first range goes on. */
static void test_overlapping(void **state)
{
    (void)state;
    kiln_merge merges[] = {
        merge(0, 0, 3, 2), /* rows 0-3, A:C */
        merge(1, 2, 1, 4), /* row 1, C:E */
        merge(0, 0, 0, 0), /* same top-left as the first: ties keep the model's order */
    };
    kiln_arena arena;
    kiln_arena_init(&arena, 0);
    kiln_merge_walk walk;
    assert_int_equal(kiln_merge_walk_init(&walk, merges, 3, &arena), KILN_E_OK);
    size_t big = index_of(&walk, &merges[0]), late = index_of(&walk, &merges[1]),
           tie = index_of(&walk, &merges[2]);
    assert_int_equal(big, 0);
    assert_int_equal(tie, 1);
    assert_int_equal(late, 2);

    kiln_merge_walk_row(&walk, 0);
    assert_row(&walk, (size_t[]){tie, big, big, NONE, NONE}, 5);
    kiln_merge_walk_row(&walk, 1);
    assert_row(&walk, (size_t[]){NONE, big, late, late, late}, 5);
    assert_int_equal(walk.active_count, 2);
    kiln_merge_walk_row(&walk, 2);
    assert_row(&walk, (size_t[]){NONE, big, NONE, NONE, NONE}, 5);
    assert_int_equal(walk.active_count, 1);
    kiln_merge_walk_row(&walk, 4);
    assert_row(&walk, (size_t[]){NONE, NONE, NONE, NONE, NONE}, 5);
    kiln_arena_release(&arena);
}

/* The first row walked is past where ranges start: one still going covers
 * its columns, one already over is skipped. */
static void test_started_before_first_row(void **state)
{
    (void)state;
    kiln_merge merges[] = {
        merge(0, 0, 1, 0), /* rows 0-1: over before row 3 */
        merge(1, 1, 4, 2), /* rows 1-4: still going at row 3 */
        merge(3, 0, 3, 0), /* starts at row 3 */
        merge(5, 0, 6, 0),
    };
    kiln_arena arena;
    kiln_arena_init(&arena, 0);
    kiln_merge_walk walk;
    assert_int_equal(kiln_merge_walk_init(&walk, merges, 4, &arena), KILN_E_OK);
    size_t going = index_of(&walk, &merges[1]), starts = index_of(&walk, &merges[2]),
           later = index_of(&walk, &merges[3]);

    kiln_merge_walk_row(&walk, 3);
    assert_row(&walk, (size_t[]){starts, going, going, NONE}, 4);
    assert_int_equal(walk.active_count, 2);
    kiln_merge_walk_row(&walk, 4);
    assert_row(&walk, (size_t[]){NONE, going, going, NONE}, 4);
    kiln_merge_walk_row(&walk, 6); /* rows may be skipped: row 5's range still covers 6 */
    assert_row(&walk, (size_t[]){later, NONE, NONE, NONE}, 4);
    kiln_arena_release(&arena);
}

/* A second pass sees exactly what the first saw. */
static void test_rewind(void **state)
{
    (void)state;
    kiln_merge merges[] = {merge(1, 1, 2, 3), merge(0, 0, 0, 1), merge(3, 0, 3, 3)};
    kiln_arena arena;
    kiln_arena_init(&arena, 0);
    kiln_merge_walk walk;
    assert_int_equal(kiln_merge_walk_init(&walk, merges, 3, &arena), KILN_E_OK);
    size_t seen[2][5][4];
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t row = 0; row < 5; row++) {
            kiln_merge_walk_row(&walk, row);
            for (size_t col = 0; col < 4; col++)
                seen[pass][row][col] = kiln_merge_walk_at(&walk, col);
        }
        /* Rewound, nothing is covered until the first row is walked again. */
        kiln_merge_walk_rewind(&walk);
        assert_int_equal(walk.active_count, 0);
        for (size_t col = 0; col < 4; col++)
            assert_int_equal(kiln_merge_walk_at(&walk, col), NONE);
    }
    assert_memory_equal(seen[0], seen[1], sizeof seen[0]);
    assert_int_equal(seen[0][1][2], index_of(&walk, &merges[0]));
    assert_int_equal(seen[0][3][3], index_of(&walk, &merges[2]));
    assert_int_equal(seen[0][4][0], NONE);

    /* Rewound in the middle of a range, too. */
    kiln_merge_walk_row(&walk, 0);
    kiln_merge_walk_row(&walk, 1);
    kiln_merge_walk_rewind(&walk);
    kiln_merge_walk_row(&walk, 0);
    assert_row(&walk, (size_t[]){seen[0][0][0], seen[0][0][1], NONE, NONE}, 4);
    kiln_arena_release(&arena);
}

static void test_out_of_memory(void **state)
{
    (void)state;
    kiln_merge merges[] = {merge(0, 0, 0, 1000)};
    kiln_arena arena;
    kiln_arena_init(&arena, 64);
    kiln_merge_walk walk;
    assert_int_equal(kiln_merge_walk_init(&walk, merges, 1, &arena), KILN_E_NOMEM);
    kiln_arena_release(&arena);
}

/* The merge's value; else the top-left cell's own; else the merge's blank. */
static void test_shown(void **state)
{
    (void)state;
    kiln_style bold;
    memset(&bold, 0, sizeof bold);
    bold.bold = 1;
    kiln_cell own = {.kind = KILN_CELL_STRING, .text = "own", .text_len = 3};
    kiln_cell styled_blank = {.kind = KILN_CELL_BLANK, .style = &bold};
    kiln_cell plain_blank = {.kind = KILN_CELL_BLANK};
    int look = -1;

    /* The merge's own value wins, in the merge's format. */
    kiln_merge valued = merge(0, 0, 0, 2);
    valued.value.kind = KILN_CELL_NUMBER;
    valued.value.number = 45;
    assert_ptr_equal(kiln_merge_shown(&valued, &own, &look), &valued.value);
    assert_int_equal(look, 1);

    /* No value: the top-left cell's, with its own style, even a styled blank. */
    kiln_merge bare = merge(0, 0, 0, 2);
    look = -1;
    assert_ptr_equal(kiln_merge_shown(&bare, &own, &look), &own);
    assert_int_equal(look, 0);
    look = -1;
    assert_ptr_equal(kiln_merge_shown(&bare, &styled_blank, &look), &styled_blank);
    assert_int_equal(look, 0);

    /* Neither: the merge's blank, in the merge's format (a short row too). */
    look = -1;
    assert_ptr_equal(kiln_merge_shown(&bare, &plain_blank, &look), &bare.value);
    assert_int_equal(look, 1);
    look = -1;
    assert_ptr_equal(kiln_merge_shown(&bare, NULL, &look), &bare.value);
    assert_int_equal(look, 1);
}

static void test_single_and_single_column(void **state)
{
    (void)state;
    kiln_merge one = merge(2, 3, 2, 3), row = merge(2, 3, 2, 4), col = merge(2, 3, 5, 3);
    assert_true(kiln_merge_is_single(&one));
    assert_false(kiln_merge_is_single(&row));
    assert_false(kiln_merge_is_single(&col));

    /* Columns A..D, B hidden; D past the defined ones only when E is asked. */
    kiln_column cols[3];
    memset(cols, 0, sizeof cols);
    for (size_t i = 0; i < 3; i++)
        cols[i].width = -1;
    cols[1].width = 0;
    kiln_table_data d;
    memset(&d, 0, sizeof d);
    d.columns = cols;
    d.column_count = 3;
    kiln_range ab = {0, 0, 0, 1}, bc = {0, 1, 0, 2}, ac = {0, 0, 0, 2}, cf = {0, 2, 0, 5};
    assert_int_equal(kiln_merge_single_column(&d, &ab), 0); /* B hidden */
    assert_int_equal(kiln_merge_single_column(&d, &bc), 2);
    assert_int_equal(kiln_merge_single_column(&d, &ac), NONE);
    assert_int_equal(kiln_merge_single_column(&d, &cf), 2); /* past the defined columns */

    /* No column definitions: every column counts. */
    d.column_count = 0;
    assert_int_equal(kiln_merge_single_column(&d, &ab), NONE);
    kiln_range c = {0, 2, 3, 2};
    assert_int_equal(kiln_merge_single_column(&d, &c), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_walk),  cmocka_unit_test(test_sorted_and_adjacent),
        cmocka_unit_test(test_overlapping), cmocka_unit_test(test_started_before_first_row),
        cmocka_unit_test(test_rewind),      cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_shown),       cmocka_unit_test(test_single_and_single_column),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
