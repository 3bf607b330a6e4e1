/*
 * test_pptx_table.c - tables laid out over slides (artifacts/pptx/pptx_table.c):
 * a sheet's rows written one slide at a time into real slide parts, read
 * back from the package: the header on every slide, every row on exactly
 * one slide, unique shape ids, column widths adding up to the area, merges
 * spanning within a slide, hyperlinks related from the slide, the empty
 * table's one row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"
#include <zip.h>

#include "artifacts/opc/opc.h"
#include "artifacts/pptx/pptx_internal.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/output.h"
#include "common/banned.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return test_dir_make(dir, sizeof dir, "pptx-table");
}

static int teardown(void **state)
{
    (void)state;
    return test_dir_remove(dir);
}

static kiln_doc *parse(const char *json_quoted)
{
    char *json = test_quote(json_quoted);
    kiln_parse_options opt;
    kiln_parse_options_init(&opt);
    kiln_doc *doc = NULL;
    kiln_errors errs;
    kiln_errors_init(&errs);
    kiln_status st = kiln_doc_parse(json, strlen(json), &opt, &doc, &errs);
    if (st != KILN_E_OK)
        test_dump_errors(&errs);
    assert_int_equal(st, KILN_E_OK);
    free(json);
    return doc;
}

/* A spec with one sheet of `rows` rows; every 7th row's name is long enough
 * to wrap, row 3 holds a URL, and A5:B6 and C10:C14 are merged. */
static char *sheet_spec(int rows, int merges)
{
    size_t cap = 256 + (size_t)rows * 200;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t n = (size_t)snprintf(s, cap,
                                "{'version':1,'sheets':[{'name':'S','columns':["
                                "{'header':'Name'},{'header':'Amount','type':'currency'},"
                                "{'header':'Note'}],'rows':[");
    for (int i = 0; i < rows; i++) {
        const char *name = i % 7 == 3 ? "A rather long name that will certainly wrap inside its "
                                        "narrow column of the table on the slide"
                                      : "Row";
        /* Cells a merge covers must be empty (the spec rejects data there). */
        if (merges && (i == 3 || i == 4))
            n += (size_t)snprintf(s + n, cap - n, ",[%s,null,'note']", "null");
        else if (merges && i >= 9 && i <= 12)
            n += (size_t)snprintf(s + n, cap - n, ",['%s %d',%d.5,null]", name, i, i * 1000);
        else if (i == 3)
            n += (size_t)snprintf(s + n, cap - n,
                                  "%s['%s %d',%d.5,{'url':'https://example.com/r?a=1&b=2'}]",
                                  i ? "," : "", name, i, i * 1000);
        else
            n += (size_t)snprintf(s + n, cap - n, "%s['%s %d',%d.5,'note <%d>']", i ? "," : "",
                                  name, i, i * 1000, i);
    }
    n += (size_t)snprintf(s + n, cap - n, "]%s}]}",
                          merges ? ",'merges':[{'range':'A5:B6','value':'merged'},"
                                   "{'range':'C10:C14'}]"
                                 : "");
    assert_true(n < cap);
    return s;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static char *read_member(zip_t *za, const char *name)
{
    zip_stat_t st;
    assert_int_equal(zip_stat(za, name, 0, &st), 0);
    char *buf = malloc(st.size + 1);
    assert_non_null(buf);
    zip_file_t *f = zip_fopen(za, name, 0);
    assert_non_null(f);
    assert_int_equal(zip_fread(f, buf, st.size), (zip_int64_t)st.size);
    zip_fclose(f);
    buf[st.size] = '\0';
    return buf;
}

typedef struct written {
    unsigned slides;
    kiln_render_result result;
    char path[400];
} written;

/* Write the doc's first sheet as a table over slides, each slide part
 * holding only the graphic frame, and package them into dir/name. */
static void write_table(const kiln_doc *doc, pptx_rect area, const char *name, written *w)
{
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    kiln_arena arena;
    kiln_arena_init(&arena, 0);
    kiln_error err = {0};
    memset(w, 0, sizeof *w);
    pptx_ctx c = {.doc = doc, .pkg = pkg, .arena = &arena, .err = &err, .result = &w->result};
    const kiln_sheet *sheet = &doc->sheets[0];
    pptx_table *t = NULL;
    assert_int_equal(pptx_table_open(&c, &sheet->data, sheet, area, "/sheets/0", &t), KILN_E_OK);
    int more = 1;
    while (more) {
        pptx_slide s = {.c = &c, .number = w->slides + 1, .next_shape_id = 2};
        snprintf(s.part, sizeof s.part, "ppt/slides/slide%u.xml", s.number);
        s.x = opc_xml_new();
        assert_non_null(s.x);
        opc_xml_start(s.x, "p:sld");
        opc_xml_attr(s.x, "xmlns:a", PPTX_NS_A);
        opc_xml_attr(s.x, "xmlns:r", OPC_NS_R);
        opc_xml_attr(s.x, "xmlns:p", PPTX_NS_P);
        assert_int_equal(pptx_table_write(&s, t, &more), KILN_E_OK);
        assert_int_equal(s.next_shape_id, 3);
        assert_int_equal(opc_xml_finish(s.x, pkg, s.part, PPTX_CT_SLIDE, &err), KILN_E_OK);
        w->slides++;
        assert_true(w->slides < 1000);
    }
    pptx_table_close(t);
    snprintf(w->path, sizeof w->path, "%s/%s", dir, name);
    kiln_output out;
    assert_int_equal(kiln_output_open(&out, w->path, 0, &err), KILN_E_OK);
    assert_int_equal(opc_package_write(pkg, &out, &err), KILN_E_OK);
    assert_int_equal(kiln_output_commit(&out, NULL, &err), KILN_E_OK);
    opc_package_free(pkg);
    kiln_arena_release(&arena);
}

static char *slide_xml(const written *w, unsigned n)
{
    int zerr;
    zip_t *za = zip_open(w->path, ZIP_RDONLY, &zerr);
    assert_non_null(za);
    char name[64];
    snprintf(name, sizeof name, "ppt/slides/slide%u.xml", n);
    char *xml = read_member(za, name);
    zip_close(za);
    return xml;
}

/* The sum of the w= of every gridCol. */
static long long grid_width(const char *xml)
{
    long long sum = 0;
    for (const char *p = xml; (p = strstr(p, "<a:gridCol w=\"")) != NULL; p++)
        sum += atoll(p + strlen("<a:gridCol w=\""));
    return sum;
}

static const pptx_rect content = {838200, 1825625, 10515600, 4351338};

static void test_rows_split_with_header(void **state)
{
    (void)state;
    char *spec = sheet_spec(60, 0);
    kiln_doc *doc = parse(spec);
    written w;
    write_table(doc, content, "split.zip", &w);
    assert_true(w.slides >= 3);
    int data_rows = 0;
    for (unsigned i = 1; i <= w.slides; i++) {
        char *xml = slide_xml(&w, i);
        /* One frame in the content placeholder, the style, the header. */
        assert_int_equal(count_of(xml, "<p:graphicFrame>"), 1);
        assert_non_null(strstr(xml, "<p:cNvPr id=\"2\" name=\"Table 1\"/>"));
        assert_non_null(strstr(xml, "<p:ph idx=\"1\"/>"));
        assert_non_null(strstr(xml, PPTX_TABLE_STYLE_ID));
        assert_non_null(strstr(xml, "<a:tblPr firstRow=\"1\" bandRow=\"1\">"));
        assert_int_equal(grid_width(xml), content.cx);
        assert_int_equal(count_of(xml, "<a:gridCol "), 3);
        assert_int_equal(count_of(xml, ">Amount</a:t>"), 1);
        int rows = count_of(xml, "<a:tr ");
        assert_true(rows >= 2);
        data_rows += rows - 1;
        /* The frame's height is the rows' and stays within the area but
         * for rounding. */
        const char *ext = strstr(xml, "<a:ext cx=\"");
        assert_non_null(ext);
        long long cy = atoll(strstr(ext, "cy=\"") + 4);
        assert_true(cy <= content.cy);
        free(xml);
    }
    assert_int_equal(data_rows, 60);
    assert_int_equal(w.result.overflow_slides, 0);

    char *first = slide_xml(&w, 1);
    /* Text through the escaping path, numbers right-aligned as currency. */
    assert_non_null(strstr(first, "note &lt;0&gt;"));
    assert_non_null(strstr(first, "<a:pPr algn=\"r\"/>"));
    assert_non_null(strstr(first, "$2,000.50"));
    assert_non_null(strstr(first, "<a:hlinkClick r:id=\"rId1\"/>"));
    /* The long names do not fit at 14 pt: the table is set at 13 pt. */
    assert_non_null(strstr(first, "sz=\"1300\""));
    free(first);
    kiln_doc_free(doc);
    free(spec);
}

static void test_merges_within_slide(void **state)
{
    (void)state;
    char *spec = sheet_spec(40, 1);
    kiln_doc *doc = parse(spec);
    written w;
    write_table(doc, content, "merge.zip", &w);
    char *xml = slide_xml(&w, 1);
    /* A5:B6 is worksheet rows 4-5 (row 0 the header): one cell over two
     * columns and two rows, then the covered cells. */
    assert_non_null(strstr(xml, "<a:tc rowSpan=\"2\" gridSpan=\"2\">"));
    assert_non_null(strstr(xml, ">merged</a:t>"));
    assert_int_equal(count_of(xml, "<a:tc hMerge=\"1\">"), 1);
    assert_int_equal(count_of(xml, "<a:tc vMerge=\"1\">"), 1 + 4);
    assert_int_equal(count_of(xml, "<a:tc hMerge=\"1\" vMerge=\"1\">"), 1);
    free(xml);
    kiln_doc_free(doc);
    free(spec);
}

static void test_narrow_area_splits_columns(void **state)
{
    (void)state;
    char *spec = sheet_spec(10, 0);
    kiln_doc *doc = parse(spec);
    written w;
    pptx_rect narrow = {838200, 1825625, 2500000, 4351338};
    write_table(doc, narrow, "narrow.zip", &w);
    /* The URL in row 3 is one word too long to sit beside the other two
     * columns in 2.7 in even at 10 pt: the columns split into two groups,
     * Name and Amount, then Note (alone: the key column, Name, would leave
     * the URL no room), each fitted to the full width, none squeezed below
     * 10 pt. */
    assert_int_equal(w.slides, 2);
    char *xml = slide_xml(&w, 1);
    assert_non_null(strstr(xml, ">Amount</a:t>"));
    assert_null(strstr(xml, ">Note</a:t>"));
    assert_int_equal(grid_width(xml), narrow.cx);
    assert_int_equal(count_of(xml, "<a:gridCol "), 2);
    free(xml);
    xml = slide_xml(&w, 2);
    assert_non_null(strstr(xml, ">Note</a:t>"));
    assert_null(strstr(xml, ">Name</a:t>"));
    assert_null(strstr(xml, ">Amount</a:t>"));
    assert_non_null(strstr(xml, ">note &lt;9&gt;</a:t>"));
    assert_int_equal(count_of(xml, "<a:gridCol "), 1);
    assert_int_equal(grid_width(xml), narrow.cx);
    for (unsigned sz = 100; sz < 1000; sz += 100) {
        char attr[16];
        snprintf(attr, sizeof attr, "sz=\"%u\"", sz);
        assert_null(strstr(xml, attr));
    }
    free(xml);
    kiln_doc_free(doc);
    free(spec);
}

static void test_tall_row_overflows(void **state)
{
    (void)state;
    char *spec = sheet_spec(5, 0);
    kiln_doc *doc = parse(spec);
    written w;
    pptx_rect low = {838200, 1825625, 2500000, 600000};
    write_table(doc, low, "low.zip", &w);
    /* One row per slide, in each of the two column groups the URL of row 3
     * makes in 2.7 in (see test_narrow_area_splits_columns). */
    assert_int_equal(w.slides, 10);
    assert_true(w.result.overflow_slides >= 1);
    assert_true(w.result.overflow_first >= 1);
    kiln_doc_free(doc);
    free(spec);
}

static void test_empty_tables(void **state)
{
    (void)state;
    kiln_doc *doc = parse("{'version':1,'sheets':[{'name':'S','columns':[{'header':'A'},"
                          "{'header':'B'}],'rows':[]}]}");
    written w;
    write_table(doc, content, "empty.zip", &w);
    assert_int_equal(w.slides, 1);
    char *xml = slide_xml(&w, 1);
    assert_int_equal(count_of(xml, "<a:tr "), 1);
    assert_non_null(strstr(xml, ">B</a:t>"));
    free(xml);
    kiln_doc_free(doc);

    doc = parse("{'version':1,'sheets':[{'name':'S','rows':[]}]}");
    write_table(doc, content, "none.zip", &w);
    xml = slide_xml(&w, 1);
    assert_int_equal(count_of(xml, "<a:tr "), 1);
    assert_int_equal(count_of(xml, "<a:tc>"), 1);
    assert_non_null(strstr(xml, "<a:endParaRPr "));
    free(xml);
    kiln_doc_free(doc);
}

/* The deck's plan counts a table's slides before writing any: the count is
 * a lower bound (never more than are written), even for rows as short as a
 * row can be, and it grows with the rows (so a million rows in the spec are
 * refused before a slide is written). */
static void test_min_slides_is_a_lower_bound(void **state)
{
    (void)state;
    char *spec = sheet_spec(400, 0);
    kiln_doc *doc = parse(spec);
    written w;
    write_table(doc, content, "bound.zip", &w);
    uint64_t bound = pptx_table_min_slides(&doc->sheets[0].data, content.cy);
    assert_true(bound >= 1 && bound <= w.slides);
    kiln_doc_free(doc);
    free(spec);

    /* 1 pt text in every cell: the shortest rows there are. */
    size_t cap = 64 + 600 * 40;
    char *tiny = malloc(cap);
    assert_non_null(tiny);
    size_t n = (size_t)snprintf(tiny, cap, "{'version':1,'sheets':[{'name':'S','rows':[");
    for (int i = 0; i < 600; i++)
        n += (size_t)snprintf(tiny + n, cap - n, "%s[{'value':'x','style':{'size':1}}]",
                              i ? "," : "");
    snprintf(tiny + n, cap - n, "]}]}");
    doc = parse(tiny);
    write_table(doc, content, "tiny.zip", &w);
    bound = pptx_table_min_slides(&doc->sheets[0].data, content.cy);
    assert_true(bound >= 2 && bound <= w.slides);
    kiln_doc_free(doc);
    free(tiny);

    kiln_table_data d;
    memset(&d, 0, sizeof d);
    d.source = KILN_ROWS_INLINE;
    d.inline_row_count = 1000000;
    assert_true(pptx_table_min_slides(&d, content.cy) > PPTX_MAX_SLIDES);
    d.source = KILN_ROWS_CSV; /* counted as written */
    assert_int_equal(pptx_table_min_slides(&d, content.cy), 1);
    d.source = KILN_ROWS_INLINE;
    d.inline_row_count = 0;
    assert_int_equal(pptx_table_min_slides(&d, content.cy), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_split_with_header),
        cmocka_unit_test(test_merges_within_slide),
        cmocka_unit_test(test_narrow_area_splits_columns),
        cmocka_unit_test(test_tall_row_overflows),
        cmocka_unit_test(test_empty_tables),
        cmocka_unit_test(test_min_slides_is_a_lower_bound),
    };
    /* KEEP=1 leaves the packages in /tmp/kiln-test-pptx-table-* to look at. */
    return cmocka_run_group_tests(tests, setup, getenv("KEEP") ? NULL : teardown);
}
