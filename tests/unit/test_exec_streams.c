/* test_exec_streams.c - stdout/stderr kept up to a cap while counted
 * (exec/streams.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "exec/exec_internal.h"
#include "common/banned.h"

/* The stream's JSON, checked for its three members; returns the text
 * (valid until the json is released) and its length. */
static json_t *stream_json(const kiln_stream *s, const char **text, size_t *len, uint64_t *bytes,
                           int *truncated)
{
    json_t *j = kiln_stream_json(s);
    assert_non_null(j);
    json_t *t = json_object_get(j, "text");
    assert_true(json_is_string(t));
    *text = json_string_value(t);
    *len = json_string_length(t);
    assert_true(json_is_integer(json_object_get(j, "bytes")));
    *bytes = (uint64_t)json_integer_value(json_object_get(j, "bytes"));
    assert_true(json_is_boolean(json_object_get(j, "truncated")));
    *truncated = json_is_true(json_object_get(j, "truncated"));
    return j;
}

static void test_keeps_up_to_cap_and_counts_all(void **state)
{
    (void)state;
    kiln_stream s;
    kiln_error err;
    assert_int_equal(kiln_stream_init(&s, 10, &err), KILN_E_OK);
    kiln_stream_feed(&s, "hello", 5);
    kiln_stream_feed(&s, " world, again", 13);
    kiln_stream_feed(&s, "!", 1);
    assert_int_equal(s.kept, 10);
    assert_int_equal(s.total, 19);
    const char *text;
    size_t len;
    uint64_t bytes;
    int truncated;
    json_t *j = stream_json(&s, &text, &len, &bytes, &truncated);
    assert_int_equal(len, 10);
    assert_memory_equal(text, "hello worl", 10);
    assert_int_equal(bytes, 19);
    assert_true(truncated);
    json_decref(j);
    kiln_stream_release(&s);
}

static void test_exactly_at_cap_is_not_truncated(void **state)
{
    (void)state;
    kiln_stream s;
    kiln_error err;
    assert_int_equal(kiln_stream_init(&s, 5, &err), KILN_E_OK);
    kiln_stream_feed(&s, "ab", 2);
    kiln_stream_feed(&s, "cde", 3);
    kiln_stream_feed(&s, "", 0);
    const char *text;
    size_t len;
    uint64_t bytes;
    int truncated;
    json_t *j = stream_json(&s, &text, &len, &bytes, &truncated);
    assert_string_equal(text, "abcde");
    assert_int_equal(bytes, 5);
    assert_false(truncated);
    json_decref(j);
    /* One byte more, and it is. */
    kiln_stream_feed(&s, "f", 1);
    j = stream_json(&s, &text, &len, &bytes, &truncated);
    assert_string_equal(text, "abcde");
    assert_int_equal(bytes, 6);
    assert_true(truncated);
    json_decref(j);
    kiln_stream_release(&s);
}

static void test_zero_cap_counts_only(void **state)
{
    (void)state;
    kiln_stream s;
    kiln_error err;
    assert_int_equal(kiln_stream_init(&s, 0, &err), KILN_E_OK);
    assert_null(s.buf);
    for (int i = 0; i < 1000; i++)
        kiln_stream_feed(&s, "0123456789", 10);
    const char *text;
    size_t len;
    uint64_t bytes;
    int truncated;
    json_t *j = stream_json(&s, &text, &len, &bytes, &truncated);
    assert_int_equal(len, 0);
    assert_int_equal(bytes, 10000);
    assert_true(truncated);
    json_decref(j);
    kiln_stream_release(&s);

    /* Nothing written, nothing kept: empty and not truncated. */
    assert_int_equal(kiln_stream_init(&s, 0, &err), KILN_E_OK);
    j = stream_json(&s, &text, &len, &bytes, &truncated);
    assert_int_equal(len, 0);
    assert_int_equal(bytes, 0);
    assert_false(truncated);
    json_decref(j);
    kiln_stream_release(&s);
}

static void test_large_volume_counted(void **state)
{
    (void)state;
    kiln_stream s;
    kiln_error err;
    assert_int_equal(kiln_stream_init(&s, 1000, &err), KILN_E_OK);
    static char chunk[65536];
    memset(chunk, 'x', sizeof chunk);
    for (int i = 0; i < 200; i++) /* 12.5 MiB through a 1000-byte buffer */
        kiln_stream_feed(&s, chunk, sizeof chunk);
    assert_int_equal(s.kept, 1000);
    assert_int_equal(s.total, 200ull * 65536);
    kiln_stream_release(&s);
}

/* Feed raw bytes without a cap in the way and return the repaired text. */
static void check_repair(const char *in, size_t in_len, const char *want, size_t want_len)
{
    kiln_stream s;
    kiln_error err;
    assert_int_equal(kiln_stream_init(&s, 256, &err), KILN_E_OK);
    kiln_stream_feed(&s, in, in_len);
    const char *text;
    size_t len;
    uint64_t bytes;
    int truncated;
    json_t *j = stream_json(&s, &text, &len, &bytes, &truncated);
    assert_int_equal(len, want_len);
    assert_memory_equal(text, want, want_len);
    assert_int_equal(bytes, in_len);
    assert_false(truncated);
    json_decref(j);
    kiln_stream_release(&s);
}

#define FFFD "\xEF\xBF\xBD"

static void test_utf8_repair(void **state)
{
    (void)state;
    /* Valid text of every length passes unchanged. */
    check_repair("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 10,
                 "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 10);
    /* A lone continuation byte, a byte never used, an overlong '/', a
     * surrogate, a code point past U+10FFFF: each one U+FFFD per maximal
     * subpart (Unicode's recommended practice). */
    check_repair("a\x80z", 3, "a" FFFD "z", 5);
    check_repair("\xFF", 1, FFFD, 3);
    check_repair("\xC0\xAF", 2, FFFD FFFD, 6);
    check_repair("\xED\xA0\x80", 3, FFFD FFFD FFFD, 9);
    check_repair("\xF4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD, 12);
    /* A lead byte followed by ASCII: the lead is replaced, the ASCII kept. */
    check_repair("\xE2\x82x", 3, FFFD "x", 4);
    /* A sequence cut at the end of a stream that was NOT truncated is the
     * job's own bad output: replaced, not dropped. */
    check_repair("ok\xE2\x82", 4, "ok" FFFD, 5);
    /* NUL bytes survive as U+0000. */
    check_repair("a\0b", 3, "a\0b", 3);
}

static void test_character_cut_by_cap_is_dropped(void **state)
{
    (void)state;
    kiln_stream s;
    kiln_error err;
    /* "ab€": the cap of 4 cuts the 3-byte euro sign after its 2nd byte. */
    assert_int_equal(kiln_stream_init(&s, 4, &err), KILN_E_OK);
    kiln_stream_feed(&s, "ab\xE2\x82\xAC", 5);
    const char *text;
    size_t len;
    uint64_t bytes;
    int truncated;
    json_t *j = stream_json(&s, &text, &len, &bytes, &truncated);
    assert_string_equal(text, "ab");
    assert_int_equal(bytes, 5);
    assert_true(truncated);
    json_decref(j);
    kiln_stream_release(&s);

    /* A 4-byte emoji cut after its first byte, at a cap of 1. */
    assert_int_equal(kiln_stream_init(&s, 1, &err), KILN_E_OK);
    kiln_stream_feed(&s, "\xF0\x9F\x98\x80", 4);
    j = stream_json(&s, &text, &len, &bytes, &truncated);
    assert_int_equal(len, 0);
    assert_true(truncated);
    json_decref(j);
    kiln_stream_release(&s);

    /* An invalid byte at the cap is still replaced, not dropped. */
    assert_int_equal(kiln_stream_init(&s, 3, &err), KILN_E_OK);
    kiln_stream_feed(&s, "ab\xFFzz", 5);
    j = stream_json(&s, &text, &len, &bytes, &truncated);
    assert_string_equal(text, "ab" FFFD);
    assert_true(truncated);
    json_decref(j);
    kiln_stream_release(&s);
}

static void test_dump_is_valid_json(void **state)
{
    (void)state;
    kiln_stream s;
    kiln_error err;
    assert_int_equal(kiln_stream_init(&s, 64, &err), KILN_E_OK);
    kiln_stream_feed(&s, "x\0\xFF\n\"", 5);
    json_t *j = kiln_stream_json(&s);
    char *dump = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(dump);
    assert_string_equal(
        dump, "{\"bytes\":5,\"text\":\"x\\u0000\xEF\xBF\xBD\\n\\\"\",\"truncated\":false}");
    free(dump);
    json_decref(j);
    kiln_stream_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keeps_up_to_cap_and_counts_all),
        cmocka_unit_test(test_exactly_at_cap_is_not_truncated),
        cmocka_unit_test(test_zero_cap_counts_only),
        cmocka_unit_test(test_large_volume_counted),
        cmocka_unit_test(test_utf8_repair),
        cmocka_unit_test(test_character_cut_by_cap_is_dropped),
        cmocka_unit_test(test_dump_is_valid_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
