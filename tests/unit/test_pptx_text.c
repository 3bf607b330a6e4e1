/*
 * test_pptx_text.c - the pptx writer's text fit (pptx_text_fit and
 * pptx_text_fit_plain): short text keeps 100%; text a little too long takes
 * one of PowerPoint's steps; text far too long is split for a continuation
 * slide, at a top-level paragraph when there is one; one paragraph too long
 * for a slide alone shrinks to 25% and is reported as overflowing. Sizes are
 * those of the default template's Title and Content body (pptx_layouts).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "artifacts/pptx/pptx_internal.h"
#include "common/banned.h"

#define WORDS "Revenue grew in every region this quarter, led by the North "

static const pptx_layout_info *content(void)
{
    return &pptx_layouts[PPTX_LAYOUT_CONTENT];
}

static pptx_fit fit_paras(const pptx_para *p, size_t n)
{
    const pptx_layout_info *L = content();
    return pptx_text_fit(p, n, L->body[0].cx, L->body[0].cy, L->body_size, PPTX_FIT_MIN_SCALE);
}

static void set_para(pptx_para *p, const char *text, int level)
{
    memset(p, 0, sizeof *p);
    p->plain = text;
    p->plain_len = strlen(text);
    p->level = level;
    p->bullet = PPTX_BULLET_CHAR;
}

static void short_text_keeps_full_size(void **state)
{
    (void)state;
    pptx_para p[3];
    set_para(&p[0], "North beat plan", 0);
    set_para(&p[1], "Margin held at 58%", 0);
    set_para(&p[2], "Renewals on time", 1);
    pptx_fit f = fit_paras(p, 3);
    assert_int_equal(f.font_scale, 100000);
    assert_int_equal(f.line_reduce, 0);
    assert_int_equal(f.count, 3);
    assert_int_equal(f.overflow, 0);
}

static void nothing_to_fit(void **state)
{
    (void)state;
    pptx_fit f = fit_paras(NULL, 0);
    assert_int_equal(f.font_scale, 100000);
    assert_int_equal(f.count, 0);
}

/* Ten one-line bullets at 28 pt need about 10 x 30 pt + spacing: more than
 * the body's 335 pt, less than it at a smaller step. */
static void slightly_long_text_steps_down(void **state)
{
    (void)state;
    pptx_para p[10];
    for (int i = 0; i < 10; i++)
        set_para(&p[i], "A bullet that fills most of a line of the slide", 0);
    pptx_fit f = fit_paras(p, 10);
    assert_int_equal(f.count, 10);
    assert_true(f.font_scale < 100000);
    assert_true(f.font_scale >= PPTX_FIT_MIN_SCALE);
    assert_true(f.line_reduce > 0);
    assert_int_equal(f.overflow, 0);

    /* And the step is the largest that fits: the one above does not. */
    pptx_para fewer[7];
    memcpy(fewer, p, sizeof fewer);
    pptx_fit g = fit_paras(fewer, 7);
    assert_true(g.font_scale > f.font_scale);
}

/* Wrapping counts: the same number of bullets fits at full size when short,
 * not when each takes three lines. */
static void wrapped_lines_count(void **state)
{
    (void)state;
    pptx_para p[4];
    for (int i = 0; i < 4; i++)
        set_para(&p[i], "Short", 0);
    assert_int_equal(fit_paras(p, 4).font_scale, 100000);
    for (int i = 0; i < 4; i++)
        set_para(&p[i], WORDS WORDS WORDS, 0);
    assert_true(fit_paras(p, 4).font_scale < 100000);
}

static void far_too_long_is_split_at_a_top_level_bullet(void **state)
{
    (void)state;
    enum { N = 60 };
    pptx_para p[N];
    for (int i = 0; i < N; i++)
        set_para(&p[i], "A bullet of one line", i % 3 == 0 ? 0 : 1);
    pptx_fit f = fit_paras(p, N);
    assert_true(f.count > 0 && f.count < N);
    assert_int_equal(f.font_scale, 100000); /* the part kept is set at full size */
    assert_int_equal(p[f.count].level, 0);  /* the next slide starts with a parent */
    /* What is kept fits at full size on its own. */
    pptx_fit kept = fit_paras(p, f.count);
    assert_int_equal(kept.count, f.count);
    assert_int_equal(kept.font_scale, 100000);

    /* Full size only (the slides after a split): what fits at 85% no longer
     * does, so it is split too. */
    const pptx_layout_info *L = content();
    pptx_fit shrunk = fit_paras(p, f.count + 2);
    assert_true(shrunk.font_scale < 100000);
    assert_int_equal(shrunk.count, f.count + 2);
    pptx_fit full = pptx_text_fit(p, f.count + 2, L->body[0].cx, L->body[0].cy, L->body_size,
                                  100000);
    assert_int_equal(full.font_scale, 100000);
    assert_true(full.count <= f.count);
}

static void one_huge_paragraph_overflows(void **state)
{
    (void)state;
    size_t len = strlen(WORDS) * 400;
    char *text = malloc(len + 1);
    assert_non_null(text);
    for (size_t i = 0; i < 400; i++)
        memcpy(text + i * strlen(WORDS), WORDS, strlen(WORDS));
    text[len] = '\0';
    pptx_para p[2];
    set_para(&p[0], text, 0);
    set_para(&p[1], "after", 0);
    pptx_fit f = fit_paras(p, 2);
    assert_int_equal(f.count, 1);
    assert_int_equal(f.font_scale, 25000);
    assert_int_equal(f.overflow, 1);

    /* A paragraph that fits only when shrunk goes alone at that scale. */
    text[strlen(WORDS) * 20] = '\0';
    p[0].plain_len = strlen(text);
    f = fit_paras(p, 1);
    assert_int_equal(f.count, 1);
    assert_int_equal(f.overflow, 0);
    assert_true(f.font_scale < 100000);
    free(text);
}

static void titles_shrink_when_long(void **state)
{
    (void)state;
    const pptx_layout_info *L = content();
    const char *short_title = "Highlights";
    pptx_fit f = pptx_text_fit_plain(short_title, strlen(short_title), L->title_size, 0,
                                     L->title.cx, L->title.cy);
    assert_int_equal(f.font_scale, 100000);
    const char *long_title = "Table 2: the ten largest accounts by annual recurring revenue, "
                             "with owners, renewal dates and seats, for the second quarter";
    f = pptx_text_fit_plain(long_title, strlen(long_title), L->title_size, 0, L->title.cx,
                            L->title.cy);
    assert_true(f.font_scale < 100000);
    assert_int_equal(f.overflow, 0);
}

/* Wide (CJK) characters are an em each, and break anywhere. */
static void wide_characters_measure_an_em(void **state)
{
    (void)state;
    /* 60 ideographs at 28 pt = 1680 pt: two lines of the 10.3 in body. */
    char text[60 * 3 + 1];
    for (int i = 0; i < 60; i++)
        memcpy(text + i * 3, "\xe5\xa3\xb2", 3); /* 売 */
    text[sizeof text - 1] = '\0';
    pptx_para p[6];
    for (int i = 0; i < 6; i++)
        set_para(&p[i], text, 0);
    /* 6 x 3 lines x 30 pt = 540 pt: does not fit at 100%. */
    assert_true(fit_paras(p, 6).font_scale < 100000);
    assert_int_equal(fit_paras(p, 1).font_scale, 100000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(short_text_keeps_full_size),
        cmocka_unit_test(nothing_to_fit),
        cmocka_unit_test(slightly_long_text_steps_down),
        cmocka_unit_test(wrapped_lines_count),
        cmocka_unit_test(far_too_long_is_split_at_a_top_level_bullet),
        cmocka_unit_test(one_huge_paragraph_overflows),
        cmocka_unit_test(titles_shrink_when_long),
        cmocka_unit_test(wide_characters_measure_an_em),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
