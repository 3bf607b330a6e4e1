/*
 * test_xlsx.c - the xlsx writer (artifacts/xlsx/).
 *
 * Each test parses a small spec, renders it through kiln_render() into a
 * temporary directory, checks the package with ooxml-check ($OOXML_CHECK, else
 * ../shared/tools/ooxml-check beside the checkout, where make runs the tests)
 * (exactly as written: no Markup Compatibility stripping), and reads it back
 * with an independent reader, openpyxl, through a few lines of Python; a few
 * checks look at the XML parts themselves (unzip -p). The helpers of the
 * writer (names, widths) are tested directly.
 *
 * Specs are written with ' for " (and ` for ') so they read as JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "artifacts/render.h"
#include "artifacts/spec/spec.h"
#include "artifacts/xlsx/xlsx_internal.h"
#include "common/banned.h"

#define PYTHON "/usr/bin/python3"

static char dir[256];
static char out_path[512];

/*
 * libxlsxwriter 1.1.4 leaks the formula string of a list validation that
 * refers to cells (worksheet_data_validation_range copies value_formula
 * twice and frees it once); the writer uses one for lists that cannot be
 * inline. Under AddressSanitizer, suppress exactly that leak, as
 * tests/lsan.supp does for the other runs (which says why it names
 * lxw_strdup). The hook is a weak symbol the sanitizer runtime looks for;
 * without a sanitizer it is unused.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:lxw_strdup\n";
}

static int setup(void **state)
{
    (void)state;
    return test_dir_make(dir, sizeof dir, "xlsx");
}

static int teardown(void **state)
{
    (void)state;
    return test_dir_remove(dir);
}

/* ' -> ", ` -> ' */
static char *json_of(const char *spec)
{
    char *s = strdup(spec);
    assert_non_null(s);
    for (char *p = s; *p; p++)
        *p = *p == '\'' ? '"' : *p == '`' ? '\'' : *p;
    return s;
}

static kiln_doc *parse(const char *spec)
{
    char *json = json_of(spec);
    kiln_parse_options po;
    kiln_parse_options_init(&po);
    po.base_dir = "samples";
    kiln_doc *doc = NULL;
    static kiln_errors errs;
    kiln_errors_init(&errs);
    kiln_status st = kiln_doc_parse(json, strlen(json), &po, &doc, &errs);
    if (st != KILN_E_OK)
        for (size_t i = 0; i < errs.count; i++)
            fprintf(stderr, "parse error %s: %s\n", errs.items[i].pointer, errs.items[i].message);
    free(json);
    assert_int_equal(st, KILN_E_OK);
    return doc;
}

/* Render spec to dir/name; returns the status, err filled. */
static kiln_status render_max(const char *spec, const char *name, uint64_t max_bytes,
                              kiln_error *err)
{
    kiln_doc *doc = parse(spec);
    snprintf(out_path, sizeof out_path, "%s/%s", dir, name);
    kiln_render_options opt = {.max_bytes = max_bytes, .tmp_dir = dir};
    kiln_render_result res;
    memset(err, 0, sizeof *err);
    kiln_status st = kiln_render(doc, KILN_FORMAT_XLSX, out_path, &opt, &res, err);
    kiln_doc_free(doc);
    return st;
}

/* Render, expect success and a package ooxml-check passes. */
static void render_ok(const char *spec, const char *name)
{
    kiln_error err;
    kiln_status st = render_max(spec, name, 0, &err);
    if (st != KILN_E_OK)
        fprintf(stderr, "render error %s: %s\n", err.pointer, err.message);
    assert_int_equal(st, KILN_E_OK);
    test_ooxml_check(out_path);
}

/* Run Python with f = the rendered file and openpyxl imported; the code
 * asserts. */
static void check_py(const char *code)
{
    char script[512], cmd[1200];
    snprintf(script, sizeof script, "%s/check.py", dir);
    FILE *fp = fopen(script, "w");
    assert_non_null(fp);
    fprintf(fp,
            "import sys, zipfile, openpyxl\nf = sys.argv[1]\n"
            "def part(name):\n    return zipfile.ZipFile(f).read(name).decode()\n"
            "%s\n",
            code);
    fclose(fp);
    snprintf(cmd, sizeof cmd, PYTHON " '%s' '%s' >&2", script, out_path);
    assert_int_equal(system(cmd), 0);
}

/* ---- cells ---- */

static void test_typed_cells(void **state)
{
    (void)state;
    render_ok(
        "{'metadata': {'title': 'Typed', 'author': 'Ann', 'company': 'ACME',"
        " 'keywords': ['a', 'b'], 'description': 'About', 'created': '2026-03-01T09:30:00Z'},"
        " 'sheets': [{'name': 'Data', 'columns': ["
        "  {'header': 'N', 'type': 'number'}, {'header': 'S'}, {'header': 'B'},"
        "  {'header': 'D', 'type': 'date'}, {'header': 'F'}, {'header': 'U'}],"
        " 'rows': ["
        "  [1.5, '=SUM(A1)', true, '2026-03-31', {'formula': '=A2*2', 'value': 3},"
        "   {'url': 'https://example.com/a b', 'text': 'Example'}],"
        "  [null, 'x', false, {'datetime': '2026-03-31T14:30:00+02:00'},"
        "   {'formula': 'B3&`!`', 'value': 'x!'}, {'url': 'mailto:a@example.com'}],"
        "  [{'value': 0.25, 'number_format': '0.0%', 'style': {'bold': true, 'fill': '#FF0000'}},"
        "   {'value': null, 'style': {'fill': '#00FF00'}}, null, null,"
        "   {'formula': 'A2>1', 'value': true}, {'formula': 'NOW()'}]]}]}",
        "typed.xlsx");
    check_py(
        "wb = openpyxl.load_workbook(f)\n"
        "ws = wb['Data']\n"
        "assert wb.properties.title == 'Typed' and wb.properties.creator == 'Ann'\n"
        "assert wb.properties.keywords == 'a, b', wb.properties.keywords\n"
        "assert wb.properties.description == 'About'\n"
        "assert str(wb.properties.created) == '2026-03-01 09:30:00', wb.properties.created\n"
        "assert [c.value for c in ws[1]] == ['N', 'S', 'B', 'D', 'F', 'U']\n"
        "assert ws['A2'].value == 1.5 and ws['A2'].number_format == '#,##0.00'\n"
        "assert ws['B2'].value == '=SUM(A1)' and ws['B2'].data_type == 's'\n"
        "assert ws['C2'].value is True and ws['C3'].value is False\n"
        "assert str(ws['D2'].value) == '2026-03-31 00:00:00' and ws['D2'].number_format == 'yyyy-mm-dd'\n"
        "assert str(ws['D3'].value) == '2026-03-31 14:30:00', ws['D3'].value\n"
        "assert ws['E2'].value == '=A2*2' and ws['E3'].value == '=B3&\\'!\\''\n"
        "assert ws['F2'].value == 'Example' and ws['F2'].hyperlink.target == 'https://example.com/a%20b'\n"
        "assert ws['F3'].value == 'mailto:a@example.com' and ws['F3'].hyperlink.target == 'mailto:a@example.com'\n"
        "assert ws['A3'].value is None\n"
        "assert ws['A4'].number_format == '0.0%' and ws['A4'].font.b and ws['A4'].fill.fgColor.rgb == 'FFFF0000'\n"
        "assert ws['B4'].value is None and ws['B4'].fill.fgColor.rgb == 'FF00FF00'\n"
        "assert ws['F4'].value == '=NOW()'\n"
        "hdr = ws['A1']\n"
        "assert hdr.font.b and hdr.fill.fgColor.rgb == 'FF1F4E79' and hdr.font.color.rgb == 'FFFFFFFF'\n"
        "assert hdr.border.bottom.style == 'thin'\n"
        "v = openpyxl.load_workbook(f, data_only=True)['Data']\n"
        "assert v['E2'].value == 3 and v['E3'].value == 'x!' and v['E4'].value == 'TRUE'\n"
        "x = part('xl/worksheets/sheet1.xml')\n"
        "assert '<f>A2*2</f><v>3</v>' in x, x\n");
}

static void test_xstring_escaping(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t cap = 0;
    const char *plain = "no_escape_here";
    assert_ptr_equal(xlsx_xstring(plain, strlen(plain), &buf, &cap), plain);
    assert_string_equal(xlsx_xstring("a_x0041_b_X00fF_", 16, &buf, &cap),
                        "a_x005F_x0041_b_x005F_X00fF_");
    free(buf);
    /* In memory mode (a table): shared strings, which openpyxl decodes one
     * level (_x005F_ only), so its values are the texts themselves. */
    render_ok(
        "{'sheets': [{'name': 'S', 'columns': [{'header': 'h_x0042_'}], 'table': true,"
        " 'rows': [['literal _x0041_ stays'], ['_x000D_'], [{'formula': '=A2', 'value': '_x0043_'}]],"
        " 'comments': [{'cell': 'A2', 'text': 'n_x0044_'}]}]}",
        "xstring.xlsx");
    check_py("wb = openpyxl.load_workbook(f)\n"
             "ws = wb['S']\n"
             "assert ws['A1'].value == 'h_x0042_', ws['A1'].value\n"
             "assert ws['A2'].value == 'literal _x0041_ stays'\n"
             "assert ws['A3'].value == '_x000D_'\n"
             "assert 'name=\"h_x005F_x0042_\"' in part('xl/tables/table1.xml')\n"
             "assert '_x005F_x0043_' in part('xl/worksheets/sheet1.xml')\n"
             "assert 'n_x005F_x0044_' in part('xl/comments1.xml')\n");
    /* constant_memory: inline strings, which openpyxl does not decode. */
    render_ok("{'sheets': [{'name': 'S', 'rows': [['literal _x0041_ stays'], ['_x000D_']]}]}",
              "inline.xlsx");
    check_py("ws = openpyxl.load_workbook(f)['S']\n"
             "assert ws['A1'].value == 'literal _x005F_x0041_ stays', ws['A1'].value\n"
             "assert ws['A2'].value == '_x005F_x000D_'\n");
}

static void test_formats_are_shared(void **state)
{
    (void)state;
    /* 300 styled cells, two looks: the styles part must hold a few xfs. */
    char spec[40000];
    size_t o = (size_t)snprintf(spec, sizeof spec, "{'sheets': [{'rows': [");
    for (int i = 0; i < 300; i++)
        o += (size_t)snprintf(spec + o, sizeof spec - o,
                              "%s[{'value': %d, 'style': {'bold': true, 'color': '#%s'}}]",
                              i ? "," : "", i, i % 2 ? "000000" : "112233");
    snprintf(spec + o, sizeof spec - o, "]}]}");
    render_ok(spec, "shared.xlsx");
    check_py("import re\n"
             "s = part('xl/styles.xml')\n"
             "n = int(re.search(r'<cellXfs count=\"(\\d+)\"', s).group(1))\n"
             "assert n <= 4, n\n"
             "ws = openpyxl.load_workbook(f).active\n"
             "assert ws['A2'].font.color.rgb == 'FF000000', ws['A2'].font.color.rgb\n"
             "assert ws['A1'].font.color.rgb == 'FF112233'\n");
}

static void test_hyperlink_limits(void **state)
{
    (void)state;
    /* 1,020 characters as written, 3,020 once escaped as libxlsxwriter
     * escapes them: past Excel's 2,079. */
    char url[2300];
    memcpy(url, "https://example.com/", 20);
    memset(url + 20, '^', 1000);
    url[1020] = '\0';
    char spec[3000];
    snprintf(spec, sizeof spec,
             "{'sheets': [{'rows': [[{'url': '%s', 'text': 'long'}],"
             " [{'url': 'https://example.com/?q=internal:x'}]]}]}",
             url);
    render_ok(spec, "links.xlsx");
    check_py(
        "ws = openpyxl.load_workbook(f).active\n"
        "assert ws['A1'].value == 'long' and ws['A1'].hyperlink is None\n"
        "assert ws['A2'].hyperlink.target == 'https://example.com/?q=internal%3Ax', ws['A2'].hyperlink.target\n");
}

/* ---- sheet features ---- */

static void test_sheet_features(void **state)
{
    (void)state;
    render_ok(
        "{'metadata': {'author': 'Meta Author'},"
        " 'sheets': [{'name': 'S', 'tab_color': '#00B050',"
        "  'columns': [{'header': 'Name'}, {'header': 'Amount', 'type': 'currency', 'align': 'center'},"
        "   {'header': 'W', 'width': 30}],"
        "  'rows': [['a fairly long piece of text here', 10, 1], ['b', 2000000, 2], ['c', 3, 3]],"
        "  'freeze': {'rows': 1, 'columns': 1}, 'autofilter': true,"
        "  'conditional_formats': ["
        "   {'range': 'B2:B4', 'type': 'cell', 'criteria': 'between', 'value': 1, 'maximum': 100,"
        "    'style': {'fill': '#C6EFCE', 'color': '#006100'}},"
        "   {'range': 'B2:B4', 'type': 'cell', 'criteria': '>', 'value': 1000, 'style': {'bold': true}},"
        "   {'range': 'C2:C4', 'type': 'color_scale', 'colors': ['#F8696B', '#63BE7B']},"
        "   {'range': 'C2:C4', 'type': 'color_scale', 'colors': ['#F8696B', '#FFEB84', '#63BE7B']},"
        "   {'range': 'C2:C4', 'type': 'data_bar', 'color': '#638EC6'}],"
        "  'validations': [{'range': 'A2:A4', 'type': 'list', 'values': ['a', 'b', 'c'],"
        "    'message': 'Pick one'}],"
        "  'comments': [{'cell': 'A2', 'text': 'Note one'},"
        "   {'cell': 'B3', 'text': 'Note two', 'author': 'Bob'}]}]}",
        "features.xlsx");
    check_py(
        "wb = openpyxl.load_workbook(f)\n"
        "ws = wb['S']\n"
        "assert ws.freeze_panes == 'B2', ws.freeze_panes\n"
        "assert ws.auto_filter.ref == 'A1:C4', ws.auto_filter.ref\n"
        "assert ws.sheet_properties.tabColor.rgb == 'FF00B050'\n"
        "assert ws['B2'].number_format == '$#,##0.00' and ws['B2'].alignment.horizontal == 'center'\n"
        "assert ws['B1'].alignment.horizontal == 'center'\n"
        "w = {k: v.width for k, v in ws.column_dimensions.items()}\n"
        "assert 30 <= w['C'] < 31, w\n"
        "assert w['A'] > 25 and w['A'] < 40, w\n"
        "assert 12 < w['B'] < 20, w\n"
        "cf = ws.conditional_formatting\n"
        "types = sorted(r.type for rng in cf for r in rng.rules)\n"
        "assert types == ['cellIs', 'cellIs', 'colorScale', 'colorScale', 'dataBar'], types\n"
        "dv = ws.data_validations.dataValidation[0]\n"
        "assert dv.type == 'list' and dv.formula1 == '\"a,b,c\"' and dv.prompt == 'Pick one'\n"
        "assert ws['A2'].comment.text == 'Note one' and ws['A2'].comment.author == 'Meta Author'\n"
        "assert ws['B3'].comment.author == 'Bob'\n"
        "x = part('xl/worksheets/sheet1.xml')\n"
        "assert 'x14' not in x and 'extLst' not in x and 'mc:Ignorable' not in x\n"
        "assert 'inlineStr' in x  # constant_memory mode\n");
}

static void test_table_and_merges(void **state)
{
    (void)state;
    render_ok(
        "{'sheets': ["
        " {'name': 'T', 'columns': [{'header': 'Item'}, {'header': 'Amount', 'type': 'number'},"
        "   {'header': 'amount', 'type': 'integer'}, {}],"
        "  'rows': [['x', 1.5, 2, 'q'], ['y', 2.5, 3, 'r']],"
        "  'table': {'name': 'Sales.2026', 'style': 'Table Style Light 9', 'total_row': true},"
        "  'merges': [{'range': 'F1:H1', 'value': 42}, {'range': 'F3:G4'},"
        "   {'range': 'J1', 'value': {'value': 7, 'style': {'bold': true}}}]},"
        " {'name': 'Empty', 'columns': [{'header': 'A'}], 'rows': [], 'table': true},"
        " {'name': 'C1', 'columns': [{'header': 'A'}], 'rows': [[1]], 'table': {'style': 'Table Style Dark 11'}}]}",
        "table.xlsx");
    check_py(
        "wb = openpyxl.load_workbook(f)\n"
        "ws = wb['T']\n"
        "t = ws.tables['Sales.2026']\n"
        "assert t.ref == 'A1:D4', t.ref\n"
        "assert [c.name for c in t.tableColumns] == ['Item', 'Amount', 'amount2', 'Column4']\n"
        "assert [c.value for c in ws[1]][:4] == ['Item', 'Amount', 'amount2', 'Column4']\n"
        "assert t.tableStyleInfo.name == 'TableStyleLight9'\n"
        "assert ws['A4'].value == 'Total' and ws['B4'].value == 'SUBTOTAL(109,[Amount])' or ws['B4'].value == '=SUBTOTAL(109,[Amount])'\n"
        "assert sorted(str(r) for r in ws.merged_cells.ranges) == ['F1:H1', 'F3:G4']\n"
        "assert ws['F1'].value == 42 and ws['F1'].alignment.horizontal == 'center'\n"
        "assert ws['J1'].value == 7 and ws['J1'].font.b and ws['J1'].alignment.horizontal is None\n"
        "e = wb['Empty'].tables\n"
        "assert list(e.values())[0].ref == 'A1:A2'\n"
        "names = [list(wb[n].tables.keys())[0] for n in ('Empty', 'C1')]\n"
        "assert names == ['Table2', 'Table3'], names\n"
        "assert wb['C1'].tables['Table3'].tableStyleInfo.name == 'TableStyleDark11'\n"
        "v = openpyxl.load_workbook(f, data_only=True)['T']\n"
        "assert v['B4'].value == 4 and v['C4'].value == 5, (v['B4'].value, v['C4'].value)\n"
        "assert 'inlineStr' not in part('xl/worksheets/sheet1.xml')  # in-memory mode\n");
}

static void test_image_and_ceiling(void **state)
{
    (void)state;
    const char *spec =
        "{'sheets': [{'rows': [[1]], 'images': [{'image': {'path': "
        "'images/kiln_logo.png', 'alt': 'Logo'}, 'anchor': 'C3', 'scale': 0.5}]}]}";
    render_ok(spec, "image.xlsx");
    check_py("ws = openpyxl.load_workbook(f).active\n"
             "assert len(ws._images) == 1\n"
             "d = part('xl/drawings/drawing1.xml')\n"
             "assert 'descr=\"Logo\"' in d, d\n");
    kiln_error err;
    assert_int_equal(render_max(spec, "big.xlsx", 1000, &err), KILN_E_TOO_LARGE);
    assert_int_equal(err.limit, 1000);
    struct stat sb;
    assert_true(err.actual > 1000);
    assert_int_not_equal(stat(out_path, &sb), 0); /* nothing left behind */
}

static void test_lists_theme_scratch(void **state)
{
    (void)state;
    render_ok(
        "{'theme': {'font': 'Arial', 'font_size': 10, 'header_fill': '#000000'},"
        " 'sheets': [{'columns': [{'header': 'H'}], 'rows': [['plain'], [{'url': 'https://e.com'}]],"
        "  'validations': [{'range': 'A2:A9', 'type': 'list', 'values': ['a, b', 'say \\'hi\\'', 'c']},"
        "   {'range': 'B2:B9', 'type': 'list', 'values': ['x', 'y']}]}]}",
        "lists.xlsx");
    check_py(
        "wb = openpyxl.load_workbook(f)\n"
        "ws = wb['Sheet1']\n"
        "assert wb.sheetnames == ['Sheet1', '_kiln_data'] and wb['_kiln_data'].sheet_state == 'hidden'\n"
        "dv = sorted(ws.data_validations.dataValidation, key=lambda d: str(d.sqref))\n"
        "assert dv[0].formula1 == \"'_kiln_data'!$A$1:$A$3\", dv[0].formula1\n"
        "assert dv[1].formula1 == '\"x,y\"'\n"
        "d = wb['_kiln_data']\n"
        "assert [d.cell(r, 1).value for r in (1, 2, 3)] == ['a, b', 'say \"hi\"', 'c']\n"
        "assert ws['A2'].font.name == 'Arial' and ws['A2'].font.sz == 10\n"
        "assert ws['A3'].font.name == 'Arial' and ws['A3'].font.u == 'single'\n"
        "assert ws['A1'].font.name == 'Arial' and ws['A1'].fill.fgColor.rgb == 'FF000000'\n");

    /* A scratch directory that cannot be used fails cleanly, before writing. */
    kiln_doc *doc = parse("{'sheets': [{'rows': [[1]]}]}");
    snprintf(out_path, sizeof out_path, "%s/scratch.xlsx", dir);
    kiln_render_options opt = {.tmp_dir = "/nonexistent/kiln"};
    kiln_error err;
    assert_int_equal(kiln_render(doc, KILN_FORMAT_XLSX, out_path, &opt, NULL, &err),
                     KILN_E_WRITE);
    kiln_doc_free(doc);
}

/* ---- charts ---- */

static void test_charts(void **state)
{
    (void)state;
    char spec[8000];
    static const char *kinds[] = {"column", "bar", "line", "pie", "doughnut", "scatter", "area"};
    size_t o = (size_t)snprintf(
        spec, sizeof spec,
        "{'sheets': [{'name': 'Data sheet', 'columns': [{'header': 'Q'}, {'header': 'V', 'type': 'number'}],"
        " 'rows': [['Q1', 1], ['Q2', 2], ['Q3', 3]], 'charts': [");
    for (int i = 0; i < 7; i++) {
        int pie = i == 3 || i == 4, scatter = i == 5;
        o += (size_t)snprintf(
            spec + o, sizeof spec - o,
            "%s{'kind': '%s', 'title': 'C%d', %s"
            " 'categories': %s, 'series': [{'name': 'A', 'values': [1, 2, 3], 'color': '#FF0000'}%s],"
            " %s 'legend': '%s'}",
            i ? "," : "", kinds[i], i, (i == 0 || i == 1 || i == 6) ? "'stacked': true," : "",
            scatter ? "[1, 2, 3]" : "['a', 'b', 'c']", pie ? "" : ", {'values': [3, 2, 1]}",
            pie ? "" : "'x_axis': {'title': 'X'}, 'y_axis': {'title': 'Y'},",
            i == 2 ? "none" : "bottom");
    }
    snprintf(spec + o, sizeof spec - o,
             ", {'kind': 'column', 'categories': 'A2:A4', 'series': [{'name': '=B1', 'values': "
             "'`Data sheet`!B2:B4'}], 'anchor': 'H20', 'width': 600, 'height': 300}]}]}");
    render_ok(spec, "charts.xlsx");
    check_py("wb = openpyxl.load_workbook(f)\n"
             "assert wb.sheetnames == ['Data sheet', '_kiln_data'], wb.sheetnames\n"
             "assert wb['_kiln_data'].sheet_state == 'hidden'\n"
             "ws = wb['Data sheet']\n"
             "assert len(ws._charts) == 8, len(ws._charts)\n"
             "import re\n"
             "c8 = part('xl/charts/chart8.xml')\n"
             "assert \"'Data sheet'!$B$2:$B$4\" in c8 and \"'Data sheet'!$A$2:$A$4\" in c8, c8\n"
             "c1 = part('xl/charts/chart1.xml')\n"
             "assert '<c:grouping val=\"stacked\"/>' in c1 and 'FF0000' in c1\n"
             "assert '_kiln_data' in c1\n"
             "c3 = part('xl/charts/chart3.xml')\n"
             "assert '<c:legend>' not in c3\n"
             "d = wb['_kiln_data']\n"
             "assert d['A2'].value == 'a' and d['B2'].value == 1 and d['C2'].value == 3\n");

    /* In memory mode (a merge forces it) the chart's cache holds the
     * formulas' cached results, not libxlsxwriter's zeros. */
    render_ok(
        "{'sheets': [{'name': 'F', 'columns': [{'header': 'K'}, {'header': 'V'}],"
        " 'rows': [['a', {'formula': '=1+2', 'value': 3}], ['b', {'formula': '=2*2', 'value': 4}]],"
        " 'merges': [{'range': 'D1:E1', 'value': 'm'}],"
        " 'charts': [{'kind': 'column', 'categories': 'A2:A3', 'series': [{'values': 'B2:B3'}]}]}]}",
        "cache.xlsx");
    check_py("c = part('xl/charts/chart1.xml')\n"
             "assert '<c:v>3</c:v>' in c and '<c:v>4</c:v>' in c, c\n"
             "assert '<c:v>a</c:v>' in c, c\n");

    /* The parser refuses a reference to a missing sheet; the writer checks
     * again (libxlsxwriter would only print a warning). */
    kiln_doc *doc = parse("{'sheets': [{'rows': [[1]], 'charts': [{'kind': 'line',"
                          " 'categories': 'A1:A1', 'series': [{'values': 'A1:A1'}]}]}]}");
    doc->sheets[0].charts[0].series[0].values_ref = "Nope!A1:A1";
    snprintf(out_path, sizeof out_path, "%s/badref.xlsx", dir);
    kiln_error err;
    assert_int_equal(kiln_render(doc, KILN_FORMAT_XLSX, out_path, NULL, NULL, &err),
                     KILN_E_INVALID_SPEC);
    assert_string_equal(err.pointer, "/sheets/0/charts/0/series/0/values");
    kiln_doc_free(doc);
}

/* ---- mapping blocks and slides ---- */

static void test_mapping_blocks(void **state)
{
    (void)state;
    render_ok(
        "{'blocks': ["
        " {'type': 'chart', 'kind': 'pie', 'categories': ['a', 'b'], 'series': [{'values': [1, 2]}]},"
        " {'type': 'heading', 'level': 1, 'text': 'Sales: [North]/South?'},"
        " {'type': 'table', 'columns': [{'header': 'K'}], 'rows': [['x']]},"
        " {'type': 'chart', 'kind': 'column', 'categories': ['a'], 'series': [{'values': [1]}]},"
        " {'type': 'table', 'columns': [{'header': 'K'}], 'rows': [['y']]},"
        " {'type': 'heading', 'level': 2, 'text': 'History'},"
        " {'type': 'table', 'columns': [{'header': 'K'}], 'rows': [['z']]},"
        " {'type': 'heading', 'level': 2, 'text': 'A very long heading that goes past the limit'},"
        " {'type': 'table', 'columns': [{'header': 'K'}], 'rows': [['w']]}]}",
        "blocks.xlsx");
    check_py("wb = openpyxl.load_workbook(f)\n"
             "n = wb.sheetnames\n"
             "assert n == ['Sales NorthSouth', 'Sales NorthSouth (2)', 'History (2)',"
             " 'A very long heading that goes p', '_kiln_data'], n\n"
             "assert len(wb[n[0]]._charts) == 2 and len(wb[n[1]]._charts) == 0\n"
             "assert wb[n[1]]['A2'].value == 'y'\n");

    render_ok("{'blocks': [{'type': 'heading', 'level': 1, 'text': 'Title'},"
              " {'type': 'paragraph', 'text': 'Body text.'},"
              " {'type': 'list', 'items': ['one', {'text': 'two', 'items': ['two.a']}]}]}",
              "text.xlsx");
    check_py(
        "ws = openpyxl.load_workbook(f).active\n"
        "vals = [r[0] for r in ws.iter_rows(values_only=True)]\n"
        "assert vals == ['Title', 'Body text.', '\\u2022 one', '\\u2022 two', '\\u25e6 two.a'], vals\n"
        "assert ws['A1'].font.b and ws['A5'].alignment.indent == 2\n");

    render_ok(
        "{'slides': [{'title': 'Numbers', 'layout': 'table',"
        " 'table': {'columns': [{'header': 'A'}], 'rows': [[1]]}},"
        " {'title': 'Named', 'layout': 'table', 'table': {'name': 'Regions', 'columns': [{'header': 'B'}], 'rows': [[2]]}},"
        " {'title': 'Trend', 'layout': 'chart', 'chart': {'kind': 'line',"
        "  'categories': ['x', 'y'], 'series': [{'values': [1, 2]}]}}]}",
        "slides.xlsx");
    check_py("wb = openpyxl.load_workbook(f)\n"
             "assert wb.sheetnames == ['Numbers', 'Regions', '_kiln_data'], wb.sheetnames\n"
             "assert len(wb['Regions']._charts) == 1\n");

    render_ok("{'slides': [{'layout': 'title', 'title': 'Deck', 'subtitle': 'Sub'},"
              " {'title': 'Two', 'bullets': ['b1']}]}",
              "deck.xlsx");
    check_py("ws = openpyxl.load_workbook(f).active\n"
             "vals = [r[0] for r in ws.iter_rows(values_only=True)]\n"
             "assert vals == ['Deck', 'Sub', 'Two', '\\u2022 b1'], vals\n");
}

/* ---- helpers ---- */

static void test_sheet_names(void **state)
{
    (void)state;
    char out[XLSX_SHEET_NAME_BUF];
    xlsx_sheet_name_sanitize(out, "'a[b]:c*d?e/f\\g'", 16);
    assert_string_equal(out, "abcdefg");
    const char *s = "12345678901234567890123456789012345";
    xlsx_sheet_name_sanitize(out, s, strlen(s));
    assert_string_equal(out, "1234567890123456789012345678901");
    /* 31 UTF-16 units: an emoji counts two. */
    const char *e = "\xF0\x9F\x98\x80"
                    "123456789012345678901234567890";
    xlsx_sheet_name_sanitize(out, e, strlen(e));
    assert_int_equal(strlen(out), 4 + 29);
    assert_true(xlsx_name_equal("Sales", "sALES"));
    assert_false(xlsx_name_equal("Sales", "Sale"));
}

static void test_widths(void **state)
{
    (void)state;
    assert_int_equal(xlsx_text_px("0000", 4), 28);
    assert_true(xlsx_text_px("WWW", 3) > xlsx_text_px("iii", 3));
    /* wide characters measure wider than Latin ones */
    assert_true(xlsx_text_px("\xE4\xB8\xAD\xE6\x96\x87", 6) > xlsx_text_px("ab", 2));
    /* the widest line of a multi-line text */
    assert_int_equal(xlsx_text_px("00\n0000\n0", 9), 28);
    xlsx_numfmt_info nf;
    xlsx_numfmt_analyse("#,##0.00", &nf);
    assert_int_equal(nf.kind, XLSX_NF_NUMBER);
    assert_int_equal(nf.decimals, 2);
    /* "1,234,567.89": 7 + 2 digits, 2 commas, a point */
    assert_int_equal(xlsx_number_px(1234567.891, &nf), 7 * 7 + 2 * 4 + 4 + 2 * 7);
    xlsx_numfmt_analyse("0.0%", &nf);
    assert_int_equal(nf.kind, XLSX_NF_PERCENT);
    assert_int_equal(xlsx_number_px(0.25, &nf), 2 * 7 + 4 + 7 + 11);
    xlsx_numfmt_analyse("yyyy-mm-dd", &nf);
    assert_int_equal(nf.kind, XLSX_NF_DATE);
    assert_int_equal(xlsx_number_px(46000, &nf), 8 * 7 + 2 * 5);
    xlsx_numfmt_analyse(NULL, &nf);
    assert_int_equal(xlsx_number_px(1.5, &nf), 7 + 4 + 7);
    assert_int_equal(xlsx_number_px(-12, &nf), 5 + 14);
    assert_true(xlsx_px_to_width(100000) <= 255.0);
    assert_true(xlsx_numfmt_is_date("dd/mm/yyyy hh:mm"));
    assert_false(xlsx_numfmt_is_date("\"days\" 0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sheet_names),
        cmocka_unit_test(test_widths),
        cmocka_unit_test_setup_teardown(test_typed_cells, setup, teardown),
        cmocka_unit_test_setup_teardown(test_xstring_escaping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_formats_are_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hyperlink_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sheet_features, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_and_merges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_image_and_ceiling, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lists_theme_scratch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_charts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mapping_blocks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
