/*
 * test_parse_json.c - kiln_doc_parse_json (spec.h): a spec given as a jansson
 * tree gives what its text gives to kiln_doc_parse. Every sample and every
 * invalid spec of tests/invalid/ is parsed both ways (test_spec_tree.h: the
 * same errors, the same rendered documents, the tree untouched); test_parse.c
 * does the same for each spec it parses. Here also what only a tree has:
 * the size limit on its compact text, strings that are not UTF-8, a tree
 * freed before the document is rendered.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"
#include "tests/unit/test_spec_tree.h"

#include "artifacts/spec/spec.h"
#include "common/banned.h"

static char tmpdir[256];
static kiln_errors errs;

/* The checkout's directory of that name: the tests run from the top (make
 * unit) or from build/tests. */
static const char *repo_dir(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", name);
    if (access(buf, R_OK) == 0)
        return buf;
    snprintf(buf, cap, "../../%s", name);
    assert_int_equal(access(buf, R_OK), 0);
    return buf;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Each *.json of dir (expected.json aside) both ways, with dir as base.
 * Returns how many there were. */
static size_t same_for_dir(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t done = 0;
    struct dirent *de;
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = dir;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 5 || strcmp(de->d_name + n - 5, ".json") != 0 ||
            strcmp(de->d_name, "expected.json") == 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t len;
        char *json = read_all(path, &len);
        fprintf(stderr, "  %s\n", path);
        test_same_as_tree(json, len, &o, tmpdir);
        free(json);
        done++;
    }
    closedir(d);
    return done;
}

static void test_samples(void **state)
{
    (void)state;
    char dir[64];
    assert_true(same_for_dir(repo_dir("samples", dir, sizeof dir)) >= 8);
}

static void test_invalid_specs(void **state)
{
    (void)state;
    char dir[64];
    assert_true(same_for_dir(repo_dir("tests/invalid", dir, sizeof dir)) >= 100);
}

/* Line breaks made LF in every kind of piece (the root, a sheet, its rows,
 * a block, a slide's table), strings at every depth, a depth error that the
 * parse goes on past: the same both ways, the tree untouched. */
static void test_pieces(void **state)
{
    (void)state;
    static const char *const specs[] = {
        "{\"metadata\": {\"title\": \"a\\r\\nb\"}, \"sheets\": [{\"name\": \"S\\r\", "
        "\"rows\": [[\"x\\ry\", {\"value\": \"p\\r\\nq\", \"style\": {\"bold\": true}}], "
        "{\"a\": 1}], \"columns\": [{\"header\": \"h\\r\\n\", \"key\": \"a\"}, {\"header\": "
        "\"k\"}]}], \"blocks\": [{\"type\": \"paragraph\", \"text\": \"l1\\rl2\"}, {\"type\": "
        "\"table\", \"columns\": [{\"header\": \"c\"}], \"rows\": [[\"r\\r\\n\"]]}], \"slides\": "
        "[{\"layout\": \"table\", \"title\": \"t\\r\", \"table\": {\"columns\": [{\"header\": "
        "\"c\"}], \"rows\": [[\"s\\r\"], [2]]}}]}",
        /* A member named as a hole path would go, and one with a slash. */
        "{\"sheets\": [{\"name\": \"x\", \"rows\": [[1]], \"table/rows\": [[2]]}]}",
        "{\"slides\": [{\"layout\": \"table\", \"table\": {\"rows\": [[1]]}, \"table/rows\": "
        "[[1]]}]}",
        /* A hole that is not an array; an empty one. */
        "{\"sheets\": {\"rows\": [[1]]}, \"blocks\": [], \"slides\": 3}",
        "{\"sheets\": [{\"rows\": {\"0\": [1]}}], \"blocks\": [{\"type\": \"table\", "
        "\"rows\": []}]}",
        /* Errors in many pieces at once, the list bounded. */
        "{\"sheets\": [{\"rows\": [[{\"bogus\": 1}], [{\"bogus\": 2}], [{\"x\": 3}]]}, "
        "{\"name\": 5}], \"blocks\": [{\"type\": \"nope\"}, 7], \"slides\": [{\"layout\": 3}]}",
    };
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = tmpdir;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        test_same_as_tree(specs[i], strlen(specs[i]), &o, tmpdir);
    /* Past the depth limit, and past the string limit, in a sheet's rows. */
    o.limits.json_depth = 5;
    o.limits.string_bytes = 40;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        test_same_as_tree(specs[i], strlen(specs[i]), &o, tmpdir);
    /* Past the error list's size. */
    char *many = malloc(200000);
    assert_non_null(many);
    size_t n = (size_t)snprintf(many, 200000, "{\"sheets\": [{\"rows\": [");
    for (int r = 0; r < 300; r++)
        n += (size_t)snprintf(many + n, 200000 - n, "%s[{\"bogus\": %d}]", r ? "," : "", r);
    snprintf(many + n, 200000 - n, "]}]}");
    kiln_parse_options_init(&o);
    test_same_as_tree(many, strlen(many), &o, tmpdir);
    free(many);
}

/* spec_bytes is the size of the tree's compact text (spec.h), however the
 * text it came from was spaced. */
static void test_spec_bytes_of_a_tree(void **state)
{
    (void)state;
    json_t *spec = json_pack("{s:[{s:[[i,s]]}]}", "sheets", "rows", 1, "abc");
    assert_non_null(spec);
    size_t compact = json_dumpb(spec, NULL, 0, JSON_COMPACT);
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.limits.spec_bytes = compact;
    kiln_doc *doc;
    assert_int_equal(kiln_doc_parse_json(spec, &o, &doc, &errs), KILN_E_OK);
    kiln_doc_free(doc);
    o.limits.spec_bytes = compact - 1;
    assert_int_equal(kiln_doc_parse_json(spec, &o, &doc, &errs), KILN_E_LIMIT);
    assert_null(doc);
    assert_int_equal(errs.count, 1);
    assert_string_equal(errs.items[0].pointer, "");
    assert_int_equal(errs.items[0].limit, compact - 1);
    assert_true(errs.items[0].actual > compact - 1);
    assert_non_null(strstr(errs.items[0].message, "more than the"));
    json_decref(spec);

    /* Counting stops at the limit: a tree far past it costs no more than
     * the limit's worth of text. */
    json_t *rows = json_array();
    for (int i = 0; i < 100000; i++)
        json_array_append_new(rows, json_pack("[s]", "some text in a row"));
    spec = json_pack("{s:[{s:o}]}", "sheets", "rows", rows);
    o.limits.spec_bytes = 1000;
    assert_int_equal(kiln_doc_parse_json(spec, &o, &doc, &errs), KILN_E_LIMIT);
    assert_true(errs.items[0].actual < 2000);
    json_decref(spec);
}

/* Strings a jansson tree can hold but no text can: refused, not parsed. */
static void test_tree_not_json(void **state)
{
    (void)state;
    json_t *spec = json_pack("{s:[{s:[[o]]}]}", "sheets", "rows",
                             json_stringn_nocheck("\xff\xfe", 2));
    assert_non_null(spec);
    kiln_doc *doc;
    assert_int_equal(kiln_doc_parse_json(spec, NULL, &doc, &errs), KILN_E_INVALID_SPEC);
    assert_null(doc);
    assert_int_equal(errs.count, 1);
    assert_string_equal(errs.items[0].pointer, "");
    assert_non_null(strstr(errs.items[0].message, "not UTF-8"));
    json_decref(spec);

    assert_int_equal(kiln_doc_parse_json(NULL, NULL, &doc, &errs), KILN_E_INVALID_SPEC);
    assert_null(doc);
    assert_string_equal(errs.items[0].pointer, "");
    json_t *arr = json_pack("[i]", 1);
    assert_int_equal(kiln_doc_parse_json(arr, NULL, &doc, NULL), KILN_E_INVALID_SPEC);
    assert_null(doc);
    json_decref(arr);
}

/* The model owns everything: the tree may go before the render. */
static void test_tree_freed_before_render(void **state)
{
    (void)state;
    json_t *spec = json_pack("{s:{s:s}, s:[{s:s, s:[[s, i], {s:s}]}], s:[{s:s, s:s}]}",
                             "metadata", "title", "T", "sheets", "name", "Data", "rows", "a\r\nb",
                             1, "x", "kept", "blocks", "type", "heading", "text", "H");
    assert_non_null(spec);
    /* Keep the row text beyond the tree: an object row keyed by "x". */
    json_t *cols = json_pack("[{s:s}, {s:s}]", "header", "A", "key", "x");
    json_object_set_new(json_array_get(json_object_get(spec, "sheets"), 0), "columns", cols);
    kiln_doc *doc;
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    kiln_status st = kiln_doc_parse_json(spec, &o, &doc, &errs);
    if (st)
        test_dump_errors(&errs);
    assert_int_equal(st, KILN_E_OK);
    json_decref(spec);
    assert_string_equal(doc->metadata.title, "T");
    assert_string_equal(doc->sheets[0].name, "Data");
    kiln_row_reader *r;
    kiln_error e;
    assert_int_equal(kiln_rows_open(doc, &doc->sheets[0].data, &r, &e), KILN_E_OK);
    const kiln_cell *cells;
    size_t n;
    assert_int_equal(kiln_rows_next(r, &cells, &n, &e), 1);
    assert_int_equal(cells[0].kind, KILN_CELL_STRING);
    assert_string_equal(cells[0].text, "a\nb"); /* line breaks as LF (docs/spec.md) */
    assert_int_equal(kiln_rows_next(r, &cells, &n, &e), 1);
    assert_int_equal(cells[0].kind, KILN_CELL_BLANK);
    assert_string_equal(cells[1].text, "kept");
    assert_int_equal(kiln_rows_next(r, &cells, &n, &e), 0);
    kiln_rows_close(r);
    char out[512];
    snprintf(out, sizeof out, "%s/freed.xlsx", tmpdir);
    assert_int_equal(kiln_render(doc, KILN_FORMAT_XLSX, out, NULL, NULL, &e), KILN_E_OK);
    kiln_doc_free(doc);
}

/* A big sheet from a tree parses about as fast as from its text: the rows
 * are walked one at a time, never copied as a whole tree. */
static void test_big_tree_is_fast(void **state)
{
    (void)state;
    json_t *rows = json_array();
    for (int i = 0; i < 200000; i++)
        json_array_append_new(rows, json_pack("[i,s,f,b,i,s,f,b,i,s]", i, "text", i * 0.5, i & 1,
                                              i, "more text", 1.25, 0, -i, "end"));
    json_t *spec = json_pack("{s:[{s:s, s:o}]}", "sheets", "name", "Big", "rows", rows);
    assert_non_null(spec);
    struct timespec t0, t1;
    kiln_doc *doc;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(kiln_doc_parse_json(spec, NULL, &doc, &errs), KILN_E_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "  200000x10 rows from a tree: %.2f s\n", secs);
    assert_int_equal(doc->sheets[0].data.inline_row_count, 200000);
    /* The bound is test_parse.c's for the text, for the plain build. */
#ifndef TEST_UNDER_ASAN
    assert_true(secs < 20.0);
#endif
    kiln_doc_free(doc);
    json_decref(spec);
}

static int setup(void **state)
{
    (void)state;
    return test_dir_make(tmpdir, sizeof tmpdir, "parse-json");
}

static int teardown(void **state)
{
    (void)state;
    return test_dir_remove(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples),          cmocka_unit_test(test_invalid_specs),
        cmocka_unit_test(test_pieces),           cmocka_unit_test(test_spec_bytes_of_a_tree),
        cmocka_unit_test(test_tree_not_json),    cmocka_unit_test(test_tree_freed_before_render),
        cmocka_unit_test(test_big_tree_is_fast),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
