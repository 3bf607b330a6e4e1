/*
 * test_json_text.c - the spec's text checked and walked without building it
 * (artifacts/spec/json_text.c): the checker says "JSON" exactly when jansson
 * would (with the parser's flags), the walkers find each element and member
 * as jansson sees them, and the errors point where the text goes wrong.
 * fuzz/fuzz_json_text.c compares the same things on arbitrary bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "artifacts/spec/spec_internal.h"
#include "common/banned.h"

static int check(const char *s, size_t len, kiln_json_syntax *e)
{
    return kiln_json_check(s, len, e);
}

static int jansson_takes(const char *s, size_t len)
{
    json_t *v = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    json_decref(v);
    return v != NULL;
}

static void test_agrees_with_jansson(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{}", "[]", " [ ] ", "0", "-0", "-1.5e-3", "1E+2", "\"\"", "true", "false", "null",
        "{\"a\": [1, {\"b\": null}], \"c\": \"\\u00e9\\n\\\"\"}",
        "\"\\ud83d\\ude00\"", /* a surrogate pair */
        "[9223372036854775807, -9223372036854775808]", "1e308",
        "[1e-400]", /* underflow is fine */
        /* refused by both */
        "", " ", "{", "[1,]", "[1 2]", "{\"a\" 1}", "{\"a\":}", "{,}", "{\"a\":1,}", "[01]",
        "[1.]", "[.5]", "[+1]", "[1e]", "[-]", "tru", "nul", "True", "[\"a\\x\"]", "[\"\\u12\"]",
        "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "[9223372036854775808]",
        "[-9223372036854775809]", "[1e400]", "[\"a\tb\"]", "\"abc", "[1] [2]", "{\"a\":1}}",
        "\xEF\xBB\xBF{}",     /* a byte-order mark is not whitespace */
        "[\"\xC0\x80\"]",     /* an overlong form */
        "[\"\xED\xA0\x80\"]", /* an encoded surrogate */
        "{\"\\u0000\": 1}",   /* jansson's objects cannot name a member NUL */
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        kiln_json_syntax e;
        size_t len = strlen(texts[i]);
        int ours = check(texts[i], len, &e) == 0;
        if (ours != jansson_takes(texts[i], len))
            fail_msg("'%s': the checker says %d, jansson the other", texts[i], ours);
        if (!ours && e.offset > len)
            fail_msg("'%s': error offset %zu past the text", texts[i], e.offset);
    }
    /* A string may hold U+0000 (the spec then refuses it with a pointer). */
    kiln_json_syntax e;
    assert_int_equal(check("[\"a\\u0000b\"]", 12, &e), 0);
}

/* A raw NUL is never JSON; jansson 2.14 drops one that follows a number. */
static void test_raw_nul_is_refused(void **state)
{
    (void)state;
    kiln_json_syntax e;
    assert_int_equal(check("[1\0]", 4, &e), -1);
    assert_int_equal(e.offset, 2);
    assert_int_equal(check("8888\0 ", 6, &e), -1);
    assert_int_equal(check("[\"a\0\"]", 6, &e), -1);
}

static void test_error_offsets(void **state)
{
    (void)state;
    kiln_json_syntax e;
    const char *t = "{\"a\": [1, 2,, 3]}";
    assert_int_equal(check(t, strlen(t), &e), -1);
    assert_int_equal(e.offset, 12);
    int line, col;
    t = "{\n  \"a\": [1,\n   ]\n}";
    assert_int_equal(check(t, strlen(t), &e), -1);
    kiln_json_line_col(t, strlen(t), e.offset, &line, &col);
    assert_int_equal(line, 3);
    assert_int_equal(col, 4);
    /* columns count characters, not bytes */
    t = "[\"\xC3\xA9\xC3\xA9\", x]";
    assert_int_equal(check(t, strlen(t), &e), -1);
    kiln_json_line_col(t, strlen(t), e.offset, &line, &col);
    assert_int_equal(line, 1);
    assert_int_equal(col, 8);
    /* nesting past jansson's ceiling is its own kind of refusal */
    char deep[2100 * 2 + 1];
    memset(deep, '[', 2100);
    memset(deep + 2100, ']', 2100);
    deep[4200] = '\0';
    assert_int_equal(check(deep, 4200, &e), -1);
    assert_true(e.too_deep);
    assert_int_equal(check(deep + 2100 - 2048, 2 * 2048, &e), 0);
}

static void test_walk_elements_and_members(void **state)
{
    (void)state;
    const char *t = " { \"x\" : [ 1 , \"a,]\" , [2,[3]] , {\"k\":\"}\"} ] , \"y\\u0031\":{} } ";
    size_t len = strlen(t);
    kiln_json_syntax e;
    assert_int_equal(check(t, len, &e), 0);
    size_t at = kiln_json_skip_ws(t, len, 0);
    kiln_span root = {(uint32_t)at, (uint32_t)(kiln_json_value_end(t, len, at) - at)};
    assert_int_equal(kiln_json_count(t, len, root), 2);
    kiln_json_iter it;
    kiln_span key, value;
    kiln_json_iter_init(&it, t, len, root);
    assert_true(kiln_json_next_member(&it, &key, &value));
    assert_true(kiln_json_key_is(t, key, "x", 1));
    assert_false(kiln_json_key_is(t, key, "xx", 2));
    assert_int_equal(kiln_json_count(t, len, value), 4);
    const char *want[] = {"1", "\"a,]\"", "[2,[3]]", "{\"k\":\"}\"}"};
    kiln_json_iter inner;
    kiln_span el;
    kiln_json_iter_init(&inner, t, len, value);
    for (size_t i = 0; i < 4; i++) {
        assert_true(kiln_json_next_element(&inner, &el));
        assert_int_equal(el.len, strlen(want[i]));
        assert_memory_equal(t + el.off, want[i], el.len);
    }
    assert_false(kiln_json_next_element(&inner, &el));
    assert_true(kiln_json_next_member(&it, &key, &value));
    assert_true(kiln_json_key_is(t, key, "y1", 2)); /* an escaped name, decoded */
    assert_int_equal(kiln_json_count(t, len, value), 0);
    assert_false(kiln_json_next_member(&it, &key, &value));

    json_t *v = kiln_json_load_span(t, root, &e);
    assert_non_null(v);
    assert_int_equal(json_array_size(json_object_get(v, "x")), 4);
    json_decref(v);
}

/* A piece with a duplicate member is refused when it is loaded, at the
 * duplicate, in the whole text's offsets. */
static void test_duplicates_refused_on_load(void **state)
{
    (void)state;
    const char *t = "[{\"a\": 1, \"a\": 2}]";
    size_t len = strlen(t);
    kiln_json_syntax e;
    assert_int_equal(check(t, len, &e), 0);
    kiln_json_iter it;
    kiln_span whole = {0, (uint32_t)len}, el;
    kiln_json_iter_init(&it, t, len, whole);
    assert_true(kiln_json_next_element(&it, &el));
    assert_null(kiln_json_load_span(t, el, &e));
    assert_non_null(strstr(e.what, "duplicate"));
    assert_true(e.offset >= el.off && e.offset < el.off + el.len);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agrees_with_jansson),
        cmocka_unit_test(test_raw_nul_is_refused),
        cmocka_unit_test(test_error_offsets),
        cmocka_unit_test(test_walk_elements_and_members),
        cmocka_unit_test(test_duplicates_refused_on_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
