/*
 * test_batch_merge.c - the mail merge (batch/merge.h) and its data rows
 * (batch/data_rows.h).
 *
 * Merge: typed whole-string placeholders, arrays and objects replacing a
 * value, nested names and array indexes, a CSV column named "a.b", the date
 * rule at a cell and not in text, numbers as text, missing fields (error and
 * KILN_MERGE_MISSING_EMPTY), errors collected at once with their pointers,
 * malformed placeholders, member names left alone, the depth and size
 * bounds, kiln_merge_text and kiln_merge_has_placeholder; a merged spec the
 * spec parser accepts.
 *
 * Data rows: CSV quoting, CRLF / LF / CR, a byte order mark, line breaks in
 * quotes and the line numbers they make, blank lines, short and long
 * records, header errors, an open quote at the end, text that is not UTF-8,
 * JSON Lines lines that are not objects, the record limit (a 16 MiB record
 * in a temporary file), a descriptor given instead of a path.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "artifacts/spec/spec.h"
#include "artifacts/spec/spec_internal.h"
#include "batch/data_rows.h"
#include "batch/merge.h"
#include "common/banned.h"

static char tmpdir[256];
static kiln_errors errs;

static int setup_dir(void **state)
{
    (void)state;
    return test_dir_make(tmpdir, sizeof tmpdir, "merge");
}

static int teardown_dir(void **state)
{
    (void)state;
    return test_dir_remove(tmpdir);
}

/* JSON written with ' for ": a new tree; the test fails when it is not JSON. */
static json_t *J(const char *s)
{
    char *text = test_quote(s);
    json_error_t je;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!v)
        fprintf(stderr, "bad test JSON %s: %s\n", text, je.text);
    free(text);
    assert_non_null(v);
    return v;
}

static void assert_json(const json_t *got, const char *want_text)
{
    json_t *want = J(want_text);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
        fprintf(stderr, "got  %s\nwant %s\n", g ? g : "NULL", w);
        free(g);
        free(w);
        fail();
    }
    json_decref(want);
}

/* Merge template and row (both in ' JSON); the result must be want. */
static void merges_to(const char *tmpl, const char *row, const kiln_merge_options *opt,
                      const char *want)
{
    json_t *t = J(tmpl), *r = J(row);
    kiln_errors_init(&errs);
    json_t *out = kiln_merge_spec(t, r, opt, &errs);
    if (!out)
        test_dump_errors(&errs);
    assert_non_null(out);
    assert_int_equal(errs.count, 0);
    assert_json(out, want);
    json_decref(out);
    json_decref(t);
    json_decref(r);
}

/* Merge that must fail: errs holds the errors. */
static void merge_fails(const char *tmpl, const char *row, const kiln_merge_options *opt)
{
    json_t *t = J(tmpl), *r = J(row);
    kiln_errors_init(&errs);
    json_t *out = kiln_merge_spec(t, r, opt, &errs);
    assert_null(out);
    assert_true(errs.count > 0);
    json_decref(t);
    json_decref(r);
}

static void assert_error(size_t i, kiln_status code, const char *pointer, const char *part)
{
    assert_true(i < errs.count);
    const kiln_error *e = &errs.items[i];
    if (e->code != code || strcmp(e->pointer, pointer) != 0 || !strstr(e->message, part)) {
        test_dump_errors(&errs);
        fprintf(stderr, "expected [%s] %s: ...%s...\n", kiln_status_name(code), pointer, part);
        fail();
    }
}

/* ---- merge ---- */

static void test_typed_whole_string(void **state)
{
    (void)state;
    merges_to("{'a': '{{n}}', 'b': '{{f}}', 'c': '{{t}}', 'd': '{{no}}', 'e': '{{z}}',"
              " 'f': '{{ s }}', 'g': '{{\\tn\\t}}', 'h': [1, '{{s}}', 2.5, null, false]}",
              "{'n': 12, 'f': 3.5, 't': true, 'no': false, 'z': null, 's': 'text'}", NULL,
              "{'a': 12, 'b': 3.5, 'c': true, 'd': false, 'e': null, 'f': 'text', 'g': 12,"
              " 'h': [1, 'text', 2.5, null, false]}");
    /* A space outside the braces makes it text. */
    merges_to("{'a': ' {{n}}', 'b': '{{n}} '}", "{'n': 12}", NULL, "{'a': ' 12', 'b': '12 '}");
}

static void test_array_and_object_replace(void **state)
{
    (void)state;
    merges_to("{'blocks': [{'type': 'table', 'columns': '{{cols}}', 'rows': '{{items}}'}]}",
              "{'items': [[1, 'a'], [2, 'b']], 'cols': [{'header': 'N'}, {'header': 'S'}]}", NULL,
              "{'blocks': [{'type': 'table', 'columns': [{'header': 'N'}, {'header': 'S'}],"
              " 'rows': [[1, 'a'], [2, 'b']]}]}");
    merges_to("{'metadata': '{{meta}}'}", "{'meta': {'title': 'T', 'author': 'A'}}", NULL,
              "{'metadata': {'title': 'T', 'author': 'A'}}");

    /* The result shares nothing with the row: changing it leaves the row. */
    json_t *t = J("{'rows': '{{items}}'}"), *r = J("{'items': [['x']]}");
    kiln_errors_init(&errs);
    json_t *out = kiln_merge_spec(t, r, NULL, &errs);
    assert_non_null(out);
    json_t *inner = json_array_get(json_object_get(out, "rows"), 0);
    assert_ptr_not_equal(inner, json_array_get(json_object_get(r, "items"), 0));
    json_string_set(json_array_get(inner, 0), "changed");
    assert_json(r, "{'items': [['x']]}");
    json_decref(out);
    json_decref(t);
    json_decref(r);
}

static void test_nested_names(void **state)
{
    (void)state;
    const char *row = "{'a': {'b': {'c': 'deep'}, 'n': 5}, 'items': [{'name': 'first', 'qty': 2},"
                      " {'name': 'second'}], 'm': [[10, 20]]}";
    merges_to("{'x': '{{a.b.c}}', 'y': '{{a.n}}', 'z': '{{items.0.name}} and {{items.1.name}}',"
              " 'q': '{{items.0.qty}}', 'w': '{{m.0.1}}', 'o': '{{a.b}}'}",
              row, NULL,
              "{'x': 'deep', 'y': 5, 'z': 'first and second', 'q': 2, 'w': 20,"
              " 'o': {'c': 'deep'}}");
    /* Past the end, a leading zero, a name on an array, a segment on a
     * string: all missing. */
    const char *missing[] = {"{{items.2.name}}", "{{items.01.name}}", "{{items.x}}",
                             "{{a.b.c.d}}",      "{{a.zz}}",          "{{items.-1}}"};
    for (size_t i = 0; i < sizeof missing / sizeof *missing; i++) {
        char tmpl[80];
        snprintf(tmpl, sizeof tmpl, "{'v': '%s'}", missing[i]);
        merge_fails(tmpl, row, NULL);
        assert_int_equal(errs.count, 1);
        assert_error(0, KILN_E_INVALID_SPEC, "/v", "has no field");
    }
}

static void test_literal_dotted_column(void **state)
{
    (void)state;
    /* A CSV column named "a.b" is found before a nested a.b. */
    merges_to("{'v': '{{a.b}}', 'w': '{{a.c}}'}",
              "{'a.b': 'column', 'a': {'b': 'nested', "
              "'c': 'only nested'}}",
              NULL, "{'v': 'column', 'w': 'only nested'}");
    merges_to("{'v': '{{Kunden-Nr}} {{año}}', 'w': '{{ año }}', 'x': '{{日付.年}}'}",
              "{'Kunden-Nr': 'K-1', 'año': 2026, '日付': {'年': 'Y'}}", NULL,
              "{'v': 'K-1 2026', 'w': 2026, 'x': 'Y'}");
}

static void test_dates_at_cells_only(void **state)
{
    (void)state;
    const char *row = "{'d': '2026-03-31', 'dt': '2026-03-31T14:30:00', 'z': '2026-03-31 "
                      "08:00Z', 's': 'North', 'bad': '2026-02-30', 'old': '1899-12-31'}";
    merges_to("{'sheets': [{'name': 'S', 'rows': [['{{d}}', '{{dt}}', 'Due {{d}}', '{{s}}',"
              " '{{z}}', '{{bad}}', '{{old}}']]}],"
              " 'blocks': [{'type': 'paragraph', 'text': '{{d}}'},"
              " {'type': 'table', 'rows': [['{{d}}']], 'caption': '{{d}}'}],"
              " 'metadata': {'created': '{{dt}}'}}",
              row, NULL,
              "{'sheets': [{'name': 'S', 'rows': [[{'date': '2026-03-31'},"
              " {'datetime': '2026-03-31T14:30:00'}, 'Due 2026-03-31', 'North',"
              " {'datetime': '2026-03-31 08:00Z'}, '2026-02-30', '1899-12-31']]}],"
              " 'blocks': [{'type': 'paragraph', 'text': '2026-03-31'},"
              " {'type': 'table', 'rows': [[{'date': '2026-03-31'}]], 'caption': "
              "'2026-03-31'}],"
              " 'metadata': {'created': '2026-03-31T14:30:00'}}");
    /* Rows copied whole from the data are copied as they are. */
    merges_to("{'rows': '{{items}}'}", "{'items': [['2026-03-31']]}", NULL,
              "{'rows': [['2026-03-31']]}");
}

static void test_numbers_as_text(void **state)
{
    (void)state;
    merges_to(
        "{'a': '[{{i}}]', 'b': '[{{r}}]', 'c': '[{{p}}]', 'd': '[{{e21}}]', 'e': '[{{nz}}]',"
        " 'f': '[{{nzi}}]', 'g': '[{{big}}]', 'h': '[{{neg}}]', 'i': '[{{whole}}]',"
        " 'j': '[{{e20}}]', 'k': '[{{small}}]', 'l': '[{{sum}}]', 'm': '[{{third}}]',"
        " 'n': '[{{t}} {{f}} {{z}}]', 'o': '[{{s}}]', 'p': '[{{min}}]'}",
        "{'i': 12, 'r': 3.5, 'p': 0.1, 'e21': 1e21, 'nz': -0.0, 'nzi': -0,"
        " 'big': 9007199254740993, 'neg': -7.25, 'whole': 12.0, 'e20': 1e20,"
        " 'small': 1.5e-7, 'sum': 0.30000000000000004, 'third': 0.3333333333333333,"
        " 't': true, 'f': false, 'z': null, 's': 'str', 'min': -9223372036854775808}",
        NULL,
        "{'a': '[12]', 'b': '[3.5]', 'c': '[0.1]', 'd': '[1e+21]', 'e': '[0]', 'f': '[0]',"
        " 'g': '[9007199254740993]', 'h': '[-7.25]', 'i': '[12]',"
        " 'j': '[100000000000000000000]', 'k': '[1.5e-07]',"
        " 'l': '[0.30000000000000004]', 'm': '[0.3333333333333333]',"
        " 'n': '[true false ]', 'o': '[str]', 'p': '[-9223372036854775808]'}");
}

static void test_missing_fields(void **state)
{
    (void)state;
    kiln_merge_options opt = {KILN_MERGE_MISSING_ERROR, 12};
    merge_fails("{'title': '{{customer_id}}', 'blocks': [{'type': 'paragraph',"
                " 'text': 'Dear {{name}}'}]}",
                "{'other': 1}", &opt);
    assert_int_equal(errs.count, 2);
    assert_error(0, KILN_E_INVALID_SPEC, "/title", "data line 12 has no field 'customer_id'");
    assert_error(1, KILN_E_INVALID_SPEC, "/blocks/0/text", "data line 12 has no field 'name'");

    /* No line known. */
    merge_fails("{'t': '{{x}}'}", "{}", NULL);
    assert_error(0, KILN_E_INVALID_SPEC, "/t", "the data row has no field 'x'");
    /* A row that is not an object has no fields. */
    merge_fails("{'t': '{{x}}'}", "[1, 2]", NULL);
    assert_error(0, KILN_E_INVALID_SPEC, "/t", "no field 'x'");

    kiln_merge_options empty = {KILN_MERGE_MISSING_EMPTY, 3};
    merges_to("{'title': '{{customer_id}}', 'text': 'Dear {{name}}!', 'n': '{{n}}'}", "{'n': 1}",
              &empty, "{'title': null, 'text': 'Dear !', 'n': 1}");
    /* Missing-as-empty is no licence for a malformed placeholder. */
    merge_fails("{'t': '{{a b}}'}", "{}", &empty);
    assert_error(0, KILN_E_INVALID_SPEC, "/t", "is not a placeholder");
}

static void test_errors_collected(void **state)
{
    (void)state;
    kiln_merge_options opt = {KILN_MERGE_MISSING_ERROR, 7};
    merge_fails(
        "{'a': '{{x}} and {{y}} and {{ c d }} and {{ok}}', 'b': ['{{z}}', 'fine', '{{}}'],"
        " 'c': 'list {{items}}', 'd': {'e': '{{obj}} too'}, 'f': 'open {{ok'}",
        "{'ok': 1, 'items': [1], 'obj': {'k': 1}}", &opt);
    assert_int_equal(errs.count, 8);
    assert_error(0, KILN_E_INVALID_SPEC, "/a", "data line 7 has no field 'x'");
    assert_error(1, KILN_E_INVALID_SPEC, "/a", "data line 7 has no field 'y'");
    assert_error(2, KILN_E_INVALID_SPEC, "/a", "{{c d}} is not a placeholder");
    assert_error(3, KILN_E_INVALID_SPEC, "/b/0", "no field 'z'");
    assert_error(4, KILN_E_INVALID_SPEC, "/b/2", "an empty placeholder");
    assert_error(5, KILN_E_INVALID_SPEC, "/c",
                 "field 'items' is an array: it can only fill a whole value");
    assert_error(6, KILN_E_INVALID_SPEC, "/d/e", "field 'obj' is an object");
    assert_error(7, KILN_E_INVALID_SPEC, "/f", "{{ is not closed");

    /* More than the list holds: the rest counted as dropped. */
    json_t *t = json_array(), *r = json_object();
    for (int i = 0; i < KILN_ERRORS_MAX + 5; i++)
        json_array_append_new(t, json_string("{{gone}}"));
    kiln_errors_init(&errs);
    assert_null(kiln_merge_spec(t, r, NULL, &errs));
    assert_int_equal(errs.count, KILN_ERRORS_MAX);
    assert_int_equal(errs.dropped, 5);
    json_decref(t);
    json_decref(r);
}

static void test_malformed_placeholders(void **state)
{
    (void)state;
    const char *bad[] = {"{{",       "x {{ name",  "{{}}",    "{{ }}",     "{{a b}}",
                         "{{a..b}}", "{{.a}}",     "{{a.}}",  "{{a!}}",    "{{{a}}}",
                         "{{a}",     "a {{b} c}}", "{{a/b}}", "{{a\\nb}}", "{{ {{a}} }}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char tmpl[80];
        snprintf(tmpl, sizeof tmpl, "{'v': '%s'}", bad[i]);
        merge_fails(tmpl, "{'a': 1, 'b': 2, 'name': 3}", NULL);
        if (errs.count != 1 || strcmp(errs.items[0].pointer, "/v") != 0) {
            fprintf(stderr, "template %s\n", bad[i]);
            test_dump_errors(&errs);
            fail();
        }
    }
    /* What is no placeholder stays text. */
    merges_to("{'v': '}} { {a} } {a} }}}', 'w': '{ {{a}} }'}", "{'a': 1}", NULL,
              "{'v': '}} { {a} } {a} }}}', 'w': '{ 1 }'}");
}

static void test_member_names_and_pointers(void **state)
{
    (void)state;
    merges_to("{'{{k}}': '{{k}}', 'arr': [{'{{k}}': 1}]}", "{'k': 'v'}", NULL,
              "{'{{k}}': 'v', 'arr': [{'{{k}}': 1}]}");
    merge_fails("{'a/b': {'c~d': ['x', '{{missing}}']}}", "{}", NULL);
    assert_error(0, KILN_E_INVALID_SPEC, "/a~1b/c~0d/1", "no field 'missing'");
    /* A template without placeholders merges to itself. */
    merges_to("{'a': [1, 2.5, 'x', null, true, {'b': 'y'}]}", "{}", NULL,
              "{'a': [1, 2.5, 'x', null, true, {'b': 'y'}]}");
}

/* n arrays, one in the other. */
static json_t *nested(size_t n)
{
    json_t *v = json_array();
    for (size_t i = 1; i < n; i++) {
        json_t *outer = json_array();
        json_array_append_new(outer, v);
        v = outer;
    }
    return v;
}

static void test_depth(void **state)
{
    (void)state;
    kiln_limits lim = kiln_limits_default();
    for (size_t n = KILN_LIMIT_JSON_DEPTH; n <= KILN_LIMIT_JSON_DEPTH + 1; n++) {
        json_t *t = nested(n), *r = json_object();
        kiln_errors_init(&errs);
        json_t *out = kiln_merge_spec(t, r, NULL, &errs);
        /* The same verdict as the spec parser's scan. */
        uint64_t sb = 0;
        kiln_error e;
        size_t scan = kiln_json_scan(t, "", &lim, &sb, NULL, &e);
        if (n == KILN_LIMIT_JSON_DEPTH) {
            assert_non_null(out);
            assert_int_equal(scan, 0);
        } else {
            assert_null(out);
            assert_int_equal(scan, 1);
            assert_int_equal(errs.count, 1);
            assert_int_equal(errs.items[0].code, KILN_E_LIMIT);
            assert_true(strstr(errs.items[0].message, "deeper than 64 levels") != NULL);
        }
        json_decref(out);
        json_decref(t);
        json_decref(r);
    }
    /* A copied value may not take the result past it: the template's
     * string is 1 step down, so the value may have 63 levels. */
    for (size_t n = KILN_LIMIT_JSON_DEPTH - 1; n <= KILN_LIMIT_JSON_DEPTH; n++) {
        json_t *t = J("{'v': '{{deep}}'}"), *r = json_object();
        json_object_set_new(r, "deep", nested(n));
        kiln_errors_init(&errs);
        json_t *out = kiln_merge_spec(t, r, NULL, &errs);
        if (n < KILN_LIMIT_JSON_DEPTH) {
            assert_non_null(out);
        } else {
            assert_null(out);
            assert_error(0, KILN_E_LIMIT, "/v", "deeper than 64 levels");
        }
        json_decref(out);
        json_decref(t);
        json_decref(r);
    }
}

static void test_bytes_bound(void **state)
{
    (void)state;
    size_t big = 1u << 20;
    char *s = malloc(big + 1);
    assert_non_null(s);
    memset(s, 'x', big);
    s[big] = '\0';
    json_t *r = json_object();
    json_object_set_new(r, "big", json_string(s));
    free(s);
    for (int text = 0; text < 2; text++) {
        /* A whole-string copy costs 16 bytes more than the text. */
        size_t fits = KILN_MERGE_BYTES_MAX / (text ? big : big + 16);
        for (size_t n = fits; n <= fits + 1; n++) {
            json_t *t = json_array();
            for (size_t i = 0; i < n; i++)
                json_array_append_new(t, json_string(text ? "a {{big}}" : "{{big}}"));
            kiln_errors_init(&errs);
            json_t *out = kiln_merge_spec(t, r, NULL, &errs);
            if (n == fits) {
                assert_non_null(out);
            } else {
                assert_null(out);
                assert_int_equal(errs.count, 1);
                char ptr[32];
                /* The member where it passed: the last one. */
                snprintf(ptr, sizeof ptr, "/%zu", n - 1);
                assert_error(0, KILN_E_LIMIT, ptr, "adds more than 64 MiB");
                assert_true(errs.items[0].limit == KILN_MERGE_BYTES_MAX);
            }
            json_decref(out);
            json_decref(t);
        }
    }
    json_decref(r);
}

static void test_merge_text(void **state)
{
    (void)state;
    json_t *r = J("{'name': 'Ann', 'n': 12, 'x': 2.5, 'items': [1], 'nul': 'a\\u0000b',"
                  " 'z': null, 'd': '2026-03-31'}");
    kiln_merge_options opt = {KILN_MERGE_MISSING_ERROR, 4};
    kiln_error err;
    char *out = kiln_merge_text("{{name}}-{{ n }}-{{x}}{{z}}.docx", r, &opt, "--name", &err);
    assert_string_equal(out, "Ann-12-2.5.docx");
    free(out);
    /* Text always: a whole-string number is its text, a date stays text. */
    out = kiln_merge_text("{{n}}", r, &opt, "--name", &err);
    assert_string_equal(out, "12");
    free(out);
    out = kiln_merge_text("{{d}}", r, &opt, "--name", &err);
    assert_string_equal(out, "2026-03-31");
    free(out);
    out = kiln_merge_text("", r, &opt, "--name", &err);
    assert_string_equal(out, "");
    free(out);

    struct {
        const char *tmpl, *message;
    } bad[] = {
        {"{{who}}.pdf", "data line 4 has no field 'who'"},
        {"{{items}}", "field 'items' is an array"},
        {"{{nul}}", "NUL byte"},
        {"{{\xff}}", "not UTF-8"},
        {"{{name", "is not closed"},
        {"{{a}} {{b}}", "no field 'a'"}, /* the first error */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        assert_null(kiln_merge_text(bad[i].tmpl, r, &opt, "--name", &err));
        assert_int_equal(err.code, KILN_E_INVALID_SPEC);
        assert_string_equal(err.pointer, "--name");
        if (!strstr(err.message, bad[i].message)) {
            fprintf(stderr, "%s: %s\n", bad[i].tmpl, err.message);
            fail();
        }
    }
    kiln_merge_options empty = {KILN_MERGE_MISSING_EMPTY, 0};
    out = kiln_merge_text("[{{who}}]", r, &empty, "--name", &err);
    assert_string_equal(out, "[]");
    free(out);
    json_decref(r);

    assert_int_equal(kiln_merge_has_placeholder("a {{b}}"), 1);
    assert_int_equal(kiln_merge_has_placeholder("a {{ malformed"), 1);
    assert_int_equal(kiln_merge_has_placeholder("a {b} }}"), 0);
    assert_int_equal(kiln_merge_has_placeholder(""), 0);
    assert_int_equal(kiln_merge_has_placeholder(NULL), 0);
}

static void test_merged_spec_parses(void **state)
{
    (void)state;
    json_t *t = J(
        "{'sheets': [{'name': '{{region}}', 'columns': [{'header': 'Day'},"
        " {'header': 'Amount'}], 'rows': [['{{day}}', '{{amount}}'], ['{{n}}', '{{x}}']]},"
        " {'name': 'Items', 'rows': '{{more}}'}]}");
    json_t *r = J("{'region': 'North', 'day': '2026-03-31', 'amount': 12.5, 'n': 'text',"
                  " 'x': true, 'more': [['2026-04-01', 3]]}");
    kiln_errors_init(&errs);
    json_t *spec = kiln_merge_spec(t, r, NULL, &errs);
    assert_non_null(spec);
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    kiln_doc *doc = NULL;
    kiln_status st = kiln_doc_parse_json(spec, &o, &doc, &errs);
    if (st != KILN_E_OK)
        test_dump_errors(&errs);
    assert_int_equal(st, KILN_E_OK);
    kiln_doc_free(doc);
    json_decref(spec);
    json_decref(t);
    json_decref(r);
}

/* ---- data rows ---- */

static void write_file(const char *name, const char *data, size_t len, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* What reading a file gave: each call's outcome, row and line. */
#define MAX_CALLS 32
typedef struct reading {
    int rc[MAX_CALLS];
    json_t *row[MAX_CALLS];
    uint64_t line[MAX_CALLS];
    kiln_error err[MAX_CALLS];
    size_t calls; /* the last is the 0 of the end */
} reading;

static void read_all(kiln_data_rows *r, reading *out)
{
    memset(out, 0, sizeof *out);
    for (;;) {
        assert_true(out->calls < MAX_CALLS);
        size_t i = out->calls++;
        out->rc[i] = kiln_data_rows_next(r, &out->row[i], &out->line[i], &out->err[i]);
        if (out->rc[i] == 0)
            break;
        assert_true(out->rc[i] == 1 ? json_is_object(out->row[i]) : out->row[i] == NULL);
    }
    /* The end stays the end. */
    json_t *row;
    uint64_t line;
    kiln_error err;
    assert_int_equal(kiln_data_rows_next(r, &row, &line, &err), 0);
}

static void reading_free(reading *rd)
{
    for (size_t i = 0; i < rd->calls; i++)
        json_decref(rd->row[i]);
}

/* Open name (written with data), read it all; the file must open. */
static void read_file(const char *name, const char *data, size_t len, reading *rd)
{
    char path[512];
    write_file(name, data, len, path, sizeof path);
    kiln_data_rows *r = NULL;
    kiln_error err;
    kiln_status st = kiln_data_rows_open(path, -1, &r, &err);
    if (st != KILN_E_OK)
        fprintf(stderr, "%s\n", err.message);
    assert_int_equal(st, KILN_E_OK);
    read_all(r, rd);
    kiln_data_rows_free(r);
}

static void assert_row(const reading *rd, size_t i, uint64_t line, const char *want)
{
    assert_true(i < rd->calls);
    if (rd->rc[i] != 1)
        fprintf(stderr, "call %zu: %d %s\n", i, rd->rc[i], rd->err[i].message);
    assert_int_equal(rd->rc[i], 1);
    assert_int_equal(rd->line[i], line);
    assert_json(rd->row[i], want);
}

static void assert_row_error(const reading *rd, size_t i, kiln_status code, const char *part)
{
    assert_true(i < rd->calls);
    if (rd->rc[i] != -1 || rd->err[i].code != code || !strstr(rd->err[i].message, part)) {
        fprintf(stderr, "call %zu: rc %d [%s] %s; expected ...%s...\n", i, rd->rc[i],
                kiln_status_name(rd->err[i].code), rd->err[i].message, part);
        fail();
    }
    assert_string_equal(rd->err[i].pointer, "");
}

/* Open must fail with code and a message holding part. */
static void open_fails(const char *name, const char *data, kiln_status code, const char *part)
{
    char path[512];
    write_file(name, data, strlen(data), path, sizeof path);
    kiln_data_rows *r = (kiln_data_rows *)&r; /* not NULL: open must make it so */
    kiln_error err;
    assert_int_equal(kiln_data_rows_open(path, -1, &r, &err), code);
    assert_null(r);
    if (!strstr(err.message, part)) {
        fprintf(stderr, "%s: %s; expected ...%s...\n", name, err.message, part);
        fail();
    }
}

static void test_csv_quoting(void **state)
{
    (void)state;
    reading rd;
    const char *csv = "name,amount,note\r\nAnn,12,\"a, b\"\r\n\"Bob \"\"B\"\"\",3.5,\r\n"
                      "\"\",\"7\",\"\"\"\"\r\n";
    read_file("q.csv", csv, strlen(csv), &rd);
    assert_int_equal(rd.calls, 4);
    assert_row(&rd, 0, 2, "{'name': 'Ann', 'amount': 12, 'note': 'a, b'}");
    assert_row(&rd, 1, 3, "{'name': 'Bob \\'B\\'', 'amount': 3.5, 'note': ''}");
    /* A quoted number is typed as well (the rule reads the field's text). */
    assert_row(&rd, 2, 4, "{'name': '', 'amount': 7, 'note': '\\''}");
    assert_true(json_is_integer(json_object_get(rd.row[0], "amount")));
    reading_free(&rd);
}

static void test_csv_auto_typing(void **state)
{
    (void)state;
    reading rd;
    const char *csv = "v\n007\n-12\n123456789012345\n1234567890123456\n1e5\n+5\n 5\n5.\n.5\n"
                      "0.5\n-0\n0\n12.3456789012345\n-\n1,5\nabc\n";
    read_file("t.csv", csv, strlen(csv), &rd);
    const char *want[] = {"'007'",
                          "-12",
                          "123456789012345",
                          "'1234567890123456'",
                          "'1e5'",
                          "'+5'",
                          "' 5'",
                          "'5.'",
                          "'.5'",
                          "0.5",
                          "0",
                          "0",
                          "12.3456789012345",
                          "'-'"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char row[80];
        snprintf(row, sizeof row, "{'v': %s}", want[i]);
        assert_row(&rd, i, i + 2, row);
    }
    /* "1,5" is two fields, more than the header has. */
    assert_row_error(&rd, 14, KILN_E_INPUT,
                     "t.csv:16: a record of 2 fields, but the header "
                     "names 1");
    assert_row(&rd, 15, 17, "{'v': 'abc'}");
    assert_int_equal(rd.rc[16], 0);
    reading_free(&rd);
}

static void test_csv_lines(void **state)
{
    (void)state;
    reading rd;
    /* Line breaks inside quotes count; CR LF inside them reads as LF; the
     * last record has no line end. */
    const char *csv = "\xEF\xBB\xBF"
                      "a,b\n\"x\ny\",1\n\n\"p\r\nq\",2\r\n\r\n\n\"three\n\n\nlines\",3\nlast,4";
    read_file("l.csv", csv, strlen(csv), &rd);
    assert_int_equal(rd.calls, 5);
    assert_row(&rd, 0, 2, "{'a': 'x\\ny', 'b': 1}");
    assert_row(&rd, 1, 5, "{'a': 'p\\nq', 'b': 2}");
    assert_row(&rd, 2, 9, "{'a': 'three\\n\\n\\nlines', 'b': 3}");
    assert_row(&rd, 3, 13, "{'a': 'last', 'b': 4}");
    reading_free(&rd);

    /* CR alone ends a record too; fewer fields leave the rest absent; a
     * line of one quoted empty field is no blank line. */
    read_file("cr.csv", "a,b,c\r1,2\r3\r\"\"\r,\r", 17, &rd);
    assert_row(&rd, 0, 2, "{'a': 1, 'b': 2}");
    assert_row(&rd, 1, 3, "{'a': 3}");
    assert_row(&rd, 2, 4, "{'a': ''}");
    assert_row(&rd, 3, 5, "{'a': '', 'b': ''}");
    assert_int_equal(rd.rc[4], 0);
    reading_free(&rd);

    /* The header alone: no rows. */
    read_file("h.csv", "a,b\n", 4, &rd);
    assert_int_equal(rd.calls, 1);
    reading_free(&rd);
}

static void test_csv_errors(void **state)
{
    (void)state;
    open_fails("dup.csv", "id,name,id\n1,2,3\n", KILN_E_INPUT,
               "dup.csv:1: the header names fields 1 and 3 alike: \"id\"");
    open_fails("empty_name.csv", "\n\na,,c\n", KILN_E_INPUT,
               "empty_name.csv:3: the header's field 2 has no name");
    /* A first record of no byte at all (fuzz_merge found the record buffer
     * still unmade there). */
    open_fails("quoted_empty.csv", "\xEF\xBB\xBF\"\"\r", KILN_E_INPUT,
               "quoted_empty.csv:1: the header's field 1 has no name");
    open_fails("empty.csv", "", KILN_E_INPUT, "empty.csv:1: no header record");
    open_fails("blank.csv", "\n\r\n", KILN_E_INPUT, "no header record");
    open_fails("bad_header.csv", "a,\xc3\x28\n", KILN_E_INPUT, "bad_header.csv:1: not UTF-8");
    open_fails("open_header.csv", "a,\"b\n", KILN_E_INPUT,
               "open_header.csv:1: a quoted field is not closed");
    open_fails("data.txt", "a\n", KILN_E_USAGE, "data.txt: a data file is CSV");
    open_fails("noext", "a\n", KILN_E_USAGE, "a data file is CSV");

    reading rd;
    static const char csv[] = "a,b\n1,2,3\nx\"y,1\n\"ab\"c,2\n\"multi\nline\xff\",3\nnul\0x,4\n"
                              "ok,5\n\"open\nto the end\n";
    read_file("e.csv", csv, sizeof csv - 1, &rd);
    assert_row_error(&rd, 0, KILN_E_INPUT, "e.csv:2: a record of 3 fields");
    assert_row_error(&rd, 1, KILN_E_INPUT, "e.csv:3: a quote inside an unquoted field");
    assert_row_error(&rd, 2, KILN_E_INPUT, "e.csv:4: a character after the closing quote");
    /* The bad byte's own line, inside the record of line 5. */
    assert_row_error(&rd, 3, KILN_E_INPUT, "e.csv:6: not UTF-8 (byte 0xFF)");
    assert_int_equal(rd.line[3], 5);
    assert_row_error(&rd, 4, KILN_E_INPUT, "e.csv:7: a NUL byte");
    assert_row(&rd, 5, 8, "{'a': 'ok', 'b': 5}");
    assert_row_error(&rd, 6, KILN_E_INPUT,
                     "e.csv:9: a quoted field is not closed before the end of the file");
    assert_int_equal(rd.rc[7], 0);
    assert_int_equal(rd.calls, 8);
    reading_free(&rd);

    char path[512];
    snprintf(path, sizeof path, "%s/absent.csv", tmpdir);
    kiln_data_rows *r;
    kiln_error err;
    assert_int_equal(kiln_data_rows_open(path, -1, &r, &err), KILN_E_INPUT);
    assert_true(strstr(err.message, "No such file") != NULL);
}

static void test_csv_fields_limit(void **state)
{
    (void)state;
    size_t n = KILN_DATA_FIELDS_MAX + 1;
    char *csv = malloc(n * 8 + 16);
    assert_non_null(csv);
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(csv + len, 8, i ? ",f%zu" : "f%zu", i);
    csv[len++] = '\n';
    char path[512];
    write_file("wide.csv", csv, len, path, sizeof path);
    kiln_data_rows *r;
    kiln_error err;
    assert_int_equal(kiln_data_rows_open(path, -1, &r, &err), KILN_E_LIMIT);
    assert_true(strstr(err.message, "wide.csv:1: a record of 4097 fields, more than 4096"));
    assert_true(err.limit == KILN_DATA_FIELDS_MAX && err.actual == n);

    /* Exactly the most: a row of them all. */
    len = 0;
    for (size_t i = 0; i < n - 1; i++)
        len += (size_t)snprintf(csv + len, 8, i ? ",f%zu" : "f%zu", i);
    csv[len++] = '\n';
    csv[len++] = '1';
    csv[len++] = '\n';
    reading rd;
    read_file("wide_ok.csv", csv, len, &rd);
    assert_int_equal(rd.rc[0], 1);
    assert_int_equal(json_object_size(rd.row[0]), 1);
    reading_free(&rd);
    free(csv);
}

static void test_jsonl(void **state)
{
    (void)state;
    reading rd;
    const char *jl =
        "\xEF\xBB\xBF{\"a\": 1}\n\n  \t\n{\"b\": {\"c\": [2]}}\r\n[1,2]\n42\nnot json\n"
        "{\"a\": 1, \"a\": 2}\n{\"x\": \"\xff\"}\n{\"n\": \"\\u0000\"}\n"
        "{\"last\": true}";
    read_file("r.jsonl", jl, strlen(jl), &rd);
    assert_row(&rd, 0, 1, "{'a': 1}");
    assert_row(&rd, 1, 4, "{'b': {'c': [2]}}");
    assert_row_error(&rd, 2, KILN_E_INPUT, "r.jsonl:5: a JSON Lines row is an object");
    assert_true(strstr(rd.err[2].message, "not an array") != NULL);
    assert_row_error(&rd, 3, KILN_E_INPUT, "r.jsonl:6: a JSON Lines row is an object");
    assert_true(strstr(rd.err[3].message, "not a number") != NULL);
    assert_row_error(&rd, 4, KILN_E_INPUT, "r.jsonl:7: not valid JSON (column");
    assert_row_error(&rd, 5, KILN_E_INPUT, "r.jsonl:8: not valid JSON");
    assert_true(strstr(rd.err[5].message, "duplicate") != NULL);
    assert_row_error(&rd, 6, KILN_E_INPUT, "r.jsonl:9: not UTF-8");
    assert_row_error(&rd, 7, KILN_E_INPUT, "r.jsonl:10: not valid JSON");
    assert_row(&rd, 8, 11, "{'last': true}");
    assert_int_equal(rd.rc[9], 0);
    reading_free(&rd);

    /* .ndjson and any case of the extension. */
    read_file("r.NDJSON", "{}\n", 3, &rd);
    assert_row(&rd, 0, 1, "{}");
    reading_free(&rd);
    read_file("r.CSV", "a\n1\n", 4, &rd);
    assert_row(&rd, 0, 2, "{'a': 1}");
    reading_free(&rd);
    /* Blank lines only: no rows. */
    read_file("blank.jsonl", "\n \n\r\n", 5, &rd);
    assert_int_equal(rd.calls, 1);
    reading_free(&rd);
}

/* A file of prefix, fill bytes of c, suffix. */
static void write_long(const char *name, const char *prefix, size_t fill, char c,
                       const char *suffix, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(prefix, f);
    char chunk[65536];
    memset(chunk, c, sizeof chunk);
    for (size_t left = fill; left > 0;) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        assert_int_equal(fwrite(chunk, 1, n, f), n);
        left -= n;
    }
    fputs(suffix, f);
    assert_int_equal(fclose(f), 0);
}

static void read_path(const char *path, reading *rd)
{
    kiln_data_rows *r;
    kiln_error err;
    assert_int_equal(kiln_data_rows_open(path, -1, &r, &err), KILN_E_OK);
    read_all(r, rd);
    kiln_data_rows_free(r);
}

static void test_record_limit(void **state)
{
    (void)state;
    char path[512];
    reading rd;
    /* One byte past: an error at its line, then the next record. */
    write_long("long.csv", "a\nfirst\n\"", KILN_DATA_ROW_BYTES - 1, 'x', "\n\"\nsmall\n", path,
               sizeof path);
    read_path(path, &rd);
    assert_row(&rd, 0, 2, "{'a': 'first'}");
    assert_row_error(&rd, 1, KILN_E_LIMIT, "long.csv:3: a record longer than 16 MiB");
    assert_true(rd.err[1].limit == KILN_DATA_ROW_BYTES);
    assert_row(&rd, 2, 5, "{'a': 'small'}");
    assert_int_equal(rd.rc[3], 0);
    reading_free(&rd);

    /* Exactly the most: a row. */
    write_long("full.csv", "a\n", KILN_DATA_ROW_BYTES, 'y', "\n", path, sizeof path);
    read_path(path, &rd);
    assert_int_equal(rd.rc[0], 1);
    assert_int_equal(json_string_length(json_object_get(rd.row[0], "a")), KILN_DATA_ROW_BYTES);
    reading_free(&rd);

    write_long("long.jsonl", "{\"a\": \"", KILN_DATA_ROW_BYTES - 8 + 1, 'z', "\"}\n{\"b\": 1}\n",
               path, sizeof path);
    read_path(path, &rd);
    assert_row_error(&rd, 0, KILN_E_LIMIT, "long.jsonl:1: a line longer than 16 MiB");
    assert_row(&rd, 1, 2, "{'b': 1}");
    reading_free(&rd);

    write_long("full.jsonl", "{\"a\": \"", KILN_DATA_ROW_BYTES - 10, 'z', "\"}\r\n", path,
               sizeof path);
    read_path(path, &rd);
    assert_int_equal(rd.rc[0], 1);
    reading_free(&rd);
}

static void test_fd_mode(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    const char *csv = "\xEF\xBB\xBFname\nAnn\nBob\n";
    assert_int_equal(write(p[1], csv, strlen(csv)), (ssize_t)strlen(csv));
    close(p[1]);
    kiln_data_rows *r;
    kiln_error err;
    /* The name gives the format and the messages; no such file exists. */
    assert_int_equal(kiln_data_rows_open("stdin.csv", p[0], &r, &err), KILN_E_OK);
    assert_int_equal(kiln_data_rows_format(r), KILN_DATA_CSV);
    reading rd;
    read_all(r, &rd);
    kiln_data_rows_free(r);
    assert_row(&rd, 0, 2, "{'name': 'Ann'}");
    assert_row(&rd, 1, 3, "{'name': 'Bob'}");
    reading_free(&rd);
    /* Not closed by the reader. */
    assert_true(fcntl(p[0], F_GETFD) != -1);
    close(p[0]);

    /* Errors name the given name. */
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], "[1]\n", 4), 4);
    close(p[1]);
    assert_int_equal(kiln_data_rows_open("in.jsonl", p[0], &r, &err), KILN_E_OK);
    assert_int_equal(kiln_data_rows_format(r), KILN_DATA_JSONL);
    read_all(r, &rd);
    assert_row_error(&rd, 0, KILN_E_INPUT, "in.jsonl:1: a JSON Lines row is an object");
    reading_free(&rd);
    kiln_data_rows_free(r);
    close(p[0]);

    /* A descriptor that cannot be read. */
    assert_int_equal(pipe(p), 0);
    kiln_status st = kiln_data_rows_open("w.csv", p[1], &r, &err);
    assert_int_equal(st, KILN_E_INPUT);
    assert_true(strstr(err.message, "w.csv:1: cannot read") != NULL);
    close(p[0]);
    close(p[1]);
}

static void test_csv_rows_merge(void **state)
{
    (void)state;
    reading rd;
    const char *csv = "name,amount,zip,due\nAnn,12.50,007,2026-03-31\n";
    read_file("m.csv", csv, strlen(csv), &rd);
    json_t *t = J("{'text': '{{name}} owes {{amount}} ({{zip}}) by {{due}}',"
                  " 'rows': [['{{amount}}', '{{zip}}', '{{due}}']]}");
    kiln_merge_options opt = {KILN_MERGE_MISSING_ERROR, rd.line[0]};
    kiln_errors_init(&errs);
    json_t *out = kiln_merge_spec(t, rd.row[0], &opt, &errs);
    assert_non_null(out);
    assert_json(out, "{'text': 'Ann owes 12.5 (007) by 2026-03-31',"
                     " 'rows': [[12.5, '007', {'date': '2026-03-31'}]]}");
    json_decref(out);
    json_decref(t);
    reading_free(&rd);
}

/* jansson's allocations fail from the nth on (json_set_alloc_funcs). */
static long alloc_left;

static void *failing_malloc(size_t n)
{
    if (alloc_left == 0)
        return NULL;
    alloc_left--;
    return malloc(n);
}

/* Every jansson allocation of a merge failed in turn: each run ends in the
 * merged spec or in an out-of-memory error, never a crash or (under ASan) a
 * leak; and the same for reading rows. */
static void test_out_of_memory(void **state)
{
    (void)state;
    json_t *t = J(
        "{'sheets': [{'name': '{{name}}', 'rows': [['{{d}}', 'n={{n}}', '{{items}}']]}],"
        " 'meta': '{{obj}}', 'k': [true, 1.5, null]}");
    json_t *r = J("{'name': 'N', 'd': '2026-03-31', 'n': 2.5, 'items': [[1, 'a']],"
                  " 'obj': {'a': {'b': 'c'}}}");
    json_t *want = NULL;
    long n;
    for (n = 0; n < 10000; n++) {
        alloc_left = n;
        json_set_alloc_funcs(failing_malloc, free);
        kiln_errors_init(&errs);
        json_t *out = kiln_merge_spec(t, r, NULL, &errs);
        json_set_alloc_funcs(malloc, free);
        if (out) {
            want = out;
            break;
        }
        assert_int_equal(errs.count, 1);
        assert_int_equal(errs.items[0].code, KILN_E_NOMEM);
    }
    assert_non_null(want);
    assert_true(n > 10); /* the failures were reached */
    assert_json(want, "{'sheets': [{'name': 'N', 'rows': [[{'date': '2026-03-31'}, 'n=2.5',"
                      " [[1, 'a']]]]}], 'meta': {'a': {'b': 'c'}}, 'k': [true, 1.5, null]}");
    json_decref(want);
    json_decref(t);
    json_decref(r);

    const char *files[][2] = {{"oom.csv", "a,b\n1,x\n\"q\",2.5\n"},
                              {"oom.jsonl", "{\"a\": [1, {\"b\": 2}]}\n[1]\n{\"c\": \"d\"}\n"}};
    for (size_t f = 0; f < 2; f++) {
        char path[512];
        write_file(files[f][0], files[f][1], strlen(files[f][1]), path, sizeof path);
        int complete = 0;
        for (n = 0; n < 1000 && !complete; n++) {
            alloc_left = n;
            json_set_alloc_funcs(failing_malloc, free);
            kiln_data_rows *rows;
            kiln_error err;
            size_t got = 0;
            if (kiln_data_rows_open(path, -1, &rows, &err) == KILN_E_OK) {
                json_t *row;
                uint64_t line;
                int rc;
                while ((rc = kiln_data_rows_next(rows, &row, &line, &err)) != 0) {
                    if (rc > 0) {
                        got++;
                        json_decref(row);
                    } else {
                        assert_true(err.code == KILN_E_NOMEM || err.code == KILN_E_INPUT);
                    }
                }
                kiln_data_rows_free(rows);
                complete = got == 2;
            } else {
                assert_int_equal(err.code, KILN_E_NOMEM);
            }
            json_set_alloc_funcs(malloc, free);
        }
        assert_true(complete);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typed_whole_string),
        cmocka_unit_test(test_array_and_object_replace),
        cmocka_unit_test(test_nested_names),
        cmocka_unit_test(test_literal_dotted_column),
        cmocka_unit_test(test_dates_at_cells_only),
        cmocka_unit_test(test_numbers_as_text),
        cmocka_unit_test(test_missing_fields),
        cmocka_unit_test(test_errors_collected),
        cmocka_unit_test(test_malformed_placeholders),
        cmocka_unit_test(test_member_names_and_pointers),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_bytes_bound),
        cmocka_unit_test(test_merge_text),
        cmocka_unit_test(test_merged_spec_parses),
        cmocka_unit_test(test_csv_quoting),
        cmocka_unit_test(test_csv_auto_typing),
        cmocka_unit_test(test_csv_lines),
        cmocka_unit_test(test_csv_errors),
        cmocka_unit_test(test_csv_fields_limit),
        cmocka_unit_test(test_jsonl),
        cmocka_unit_test(test_record_limit),
        cmocka_unit_test(test_fd_mode),
        cmocka_unit_test(test_csv_rows_merge),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
