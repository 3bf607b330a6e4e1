/*
 * test_parse.c - kiln_doc_parse / kiln_doc_load: the typed model, every
 * validation rule and limit, and the exact JSON Pointer of each error.
 *
 * Specs are written with single quotes for readability; q() turns them into
 * JSON. Tests that need a real apostrophe pass raw JSON instead.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"
#include "tests/unit/test_spec_tree.h"
#include <zlib.h>

#include "artifacts/spec/spec.h"
#include "artifacts/spec/spec_internal.h"
#include "common/banned.h"

static char tmpdir[256];
static kiln_errors errs;
/* Render the documents test_same_as_tree compares (it takes a few seconds). */
static int tree_render = 1;

/* ---- helpers ---- */

static char *q(const char *s)
{
    return test_quote(s);
}

static void dump_errors(void)
{
    test_dump_errors(&errs);
}

/* Every spec parsed here is also parsed as a jansson tree, which must give
 * the same outcome (test_spec_tree.h). */
static kiln_status parse_raw_opt(const char *json, const kiln_parse_options *opt, kiln_doc **doc)
{
    test_same_as_tree(json, strlen(json), opt, tree_render ? tmpdir : NULL);
    return kiln_doc_parse(json, strlen(json), opt, doc, &errs);
}

static kiln_parse_options dir_opts(void)
{
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = tmpdir;
    return o;
}

static kiln_doc *parse_ok_opt(const char *spec, const kiln_parse_options *opt)
{
    char *json = q(spec);
    kiln_doc *doc = NULL;
    kiln_status rc = parse_raw_opt(json, opt, &doc);
    if (rc != KILN_E_OK) {
        fprintf(stderr, "unexpected failure for %s\n", json);
        dump_errors();
    }
    free(json);
    assert_int_equal(rc, KILN_E_OK);
    assert_non_null(doc);
    assert_int_equal(errs.count, 0);
    return doc;
}

static kiln_doc *parse_ok(const char *spec)
{
    kiln_parse_options o = dir_opts();
    return parse_ok_opt(spec, &o);
}

/* Assert that some error has this code, pointer and message fragment. */
static void has_error(kiln_status code, const char *pointer, const char *fragment)
{
    for (size_t i = 0; i < errs.count; i++) {
        const kiln_error *e = &errs.items[i];
        if (e->code == code && (!pointer || strcmp(e->pointer, pointer) == 0) &&
            (!fragment || strstr(e->message, fragment)))
            return;
    }
    fprintf(stderr, "expected [%s] %s: ...%s...\ngot:\n", kiln_status_name(code),
            pointer ? pointer : "(any)", fragment ? fragment : "");
    dump_errors();
    fail();
}

static void fails_raw_opt(const char *json, const kiln_parse_options *opt, kiln_status code,
                          const char *pointer, const char *fragment)
{
    kiln_doc *doc = (kiln_doc *)1;
    kiln_status rc = parse_raw_opt(json, opt, &doc);
    if (rc == KILN_E_OK)
        fprintf(stderr, "unexpected success for %s\n", json);
    assert_int_not_equal(rc, KILN_E_OK);
    assert_null(doc);
    assert_true(errs.count > 0);
    assert_int_equal(rc, errs.items[0].code);
    has_error(code, pointer, fragment);
}

static void fails_opt(const char *spec, const kiln_parse_options *opt, kiln_status code,
                      const char *pointer, const char *fragment)
{
    char *json = q(spec);
    fails_raw_opt(json, opt, code, pointer, fragment);
    free(json);
}

static void fails(const char *spec, kiln_status code, const char *pointer, const char *fragment)
{
    kiln_parse_options o = dir_opts();
    fails_opt(spec, &o, code, pointer, fragment);
}

static void write_file(const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* A whole PNG: signature, IHDR 3x2 RGB, pHYs 11811 px/m (300 dpi), IDAT (two
 * rows of red pixels, deflated), IEND; every chunk with its CRC, which the
 * probe checks. */
/* clang-format off: one PNG chunk or JPEG segment a line */
static const unsigned char png_bytes[] = {
    0x89, 'P',  'N',  'G',  '\r', '\n', 0x1A, '\n', 0,    0,    0,    13,   'I',  'H',
    'D',  'R',  0,    0,    0,    3,    0,    0,    0,    2,    8,    2,    0,    0,
    0,    0x12, 0x16, 0xF1, 0x4D, 0,    0,    0,    9,    'p',  'H',  'Y',  's',  0,
    0,    0x2E, 0x23, 0,    0,    0x2E, 0x23, 1,    0x78, 0xA5, 0x3F, 0x76, 0,    0,
    0,    16,   'I',  'D',  'A',  'T',  0x78, 0xDA, 0x63, 0xF8, 0xCF, 0xC0, 0x00, 0x41,
    0x0C, 0x70, 0x16, 0x00, 0x41, 0xD2, 0x05, 0xFB, 0x6F, 0xF1, 0x16, 0xC7, 0,    0,
    0,    0,    'I',  'E',  'N',  'D',  0xAE, 0x42, 0x60, 0x82};

/* A JPEG's structure: SOI, APP0 JFIF 72x144 dpi, SOF0 40x30, SOS with a few
 * bytes of scan data (a stuffed 0xFF 0x00 and a restart marker among them),
 * EOI. The probe walks the markers without decoding, so no tables are
 * needed. */
static const unsigned char jpeg_bytes[] = {0xFF, 0xD8, 0xFF, 0xE0, 0,    16,   'J',  'F',  'I',
                                           'F',  0,    1,    1,    1,    0,    72,   0,    144,
                                           0,    0,    0xFF, 0xC0, 0,    17,   8,    0,    30,
                                           0,    40,   3,    1,    0x22, 0,    2,    0x11, 1,
                                           3,    0x11, 1,    0xFF, 0xDA, 0,    12,   3,    1,
                                           0,    2,    0x11, 3,    0x11, 0,    0x3F, 0,    0x12,
                                           0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56, 0xFF, 0xD9};

/* The same 3x2 PNG without its pHYs chunk, as base64. */
#define PNG_3X2_BASE64 \
    "iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAEElEQVR42mP4z8AAQQxwFgBB0gX7b/EWxwAAAABJRU5ErkJggg=="

/* clang-format on */

static int setup_dir(void **state)
{
    (void)state;
    if (test_dir_make(tmpdir, sizeof tmpdir, "parse") != 0)
        return -1;
    write_file("logo.png", png_bytes, sizeof png_bytes);
    write_file("photo.jpg", jpeg_bytes, sizeof jpeg_bytes);
    write_file("notimage.png", "GIF89a....", 10);
    char path[600], target[600];
    snprintf(path, sizeof path, "%s/sub", tmpdir);
    mkdir(path, 0700);
    write_file("sub/inner.png", png_bytes, sizeof png_bytes);
    snprintf(path, sizeof path, "%s/link.png", tmpdir);
    snprintf(target, sizeof target, "%s/logo.png", tmpdir);
    if (symlink(target, path) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/linkdir", tmpdir);
    snprintf(target, sizeof target, "%s/sub", tmpdir);
    if (symlink(target, path) != 0)
        return -1;
    write_file("data.csv", "a,b\n1,2\n", 8);
    return 0;
}

static int teardown_dir(void **state)
{
    (void)state;
    return test_dir_remove(tmpdir);
}

/* ---- the model ---- */

static void test_minimal_defaults(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok("{'sheets': [{'rows': [[1, 'a']]}]}");
    assert_int_equal(doc->sheet_count, 1);
    assert_string_equal(doc->sheets[0].name, "Sheet1");
    assert_string_equal(doc->sheets[0].pointer, "/sheets/0");
    assert_string_equal(doc->sheets[0].data.pointer, "/sheets/0/rows");
    assert_int_equal(doc->sheets[0].data.inline_row_count, 1);
    assert_int_equal(doc->sheets[0].data.header, 0);
    assert_int_equal(doc->sheets[0].tab_color, KILN_COLOR_NONE);
    assert_string_equal(doc->theme.font, "Calibri");
    assert_string_equal(doc->theme.heading_font, "Calibri");
    assert_string_equal(doc->theme.mono_font, "Consolas");
    assert_true(doc->theme.font_size == 11);
    assert_int_equal(doc->theme.accent_count, 6);
    assert_int_equal(doc->theme.accent_colors[0], 0x4472C4);
    assert_int_equal(doc->theme.header_font_color, 0xFFFFFF);
    assert_int_equal(doc->page.size, KILN_PAGE_A4);
    assert_true(doc->page.width_pt == 595.28 && doc->page.height_pt == 841.89);
    assert_true(doc->page.margin_top == 72 && doc->page.margin_right == 72);
    assert_int_equal(doc->metadata.has_created, 0);
    assert_string_equal(doc->base_dir, tmpdir);
    kiln_doc_free(doc);
}

static void test_version_and_empty(void **state)
{
    (void)state;
    kiln_doc_free(parse_ok("{'version': 1, 'blocks': [{'type': 'rule'}]}"));
    fails("{'version': 2, 'blocks': [{'type': 'rule'}]}", KILN_E_INVALID_SPEC, "/version",
          "expected 1");
    fails("{}", KILN_E_INVALID_SPEC, "", "at least one of");
    fails("{'sheets': []}", KILN_E_INVALID_SPEC, "", "at least one of");
    fails("[1]", KILN_E_INVALID_SPEC, "", "expected a JSON object");
}

/* The root's big arrays are left out of its tree and walked in place
 * whatever order the text gives them (a spec with "blocks" before "sheets"
 * once overran the copy the holes are cut from), and duplicates of them are
 * refused as any duplicate is. */
static void test_root_arrays_in_any_order(void **state)
{
    (void)state;
    const char *orders[] = {
        "{'sheets': [{'name': 'S', 'rows': [[1]]}], 'blocks': [{'type': 'rule'}], "
        "'slides': [{'title': 'T'}]}",
        "{'blocks': [{'type': 'rule'}], 'sheets': [{'name': 'S', 'rows': [[1]]}], "
        "'slides': [{'title': 'T'}]}",
        "{'slides': [{'title': 'T'}], 'blocks': [{'type': 'rule'}], 'metadata': {'title': 'M'}, "
        "'sheets': [{'name': 'S', 'rows': [[1], [2]]}]}",
    };
    for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
        kiln_doc *doc = parse_ok(orders[i]);
        assert_int_equal(doc->sheet_count, 1);
        assert_int_equal(doc->block_count, 1);
        assert_int_equal(doc->slide_count, 1);
        assert_string_equal(doc->slides[0].title, "T");
        assert_string_equal(doc->sheets[0].name, "S");
        kiln_doc_free(doc);
    }
    fails("{'blocks': [{'type': 'rule'}], 'sheets': [{'rows': [[1]]}], "
          "'blocks': [{'type': 'rule'}]}",
          KILN_E_INVALID_SPEC, "", "duplicate");
    /* A table's rows left out of a slide's piece, after and before other members. */
    kiln_doc *doc = parse_ok("{'slides': [{'layout': 'table', 'table': {'rows': [[1, 2]], "
                             "'columns': [{'header': 'a'}, {'header': 'b'}]}, 'title': 'T'}]}");
    assert_int_equal(doc->slides[0].table->data.inline_row_count, 1);
    kiln_doc_free(doc);
}

static void test_json_syntax(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    fails_raw_opt("{\"sheets\": [", &o, KILN_E_INVALID_SPEC, "", "not valid JSON at line 1");
    /* Duplicate members are refused, not silently last-one-wins. */
    fails_raw_opt("{\"blocks\": [], \"blocks\": []}", &o, KILN_E_INVALID_SPEC, "", "duplicate");
    /* Not NUL-terminated input: the length rules. */
    const char *json = "{\"blocks\": [{\"type\": \"rule\"}]}GARBAGE";
    kiln_doc *doc;
    assert_int_equal(kiln_doc_parse(json, strlen(json) - 7, &o, &doc, &errs), KILN_E_OK);
    kiln_doc_free(doc);
    /* NULL errs is allowed. */
    assert_int_equal(kiln_doc_parse("{", 1, &o, &doc, NULL), KILN_E_INVALID_SPEC);
    assert_null(doc);
}

static void test_unknown_members(void **state)
{
    (void)state;
    fails("{'sheet': [], 'blocks': [{'type': 'rule'}]}", KILN_E_INVALID_SPEC, "/sheet",
          "unknown member \"sheet\"");
    fails("{'sheets': [{'rows': [[{'value': 1, 'style': {'blod': true}}]]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/rows/0/0/style/blod", "unknown member \"blod\"");
    fails("{'sheets': [{'colums': []}]}", KILN_E_INVALID_SPEC, "/sheets/0/colums",
          "unknown member \"colums\"");
    fails("{'sheets': [{'columns': [{'heder': 'x'}]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/columns/0/heder", "unknown member");
    fails("{'metadata': {'titel': 'x'}, 'blocks': [{'type': 'rule'}]}", KILN_E_INVALID_SPEC,
          "/metadata/titel", "unknown member");
    fails("{'blocks': [{'type': 'paragraph', 'text': 'x', 'bold': true}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/bold", "unknown member \"bold\"");
    fails("{'blocks': [{'type': 'paragraph', 'runs': [{'text': 'x', 'blod': true}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/runs/0/blod", "unknown member");
    fails("{'slides': [{'titel': 'x'}]}", KILN_E_INVALID_SPEC, "/slides/0/titel",
          "unknown member");
    fails("{'sheets': [{'rows': [[{'value': 1, 'colour': '#FF0000'}]]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/rows/0/0/colour", "unknown member");
}

static void test_pointer_escaping(void **state)
{
    (void)state;
    char buf[64];
    kiln_ptr_escape(buf, sizeof buf, "a/b~c");
    assert_string_equal(buf, "a~1b~0c");
    kiln_ptr_escape(buf, sizeof buf, "~~//");
    assert_string_equal(buf, "~0~0~1~1");
    kiln_ptr p = {.len = 0};
    p.buf[0] = '\0';
    size_t s = kiln_ptr_push(&p, "x/y");
    kiln_ptr_push_index(&p, 12);
    assert_string_equal(p.buf, "/x~1y/12");
    kiln_ptr_pop(&p, s);
    assert_string_equal(p.buf, "");
    /* Through the parser: an unknown member named with / and ~. */
    fails("{'sheets': [{'a/b~c': 1}]}", KILN_E_INVALID_SPEC, "/sheets/0/a~1b~0c",
          "unknown member \"a/b~c\"");
    /* A row object member looked up by a key with / in it. */
    fails("{'sheets': [{'columns': [{'key': 'x/y'}], 'rows': [{'x/y': [1]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/rows/0/x~1y", "expected a number, string");
    fails("{'sheets': [{'columns': [{'key': 'k'}], 'rows': [{'k': 1, 'm~n': 2}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/rows/0/m~0n", "unknown member \"m~n\"");
}

static void test_cell_errors_and_collection(void **state)
{
    (void)state;
    char spec[4096] = "{'sheets': [{'rows': [";
    for (int i = 0; i < 12; i++)
        test_append(spec, sizeof spec, "[1, 2, 3, 4],");
    test_append(spec, sizeof spec,
                "[1, 2, 3, [4]], [{'formula': 5}], [{'date': 'tomorrow'}], [{}],"
                "[{'value': 1, 'date': '2026-01-01'}], [{'url': 'javascript:alert(1)'}],"
                "[{'value': {'a': 1}}], [{'formula': '=A1', 'value': [1]}],"
                "[{'value': 1, 'number_format': 5}], [{'text': 'x', 'value': 1}], 7]}]}");
    fails(spec, KILN_E_INVALID_SPEC, "/sheets/0/rows/12/3",
          "expected a number, string, boolean, null or cell object");
    /* Every one of them, not just the first. */
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/13/0/formula", "expected a formula");
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/14/0/date", "ISO 8601 date");
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/15/0", "exactly one of");
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/16/0", "exactly one of");
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/17/0/url", "http://");
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/18/0/value", "expected a number");
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/19/0/value", "cached");
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/20/0/number_format", "number format");
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/21/0/text", "url");
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/22", "expected a row");
    assert_int_equal(errs.count, 11);

    /* A date-time that rounds (to Excel's millisecond) past 9999-12-31. */
    fails("{'sheets': [{'rows': [[{'datetime': '9999-12-31T23:59:59.9999999'}]]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/rows/0/0/datetime", "9999-12-31");
    fails(
        "{'sheets': [{'columns': [{'type': 'datetime'}], 'rows': [['9999-12-31 23:59:59.9996']]}]}",
        KILN_E_INVALID_SPEC, "/sheets/0/rows/0/0", "9999-12-31");
    kiln_doc *doc = parse_ok(
        "{'sheets': [{'rows': [[{'datetime': '9999-12-31T23:59:59.999'}]]}]}");
    kiln_doc_free(doc);
}

static void test_style_errors(void **state)
{
    (void)state;
    fails("{'sheets': [{'rows': [[{'value': 1, 'style': {'bold': 1}}]]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/rows/0/0/style/bold", "true or false");
    fails("{'sheets': [{'rows': [[{'value': 1, 'style': {'fill': 'red'}}]]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/rows/0/0/style/fill", "#RRGGBB");
    fails("{'sheets': [{'rows': [[{'value': 1, 'style': {'size': 500}}]]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/rows/0/0/style/size", "1 to 409");
    fails("{'sheets': [{'rows': [[{'value': 1, 'style': {'align': 'middle'}}]]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/rows/0/0/style/align", "\"left\"");
    fails("{'sheets': [{'rows': [[{'value': 1, 'style': {'border': 'dotted'}}]]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/rows/0/0/style/border", "\"thin\"");
    fails("{'sheets': [{'rows': [[{'value': 1, 'style': 'bold'}]]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/rows/0/0/style", "style object");
}

static void test_rows_and_columns(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok(
        "{'sheets': [{'name': 'Sales', 'columns': ["
        "{'header': 'Region', 'width': 20, 'align': 'center'},"
        "{'header': 'Revenue', 'key': 'rev', 'type': 'currency'},"
        "{'header': 'Share', 'type': 'percent', 'number_format': '0%'},"
        "{'header': 'Day', 'type': 'date'}, {'header': 'N', 'type': 'integer'},"
        "{'header': 'X', 'type': 'number'}, {'header': 'T', 'type': 'datetime'},"
        "{'header': 'S', 'type': 'string'}, {'header': 'B', 'type': 'boolean'}],"
        "'rows': [['North', 1.5, 0.25, '2026-03-31'], {'Region': 'South', 'rev': 2}]}]}");
    const kiln_sheet *sh = &doc->sheets[0];
    assert_string_equal(sh->name, "Sales");
    assert_int_equal(sh->data.column_count, 9);
    assert_int_equal(sh->data.header, 1);
    assert_int_equal(sh->data.inline_row_count, 2);
    const kiln_column *c = sh->data.columns;
    assert_true(c[0].width == 20);
    assert_int_equal(c[0].align, KILN_ALIGN_CENTER);
    assert_null(c[0].number_format);
    assert_string_equal(c[0].key, "Region");
    assert_string_equal(c[1].key, "rev");
    assert_string_equal(c[1].number_format, "$#,##0.00");
    assert_string_equal(c[2].number_format, "0%");
    assert_string_equal(c[3].number_format, "yyyy-mm-dd");
    assert_string_equal(c[4].number_format, "#,##0");
    assert_string_equal(c[5].number_format, "#,##0.00");
    assert_string_equal(c[6].number_format, "yyyy-mm-dd hh:mm");
    assert_null(c[7].number_format);
    assert_true(c[7].width < 0);
    assert_int_equal(c[8].type, KILN_COL_BOOLEAN);
    kiln_doc_free(doc);

    /* A row longer than the columns, a bad date in a date column, objects
     * without columns, and duplicate keys. */
    fails("{'sheets': [{'columns': [{'header': 'a'}], 'rows': [[1, 2]]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/rows/0", "only 1 columns");
    fails("{'sheets': [{'columns': [{'type': 'date'}], 'rows': [['2026-03-31'], ['soon']]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/rows/1/0", "ISO 8601");
    fails("{'sheets': [{'rows': [{'a': 1}]}]}", KILN_E_INVALID_SPEC, "/sheets/0/rows/0",
          "needs \"columns\"");
    /* Keys: explicit keys are unique always; keys derived from headers only
     * where rows may be objects (inline object rows, JSON Lines). */
    fails("{'sheets': [{'columns': [{'key': 'a'}, {'header': 'x', 'key': 'a'}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/columns/1/key", "already has the key");
    kiln_doc_free(parse_ok("{'sheets': [{'columns': [{'header': 'a'}, {'key': 'a'}]}]}"));
    doc = parse_ok("{'sheets': [{'columns': [{'header': 'Total'}, {'header': 'Total'},"
                   " {'header': ''}, {'header': ''}], 'rows': [[1, 2, 3, 4]]}],"
                   " 'blocks': [{'type': 'table', 'columns': [{'header': 'T'}, {'header': 'T'}],"
                   " 'rows': [['x', 'y']]}]}");
    assert_string_equal(doc->sheets[0].data.columns[1].key, "Total");
    kiln_doc_free(doc);
    fails("{'sheets': [{'columns': [{'header': 'Total'}, {'header': 'Total'}],"
          " 'rows': [[1, 2], {'Total': 3}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/columns/1/header", "rows are objects");
    fails("{'sheets': [{'columns': [{'header': ''}, {'header': ''}], 'rows': [{}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/columns/1/header", "column 0 already has the key");
    fails("{'sheets': [{'columns': [{'header': 'a'}, {'key': 'a'}], 'rows': [{'a': 1}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/columns/1/key", "already has the key");
    fails("{'blocks': [{'type': 'table', 'columns': [{'header': 'T'}, {'header': 'T'}],"
          " 'rows': [{'T': 1}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/columns/1/header", "already has the key");
    /* Distinct keys make duplicate headers fine with object rows too. */
    kiln_doc_free(parse_ok("{'sheets': [{'columns': [{'header': 'T', 'key': 'a'},"
                           " {'header': 'T', 'key': 'b'}], 'rows': [{'a': 1, 'b': 2}]}]}"));
    fails("{'sheets': [{'columns': [{'type': 'money'}]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/columns/0/type", "\"currency\"");
    fails("{'sheets': [{'columns': [{'width': 256}]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/columns/0/width", "0 to 255");
    fails("{'sheets': [{'columns': [{'header': 'a', 'key': ''}]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/columns/0/key", "non-empty key");
    fails("{'sheets': [{'rows': {}}]}", KILN_E_INVALID_SPEC, "/sheets/0/rows", "array of rows");
    fails("{'sheets': [{'rows': [], 'data': {'path': 'data.csv'}}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/data", "not both");
    fails("{'sheets': [{'header': 'yes'}]}", KILN_E_INVALID_SPEC, "/sheets/0/header",
          "true or false");
    /* header explicitly off. */
    doc = parse_ok("{'sheets': [{'header': false, 'columns': [{'header': 'a'}]}]}");
    assert_int_equal(doc->sheets[0].data.header, 0);
    kiln_doc_free(doc);
}

static void test_strings_never_formulas(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok("{'sheets': [{'rows': [['=SUM(A1:A2)', {'formula': '=A1*2', "
                             "'value': 42}, {'formula': 'B1', 'value': 'x'}]]}]}");
    kiln_row_reader *r;
    kiln_error e;
    assert_int_equal(kiln_rows_open(doc, &doc->sheets[0].data, &r, &e), KILN_E_OK);
    const kiln_cell *cells;
    size_t n;
    assert_int_equal(kiln_rows_next(r, &cells, &n, &e), 1);
    assert_int_equal(n, 3);
    assert_int_equal(cells[0].kind, KILN_CELL_STRING);
    assert_string_equal(cells[0].text, "=SUM(A1:A2)");
    assert_int_equal(cells[1].kind, KILN_CELL_FORMULA);
    assert_string_equal(cells[1].text, "A1*2");
    assert_int_equal(cells[1].cached_kind, KILN_CELL_NUMBER);
    assert_true(cells[1].cached_number == 42);
    assert_string_equal(cells[2].text, "B1");
    assert_int_equal(cells[2].cached_kind, KILN_CELL_STRING);
    assert_string_equal(cells[2].cached_text, "x");
    assert_int_equal(kiln_rows_next(r, &cells, &n, &e), 0);
    kiln_rows_close(r);
    kiln_doc_free(doc);
}

static void test_control_characters(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    /* NUL inside a string: jansson would refuse it without a pointer. */
    fails_raw_opt("{\"sheets\": [{\"rows\": [[\"a\\u0000b\"]]}]}", &o, KILN_E_INVALID_SPEC,
                  "/sheets/0/rows/0/0", "NUL");
    fails_raw_opt("{\"sheets\": [{\"name\": \"a\\u0001\"}]}", &o, KILN_E_INVALID_SPEC,
                  "/sheets/0/name", "U+0001");
    fails_raw_opt("{\"metadata\": {\"title\": \"x\\uFFFE\"}, \"blocks\": [{\"type\": \"rule\"}]}",
                  &o, KILN_E_INVALID_SPEC, "/metadata/title", "U+FFFE");
    fails_raw_opt("{\"blocks\": [{\"type\": \"code\", \"text\": \"\\uffff\"}]}", &o,
                  KILN_E_INVALID_SPEC, "/blocks/0/text", "U+FFFF");
    fails_raw_opt("{\"blocks\": [{\"type\": \"code\", \"text\": \"\\u001b[0m\"}]}", &o,
                  KILN_E_INVALID_SPEC, "/blocks/0/text", "U+001B");
    /* Tab, newline and carriage return are fine. */
    kiln_doc *doc;
    assert_int_equal(
        parse_raw_opt("{\"blocks\": [{\"type\": \"code\", \"text\": \"a\\tb\\nc\\r\"}]}", &o,
                      &doc),
        KILN_E_OK);
    kiln_doc_free(doc);
    /* Invalid UTF-8 is refused by jansson. */
    fails_raw_opt("{\"blocks\": [{\"type\": \"code\", \"text\": \"\xff\"}]}", &o,
                  KILN_E_INVALID_SPEC, "", "not valid JSON");
}

/* ---- limits ---- */

static void test_limit_spec_bytes(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    o.limits.spec_bytes = 20;
    const char *spec = "{\"blocks\": [{\"type\": \"rule\"}]}";
    fails_raw_opt(spec, &o, KILN_E_LIMIT, "", "more than the 20");
    assert_int_equal(errs.items[0].limit, 20);
    assert_int_equal(errs.items[0].actual, strlen(spec));
    o.limits.spec_bytes = strlen(spec);
    kiln_doc *doc;
    assert_int_equal(parse_raw_opt(spec, &o, &doc), KILN_E_OK);
    kiln_doc_free(doc);
    assert_int_equal(kiln_limits_default().spec_bytes, 64u << 20);
}

static void test_limit_depth(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    o.limits.json_depth = 4;
    /* root(1) blocks(2) block(3) runs(4) run(5) */
    fails_opt("{'blocks': [{'type': 'paragraph', 'runs': [{'text': 'x'}]}]}", &o, KILN_E_LIMIT,
              "/blocks/0/runs/0", "deeper than 4");
    assert_int_equal(errs.items[0].limit, 4);
    assert_int_equal(errs.items[0].actual, 5);
    o.limits.json_depth = 5;
    kiln_doc_free(
        parse_ok_opt("{'blocks': [{'type': 'paragraph', 'runs': [{'text': 'x'}]}]}", &o));
    /* The real limit: 65 nested arrays inside a cell. */
    char spec[512] = "{'sheets': [{'rows': [[";
    for (int i = 0; i < 61; i++)
        test_append(spec, sizeof spec, "[");
    for (int i = 0; i < 61; i++)
        test_append(spec, sizeof spec, "]");
    test_append(spec, sizeof spec, "]]}]}");
    kiln_parse_options d = dir_opts();
    fails_opt(spec, &d, KILN_E_LIMIT, NULL, NULL);
}

static void test_limit_sheets(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    o.limits.sheets = 2;
    kiln_doc_free(parse_ok_opt("{'sheets': [{}, {}]}", &o));
    fails_opt("{'sheets': [{}, {}, {}]}", &o, KILN_E_LIMIT, "/sheets", "3 sheets");
    assert_int_equal(errs.items[0].limit, 2);
    assert_int_equal(errs.items[0].actual, 3);
}

static void test_limit_rows(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    o.limits.rows = 3;
    kiln_doc_free(parse_ok_opt("{'sheets': [{'rows': [[1], [2], [3]]}]}", &o));
    /* The header row counts. */
    fails_opt("{'sheets': [{'columns': [{'header': 'h'}], 'rows': [[1], [2], [3]]}]}", &o,
              KILN_E_LIMIT, "/sheets/0/rows", "header row included");
    assert_int_equal(errs.items[0].actual, 4);
    kiln_doc_free(
        parse_ok_opt("{'sheets': [{'columns': [{'header': 'h'}], 'rows': [[1], [2]]}]}", &o));
}

static void test_limit_rows_real(void **state)
{
    (void)state;
    /* 1,048,576 rows + a header is one too many; without the header it fits. */
    size_t n = 1048576;
    size_t cap = n * 3 + 200;
    char *json = malloc(cap);
    assert_non_null(json);
    test_copy(json, cap, "{\"sheets\": [{\"columns\": [{\"header\": \"h\"}], \"rows\": [");
    size_t len = strlen(json);
    for (size_t i = 0; i < n; i++) {
        memcpy(json + len, i ? ",[]" : "[]", i ? 3 : 2);
        len += i ? 3 : 2;
    }
    test_copy(json + len, cap - len, "]}]}");
    kiln_parse_options o = dir_opts();
    fails_raw_opt(json, &o, KILN_E_LIMIT, "/sheets/0/rows", "1048577 rows");
    char *hdr = strstr(json, "{\"header\": \"h\"}");
    memcpy(hdr, "{\"key\":    \"h\"}", 15);
    kiln_doc *doc;
    kiln_status rc = parse_raw_opt(json, &o, &doc);
    if (rc)
        dump_errors();
    assert_int_equal(rc, KILN_E_OK);
    assert_int_equal(doc->sheets[0].data.inline_row_count, n);
    kiln_doc_free(doc);
    free(json);
}

static void test_limit_columns(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    o.limits.columns = 3;
    fails_opt("{'sheets': [{'columns': [{}, {}, {}, {}]}]}", &o, KILN_E_LIMIT,
              "/sheets/0/columns", "4 columns");
    fails_opt("{'sheets': [{'rows': [[1, 2, 3], [1, 2, 3, 4]]}]}", &o, KILN_E_LIMIT,
              "/sheets/0/rows/1", "a row of 4 cells");
    fails_opt("{'sheets': [{'freeze': {'columns': 3}}]}", &o, KILN_E_INVALID_SPEC,
              "/sheets/0/freeze/columns", "0 to 2");
    /* Real value: a row of 16,385 cells. */
    size_t n = 16385, cap = n * 2 + 100;
    char *json = malloc(cap);
    assert_non_null(json);
    test_copy(json, cap, "{\"sheets\": [{\"rows\": [[");
    size_t len = strlen(json);
    for (size_t i = 0; i < n; i++) {
        json[len++] = '1';
        json[len++] = ',';
    }
    len--;
    test_copy(json + len, cap - len, "]]}]}");
    kiln_parse_options d = dir_opts();
    fails_raw_opt(json, &d, KILN_E_LIMIT, "/sheets/0/rows/0", "16385 cells");
    assert_int_equal(errs.items[0].limit, 16384);
    free(json);
}

static void test_limit_cell_chars(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    o.limits.cell_chars = 3;
    /* Code points, not bytes: three two-byte characters fit. */
    kiln_doc_free(parse_ok_opt("{'sheets': [{'rows': [['\xc3\xa9\xc3\xa9\xc3\xa9']]}]}", &o));
    fails_opt("{'sheets': [{'rows': [['abcd']]}]}", &o, KILN_E_LIMIT, "/sheets/0/rows/0/0",
              "4 characters");
    assert_int_equal(errs.items[0].limit, 3);
    assert_int_equal(errs.items[0].actual, 4);
    fails_opt("{'sheets': [{'rows': [[{'formula': 'A1+B1'}]]}]}", &o, KILN_E_LIMIT,
              "/sheets/0/rows/0/0/formula", "more than the 3");
    fails_opt("{'sheets': [{'merges': [{'range': 'A1:B1', 'value': 'long'}]}]}", &o, KILN_E_LIMIT,
              "/sheets/0/merges/0/value", "4 characters");
    /* Real value. */
    size_t n = 32768, cap = n + 100;
    char *json = malloc(cap);
    assert_non_null(json);
    test_copy(json, cap, "{\"sheets\": [{\"rows\": [[\"");
    size_t len = strlen(json);
    memset(json + len, 'x', n);
    test_copy(json + len + n, cap - len - n, "\"]]}]}");
    kiln_parse_options d = dir_opts();
    fails_raw_opt(json, &d, KILN_E_LIMIT, "/sheets/0/rows/0/0", "32768 characters");
    json[len + n - 1] = '"';
    json[len + n] = ']'; /* 32,767 x */
    json[len + n + 1] = ']';
    json[len + n + 2] = '}';
    json[len + n + 3] = ']';
    json[len + n + 4] = '}';
    json[len + n + 5] = '\0';
    kiln_doc *doc;
    assert_int_equal(parse_raw_opt(json, &d, &doc), KILN_E_OK);
    kiln_doc_free(doc);
    free(json);

    /* Formulas: Excel's 8,192 characters, counted as written (the '=' too). */
    n = 8192;
    cap = n + 100;
    json = malloc(cap);
    assert_non_null(json);
    test_copy(json, cap, "{\"sheets\": [{\"rows\": [[{\"formula\": \"=");
    len = strlen(json);
    memset(json + len, '1', n - 1); /* "=111...1": 8,192 characters */
    test_copy(json + len + n - 1, cap - (len + n - 1), "\"}]]}]}");
    doc = NULL;
    assert_int_equal(parse_raw_opt(json, &d, &doc), KILN_E_OK);
    kiln_doc_free(doc);
    memset(json + len, '1', n); /* one more */
    test_copy(json + len + n, cap - (len + n), "\"}]]}]}");
    fails_raw_opt(json, &d, KILN_E_LIMIT, "/sheets/0/rows/0/0/formula", "8193 characters");
    assert_int_equal(errs.items[0].limit, 8192);
    assert_int_equal(errs.items[0].actual, 8193);
    /* In a merge's value too. */
    free(json);
    cap = n + 200;
    json = malloc(cap);
    assert_non_null(json);
    test_copy(json, cap,
              "{\"sheets\": [{\"merges\": [{\"range\": \"A1:B1\", \"value\": {\"formula\": \"");
    len = strlen(json);
    memset(json + len, '1', n + 1);
    test_copy(json + len + n + 1, cap - (len + n + 1), "\"}}]}]}");
    fails_raw_opt(json, &d, KILN_E_LIMIT, "/sheets/0/merges/0/value/formula", "8193 characters");
    free(json);
}

static void test_limit_string_bytes(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    o.limits.string_bytes = 10;
    kiln_doc_free(parse_ok_opt("{'sheets': [{'rows': [['12345', '12345']]}]}", &o));
    fails_opt("{'sheets': [{'rows': [['12345', '123456']]}]}", &o, KILN_E_LIMIT,
              "/sheets/0/rows/0/1", "pass 10 bytes");
    assert_int_equal(errs.items[0].actual, 11);
}

static void test_limit_images(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    o.limits.images = 1;
    const char *two = "{'blocks': [{'type': 'image', 'image': {'path': 'logo.png'}},"
                      "{'type': 'image', 'image': {'path': 'photo.jpg'}}]}";
    fails_opt(two, &o, KILN_E_LIMIT, "/blocks/1/image", "more than 1 images");
    o.limits.images = 2;
    kiln_doc_free(parse_ok_opt(two, &o));
    o.limits.image_bytes = sizeof png_bytes - 1;
    fails_opt(two, &o, KILN_E_LIMIT, "/blocks/0/image/path", "more than the");
    assert_int_equal(errs.items[0].actual, sizeof png_bytes);
    o.limits.image_bytes = KILN_LIMIT_IMAGE_BYTES;
    o.limits.images_bytes = sizeof png_bytes + 10;
    fails_opt(two, &o, KILN_E_LIMIT, "/blocks/1/image/path", "images together");
    /* Base64 data has the same per-image limit. */
    o.limits.images_bytes = KILN_LIMIT_IMAGES_BYTES;
    o.limits.image_bytes = 4;
    fails_opt("{'blocks': [{'type': 'image', 'image': {'data': 'iVBORw0KGgo='}}]}", &o,
              KILN_E_LIMIT, "/blocks/0/image/data", "more than the 4");
}

static void test_limit_list_depth(void **state)
{
    (void)state;
    kiln_parse_options o = dir_opts();
    o.limits.list_depth = 2;
    kiln_doc_free(
        parse_ok_opt("{'blocks': [{'type': 'list', 'items': [{'text': 'a', 'items': ['b']}]}]}",
                     &o));
    fails_opt("{'blocks': [{'type': 'list', 'items': [{'text': 'a', 'items': [{'text': 'b', "
              "'items': ['c']}]}]}]}",
              &o, KILN_E_LIMIT, "/blocks/0/items/0/items/0/items", "3 levels");
    /* Real value: 10 levels. */
    char spec[2048] = "{'blocks': [{'type': 'list', 'items': [";
    for (int i = 0; i < 10; i++)
        test_append(spec, sizeof spec, "{'text': 'x', 'items': [");
    test_append(spec, sizeof spec, "'leaf'");
    for (int i = 0; i < 10; i++)
        test_append(spec, sizeof spec, "]}");
    test_append(spec, sizeof spec, "]}]}");
    kiln_parse_options d = dir_opts();
    fails_opt(spec, &d, KILN_E_LIMIT, NULL, NULL);
    has_error(KILN_E_LIMIT,
              "/blocks/0/items/0/items/0/items/0/items/0/items/0/items/0/items/0/"
              "items/0/items/0/items",
              "10 levels");
}

/* ---- sheets ---- */

static void test_sheet_names(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok("{'sheets': [{}, {'name': 'Sheet1'}, {}, {'name': 'Data'}]}");
    assert_string_equal(doc->sheets[0].name, "Sheet2");
    assert_string_equal(doc->sheets[1].name, "Sheet1");
    assert_string_equal(doc->sheets[2].name, "Sheet3");
    assert_string_equal(doc->sheets[3].name, "Data");
    kiln_doc_free(doc);
    doc = parse_ok("{'sheets': [{'name': '1234567890123456789012345678901'}]}");
    kiln_doc_free(doc);
    /* 31 code points of two bytes each fit. */
    char spec[512] = "{'sheets': [{'name': '";
    for (int i = 0; i < 31; i++)
        test_append(spec, sizeof spec, "\xc3\xa9");
    test_append(spec, sizeof spec, "'}]}");
    kiln_doc_free(parse_ok(spec));
    fails("{'sheets': [{'name': '12345678901234567890123456789012'}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/name", "1 to 31");
    fails("{'sheets': [{'name': ''}]}", KILN_E_INVALID_SPEC, "/sheets/0/name", "1 to 31");
    const char *bad_chars[] = {"a[b", "a]b", "a:b", "a*b", "a?b", "a/b", "a\\\\b", NULL};
    for (int i = 0; bad_chars[i]; i++) {
        char s[128];
        snprintf(s, sizeof s, "{'sheets': [{'name': '%s'}]}", bad_chars[i]);
        fails(s, KILN_E_INVALID_SPEC, "/sheets/0/name", "cannot contain");
    }
    kiln_parse_options o = dir_opts();
    fails_raw_opt("{\"sheets\": [{\"name\": \"'quoted\"}]}", &o, KILN_E_INVALID_SPEC,
                  "/sheets/0/name", "apostrophe");
    fails_raw_opt("{\"sheets\": [{\"name\": \"quoted'\"}]}", &o, KILN_E_INVALID_SPEC,
                  "/sheets/0/name", "apostrophe");
    doc = NULL;
    assert_int_equal(parse_raw_opt("{\"sheets\": [{\"name\": \"it's\"}]}", &o, &doc), KILN_E_OK);
    kiln_doc_free(doc);
    fails("{'sheets': [{'name': 'Sales'}, {'name': 'SALES'}]}", KILN_E_INVALID_SPEC,
          "/sheets/1/name", "ignoring case");
    fails("{'sheets': [{'name': 5}]}", KILN_E_INVALID_SPEC, "/sheets/0/name", "a string");
    /* Case is folded beyond ASCII, as Excel does: accented Latin, Greek, Cyrillic. */
    fails("{'sheets': [{'name': '\xc3\x89t\xc3\xa9'}, {'name': '\xc3\xa9T\xc3\x89'}]}",
          KILN_E_INVALID_SPEC, "/sheets/1/name", "ignoring case");
    fails("{'sheets': [{'name': '\xce\xa3\xce\x99\xce\x93\xce\x9c\xce\x91'},"
          " {'name': '\xcf\x83\xce\xb9\xce\xb3\xce\xbc\xce\xb1'}]}",
          KILN_E_INVALID_SPEC, "/sheets/1/name", "ignoring case");
    fails(
        "{'sheets': [{'name': '\xd0\x94\xd0\x90\xd0\x9d'}, {'name': '\xd0\xb4\xd0\xb0\xd0\xbd'}]}",
        KILN_E_INVALID_SPEC, "/sheets/1/name", "ignoring case");
    /* Different letters stay different; a chart range finds a sheet in any case. */
    doc = parse_ok("{'sheets': [{'name': '\xc3\x89t\xc3\xa9', 'rows': [[1], [2]]},"
                   " {'name': 'Ete', 'charts': [{'kind': 'line', 'series': [{'values':"
                   " '\xc3\xa9T\xc3\x89!A1:A2'}]}]}]}");
    assert_string_equal(doc->sheets[1].charts[0].series[0].values_ref,
                        "'\xc3\x89t\xc3\xa9'!A1:A2");
    kiln_doc_free(doc);
    assert_int_equal(kiln_name_equal_fold("\xc3\x89t\xc3\xa9", "\xc3\xa9T\xc3\x89"), 1);
    assert_int_equal(kiln_name_equal_fold("\xc3\x89t\xc3\xa9", "\xc3\xa9T\xc3\x89x"), 0);
    assert_int_equal(kiln_name_equal_fold("abc", "ABC"), 1);
    assert_int_equal(kiln_name_equal_fold("abc", "abd"), 0);
    /* Excel reserves "History", in any case; names that merely contain it are fine. */
    const char *history[] = {"History", "history", "HISTORY", "hIsToRy", NULL};
    for (int i = 0; history[i]; i++) {
        char s[128];
        snprintf(s, sizeof s, "{'sheets': [{'name': 'Data'}, {'name': '%s'}]}", history[i]);
        fails(s, KILN_E_INVALID_SPEC, "/sheets/1/name", "History");
    }
    kiln_doc_free(parse_ok("{'sheets': [{'name': 'History 2026'}, {'name': 'Histor'},"
                           " {'name': 'Histories'}]}"));
    /* A table block's name becomes a sheet name, so the same rule holds. */
    fails("{'blocks': [{'type': 'table', 'name': 'HISTORY', 'rows': [[1]]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/name", "History");
    /* No control characters, tab and line breaks included. */
    fails("{'sheets': [{'name': 'a\\tb'}]}", KILN_E_INVALID_SPEC, "/sheets/0/name",
          "control characters");
    fails("{'sheets': [{'name': 'a\\nb'}]}", KILN_E_INVALID_SPEC, "/sheets/0/name",
          "control characters");
}

static void test_sheet_features(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok(
        "{'sheets': [{'name': 'S', 'rows': [[null], [1]], 'freeze': {'rows': 1, 'columns': 2},"
        "'table': {'name': 'Sales_2026', 'style': 'Table Style Light 9', 'total_row': true},"
        "'merges': [{'range': 'A1:D1', 'value': {'value': 'Title', 'style': {'bold': true}}},"
        "           {'range': 'A3:B4'}],"
        "'conditional_formats': ["
        "  {'range': 'C2:C50', 'type': 'cell', 'criteria': '>', 'value': 1000,"
        "   'style': {'fill': '#C6EFCE', 'color': '#006100'}},"
        "  {'range': 'C2:C50', 'type': 'cell', 'criteria': 'between', 'value': 1, 'maximum': 9,"
        "   'style': {'bold': true, 'italic': true, 'underline': true, 'strike': true,"
        "             'border': 'thin'}},"
        "  {'range': 'D2:D50', 'type': 'color_scale', 'colors': ['#F8696B', 'FFEB84', '#63be7b']},"
        "  {'range': 'E2:E50', 'type': 'data_bar'}],"
        "'validations': [{'range': 'B2:B100', 'type': 'list', 'values': ['Open', 'Closed'],"
        "  'message': 'Pick one'}],"
        "'comments': [{'cell': 'B2', 'text': 'Checked', 'author': 'Ann'}],"
        "'images': [{'image': {'path': 'logo.png', 'alt': 'Logo'}, 'anchor': 'F2', 'scale': 0.5}],"
        "'tab_color': '#ff0000'}]}");
    const kiln_sheet *s = &doc->sheets[0];
    assert_int_equal(s->freeze_rows, 1);
    assert_int_equal(s->freeze_cols, 2);
    assert_int_equal(s->table, 1);
    assert_string_equal(s->table_name, "Sales_2026");
    assert_string_equal(s->table_style, "Table Style Light 9");
    assert_int_equal(s->table_total_row, 1);
    assert_int_equal(s->merge_count, 2);
    assert_int_equal(s->merges[0].range.last_col, 3);
    assert_int_equal(s->merges[0].value.kind, KILN_CELL_STRING);
    assert_non_null(s->merges[0].value.style);
    assert_int_equal(s->merges[0].value.style->bold, 1);
    assert_int_equal(s->merges[1].value.kind, KILN_CELL_BLANK);
    assert_int_equal(s->cond_format_count, 4);
    assert_int_equal(s->cond_formats[0].criteria, KILN_CRIT_GT);
    assert_true(s->cond_formats[0].value == 1000);
    assert_int_equal(s->cond_formats[0].style.fill, 0xC6EFCE);
    assert_int_equal(s->cond_formats[1].criteria, KILN_CRIT_BETWEEN);
    assert_true(s->cond_formats[1].maximum == 9);
    assert_int_equal(s->cond_formats[1].style.strike, 1);
    assert_int_equal(s->cond_formats[1].style.border, KILN_BORDER_THIN);
    assert_int_equal(s->cond_formats[2].color_count, 3);
    assert_int_equal(s->cond_formats[2].colors[2], 0x63BE7B);
    assert_int_equal(s->cond_formats[3].type, KILN_CF_DATA_BAR);
    assert_int_equal(s->validation_count, 1);
    assert_int_equal(s->validations[0].value_count, 2);
    assert_string_equal(s->validations[0].values[1], "Closed");
    assert_string_equal(s->validations[0].message, "Pick one");
    assert_int_equal(s->comment_count, 1);
    assert_int_equal(s->comments[0].row, 1);
    assert_string_equal(s->comments[0].author, "Ann");
    assert_int_equal(s->image_count, 1);
    assert_int_equal(s->images[0].col, 5);
    assert_true(s->images[0].scale == 0.5);
    assert_string_equal(s->images[0].image->alt, "Logo");
    assert_int_equal(s->tab_color, 0xFF0000);
    kiln_doc_free(doc);

    doc = parse_ok("{'sheets': [{'table': true}]}");
    assert_int_equal(doc->sheets[0].table, 1);
    assert_null(doc->sheets[0].table_name);
    kiln_doc_free(doc);

    fails("{'sheets': [{'table': true, 'autofilter': true}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/autofilter", "exclude each other");
    /* Excel's built-in table styles, spelled exactly. */
    const char *good_styles[] = {"Table Style Light 1",
                                 "Table Style Light 21",
                                 "Table Style Medium 1",
                                 "Table Style Medium 28",
                                 "Table Style Dark 1",
                                 "Table Style Dark 11",
                                 NULL};
    for (int i = 0; good_styles[i]; i++) {
        char spec[256];
        snprintf(spec, sizeof spec, "{'sheets': [{'table': {'style': '%s'}}]}", good_styles[i]);
        doc = parse_ok(spec);
        assert_string_equal(doc->sheets[0].table_style, good_styles[i]);
        kiln_doc_free(doc);
    }
    const char *bad_styles[] = {"Table Style Medium 29",
                                "Table Style Light 22",
                                "Table Style Dark 12",
                                "Table Style Medium 0",
                                "Table Style Medium 02",
                                "Table Style Medium",
                                "table style medium 2",
                                "TableStyleMedium2",
                                "Table Style Medium 2 ",
                                "Table Style Medium 2x",
                                "None",
                                "",
                                "Table Style Pastel 3",
                                NULL};
    for (int i = 0; bad_styles[i]; i++) {
        char spec[256];
        snprintf(spec, sizeof spec, "{'sheets': [{'table': {'style': '%s'}}]}", bad_styles[i]);
        fails(spec, KILN_E_INVALID_SPEC, "/sheets/0/table/style", "not an Excel table style");
    }
    fails("{'sheets': [{'table': {'style': 2}}]}", KILN_E_INVALID_SPEC, "/sheets/0/table/style",
          "a string");
    fails("{'sheets': [{'table': {'name': 'A1'}}]}", KILN_E_INVALID_SPEC, "/sheets/0/table/name",
          "table name");
    fails("{'sheets': [{'table': {'name': 'T'}}, {'table': {'name': 't'}}]}", KILN_E_INVALID_SPEC,
          "/sheets/1/table/name", "already named");
    fails("{'sheets': [{'merges': [{'range': 'A1:C3'}, {'range': 'C3:D4'}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/merges/1/range", "overlaps merge 0");
    fails("{'sheets': [{'merges': [{'range': 'A1:ZZZZ3'}]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/merges/0/range", "A1:D10");
    fails("{'sheets': [{'merges': [{'value': 1}]}]}", KILN_E_INVALID_SPEC, "/sheets/0/merges/0",
          "missing \"range\"");
    /* A merge shows only its top-left cell: it must not hide data in its other
     * cells, nor carry a value when its top-left cell holds one. */
    fails("{'sheets': [{'rows': [['a', 'b', null]], 'merges': [{'range': 'A1:C1'}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/merges/0", "covers B1");
    fails("{'sheets': [{'rows': [['t'], [null, null], [1, {'value': 2}]],"
          " 'merges': [{'range': 'C1'}, {'range': 'A2:B3'}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/merges/1", "covers A3");
    fails("{'sheets': [{'rows': [['Title']], 'merges': [{'range': 'A1:D1', 'value': 'T'}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/merges/0", "top-left cell A1 holds data");
    fails("{'sheets': [{'rows': [['x']], 'merges': [{'range': 'A1', 'value': 'T'}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/merges/0", "top-left cell A1");
    /* The header row counts, and object rows by their keys. */
    fails("{'sheets': [{'columns': [{'header': 'a'}, {'header': 'b'}],"
          " 'merges': [{'range': 'A1:B1', 'value': 'Both'}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/merges/0", "covers B1");
    fails("{'sheets': [{'columns': [{'header': 'a'}, {'key': 'k'}], 'rows': [{'k': 5}],"
          " 'merges': [{'range': 'A2:B2'}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/merges/0", "covers B2");
    /* Fine: data only in the top-left cell, blanks and styled blanks elsewhere,
     * a value over empty cells, a merge below the data. */
    kiln_doc_free(parse_ok("{'sheets': [{'columns': [{'header': 'a'}, {}, {}],"
                           " 'rows': [['x', null, 5], {'a': null}],"
                           " 'merges': [{'range': 'A2:B2'}, {'range': 'A3:B3', 'value': 'v'},"
                           " {'range': 'C2:C3'}, {'range': 'A5:D9', 'value': 1}]}]}"));
    kiln_doc_free(
        parse_ok("{'sheets': [{'rows': [['x', {'value': null, 'style': {'bold': true}}]],"
                 " 'merges': [{'range': 'A1:B1'}]}]}"));
    /* A CSV sheet: the header row is checked, the file's rows are not. */
    fails("{'sheets': [{'data': {'path': 'data.csv'}, 'merges': [{'range': 'A1:B1'}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/merges/0", "covers B1");
    kiln_doc_free(parse_ok("{'sheets': [{'data': {'path': 'data.csv'},"
                           " 'merges': [{'range': 'A2:B2'}]}]}"));
    fails("{'sheets': [{'conditional_formats': [{'range': 'A1', 'type': 'cell', 'criteria': "
          "'between', 'value': 1, 'style': {'bold': true}}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/conditional_formats/0", "need \"maximum\"");
    /* A cell rule needs a style: without one it would do nothing. */
    fails("{'sheets': [{'conditional_formats': [{'range': 'A1', 'type': 'cell', 'criteria': "
          "'>', 'value': 1}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/conditional_formats/0", "missing \"style\"");
    /* Its style holds only what Excel can change conditionally. */
    const char *cell_only[] = {"'size': 14",      "'font': 'Arial'", "'align': 'center'",
                               "'valign': 'top'", "'wrap': true",    NULL};
    for (int i = 0; cell_only[i]; i++) {
        char spec[512], ptr[128], member[16];
        snprintf(spec, sizeof spec,
                 "{'sheets': [{'conditional_formats': [{'range': 'A1', 'type': 'cell', "
                 "'criteria': '>', 'value': 1, 'style': {'bold': true, %s}}]}]}",
                 cell_only[i]);
        snprintf(member, sizeof member, "%.*s", (int)strcspn(cell_only[i] + 1, "'"),
                 cell_only[i] + 1);
        snprintf(ptr, sizeof ptr, "/sheets/0/conditional_formats/0/style/%s", member);
        fails(spec, KILN_E_INVALID_SPEC, ptr, "conditionally");
    }
    fails("{'sheets': [{'conditional_formats': [{'range': 'A1', 'type': 'cell', 'criteria': "
          "'>', 'value': 1, 'style': {'blod': true}}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/conditional_formats/0/style/blod", "unknown member");
    fails("{'sheets': [{'conditional_formats': [{'range': 'A1', 'type': 'cell', 'criteria': "
          "'>', 'value': 1, 'style': {'fill': '#12'}}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/conditional_formats/0/style/fill", "#RRGGBB");
    fails("{'sheets': [{'conditional_formats': [{'range': 'A1', 'type': 'color_scale', "
          "'colors': ['#000000']}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/conditional_formats/0/colors", "2 or 3");
    fails("{'sheets': [{'conditional_formats': [{'range': 'A1', 'type': 'data_bar', "
          "'criteria': '>'}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/conditional_formats/0/criteria", "unknown member");
    fails("{'sheets': [{'conditional_formats': [{'range': 'A1', 'type': 'cell', 'criteria': "
          "'~', 'value': 1}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/conditional_formats/0/criteria", "\"between\"");
    fails("{'sheets': [{'comments': [{'cell': 'B0', 'text': 'x'}]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/comments/0/cell", "cell reference");
    fails("{'sheets': [{'comments': [{'cell': 'B1'}]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/comments/0", "missing \"text\"");
    fails("{'sheets': [{'tab_color': '#12345'}]}", KILN_E_INVALID_SPEC, "/sheets/0/tab_color",
          "#RRGGBB");
    fails("{'sheets': [{'freeze': {'rows': -1}}]}", KILN_E_INVALID_SPEC, "/sheets/0/freeze/rows",
          "integer");
    fails("{'sheets': [{'freeze': {'rows': 1.5}}]}", KILN_E_INVALID_SPEC, "/sheets/0/freeze/rows",
          "integer");
    fails("{'sheets': [{'images': [{'image': {'path': 'logo.png'}}]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/images/0", "missing \"anchor\"");
}

static void test_validation_list_length(void **state)
{
    (void)state;
    /* 25 values of 9 characters + 24 commas = 249; one more character of
     * each of 3 values and a 26th value push it over. */
    char spec[2048] = "{'sheets': [{'validations': [{'range': 'A1:A9', 'values': [";
    for (int i = 0; i < 25; i++)
        test_append(spec, sizeof spec, i ? ",'abcdefghi'" : "'abcdefghi'");
    test_append(spec, sizeof spec, "]}]}]}");
    kiln_doc_free(parse_ok(spec));
    char *p = strstr(spec, "]}]}]}");
    test_copy(p, sizeof spec - (size_t)(p - spec),
              ",'abcde']}]}]}"); /* 249 + 1 + 5 = 255: still fits */
    kiln_doc_free(parse_ok(spec));
    p = strstr(spec, "]}]}]}");
    test_copy(p, sizeof spec - (size_t)(p - spec), ",'x']}]}]}"); /* 257 */
    fails(spec, KILN_E_LIMIT, "/sheets/0/validations/0/values", "Excel allows 255");
    assert_int_equal(errs.items[0].actual, 257);
    /* The message: at most 255 characters (code points), an error beyond. */
    char msg[1400] = "{'sheets': [{'validations': [{'range': 'A1', 'values': ['a'], 'message': '";
    for (int i = 0; i < 255; i++)
        test_append(msg, sizeof msg,
                    i % 2 ? "x" : "\xc3\xa9"); /* two-byte characters count once */
    test_append(msg, sizeof msg, "'}]}]}");
    kiln_doc *doc = parse_ok(msg);
    assert_int_equal(kiln_utf8_count(doc->sheets[0].validations[0].message,
                                     strlen(doc->sheets[0].validations[0].message)),
                     255);
    kiln_doc_free(doc);
    p = strstr(msg, "'}]}]}");
    test_copy(p, sizeof msg - (size_t)(p - msg), "y'}]}]}"); /* 256 */
    fails(msg, KILN_E_LIMIT, "/sheets/0/validations/0/message", "Excel allows 255");
    assert_int_equal(errs.items[0].limit, 255);
    assert_int_equal(errs.items[0].actual, 256);
    fails("{'sheets': [{'validations': [{'range': 'A1', 'values': []}]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/validations/0/values", "non-empty");
    fails("{'sheets': [{'validations': [{'range': 'A1', 'type': 'whole', 'values': ['a']}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/validations/0/type", "\"list\"");
}

/* ---- charts ---- */

static void test_charts(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok(
        "{'sheets': [{'name': 'Data', 'rows': [[1]], 'charts': ["
        "{'kind': 'column', 'title': 'Revenue', 'stacked': true, 'categories': ['Q1', 'Q2'],"
        " 'series': [{'name': '2025', 'values': [10, 12], 'color': '#112233'},"
        "            {'values': [null, 2]}],"
        " 'x_axis': {'title': 'Quarter'}, 'y_axis': {'title': 'EUR k'}, 'legend': 'bottom',"
        " 'anchor': 'H2', 'width': 640, 'height': 320},"
        "{'kind': 'line', 'categories': 'A2:A13', 'series': [{'name': '=B1', 'values': 'B2:B13'},"
        " {'name': '\\u0027Other sheet\\u0027!C1', 'values': '\\u0027Other sheet\\u0027!C2:C13'}]},"
        "{'kind': 'scatter', 'categories': [1, 2.5], 'series': [{'name': 'Wow!', 'values': [3, 4]}]}]},"
        "{'name': 'Other sheet'}]}");
    const kiln_chart *c = &doc->sheets[0].charts[0];
    assert_int_equal(doc->sheets[0].chart_count, 3);
    assert_int_equal(c->kind, KILN_CHART_COLUMN);
    assert_string_equal(c->title, "Revenue");
    assert_int_equal(c->stacked, 1);
    assert_int_equal(c->category_count, 2);
    assert_string_equal(c->categories[1].text, "Q2");
    assert_int_equal(c->series_count, 2);
    assert_string_equal(c->series[0].name, "2025");
    assert_int_equal(c->series[0].color, 0x112233);
    assert_true(c->series[0].values[1] == 12);
    assert_null(c->series[1].name);
    assert_int_equal(c->series[1].color, KILN_COLOR_NONE);
    /* null is a missing point (issue 15) */
    assert_int_equal(c->series[1].value_count, 2);
    assert_true(isnan(c->series[1].values[0]));
    assert_true(c->series[1].values[1] == 2);
    assert_string_equal(c->x_title, "Quarter");
    assert_string_equal(c->y_title, "EUR k");
    assert_int_equal(c->legend, KILN_LEGEND_BOTTOM);
    assert_int_equal(c->anchor_row, 1);
    assert_int_equal(c->anchor_col, 7);
    assert_int_equal(c->width_px, 640);
    assert_string_equal(c->pointer, "/sheets/0/charts/0");
    c = &doc->sheets[0].charts[1];
    assert_string_equal(c->categories_ref, "'Data'!A2:A13");
    assert_string_equal(c->series[0].values_ref, "'Data'!B2:B13");
    assert_string_equal(c->series[0].name_ref, "'Data'!B1");
    assert_string_equal(c->series[1].values_ref, "'Other sheet'!C2:C13");
    assert_string_equal(c->series[1].name_ref, "'Other sheet'!C1");
    assert_int_equal(c->anchor_row, -1);
    assert_int_equal(c->width_px, 480);
    assert_int_equal(c->height_px, 288);
    c = &doc->sheets[0].charts[2];
    assert_string_equal(c->series[0].name, "Wow!");
    assert_null(c->series[0].name_ref);
    assert_int_equal(c->categories[1].is_number, 1);
    assert_string_equal(c->categories[1].text, "2.5");
    kiln_doc_free(doc);

    fails("{'sheets': [{'charts': [{'kind': 'column', 'categories': ['a', 'b'], 'series': "
          "[{'values': [1, 2]}, {'values': [1]}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/series/1/values", "1 values for 2");
    fails("{'sheets': [{'charts': [{'kind': 'pie', 'categories': ['a'], 'series': "
          "[{'values': [1]}, {'values': [2]}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/series", "exactly one series");
    fails("{'blocks': [{'type': 'chart', 'kind': 'scatter', 'categories': ['a'], 'series': "
          "[{'values': [1]}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/categories/0", "x values");
    fails("{'blocks': [{'type': 'chart', 'kind': 'line', 'categories': 'A1:A2', 'series': "
          "[{'values': [1, 2]}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/categories", "only in a sheet");
    fails("{'sheets': [{'charts': [{'kind': 'line', 'categories': 'Nope!A1:A2', 'series': "
          "[{'values': 'B1:B2'}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/categories", "no sheet named \"Nope\"");
    fails("{'sheets': [{'charts': [{'kind': 'line', 'categories': 'A1:A2', 'series': "
          "[{'values': 'B1:B3'}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/series/0/values", "3 values for 2");
    fails("{'sheets': [{'charts': [{'kind': 'line', 'series': [{'values': 'B1:'}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/series/0/values", "range");
    /* A chart range is one row or one column, never a block of cells. */
    fails("{'sheets': [{'charts': [{'kind': 'line', 'series': [{'values': 'B2:D6'}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/series/0/values", "one row or one column");
    fails("{'sheets': [{'charts': [{'kind': 'line', 'categories': '=A1:B2', 'series': "
          "[{'values': 'C1:C4'}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/categories", "one row or one column");
    kiln_doc_free(parse_ok("{'sheets': [{'charts': [{'kind': 'line', 'categories': 'B1:D1',"
                           " 'series': [{'values': 'B2:D2'}, {'values': 'B3:D3'}]}]}]}"));
    fails("{'sheets': [{'charts': [{'kind': 'line', 'series': [{'name': '=B0', 'values': "
          "[1]}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/series/0/name", "cell reference");
    fails("{'sheets': [{'charts': [{'kind': 'line', 'series': [{'name': 'Gone!B1', 'values': "
          "[1]}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/series/0/name", "no sheet named \"Gone\"");
    fails("{'sheets': [{'charts': [{'kind': 'radar', 'series': [{'values': [1]}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/kind", "\"column\"");
    fails("{'sheets': [{'charts': [{'kind': 'line', 'stacked': true, 'series': [{'values': "
          "[1]}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/stacked", "column, bar and area");
    fails("{'sheets': [{'charts': [{'kind': 'line'}]}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/charts/0", "missing \"series\"");
    fails("{'sheets': [{'charts': [{'kind': 'line', 'series': [{'values': [1, 'x']}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/series/0/values/1", "a number");
    /* null is a missing value, never a category or a whole series */
    fails("{'blocks': [{'type': 'chart', 'kind': 'line', 'categories': ['a', null], 'series': "
          "[{'values': [1, 2]}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/categories/1", "a string or a number");
    fails("{'blocks': [{'type': 'chart', 'kind': 'line', 'series': [{'values': null}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/series/0/values", "(or null)");
    fails("{'blocks': [{'type': 'chart', 'kind': 'line', 'anchor': 'A1', 'series': [{'values': "
          "[1]}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/anchor", "unknown member");
    fails("{'sheets': [{'charts': [{'kind': 'line', 'legend': 'center', 'series': [{'values': "
          "[1]}]}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/legend", "\"none\"");

    /* Pie and doughnut charts have no axes, so no axis titles, wherever they are. */
    fails("{'blocks': [{'type': 'chart', 'kind': 'pie', 'categories': ['a'], 'series': "
          "[{'values': [1]}], 'x_axis': {'title': 'X'}}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/x_axis", "no axes");
    fails("{'sheets': [{'charts': [{'kind': 'doughnut', 'categories': ['a'], 'series': "
          "[{'values': [1]}], 'y_axis': {'title': 'Y'}}]}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/charts/0/y_axis", "no axes");
    fails("{'slides': [{'layout': 'chart', 'chart': {'kind': 'pie', 'categories': ['a'], "
          "'series': [{'values': [1]}], 'x_axis': {}, 'y_axis': {'title': 'Y'}}}]}",
          KILN_E_INVALID_SPEC, "/slides/0/chart/x_axis", "no axes");
    has_error(KILN_E_INVALID_SPEC, "/slides/0/chart/y_axis", "no axes");
    doc = parse_ok("{'blocks': [{'type': 'chart', 'kind': 'bar', 'categories': ['a'],"
                   " 'series': [{'values': [1]}], 'x_axis': {'title': 'X'}}]}");
    assert_string_equal(doc->blocks[0].chart->x_title, "X");
    kiln_doc_free(doc);

    doc = parse_ok("{'blocks': [{'type': 'chart', 'kind': 'pie', 'caption': 'Share',"
                   " 'categories': ['a', 'b'], 'series': [{'values': [1, 2]}]}]}");
    assert_int_equal(doc->blocks[0].kind, KILN_BLOCK_CHART);
    assert_string_equal(doc->blocks[0].chart->caption, "Share");
    assert_int_equal(doc->blocks[0].chart->kind, KILN_CHART_PIE);
    kiln_doc_free(doc);
}

/* ---- images ---- */

static void test_images(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok(
        "{'blocks': [{'type': 'image', 'image': {'path': 'logo.png'},"
        " 'caption': 'Logo', 'width': '5cm'},"
        "{'type': 'image', 'image': {'path': './sub//inner.png'}},"
        "{'type': 'image', 'image': {'path': 'photo.jpg', 'format': 'jpeg'}},"
        "{'type': 'image', 'image': {'data': '" PNG_3X2_BASE64 "',"
        " 'format': 'png'}}]}");
    const kiln_image *im = doc->blocks[0].image;
    assert_int_equal(im->format, KILN_IMAGE_PNG);
    assert_int_equal(im->width_px, 3);
    assert_int_equal(im->height_px, 2);
    assert_true(im->dpi_x > 299.9 && im->dpi_x < 300.1);
    assert_int_equal(im->size, sizeof png_bytes);
    assert_memory_equal(im->data, png_bytes, sizeof png_bytes);
    assert_string_equal(im->name, "logo.png");
    assert_string_equal(im->alt, "");
    assert_string_equal(doc->blocks[0].caption, "Logo");
    assert_true(doc->blocks[0].width_pt > 141.7 && doc->blocks[0].width_pt < 141.8);
    assert_string_equal(doc->blocks[1].image->name, "inner.png");
    im = doc->blocks[2].image;
    assert_int_equal(im->format, KILN_IMAGE_JPEG);
    assert_int_equal(im->width_px, 40);
    assert_int_equal(im->height_px, 30);
    assert_true(im->dpi_x == 72 && im->dpi_y == 144);
    im = doc->blocks[3].image;
    assert_int_equal(im->format, KILN_IMAGE_PNG);
    assert_int_equal(im->width_px, 3);
    assert_string_equal(im->name, "image4.png");
    kiln_doc_free(doc);

    fails("{'blocks': [{'type': 'image', 'image': {'path': '../logo.png'}}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/image/path", "\"..\"");
    fails("{'blocks': [{'type': 'image', 'image': {'path': 'sub/../logo.png'}}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/image/path", "\"..\"");
    fails("{'blocks': [{'type': 'image', 'image': {'path': '/etc/passwd'}}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/image/path", "absolute");
    fails("{'blocks': [{'type': 'image', 'image': {'path': 'link.png'}}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/image/path", "symbolic link");
    fails("{'blocks': [{'type': 'image', 'image': {'path': 'linkdir/inner.png'}}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/image/path", "symbolic link");
    fails("{'blocks': [{'type': 'image', 'image': {'path': 'missing.png'}}]}", KILN_E_INPUT,
          "/blocks/0/image/path", "No such file");
    fails("{'blocks': [{'type': 'image', 'image': {'path': 'sub'}}]}", KILN_E_INPUT,
          "/blocks/0/image/path", "regular file");
    fails("{'blocks': [{'type': 'image', 'image': {'path': 'notimage.png'}}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/image/path", "neither a PNG nor a JPEG");
    fails("{'blocks': [{'type': 'image', 'image': {'path': 'photo.jpg', 'format': 'png'}}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/image/format", "JPEG");
    fails("{'blocks': [{'type': 'image', 'image': {'path': 'logo.png', 'data': 'AA=='}}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/image", "exactly one");
    fails("{'blocks': [{'type': 'image', 'image': {'data': '@@@@'}}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/image/data", "base64");
    /* The base64 itself: a data: URL prefix is an error, not stripped. */
    fails("{'blocks': [{'type': 'image', 'image': {'data': 'data:image/png;base64," PNG_3X2_BASE64
          "'}}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/image/data", "data:");
    fails("{'blocks': [{'type': 'image', 'image': {'data': 'DATA:,AAAA'}}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/image/data", "data:");
    fails("{'blocks': [{'type': 'image', 'image': {'url': 'http://x'}}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/image/url", "unknown member");
    fails("{'blocks': [{'type': 'image'}]}", KILN_E_INVALID_SPEC, "/blocks/0",
          "missing \"image\"");
}

/* The image as the file "broken.img" parses (accepted) or fails with fragment
 * in the message, at the image's path. */
static void image_file_check(const unsigned char *data, size_t len, const char *fragment)
{
    write_file("broken.img", data, len);
    const char *spec = "{'blocks': [{'type': 'image', 'image': {'path': 'broken.img'}}]}";
    if (!fragment) {
        kiln_doc_free(parse_ok(spec));
        return;
    }
    fails(spec, KILN_E_INVALID_SPEC, "/blocks/0/image/path", fragment);
}

/* png_bytes with its parts spliced: bytes [0, cut) then append (when given). */
static unsigned char *png_spliced(size_t cut, const unsigned char *append, size_t append_len,
                                  size_t *len)
{
    unsigned char *buf = malloc(cut + append_len + 1);
    assert_non_null(buf);
    memcpy(buf, png_bytes, cut);
    if (append_len)
        memcpy(buf + cut, append, append_len);
    *len = cut + append_len;
    return buf;
}

/* The structure of a PNG or JPEG is checked without decoding: a file cut
 * short, damaged, or without image data is an error naming the image, not a
 * broken picture in the output. */
static void test_image_structure(void **state)
{
    (void)state;
    /* Offsets in png_bytes: IHDR ends at 33, pHYs at 54, IDAT at 82, IEND at 94. */
    static const unsigned char iend[] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
    size_t len;
    unsigned char *b;

    image_file_check(png_bytes, sizeof png_bytes, NULL);
    /* Signature and IHDR only: the "first 100 bytes of a PNG" kind of file. */
    image_file_check(png_bytes, 33, "PNG has no image data (IDAT)");
    image_file_check(png_bytes, 54, "PNG has no image data (IDAT)");
    /* Cut inside the IDAT chunk, inside a chunk's header. */
    image_file_check(png_bytes, 70, "truncated PNG chunk IDAT");
    image_file_check(png_bytes, 58, "truncated PNG chunk");
    /* Complete chunks, but no IEND. */
    image_file_check(png_bytes, 82, "no end chunk (IEND)");
    /* IHDR, pHYs, IEND: a structure without data. */
    b = png_spliced(54, iend, sizeof iend, &len);
    image_file_check(b, len, "PNG has no image data (IDAT)");
    free(b);
    /* Bytes after IEND are ignored, as decoders do. */
    b = png_spliced(sizeof png_bytes, (const unsigned char *)"trailing", 8, &len);
    image_file_check(b, len, NULL);
    free(b);
    /* A damaged byte in the data: the chunk's CRC no longer matches. */
    b = png_spliced(sizeof png_bytes, NULL, 0, &len);
    b[70] ^= 0x01;
    image_file_check(b, len, "PNG chunk IDAT at byte 54 has a wrong CRC");
    free(b);
    /* A chunk length past the end of the file. */
    b = png_spliced(sizeof png_bytes, NULL, 0, &len);
    b[54] = 0x40;
    image_file_check(b, len, "truncated PNG chunk IDAT");
    free(b);
    /* Bit depth 3 does not exist (the CRC made right, so the format is what fails). */
    b = png_spliced(sizeof png_bytes, NULL, 0, &len);
    b[24] = 3;
    uint32_t crc = (uint32_t)crc32(0L, b + 12, 17);
    b[29] = (unsigned char)(crc >> 24);
    b[30] = (unsigned char)(crc >> 16);
    b[31] = (unsigned char)(crc >> 8);
    b[32] = (unsigned char)crc;
    image_file_check(b, len, "invalid pixel format");
    free(b);

    /* JPEG: jpeg_bytes is SOI, APP0 [2, 20), SOF0 [20, 39), SOS [39, 53), scan data
     * [53, 60), EOI [60, 62). */
    unsigned char j[sizeof jpeg_bytes + 16];
    image_file_check(jpeg_bytes, sizeof jpeg_bytes, NULL);
    /* No scan: SOI, APP0, SOF0, EOI. */
    memcpy(j, jpeg_bytes, 39);
    j[39] = 0xFF;
    j[40] = 0xD9;
    image_file_check(j, 41, "JPEG has no image data (SOS)");
    /* No scan and no EOI. */
    image_file_check(jpeg_bytes, 39, "JPEG has no image data (SOS)");
    /* Cut in the scan data, or just before the EOI's second byte. */
    image_file_check(jpeg_bytes, 57, "JPEG has no end-of-image marker");
    image_file_check(jpeg_bytes, sizeof jpeg_bytes - 1, "JPEG has no end-of-image marker");
    /* Cut inside a segment. */
    image_file_check(jpeg_bytes, 30, "truncated JPEG segment at byte 20");
    /* Bytes after EOI are accepted: cameras append data there. */
    memcpy(j, jpeg_bytes, sizeof jpeg_bytes);
    memcpy(j + sizeof jpeg_bytes,
           "appended\xFF\xD8"
           "data",
           14);
    image_file_check(j, sizeof jpeg_bytes + 14, NULL);
    /* The scan before the frame header. */
    memcpy(j, jpeg_bytes, 20);
    memcpy(j + 20, jpeg_bytes + 39, sizeof jpeg_bytes - 39);
    image_file_check(j, 20 + sizeof jpeg_bytes - 39, "without a frame header (SOF)");
    /* A segment length below 2. */
    memcpy(j, jpeg_bytes, sizeof jpeg_bytes);
    j[5] = 1;
    image_file_check(j, sizeof jpeg_bytes, "damaged segment length");

    /* Inline data gets the same checks, at the data member. */
    fails("{'blocks': [{'type': 'image', 'image': {'data': "
          "'iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFN'}}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/image/data", "PNG has no image data (IDAT)");
}

/* ---- top level ---- */

static void test_page(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok("{'page': {'size': 'Letter', 'orientation': 'landscape',"
                             " 'margins': {'top': '20mm', 'bottom': '2.5cm', 'left': '1in',"
                             " 'right': 36}}, 'blocks': [{'type': 'rule'}]}");
    assert_int_equal(doc->page.size, KILN_PAGE_LETTER);
    assert_int_equal(doc->page.landscape, 1);
    assert_true(doc->page.width_pt == 792 && doc->page.height_pt == 612);
    assert_true(doc->page.margin_top > 56.69 && doc->page.margin_top < 56.70);
    assert_true(doc->page.margin_bottom > 70.86 && doc->page.margin_bottom < 70.87);
    assert_true(doc->page.margin_left == 72);
    assert_true(doc->page.margin_right == 36);
    assert_true(doc->page.margin_top + doc->page.margin_bottom > 0);
    kiln_doc_free(doc);
    const char *sizes[][3] = {{"A4", "595.28", "841.89"},
                              {"Legal", "612", "1008"},
                              {"A3", "841.89", "1190.55"},
                              {"A5", "419.53", "595.28"}};
    for (int i = 0; i < 4; i++) {
        char spec[200];
        snprintf(spec, sizeof spec, "{'page': {'size': '%s'}, 'blocks': [{'type': 'rule'}]}",
                 sizes[i][0]);
        doc = parse_ok(spec);
        assert_true(doc->page.width_pt == atof(sizes[i][1]));
        assert_true(doc->page.height_pt == atof(sizes[i][2]));
        kiln_doc_free(doc);
    }
    doc = parse_ok("{'page': {'margins': {'top': '4in'}}, 'blocks': [{'type': 'rule'}]}");
    assert_true(doc->page.margin_top == 288);
    kiln_doc_free(doc);
    fails("{'page': {'margins': {'top': '5in'}}, 'blocks': [{'type': 'rule'}]}",
          KILN_E_INVALID_SPEC, "/page/margins/top", "0pt to 288pt");
    fails("{'page': {'margins': {'top': '1 in'}}, 'blocks': [{'type': 'rule'}]}",
          KILN_E_INVALID_SPEC, "/page/margins/top", "length");
    fails("{'page': {'margins': {'top': '1px'}}, 'blocks': [{'type': 'rule'}]}",
          KILN_E_INVALID_SPEC, "/page/margins/top", "length");
    fails("{'page': {'margins': {'middle': 1}}, 'blocks': [{'type': 'rule'}]}",
          KILN_E_INVALID_SPEC, "/page/margins/middle", "unknown member");
    fails("{'page': {'size': 'B5'}, 'blocks': [{'type': 'rule'}]}", KILN_E_INVALID_SPEC,
          "/page/size", "\"A4\", \"Letter\", \"Legal\", \"A3\" or \"A5\"");
}

static void test_metadata(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok("{'metadata': {'title': 'T', 'author': 'A', 'subject': 'S',"
                             " 'description': 'D', 'company': 'C', 'category': 'K',"
                             " 'keywords': ['a', 'b', 'c'], 'created': '2026-03-01T09:30:00Z'},"
                             " 'blocks': [{'type': 'rule'}]}");
    assert_string_equal(doc->metadata.title, "T");
    assert_string_equal(doc->metadata.company, "C");
    assert_string_equal(doc->metadata.keywords, "a, b, c");
    assert_int_equal(doc->metadata.has_created, 1);
    assert_int_equal(doc->metadata.created, 1772357400);
    kiln_doc_free(doc);
    doc = parse_ok("{'metadata': {'keywords': 'x, y', 'created': '2026-03-01'},"
                   " 'blocks': [{'type': 'rule'}]}");
    assert_string_equal(doc->metadata.keywords, "x, y");
    assert_int_equal(doc->metadata.created, 1772323200);
    kiln_doc_free(doc);
    /* created is a point in time: a zone offset is applied to reach UTC
     * (09:30+05:00 is 04:30Z, 09:30-05:30 is 15:00Z). */
    doc = parse_ok("{'metadata': {'created': '2026-03-01T09:30:00+05:00'},"
                   " 'blocks': [{'type': 'rule'}]}");
    assert_int_equal(doc->metadata.created, 1772357400 - 5 * 3600);
    kiln_doc_free(doc);
    doc = parse_ok("{'metadata': {'created': '2026-03-01T09:30-0530'},"
                   " 'blocks': [{'type': 'rule'}]}");
    assert_int_equal(doc->metadata.created, 1772357400 + 5 * 3600 + 30 * 60);
    kiln_doc_free(doc);
    doc = parse_ok("{'metadata': {'created': '2026-04-02T09:00:00+05:00'},"
                   " 'blocks': [{'type': 'rule'}]}");
    assert_int_equal(doc->metadata.created, 1775102400); /* 2026-04-02T04:00:00Z */
    kiln_doc_free(doc);
    /* Across midnight and the year: 00:30+01:00 on Jan 1 is 23:30Z on Dec 31. */
    doc = parse_ok("{'metadata': {'created': '2026-01-01T00:30:00+01:00'},"
                   " 'blocks': [{'type': 'rule'}]}");
    assert_int_equal(doc->metadata.created, 1767223800);
    kiln_doc_free(doc);
    fails("{'metadata': {'created': 'March 1'}, 'blocks': [{'type': 'rule'}]}",
          KILN_E_INVALID_SPEC, "/metadata/created", "ISO 8601");
    fails("{'metadata': {'keywords': ['a', 1]}, 'blocks': [{'type': 'rule'}]}",
          KILN_E_INVALID_SPEC, "/metadata/keywords/1", "a string");
    fails("{'metadata': {'title': 1}, 'blocks': [{'type': 'rule'}]}", KILN_E_INVALID_SPEC,
          "/metadata/title", "a string");
}

static void test_theme(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok("{'theme': {'font': 'Arial', 'font_size': 10,"
                             " 'accent_colors': ['#010203', '040506']},"
                             " 'blocks': [{'type': 'rule'}]}");
    assert_string_equal(doc->theme.font, "Arial");
    assert_string_equal(doc->theme.heading_font, "Arial");
    assert_true(doc->theme.font_size == 10);
    assert_int_equal(doc->theme.accent_count, 2);
    assert_int_equal(doc->theme.accent_colors[1], 0x040506);
    assert_int_equal(doc->theme.header_fill, 0x010203);
    kiln_doc_free(doc);
    doc = parse_ok("{'theme': {'heading_font': 'Georgia', 'header_fill': '#abcdef',"
                   " 'header_font_color': '#000000'}, 'blocks': [{'type': 'rule'}]}");
    assert_string_equal(doc->theme.heading_font, "Georgia");
    assert_string_equal(doc->theme.font, "Calibri");
    assert_int_equal(doc->theme.header_fill, 0xABCDEF);
    assert_int_equal(doc->theme.header_font_color, 0);
    kiln_doc_free(doc);
    fails("{'theme': {'font_size': 5}, 'blocks': [{'type': 'rule'}]}", KILN_E_INVALID_SPEC,
          "/theme/font_size", "6 to 72");
    fails("{'theme': {'accent_colors': []}, 'blocks': [{'type': 'rule'}]}", KILN_E_INVALID_SPEC,
          "/theme/accent_colors", "1 to 12");
    fails("{'theme': {'accent_colors': ['#000000', 'blue']}, 'blocks': [{'type': 'rule'}]}",
          KILN_E_INVALID_SPEC, "/theme/accent_colors/1", "#RRGGBB");
}

/* ---- blocks and slides ---- */

static void test_blocks(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok(
        "{'blocks': ["
        "{'type': 'heading', 'level': 2, 'text': 'Intro'},"
        "{'type': 'paragraph', 'align': 'justify', 'runs': [{'text': 'a', 'bold': true,"
        "  'superscript': true, 'color': '#FF0000', 'size': 9, 'font': 'Mono',"
        "  'link': 'https://example.com'}, {'text': 'b', 'code': true}]},"
        "{'type': 'list', 'ordered': true, 'start': 3, 'items': ['one',"
        "  {'runs': [{'text': 'two', 'italic': true}], 'items': ['two.a']}]},"
        "{'type': 'table', 'columns': [{'header': 'h'}], 'rows': [[1]], 'caption': 'C',"
        "  'name': 'Tbl'},"
        "{'type': 'page_break'}, {'type': 'toc'}, {'type': 'toc', 'title': 'T', 'levels': 2},"
        "{'type': 'code', 'text': 'x = 1', 'language': 'python'},"
        "{'type': 'quote', 'text': 'q', 'attribution': 'me'}, {'type': 'rule'}]}");
    assert_int_equal(doc->block_count, 10);
    const kiln_block *b = doc->blocks;
    assert_int_equal(b[0].kind, KILN_BLOCK_HEADING);
    assert_int_equal(b[0].level, 2);
    assert_int_equal(b[0].text.run_count, 1);
    assert_string_equal(b[0].text.runs[0].text, "Intro");
    assert_int_equal(b[0].text.runs[0].color, KILN_COLOR_NONE);
    assert_string_equal(b[0].pointer, "/blocks/0");
    assert_int_equal(b[1].align, KILN_ALIGN_JUSTIFY);
    assert_int_equal(b[1].text.run_count, 2);
    assert_int_equal(b[1].text.runs[0].flags, KILN_RUN_BOLD | KILN_RUN_SUPERSCRIPT);
    assert_int_equal(b[1].text.runs[0].color, 0xFF0000);
    assert_true(b[1].text.runs[0].size == 9);
    assert_string_equal(b[1].text.runs[0].font, "Mono");
    assert_string_equal(b[1].text.runs[0].link, "https://example.com");
    assert_int_equal(b[1].text.runs[1].flags, KILN_RUN_CODE);
    assert_int_equal(b[2].list.ordered, 1);
    assert_int_equal(b[2].list.start, 3);
    assert_int_equal(b[2].list.item_count, 2);
    assert_string_equal(b[2].list.items[1].text.runs[0].text, "two");
    assert_non_null(b[2].list.items[1].children);
    assert_string_equal(b[2].list.items[1].children->items[0].text.runs[0].text, "two.a");
    assert_null(b[2].list.items[0].children);
    assert_int_equal(b[3].kind, KILN_BLOCK_TABLE);
    assert_string_equal(b[3].table->caption, "C");
    assert_string_equal(b[3].table->name, "Tbl");
    assert_int_equal(b[3].table->data.header, 1);
    assert_string_equal(b[3].table->data.pointer, "/blocks/3/rows");
    assert_int_equal(b[4].kind, KILN_BLOCK_PAGE_BREAK);
    assert_string_equal(b[5].title, "Contents");
    assert_int_equal(b[5].level, 3);
    assert_string_equal(b[6].title, "T");
    assert_int_equal(b[6].level, 2);
    assert_string_equal(b[7].code, "x = 1");
    assert_string_equal(b[7].language, "python");
    assert_string_equal(b[8].attribution, "me");
    assert_int_equal(b[9].kind, KILN_BLOCK_RULE);
    kiln_doc_free(doc);

    fails("{'blocks': [{'type': 'heading', 'level': 7, 'text': 'x'}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/level", "1 to 6");
    fails("{'blocks': [{'type': 'heading'}]}", KILN_E_INVALID_SPEC, "/blocks/0",
          "\"text\" or \"runs\"");
    fails("{'blocks': [{'type': 'paragraph', 'text': 'a', 'runs': []}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/runs", "not both");
    /* runs is a non-empty array, in blocks and list items alike. */
    fails("{'blocks': [{'type': 'paragraph', 'runs': []}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/runs", "at least one run");
    fails("{'blocks': [{'type': 'list', 'items': [{'runs': []}]}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/items/0/runs", "at least one run");
    fails("{'blocks': [{'type': 'quote', 'runs': 'x'}]}", KILN_E_INVALID_SPEC, "/blocks/0/runs",
          "array of runs");
    fails("{'blocks': [{'type': 'paragraph', 'runs': [{'text': 'a', 'superscript': true,"
          " 'subscript': true}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/runs/0/subscript", "exclude each other");
    fails("{'blocks': [{'type': 'paragraph', 'runs': [{'text': 'a', 'link': 'file:///x'}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/runs/0/link", "http://");
    fails("{'blocks': [{'type': 'video'}]}", KILN_E_INVALID_SPEC, "/blocks/0/type",
          "\"heading\"");
    fails("{'blocks': [{'text': 'x'}]}", KILN_E_INVALID_SPEC, "/blocks/0", "missing \"type\"");
    fails("{'blocks': [{'type': 'list', 'items': [1]}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/items/0", "list item");
    fails("{'blocks': [{'type': 'list', 'start': -1, 'items': []}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/start", "integer");
    /* A list needs at least one item, and so does a nested list. */
    fails("{'blocks': [{'type': 'list', 'items': []}]}", KILN_E_INVALID_SPEC, "/blocks/0/items",
          "at least one list item");
    fails("{'blocks': [{'type': 'list', 'items': ['a', {'text': 'b', 'items': []}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/items/1/items", "at least one list item");
    fails("{'blocks': [{'type': 'list'}]}", KILN_E_INVALID_SPEC, "/blocks/0",
          "missing \"items\"");
    fails("{'blocks': [{'type': 'code'}]}", KILN_E_INVALID_SPEC, "/blocks/0", "missing \"text\"");
    fails("{'blocks': [{'type': 'rule', 'text': 'x'}]}", KILN_E_INVALID_SPEC, "/blocks/0/text",
          "unknown member");
    fails("{'blocks': [{'type': 'table', 'name': 'a:b', 'rows': []}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/name", "cannot contain");
    fails("{'blocks': [{'type': 'table', 'rows': [[[1]]]}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/rows/0/0", "expected a number");
    fails("{'blocks': [{'type': 'image', 'image': {'path': 'logo.png'}, 'width': '0mm'}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/width", "length");
}

/* A nested list says "ordered" and "start" for itself as a list object, or
 * follows its parent as a bare array (issue 15). */
static void test_nested_list_numbering(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok(
        "{'blocks': [{'type': 'list', 'items': ["
        "  {'text': 'a', 'items': {'ordered': true, 'start': 3, 'items': ["
        "    {'text': 'a.3', 'items': {'ordered': false, 'items': ['deep']}}]}},"
        "  {'text': 'b', 'items': ['b.1']}]},"
        " {'type': 'list', 'ordered': true, 'start': 5, 'items': ["
        "  {'text': 'c', 'items': {'items': ['c.1']}}, {'text': 'd', 'items': ['d.1']}]}],"
        " 'slides': [{'bullets': {'ordered': true, 'items': ["
        "  {'text': 'e', 'items': {'ordered': false, 'items': ['e.1']}}]}}]}");
    const kiln_list *l = &doc->blocks[0].list;
    assert_int_equal(l->ordered, 0);
    const kiln_list *a = l->items[0].children;
    assert_int_equal(a->ordered, 1);
    assert_int_equal(a->start, 3);
    assert_int_equal(a->items[0].children->ordered, 0);
    assert_string_equal(a->items[0].children->items[0].text.runs[0].text, "deep");
    assert_int_equal(l->items[1].children->ordered, 0);
    assert_int_equal(l->items[1].children->start, 1);
    l = &doc->blocks[1].list;
    /* Numbered as the parent is, counting from 1, unless it says otherwise. */
    assert_int_equal(l->items[0].children->ordered, 1);
    assert_int_equal(l->items[0].children->start, 1);
    assert_int_equal(l->items[1].children->ordered, 1);
    assert_int_equal(l->items[1].children->start, 1);
    l = &doc->slides[0].bullets;
    assert_int_equal(l->ordered, 1);
    assert_int_equal(l->items[0].children->ordered, 0);
    kiln_doc_free(doc);

    fails("{'blocks': [{'type': 'list', 'items': [{'text': 'a', 'items': {'ordered': true}}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/items/0/items", "missing \"items\"");
    fails("{'blocks': [{'type': 'list', 'items': [{'text': 'a', 'items': {'type': 'list',"
          " 'items': ['x']}}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/items/0/items/type", "unknown member");
    fails("{'blocks': [{'type': 'list', 'items': [{'text': 'a', 'items': {'start': -1,"
          " 'items': ['x']}}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/items/0/items/start", "integer");
    fails("{'blocks': [{'type': 'list', 'items': [{'text': 'a', 'items': {'items': []}}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/items/0/items/items", "at least one list item");
    fails("{'blocks': [{'type': 'list', 'items': [{'text': 'a', 'items': 'x'}]}]}",
          KILN_E_INVALID_SPEC, "/blocks/0/items/0/items", "array of list items");
}

/* One rule for line breaks (docs/spec.md "Line breaks"): CR LF and a lone CR
 * are LF in every string; chart text and the page header are one line. */
static void test_line_breaks(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok(
        "{'page': {'header': 'h1\\r\\nh2'},"
        " 'blocks': [{'type': 'paragraph', 'text': 'a\\rb\\r\\nc\\n\\rd'},"
        " {'type': 'chart', 'kind': 'line', 'title': 't1\\rt2', 'categories': ['c1\\nc2'],"
        "  'series': [{'name': 'n1\\r\\nn2', 'values': [1]}], 'y_axis': {'title': 'y1\\ny2'}}]}");
    const kiln_run *r = &doc->blocks[0].text.runs[0];
    assert_string_equal(r->text, "a\nb\nc\n\nd"); /* LF CR is two breaks */
    assert_int_equal(r->len, 8);
    const kiln_chart *c = doc->blocks[1].chart;
    assert_string_equal(c->title, "t1 t2");
    assert_string_equal(c->categories[0].text, "c1 c2");
    assert_string_equal(c->series[0].name, "n1 n2");
    assert_string_equal(c->y_title, "y1 y2");
    assert_string_equal(doc->page.header_text, "h1 h2");
    kiln_doc_free(doc);
}

static void test_markdown_block(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok("{'blocks': [{'type': 'heading', 'text': 'A'},"
                             " {'type': 'markdown', 'text': '# Title\\n\\nSome *text*.\\n\\n"
                             "- a\\n- b\\n'}, {'type': 'rule'}]}");
    /* The markdown block expands in place: heading, paragraph, list. */
    assert_true(doc->block_count >= 4);
    assert_int_equal(doc->blocks[0].kind, KILN_BLOCK_HEADING);
    assert_int_equal(doc->blocks[1].kind, KILN_BLOCK_HEADING);
    assert_string_equal(doc->blocks[1].pointer, "/blocks/1");
    assert_int_equal(doc->blocks[doc->block_count - 1].kind, KILN_BLOCK_RULE);
    assert_string_equal(doc->blocks[doc->block_count - 1].pointer, "/blocks/2");
    kiln_doc_free(doc);
    fails("{'blocks': [{'type': 'markdown'}]}", KILN_E_INVALID_SPEC, "/blocks/0",
          "missing \"text\"");
    fails("{'blocks': [{'type': 'markdown', 'text': 'x', 'level': 1}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/level", "unknown member");
    /* Errors in the markdown itself name its text member; the blocks made
     * from it keep the block's pointer. */
    fails("{'blocks': [{'type': 'markdown', 'text': 'bell &#7; here'}]}", KILN_E_INVALID_SPEC,
          "/blocks/0/text", "markdown");
    kiln_parse_options o = dir_opts();
    o.limits.list_depth = 2;
    fails_opt("{'blocks': [{'type': 'rule'}, {'type': 'markdown', 'text': '- a\\n  - b\\n"
              "    - c\\n'}]}",
              &o, KILN_E_LIMIT, "/blocks/1/text", "markdown");
    doc = parse_ok("{'blocks': [{'type': 'markdown', 'text': '| a |\\n|---|\\n| 1 |\\n'}]}");
    assert_int_equal(doc->blocks[0].kind, KILN_BLOCK_TABLE);
    assert_string_equal(doc->blocks[0].pointer, "/blocks/0");
    kiln_doc_free(doc);
}

static void test_slides(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok(
        "{'slides': [{'layout': 'title', 'title': 'Deck', 'subtitle': 'Sub', 'notes': 'Say hi'},"
        "{'title': 'Points', 'bullets': ['a', {'text': 'b', 'items': ['c']}]},"
        "{'layout': 'two_column', 'left': ['l'], 'right': ['r']},"
        "{'layout': 'table', 'table': {'columns': [{'header': 'x'}], 'rows': [[1]]}},"
        "{'layout': 'image', 'image': {'path': 'logo.png'}},"
        "{'layout': 'chart', 'chart': {'kind': 'bar', 'categories': ['a'],"
        " 'series': [{'values': [1]}]}}]}");
    assert_int_equal(doc->slide_count, 6);
    const kiln_slide *s = doc->slides;
    assert_int_equal(s[0].layout, KILN_LAYOUT_TITLE);
    assert_string_equal(s[0].notes, "Say hi");
    assert_int_equal(s[1].layout, KILN_LAYOUT_CONTENT);
    assert_int_equal(s[1].bullets.item_count, 2);
    assert_non_null(s[1].bullets.items[1].children);
    assert_int_equal(s[2].left.item_count, 1);
    assert_string_equal(s[2].right.items[0].text.runs[0].text, "r");
    assert_int_equal(s[3].table->data.column_count, 1);
    assert_string_equal(s[3].table->data.pointer, "/slides/3/table/rows");
    assert_int_equal(s[4].image->width_px, 3);
    assert_int_equal(s[5].chart->kind, KILN_CHART_BAR);
    assert_string_equal(s[5].pointer, "/slides/5");
    kiln_doc_free(doc);
    fails("{'slides': [{'layout': 'grid'}]}", KILN_E_INVALID_SPEC, "/slides/0/layout",
          "\"two_column\"");
    fails("{'slides': [{'layout': 'table', 'table': {'type': 'table', 'rows': []}}]}",
          KILN_E_INVALID_SPEC, "/slides/0/table/type", "unknown member");
    fails("{'slides': [{'layout': 'chart', 'chart': {'kind': 'bar', 'categories': 'A1:A2', "
          "'series': [{'values': [1, 2]}]}}]}",
          KILN_E_INVALID_SPEC, "/slides/0/chart/categories", "only in a sheet");

    /* Table, image and chart slides need their table, image or chart: the
     * error names the slide. */
    fails("{'slides': [{'layout': 'table', 'title': 'Numbers'}]}", KILN_E_INVALID_SPEC,
          "/slides/0", "needs \"table\"");
    fails("{'slides': [{'title': 'x'}, {'layout': 'image', 'notes': 'n'}]}", KILN_E_INVALID_SPEC,
          "/slides/1", "needs \"image\"");
    fails("{'slides': [{'layout': 'chart'}]}", KILN_E_INVALID_SPEC, "/slides/0",
          "needs \"chart\"");
    /* Each layout takes only its own members (and notes): the error names the member. */
    static const struct {
        const char *slide, *pointer;
    } misplaced[] = {
        {"{'layout': 'title', 'bullets': ['a']}", "/slides/0/bullets"},
        {"{'layout': 'section', 'title': 't', 'chart': {'kind': 'bar', 'series': "
         "[{'values': [1]}]}}",
         "/slides/0/chart"},
        {"{'title': 't', 'subtitle': 's'}", "/slides/0/subtitle"},
        {"{'layout': 'content', 'left': ['a']}", "/slides/0/left"},
        {"{'bullets': ['a'], 'table': {'rows': [[1]]}}", "/slides/0/table"},
        {"{'layout': 'two_column', 'left': ['a'], 'bullets': ['b']}", "/slides/0/bullets"},
        {"{'layout': 'table', 'table': {'rows': [[1]]}, 'image': {'path': 'logo.png'}}",
         "/slides/0/image"},
        {"{'layout': 'image', 'image': {'path': 'logo.png'}, 'right': ['a']}", "/slides/0/right"},
        {"{'layout': 'chart', 'title': 'By region', 'subtitle': 'Q2', 'chart': {'kind': "
         "'bar', 'series': [{'values': [1]}]}}",
         "/slides/0/subtitle"},
        {"{'layout': 'blank', 'title': 't'}", "/slides/0/title"},
    };
    for (size_t i = 0; i < sizeof misplaced / sizeof misplaced[0]; i++) {
        char spec[512];
        snprintf(spec, sizeof spec, "{'slides': [%s]}", misplaced[i].slide);
        fails(spec, KILN_E_INVALID_SPEC, misplaced[i].pointer, "slide does not show");
    }
    /* Notes go on any layout, and the optional members may be left out. */
    doc = parse_ok(
        "{'slides': [{'layout': 'blank', 'notes': 'n'}, {'layout': 'title'},"
        " {'layout': 'section', 'title': 'S', 'subtitle': 's', 'notes': 'n'},"
        " {}, {'layout': 'two_column', 'title': 'T', 'left': ['a']},"
        " {'layout': 'table', 'title': 'T', 'notes': 'n', 'table': {'rows': [[1]]}}]}");
    assert_int_equal(doc->slide_count, 6);
    assert_int_equal(doc->slides[0].layout, KILN_LAYOUT_BLANK);
    assert_string_equal(doc->slides[0].notes, "n");
    assert_null(doc->slides[0].title);
    assert_int_equal(doc->slides[3].layout, KILN_LAYOUT_CONTENT);
    assert_int_equal(doc->slides[4].right.item_count, 0);
    assert_non_null(doc->slides[5].table);
    kiln_doc_free(doc);
    /* A slide's lists, like a list block's, are not empty. */
    fails("{'slides': [{'bullets': []}]}", KILN_E_INVALID_SPEC, "/slides/0/bullets",
          "at least one list item");
    fails("{'slides': [{'layout': 'two_column', 'left': ['a'], 'right': []}]}",
          KILN_E_INVALID_SPEC, "/slides/0/right", "at least one list item");
}

/* ---- data sources at parse time ---- */

static void test_data_sources(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok("{'sheets': [{'data': {'path': 'data.csv', 'format': 'csv'}}]}");
    const kiln_table_data *t = &doc->sheets[0].data;
    assert_int_equal(t->source, KILN_ROWS_CSV);
    assert_int_equal(t->data_header, 1);
    assert_int_equal(t->column_count, 2);
    assert_string_equal(t->columns[0].header, "a");
    assert_string_equal(t->columns[1].key, "b");
    assert_int_equal(t->header, 1);
    assert_int_equal(t->delimiter, ',');
    assert_string_equal(t->pointer, "/sheets/0/data");
    char expect[600];
    snprintf(expect, sizeof expect, "%s/data.csv", tmpdir);
    assert_string_equal(t->data_path, expect);
    kiln_doc_free(doc);
    /* The format from the extension. */
    doc = parse_ok("{'sheets': [{'data': {'path': 'data.csv', 'header': false}}]}");
    assert_int_equal(doc->sheets[0].data.column_count, 0);
    assert_int_equal(doc->sheets[0].data.header, 0);
    kiln_doc_free(doc);
    fails("{'sheets': [{'data': {'path': 'nope.csv'}}]}", KILN_E_INPUT, "/sheets/0/data/path",
          "nope.csv");
    fails("{'sheets': [{'data': {'path': '../data.csv'}}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/data/path", "\"..\"");
    fails("{'sheets': [{'data': {'path': 'data.txt'}}]}", KILN_E_INVALID_SPEC, "/sheets/0/data",
          "\"format\"");
    fails("{'sheets': [{'data': {'path': 'data.csv', 'format': 'xml'}}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/data/format", "\"csv\" or \"jsonl\"");
    fails("{'sheets': [{'data': {'path': 'data.csv', 'delimiter': ';;'}}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/data/delimiter", "single");
    fails("{'sheets': [{'data': {'path': 'data.csv', 'format': 'jsonl', 'header': true}}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/data/header", "CSV data only");
    fails("{'sheets': [{'data': {'file': 'data.csv'}}]}", KILN_E_INVALID_SPEC,
          "/sheets/0/data/file", "unknown member");
    /* Duplicate headers: fine over CSV (never objects), not over JSON Lines. */
    kiln_doc_free(parse_ok("{'sheets': [{'columns': [{'header': 'T'}, {'header': 'T'}],"
                           " 'data': {'path': 'data.csv'}}]}"));
    write_file("dup.jsonl", "[1, 2]\n", 7);
    fails("{'sheets': [{'columns': [{'header': 'T'}, {'header': 'T'}],"
          " 'data': {'path': 'dup.jsonl'}}]}",
          KILN_E_INVALID_SPEC, "/sheets/0/columns/1/header", "JSON Lines");
}

static void test_load(void **state)
{
    (void)state;
    const char *spec =
        "{\"blocks\": [{\"type\": \"image\", \"image\": {\"path\": \"inner.png\"}}]}";
    write_file("sub/spec.json", spec, strlen(spec));
    char path[600];
    snprintf(path, sizeof path, "%s/sub/spec.json", tmpdir);
    kiln_doc *doc;
    /* base_dir defaults to the spec's directory. */
    assert_int_equal(kiln_doc_load(path, NULL, &doc, &errs), KILN_E_OK);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/sub", tmpdir);
    assert_string_equal(doc->base_dir, dir);
    kiln_doc_free(doc);
    /* An explicit base_dir wins. */
    kiln_parse_options o = dir_opts();
    assert_int_equal(kiln_doc_load(path, &o, &doc, &errs), KILN_E_INPUT);
    assert_null(doc);
    has_error(KILN_E_INPUT, "/blocks/0/image/path", "inner.png");
    /* Missing file. */
    snprintf(path, sizeof path, "%s/absent.json", tmpdir);
    assert_int_equal(kiln_doc_load(path, NULL, &doc, &errs), KILN_E_INPUT);
    has_error(KILN_E_INPUT, "", "absent.json");
    /* spec_bytes is enforced while reading. */
    snprintf(path, sizeof path, "%s/sub/spec.json", tmpdir);
    o.limits.spec_bytes = 10;
    assert_int_equal(kiln_doc_load(path, &o, &doc, &errs), KILN_E_LIMIT);
    assert_int_equal(errs.items[0].limit, 10);
    /* Standard input. */
    int saved = dup(0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    dup2(fileno(f), 0);
    fclose(f);
    o.limits.spec_bytes = KILN_LIMIT_SPEC_BYTES;
    o.base_dir = dir;
    assert_int_equal(kiln_doc_load("-", &o, &doc, &errs), KILN_E_OK);
    kiln_doc_free(doc);
    dup2(saved, 0);
    close(saved);
}

static void test_big_inline_sheet_is_fast(void **state)
{
    (void)state;
    /* 200,000 x 10 cells must validate in well under the time a writer
     * takes; anything quadratic would blow this bound by orders. */
    size_t rows = 200000;
    size_t cap = rows * 64 + 256;
    char *json = malloc(cap);
    assert_non_null(json);
    size_t len = (size_t)snprintf(json, cap,
                                  "{\"sheets\": [{\"columns\": [{\"header\": \"a\"}, "
                                  "{\"header\": \"b\", \"type\": \"date\"}], \"rows\": [");
    for (size_t i = 0; i < rows; i++)
        len += (size_t)snprintf(json + len, cap - len,
                                "%s[%zu,\"2026-03-31\",1.5,\"x\",true,null,7,8,9,0]",
                                i ? "," : "", i);
    /* Ten cells but only two columns: drop columns so rows fit. */
    test_copy(json + len, cap - len, "]}]}");
    char *cols = strstr(json, "\"columns\"");
    char *rows_at = strstr(json, "\"rows\"");
    memset(cols, ' ', (size_t)(rows_at - cols));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kiln_parse_options o = dir_opts();
    kiln_doc *doc;
    kiln_status rc = parse_raw_opt(json, &o, &doc);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc)
        dump_errors();
    assert_int_equal(rc, KILN_E_OK);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "  200000x10 inline rows: %.2f s\n", secs);
    /* The bound is for the plain build (test_util.h). */
#ifndef TEST_UNDER_ASAN
    assert_true(secs < 20.0);
#endif
    /* And reading them back through the row reader. */
    kiln_row_reader *r;
    kiln_error e;
    assert_int_equal(kiln_rows_open(doc, &doc->sheets[0].data, &r, &e), KILN_E_OK);
    const kiln_cell *cells;
    size_t n, count = 0;
    while (kiln_rows_next(r, &cells, &n, &e) == 1)
        count++;
    assert_int_equal(count, rows);
    kiln_rows_close(r);
    kiln_doc_free(doc);
    free(json);
}

static void test_limits_real_values(void **state)
{
    (void)state;
    kiln_limits d = kiln_limits_default();
    assert_int_equal(d.json_depth, 64);
    assert_int_equal(d.sheets, 256);
    assert_int_equal(d.rows, 1048576);
    assert_int_equal(d.columns, 16384);
    assert_int_equal(d.cell_chars, 32767);
    assert_int_equal(d.string_bytes, 256ull << 20);
    assert_int_equal(d.images, 1000);
    assert_int_equal(d.image_bytes, 20ull << 20);
    assert_int_equal(d.images_bytes, 200ull << 20);
    assert_int_equal(d.list_depth, 9);

    /* 64 MiB + 1 byte is refused before jansson sees it. */
    size_t big = (64u << 20) + 1;
    char *json = malloc(big);
    assert_non_null(json);
    memset(json, ' ', big);
    kiln_doc *doc;
    assert_int_equal(kiln_doc_parse(json, big, NULL, &doc, &errs), KILN_E_LIMIT);
    assert_int_equal(errs.items[0].limit, 64u << 20);
    assert_int_equal(errs.items[0].actual, big);
    free(json);

    /* 257 sheets. */
    size_t cap = 257 * 4 + 64;
    json = malloc(cap);
    assert_non_null(json);
    test_copy(json, cap, "{\"sheets\": [");
    for (int i = 0; i < 257; i++)
        test_append(json, cap, i ? ",{}" : "{}");
    test_append(json, cap, "]}");
    kiln_parse_options o = dir_opts();
    fails_raw_opt(json, &o, KILN_E_LIMIT, "/sheets", "257 sheets");
    *strrchr(json, ',') = ' '; /* 256 sheets, with a stray "{}" removed below */
    char *last = strrchr(json, '{');
    memmove(last, last + 2, strlen(last + 2) + 1);
    assert_int_equal(parse_raw_opt(json, &o, &doc), KILN_E_OK);
    assert_int_equal(doc->sheet_count, 256);
    assert_string_equal(doc->sheets[255].name, "Sheet256");
    kiln_doc_free(doc);
    free(json);

    /* 1,001 images (inline data, the same tiny PNG). */
    const char *b64 = "{\"type\": \"image\", \"image\": {\"data\": "
                      "\"" PNG_3X2_BASE64 "\"}}";
    cap = 1001 * (strlen(b64) + 1) + 64;
    json = malloc(cap);
    assert_non_null(json);
    test_copy(json, cap, "{\"blocks\": [");
    size_t len = strlen(json);
    for (int i = 0; i < 1001; i++) {
        if (i)
            json[len++] = ',';
        memcpy(json + len, b64, strlen(b64));
        len += strlen(b64);
    }
    test_copy(json + len, cap - len, "]}");
    fails_raw_opt(json, &o, KILN_E_LIMIT, "/blocks/1000/image", "more than 1000 images");
    assert_int_equal(errs.count, 1);
    free(json);

    /* A 20 MiB + 1 byte file (sparse: nothing is read). */
    char path[600];
    snprintf(path, sizeof path, "%s/huge.png", tmpdir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), (20 << 20) + 1), 0);
    fclose(f);
    fails("{'blocks': [{'type': 'image', 'image': {'path': 'huge.png'}}]}", KILN_E_LIMIT,
          "/blocks/0/image/path", "more than the 20971520");
    assert_int_equal(errs.items[0].actual, (20 << 20) + 1);
    unlink(path);
}

static void test_error_list_is_bounded(void **state)
{
    (void)state;
    char spec[8192] = "{'sheets': [{'rows': [";
    for (int i = 0; i < 80; i++)
        test_append(spec, sizeof spec, i ? ",[[1]]" : "[[1]]");
    test_append(spec, sizeof spec, "]}]}");
    fails(spec, KILN_E_INVALID_SPEC, "/sheets/0/rows/0/0", "expected a number");
    assert_int_equal(errs.count, KILN_ERRORS_MAX);
    has_error(KILN_E_INVALID_SPEC, "/sheets/0/rows/49/0", NULL);
    kiln_doc_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_defaults),
        cmocka_unit_test(test_version_and_empty),
        cmocka_unit_test(test_root_arrays_in_any_order),
        cmocka_unit_test(test_json_syntax),
        cmocka_unit_test(test_unknown_members),
        cmocka_unit_test(test_pointer_escaping),
        cmocka_unit_test(test_cell_errors_and_collection),
        cmocka_unit_test(test_style_errors),
        cmocka_unit_test(test_rows_and_columns),
        cmocka_unit_test(test_strings_never_formulas),
        cmocka_unit_test(test_control_characters),
        cmocka_unit_test(test_limit_spec_bytes),
        cmocka_unit_test(test_limit_depth),
        cmocka_unit_test(test_limit_sheets),
        cmocka_unit_test(test_limit_rows),
        cmocka_unit_test(test_limit_rows_real),
        cmocka_unit_test(test_limit_columns),
        cmocka_unit_test(test_limit_cell_chars),
        cmocka_unit_test(test_limit_string_bytes),
        cmocka_unit_test(test_limit_images),
        cmocka_unit_test(test_limit_list_depth),
        cmocka_unit_test(test_sheet_names),
        cmocka_unit_test(test_sheet_features),
        cmocka_unit_test(test_validation_list_length),
        cmocka_unit_test(test_charts),
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_image_structure),
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_theme),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_nested_list_numbering),
        cmocka_unit_test(test_line_breaks),
        cmocka_unit_test(test_markdown_block),
        cmocka_unit_test(test_slides),
        cmocka_unit_test(test_data_sources),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_big_inline_sheet_is_fast),
        cmocka_unit_test(test_limits_real_values),
        cmocka_unit_test(test_error_list_is_bounded),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
