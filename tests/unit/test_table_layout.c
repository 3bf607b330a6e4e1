/*
 * test_table_layout.c - the table layout shared by the docx, pptx and pdf
 * writers (artifacts/layout/table_layout.h), measured with a fake font in
 * which every character is a tenth of the size wide (1 pt at 10 pt) and
 * bold twice that: the wanted and needed widths of given text, the share
 * of the room when the wants do not fit, the padding and font shrunk when
 * the needs do not fit, the water level, widening to the room, merged
 * ranges (spans, the rows below, what the header row shows), the header row
 * and its repeat, the alignments, and the line count of wrapped text.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "artifacts/layout/table_layout.h"
#include "artifacts/layout/text_metrics.h"
#include "artifacts/spec/spec.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/banned.h"

#define EPS 1e-9

/* ---- the fake font ---- */

static const int regular_face = 1, bold_face = 2;
static int faces_asked;

static const void *fake_face(void *ctx, const kiln_style *style, int bold)
{
    (void)ctx;
    (void)style;
    faces_asked++;
    return bold ? &bold_face : &regular_face;
}

static double fake_advance(void *ctx, const void *face, uint32_t cp, double size)
{
    (void)ctx;
    if (cp < 32 && cp != '\t')
        return 0;
    return (face == &bold_face ? 2.0 : 1.0) * size / 10.0;
}

static const kiln_text_metrics fake = {NULL, fake_face, fake_advance, NULL};

/* Rules that make the arithmetic readable: 10 pt text, 2 pt of padding,
 * no slack, the narrowest text 1 pt. */
static kiln_table_rules plain_rules(void)
{
    kiln_table_rules r;
    memset(&r, 0, sizeof r);
    r.base_pt = 10;
    r.body_pt = 10;
    r.numbers_whole = 1;
    r.pad_pt = 2;
    r.narrow_pad_pt = 1;
    r.min_text_pt = 1;
    r.min_need = 1;
    r.shrink = KILN_SHRINK_HALF_POINTS;
    r.min_font_pt = 5;
    r.mixed_per_cell = 1;
    return r;
}

/* ---- documents ---- */

typedef struct fixture {
    kiln_doc *doc;
    kiln_arena arena;
    kiln_error err;
    kiln_table_layout tl;
} fixture;

static void parse(fixture *f, const char *json_quoted)
{
    char *json = test_quote(json_quoted);
    kiln_parse_options opt;
    kiln_parse_options_init(&opt);
    kiln_errors errs;
    kiln_errors_init(&errs);
    kiln_status st = kiln_doc_parse(json, strlen(json), &opt, &f->doc, &errs);
    if (st != KILN_E_OK)
        test_dump_errors(&errs);
    assert_int_equal(st, KILN_E_OK);
    free(json);
    kiln_arena_init(&f->arena, 0);
    memset(&f->err, 0, sizeof f->err);
}

/* The first sheet laid out under rules (its merges included). */
static void lay_out_sheet(fixture *f, const char *json_quoted, const kiln_table_rules *rules)
{
    parse(f, json_quoted);
    const kiln_sheet *sheet = &f->doc->sheets[0];
    kiln_status st = kiln_table_layout_init(&f->tl, f->doc, &sheet->data, sheet,
                                            kiln_table_has_header(&sheet->data), rules, &fake,
                                            &f->arena, &f->err, "/sheets/0");
    assert_int_equal(st, KILN_E_OK);
}

static void release(fixture *f)
{
    kiln_arena_release(&f->arena);
    kiln_doc_free(f->doc);
}

/* ---- widths ---- */

static void test_wants_and_needs(void **state)
{
    (void)state;
    fixture f;
    kiln_table_rules rules = plain_rules();
    /* Column 0: header "A" (bold: 2 pt), words "alpha beta" (10 pt line,
     * 5 pt word). Column 1: numbers, "1,234.5" (7 pt) never broken, and a
     * date-time "2026-01-05 10:00" (16 pt) that is one number too. */
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','columns':[{'header':'A'},{'header':'N'}],"
                  "'rows':[['alpha beta',1234.5],['x',{'datetime':'2026-01-05T10:00:00'}]]}]}",
                  &rules);
    kiln_table_layout *tl = &f.tl;
    assert_int_equal(tl->ncols, 2);
    assert_non_null(tl->hdr);
    assert_true(fabs(tl->cols[0].text_want - 10) < EPS);
    assert_true(fabs(tl->cols[0].text_need - 5) < EPS);
    assert_true(fabs(tl->cols[1].num_need - 16) < EPS);
    assert_true(fabs(tl->cols[1].text_need - 2) < EPS); /* the bold header "N" */
    assert_true(tl->cols[1].has_numeric && !tl->cols[1].has_text);

    /* Room for everything: each column its want (text + padding). */
    assert_int_equal(kiln_table_layout_fit(tl, 100, 10), 2);
    assert_true(fabs(tl->cols[0].width - 12) < EPS);
    assert_true(fabs(tl->cols[1].width - 18) < EPS);
    assert_true(fabs(tl->cols[0].x - 10) < EPS && fabs(tl->cols[1].x - 22) < EPS);
    assert_true(fabs(tl->width - 30) < EPS);
    assert_false(tl->shrunk);

    /* 25 pt: the needs (7 + 18) fit exactly, so column 0 gets its need and
     * the number its whole width. */
    kiln_table_layout_fit(tl, 25, 0);
    assert_true(fabs(tl->cols[0].width - 7) < EPS);
    assert_true(fabs(tl->cols[1].width - 18) < EPS);

    /* 27.5 pt: 2.5 pt over the needs, shared in proportion to what each
     * lacks (column 0 lacks 5, column 1 nothing). */
    kiln_table_layout_fit(tl, 27.5, 0);
    assert_true(fabs(tl->cols[0].width - 9.5) < EPS);
    assert_true(fabs(tl->cols[1].width - 18) < EPS);

    /* Without numbers_whole the date-time breaks at its space. */
    release(&f);
    rules.numbers_whole = 0;
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','columns':[{'header':'N'}],"
                  "'rows':[[{'datetime':'2026-01-05T10:00:00'}]]}]}",
                  &rules);
    assert_true(fabs(f.tl.cols[0].text_need - 10) < EPS);
    assert_true(fabs(f.tl.cols[0].num_need) < EPS);
    release(&f);
}

static void test_explicit_width_and_hidden_column(void **state)
{
    (void)state;
    fixture f;
    kiln_table_rules rules = plain_rules();
    rules.explicit_excel_px = 1;
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','columns':[{'header':'a','width':10},"
                  "{'header':'b','width':0},{'header':'c'}],'rows':[['x','hidden','yy']]}]}",
                  &rules);
    kiln_table_layout *tl = &f.tl;
    assert_int_equal(tl->shown, 2);
    assert_true(tl->cols[1].hidden);
    assert_int_equal(kiln_table_layout_fit(tl, 500, 0), 2);
    /* 10 characters: (10 x 7 + 5) px x 0.75 at 11 pt, scaled to 10 pt. */
    assert_true(fabs(tl->cols[0].width - 75 * 0.75 * 10 / 11) < EPS);
    assert_true(fabs(tl->cols[2].width - 4) < EPS);
    assert_true(fabs(tl->cols[2].x - tl->cols[0].width) < EPS); /* the hidden one takes no room */
    release(&f);
}

static void test_shrink_to_fit(void **state)
{
    (void)state;
    fixture f;
    kiln_table_rules rules = plain_rules();
    /* Three columns whose words are 20 pt at 10 pt: they need 66 pt. */
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','columns':[{'header':'a'},{'header':'b'},"
                  "{'header':'c'}],'rows':[['aaaaaaaaaaaaaaaaaaaa','bbbbbbbbbbbbbbbbbbbb',"
                  "'cccccccccccccccccccc']]}]}",
                  &rules);
    kiln_table_layout *tl = &f.tl;
    /* 63 pt: the narrower padding (1 pt) makes them fit at 10 pt. */
    kiln_table_layout_fit(tl, 63, 0);
    assert_false(tl->shrunk);
    assert_true(fabs(tl->pad - 1) < EPS);
    assert_true(tl->need_total <= 63 + EPS);

    /* 50 pt: the font shrinks, in half points, to the largest size at which
     * they fit: 3 x (2 x size + 1) <= 50 at 7.5 pt. */
    kiln_table_layout_fit(tl, 50, 0);
    assert_true(tl->shrunk);
    assert_true(fabs(tl->size - 7.5) < EPS);
    assert_true(tl->need_total <= 50 + EPS);
    assert_true(fabs(kiln_table_layout_cell_size(tl, tl->size, NULL) - 7.5) < EPS);

    /* 20 pt: not even at 5 pt, so every column is capped at one width (the
     * water level) and they fill the room exactly. */
    kiln_table_layout_fit(tl, 20, 0);
    assert_true(fabs(tl->size - 5) < EPS);
    double sum = 0;
    for (size_t i = 0; i < tl->ncols; i++) {
        assert_true(tl->cols[i].width < tl->cols[i].need);
        assert_true(fabs(tl->cols[i].width - tl->cols[0].width) < 1e-6);
        sum += tl->cols[i].width;
    }
    assert_true(fabs(sum - 20) < 1e-6);

    /* The first guess (the size scaled by room / need) errs large when the
     * padding is a large part of the need: 6 pt of it, and 3 x (2 x size +
     * 6) <= 50 only from 5 pt, stepped down to from the guess of 6 pt. */
    kiln_table_rules wide_pad = plain_rules();
    wide_pad.narrow_pad_pt = 6;
    wide_pad.pad_pt = 8;
    tl->rules = wide_pad;
    kiln_table_layout_fit(tl, 50, 0);
    assert_true(fabs(tl->size - 5) < EPS);
    release(&f);
}

static void test_steps_fill_and_numbers_kept(void **state)
{
    (void)state;
    fixture f;
    kiln_table_rules rules = plain_rules();
    rules.shrink = KILN_SHRINK_STEPS;
    rules.base_pt = rules.body_pt = 14;
    rules.min_font_pt = 10;
    rules.wrap_font_pt = 12;
    rules.font_step_pt = 1;
    rules.fill_width = 1;
    rules.numbers_keep_need = 1;
    rules.min_need = 0;
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','columns':[{'header':'t'},{'header':'n'}],"
                  "'rows':[['word word word word',123456789]]}]}",
                  &rules);
    kiln_table_layout *tl = &f.tl;
    /* Narrow table: widened to the room in proportion to the wants. */
    kiln_table_layout_fit(tl, 200, 0);
    assert_true(fabs(tl->size - 14) < EPS);
    assert_true(fabs(tl->cols[0].width + tl->cols[1].width - 200) < 1e-6);
    assert_true(
        fabs(tl->cols[0].width / tl->cols[1].width - tl->cols[0].want / tl->cols[1].want) < 1e-9);
    /* Too narrow for everything: the font steps down to 10 pt, the number
     * keeps its width (9 + 2 pt), the text is capped. */
    kiln_table_layout_fit(tl, 16, 0);
    assert_true(fabs(tl->size - 10) < EPS);
    assert_true(fabs(tl->cols[1].width - 11) < 1e-6);
    assert_true(fabs(tl->cols[0].width - 5) < 1e-6);
    release(&f);
}

/* ---- merges, header, alignment ---- */

static void test_merges(void **state)
{
    (void)state;
    fixture f;
    kiln_table_rules rules = plain_rules();
    /* Row 0 is the header; A2:B3 is merged with its own value, C1:C2 (one
     * column, header and first data row) shows its top-left's text. */
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','columns':[{'header':'a'},{'header':'b'},"
                  "{'header':'Head'}],'rows':[[null,null,null],[null,null,'z'],['p','q','r']],"
                  "'merges':[{'range':'A2:B3','value':'merged text'},{'range':'C1:C2'}]}]}",
                  &rules);
    kiln_table_layout *tl = &f.tl;
    assert_int_equal(tl->walk.count, 2);
    kiln_table_layout_fit(tl, 100, 0);
    /* "merged text" (11 pt) spans two columns: measured in neither. */
    assert_true(tl->cols[0].text_want < 11 && tl->cols[1].text_want < 11);

    const kiln_table_slot *s = kiln_table_layout_row(tl, 0, 1, tl->hdr, 3, 1);
    assert_int_equal(s[0].kind, KILN_SLOT_CELL);
    assert_int_equal(s[2].kind, KILN_SLOT_MERGE_TOP);
    assert_true(s[2].open_below);
    assert_string_equal(s[2].cell->text, "Head");
    assert_null(s[2].format); /* the header row has no number formats */

    const kiln_cell *rows[3];
    size_t counts[3];
    kiln_row_reader *reader = NULL;
    assert_int_equal(kiln_rows_open(f.doc, &f.doc->sheets[0].data, &reader, &f.err), KILN_E_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kiln_rows_next(reader, &rows[i], &counts[i], &f.err), 1);
        s = kiln_table_layout_row(tl, (uint32_t)i + 1, 0, rows[i], counts[i], 1);
        if (i == 0) {
            assert_int_equal(s[0].kind, KILN_SLOT_MERGE_TOP);
            assert_int_equal(s[1].kind, KILN_SLOT_COVERED);
            assert_true(fabs(s[0].width - (tl->cols[0].width + tl->cols[1].width)) < EPS);
            assert_string_equal(s[0].cell->text, "merged text");
            assert_true(s[0].merge_look && s[0].open_below);
            assert_int_equal(s[0].align, KILN_ALIGN_CENTER);
            assert_int_equal(s[0].valign, KILN_VALIGN_MIDDLE);
            assert_int_equal(s[2].kind, KILN_SLOT_MERGE_BELOW); /* C1:C2 goes on */
            assert_null(s[2].cell);
            assert_false(s[2].open_below);
        } else if (i == 1) {
            assert_int_equal(s[0].kind, KILN_SLOT_MERGE_BELOW);
            assert_false(s[0].open_below);
            assert_true(s[0].merge_look); /* centered like the first row */
            assert_int_equal(s[2].kind, KILN_SLOT_CELL);
            assert_string_equal(s[2].cell->text, "z");
        } else {
            assert_int_equal(s[0].kind, KILN_SLOT_CELL);
            assert_int_equal(s[0].merge, KILN_MERGE_NONE);
        }
    }
    kiln_rows_close(reader);

    /* An empty filler row without the merges. */
    s = kiln_table_layout_row(tl, 1, 0, NULL, 0, 0);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(s[i].kind, KILN_SLOT_CELL);
        assert_null(s[i].cell);
    }
    release(&f);
}

static void test_widen_for_merges(void **state)
{
    (void)state;
    fixture f;
    kiln_table_rules rules = plain_rules();
    rules.widen_for_merges = 1;
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','columns':[{'header':'a'},{'header':'b'}],"
                  "'rows':[['a text as wide as thirty points',null]],"
                  "'merges':[{'range':'A2:B2'}]}]}",
                  &rules);
    kiln_table_layout *tl = &f.tl;
    kiln_table_layout_fit(tl, 500, 0);
    /* 31 pt of text over two columns and one gap of padding: each column's
     * text grows to (31 - 2) / 2. */
    assert_true(fabs(tl->cols[0].width - (14.5 + 2)) < EPS);
    assert_true(fabs(tl->cols[1].width - (14.5 + 2)) < EPS);
    release(&f);
}

static void test_header_and_repeat(void **state)
{
    (void)state;
    fixture f;
    kiln_table_rules rules = plain_rules();
    /* The header is bold (twice as wide in the fake font) and not counted
     * for the alignment: a column of numbers under a text header is right. */
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','columns':[{'header':'Amount'}],'rows':[[1],[22]]}]}",
                  &rules);
    kiln_table_layout *tl = &f.tl;
    assert_non_null(tl->hdr);
    assert_true(fabs(tl->cols[0].text_want - 12) < EPS);
    assert_int_equal(tl->cols[0].align, KILN_ALIGN_RIGHT);
    kiln_table_layout_fit(tl, 100, 0);
    assert_true(tl->repeat_head);
    kiln_table_layout_head_repeat(tl, 300, 500);
    assert_false(tl->repeat_head);
    kiln_table_layout_head_repeat(tl, 250, 500);
    assert_true(tl->repeat_head);
    release(&f);

    /* No header row: header false. */
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','header':false,'columns':[{'header':'x'}],"
                  "'rows':[[1]]}]}",
                  &rules);
    assert_null(f.tl.hdr);
    release(&f);
}

static void test_alignment(void **state)
{
    (void)state;
    fixture f;
    kiln_table_rules rules = plain_rules();
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','columns':[{'header':'n','type':'number'},"
                  "{'header':'b','type':'boolean'},{'header':'u'},{'header':'m'},"
                  "{'header':'s','type':'string','align':'center'},"
                  "{'header':'f','number_format':'0.00'}],"
                  "'rows':[[1,true,3,4,'x','t'],[2,false,5,'text','y',{'value':'z',"
                  "'style':{'align':'left','valign':'bottom'}}]]}]}",
                  &rules);
    kiln_table_layout *tl = &f.tl;
    assert_int_equal(tl->cols[0].align, KILN_ALIGN_RIGHT);
    assert_int_equal(tl->cols[1].align, KILN_ALIGN_CENTER);
    assert_int_equal(tl->cols[2].align, KILN_ALIGN_RIGHT);   /* untyped, all numbers */
    assert_int_equal(tl->cols[3].align, KILN_ALIGN_DEFAULT); /* mixed: per cell */
    assert_int_equal(tl->cols[4].align, KILN_ALIGN_CENTER);
    assert_int_equal(tl->cols[5].align, KILN_ALIGN_RIGHT); /* a number format */
    kiln_table_layout_fit(tl, 500, 0);

    kiln_row_reader *reader = NULL;
    const kiln_cell *cells;
    size_t count;
    assert_int_equal(kiln_rows_open(f.doc, &f.doc->sheets[0].data, &reader, &f.err), KILN_E_OK);
    kiln_table_layout_row(tl, 0, 1, tl->hdr, 6, 1);
    assert_int_equal(kiln_rows_next(reader, &cells, &count, &f.err), 1);
    const kiln_table_slot *s = kiln_table_layout_row(tl, 1, 0, cells, count, 1);
    assert_int_equal(s[3].align, KILN_ALIGN_RIGHT); /* a number in a mixed column */
    assert_int_equal(kiln_rows_next(reader, &cells, &count, &f.err), 1);
    s = kiln_table_layout_row(tl, 2, 0, cells, count, 1);
    assert_int_equal(s[3].align, KILN_ALIGN_LEFT); /* text in a mixed column */
    assert_int_equal(s[5].align, KILN_ALIGN_LEFT); /* the cell's own align wins */
    assert_int_equal(s[5].valign, KILN_VALIGN_BOTTOM);
    assert_int_equal(s[0].valign, KILN_VALIGN_DEFAULT);
    kiln_rows_close(reader);
    release(&f);

    /* A writer that aligns a mixed column left throughout. */
    rules.mixed_per_cell = 0;
    lay_out_sheet(&f, "{'sheets':[{'name':'S','columns':[{'header':'m'}],'rows':[[4],['t']]}]}",
                  &rules);
    assert_int_equal(f.tl.cols[0].align, KILN_ALIGN_LEFT);
    release(&f);
}

static void test_rows_past_the_measured_ones(void **state)
{
    (void)state;
    fixture f;
    kiln_table_rules rules = plain_rules();
    rules.measure_rows = 2;
    /* Without column definitions the rows past the measured ones may be
     * wider: the grid still grows, and the long text past them is not
     * measured. */
    lay_out_sheet(&f,
                  "{'sheets':[{'name':'S','rows':[['x'],['y'],"
                  "['a very long text not measured','extra']]}]}",
                  &rules);
    assert_null(f.tl.hdr);
    assert_int_equal(f.tl.ncols, 2);
    assert_true(fabs(f.tl.cols[0].text_want - 1) < EPS);
    assert_true(fabs(f.tl.cols[1].text_want) < EPS);
    release(&f);
}

/* ---- text ---- */

static void test_text_extent_and_lines(void **state)
{
    (void)state;
    double line, word;
    kiln_text_extent(&fake, &regular_face, 10, "ab cde\nfghijkl", 14, &line, &word);
    assert_true(fabs(line - 7) < EPS && fabs(word - 7) < EPS);
    kiln_text_extent(&fake, &regular_face, 10, "ab cde", 6, &line, &word);
    assert_true(fabs(line - 6) < EPS && fabs(word - 3) < EPS);
    /* A CJK character is a word of its own: a line may break after it. */
    kiln_text_extent(&fake, &regular_face, 10, "\xe4\xb8\xad\xe6\x96\x87", 6, &line, &word);
    assert_true(fabs(line - 2) < EPS && fabs(word - 1) < EPS);

    assert_int_equal(kiln_text_line_count(&fake, &regular_face, 10, "aaa bbb ccc", 11, 7), 2);
    assert_int_equal(kiln_text_line_count(&fake, &regular_face, 10, "aaa bbb ccc", 11, 6.9), 3);
    assert_int_equal(kiln_text_line_count(&fake, &regular_face, 10, "aaaaaaaaaa", 10, 4), 3);
    assert_int_equal(kiln_text_line_count(&fake, &regular_face, 10, "a\nb", 3, 100), 2);
    assert_int_equal(kiln_text_line_count(&fake, &regular_face, 10, "", 0, 100), 1);

    /* Calibri: "0" is 1038/2048 em; bold measured 5% wider when asked. */
    kiln_calibri_metrics cm;
    kiln_calibri_metrics_init(&cm, 1.05);
    const void *reg = cm.m.face(cm.m.ctx, NULL, 0), *bold = cm.m.face(cm.m.ctx, NULL, 1);
    kiln_text_extent(&cm.m, reg, 11, "0", 1, &line, &word);
    assert_true(fabs(line - 1038 * 11 / 2048.0) < EPS);
    kiln_text_extent(&cm.m, bold, 11, "0", 1, &line, &word);
    assert_true(fabs(line - 1.05 * 1038 * 11 / 2048.0) < EPS);
    kiln_calibri_metrics_init(&cm, 0);
    bold = cm.m.face(cm.m.ctx, NULL, 1);
    kiln_text_extent(&cm.m, bold, 2048, "A", 1, &line, &word);
    assert_true(fabs(line - kiln_calibri_bold['A' - 32]) < EPS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wants_and_needs),
        cmocka_unit_test(test_explicit_width_and_hidden_column),
        cmocka_unit_test(test_shrink_to_fit),
        cmocka_unit_test(test_steps_fill_and_numbers_kept),
        cmocka_unit_test(test_merges),
        cmocka_unit_test(test_widen_for_merges),
        cmocka_unit_test(test_header_and_repeat),
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_rows_past_the_measured_ones),
        cmocka_unit_test(test_text_extent_and_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
