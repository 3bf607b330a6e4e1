/* test_http_parse.c - the HTTP service's parsers of request input
 * (service/http.h): Range, If-None-Match, If-Range, HTTP dates,
 * Content-Disposition written and read, query integers, routing, the JSON
 * body's memory budget, the file-name rule (api_internal.h). Each bug
 * fuzz/fuzz_http.c found has its input here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "service/api_internal.h"
#include "service/http.h"
#include "service/json_budget.h"
#include "common/banned.h"

/* The SHA-256 of nothing: our ETag in these tests. */
static const char SHA[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/* Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example. */
#define T1994 INT64_C(784111777)

/* ---- Range ---- */

/* The kind of h against size, and the range when ONE; first and last stay
 * 777 otherwise. */
static http_range_kind range(const char *h, uint64_t size, uint64_t *first, uint64_t *last)
{
    *first = *last = 777;
    http_range_kind k = http_parse_range(h, size, first, last);
    if (k != HTTP_RANGE_ONE) {
        assert_int_equal(*first, 777);
        assert_int_equal(*last, 777);
    }
    return k;
}

static void assert_range(const char *h, uint64_t size, uint64_t want_first, uint64_t want_last)
{
    uint64_t first, last;
    if (range(h, size, &first, &last) != HTTP_RANGE_ONE)
        fail_msg("\"%s\" over %llu bytes is not one range", h, (unsigned long long)size);
    assert_int_equal(first, want_first);
    assert_int_equal(last, want_last);
}

static void test_range_one(void **state)
{
    (void)state;
    assert_range("bytes=0-0", 100, 0, 0);
    assert_range("bytes=-1", 100, 99, 99);
    assert_range("bytes=5-", 100, 5, 99);
    assert_range("bytes=0-18446744073709551615", 100, 0, 99);
    assert_range("bytes=-18446744073709551615", 100, 0, 99);
    assert_range("bytes=-1000", 100, 0, 99); /* a suffix longer than the file */
    assert_range("bytes=10-19", 100, 10, 19);
    assert_range("bytes=99-99", 100, 99, 99);
    assert_range("bytes=0-0", 1, 0, 0);
    assert_range("bytes=0-18446744073709551615", UINT64_MAX, 0, UINT64_MAX - 1);
    /* the unit is case-insensitive; whitespace around the set is read */
    assert_range("BYTES=1-2", 100, 1, 2);
    assert_range("  bytes=5-10  ", 100, 5, 10);
    assert_range("\tbytes=\t5-10\t", 100, 5, 10);
}

static void test_range_bad(void **state)
{
    (void)state;
    uint64_t f, l;
    assert_int_equal(range("bytes=18446744073709551615-", 100, &f, &l), HTTP_RANGE_BAD);
    /* past UINT64_MAX: still past the end, not wrapped around to 0 */
    assert_int_equal(range("bytes=18446744073709551616-", 100, &f, &l), HTTP_RANGE_BAD);
    assert_int_equal(range("bytes=184467440737095516160000-5", 100, &f, &l), HTTP_RANGE_NONE);
    assert_int_equal(range("bytes=100-", 100, &f, &l), HTTP_RANGE_BAD);
    assert_int_equal(range("bytes=100-200", 100, &f, &l), HTTP_RANGE_BAD);
    assert_int_equal(range("bytes=-0", 100, &f, &l), HTTP_RANGE_BAD);
    /* an empty file has no byte to send */
    assert_int_equal(range("bytes=0-0", 0, &f, &l), HTTP_RANGE_BAD);
    assert_int_equal(range("bytes=-1", 0, &f, &l), HTTP_RANGE_BAD);
    assert_int_equal(range("bytes=0-", 0, &f, &l), HTTP_RANGE_BAD);
}

static void test_range_ignored(void **state)
{
    (void)state;
    uint64_t f, l;
    static const char *const none[] = {
        "bytes=5-4",                                   /* last < first: invalid, ignored (200) */
        "bytes=0-1,5-6",                               /* several ranges: the whole file */
        "bytes=0-1, 5-6", "bytes=-5,0-0", "items=0-5", /* not bytes */
        "bytes 0-5",      "bytes = 5-10", /* no whitespace around '=' in the grammar */
        "bytes=5 - 10",   "bytes=",       "bytes=-",     "bytes=+5-10", "bytes=5--10",
        "bytes=5-+10",    "bytes=--5",    "bytes=5-10x", "bytes=0x10-", "",
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        if (range(none[i], 100, &f, &l) != HTTP_RANGE_NONE)
            fail_msg("\"%s\" is not ignored", none[i]);
}

/* ---- If-None-Match, If-Range ---- */

static void test_none_match(void **state)
{
    (void)state;
    char h[300];
    snprintf(h, sizeof h, "\"%s\"", SHA);
    assert_int_equal(http_none_match(h, SHA), 1);
    snprintf(h, sizeof h, "W/\"%s\"", SHA);
    assert_int_equal(http_none_match(h, SHA), 1); /* weak comparison */
    snprintf(h, sizeof h, "\"x\",W/\"y\" , \"%s\"", SHA);
    assert_int_equal(http_none_match(h, SHA), 1);
    snprintf(h, sizeof h, "W/\"abc\", W/\"%s\"", SHA);
    assert_int_equal(http_none_match(h, SHA), 1);
    assert_int_equal(http_none_match("*", SHA), 1);
    assert_int_equal(http_none_match(" *", SHA), 1);

    assert_int_equal(http_none_match("\"x\", W/\"y\"", SHA), 0);
    assert_int_equal(http_none_match(SHA, SHA), 0); /* unquoted */
    snprintf(h, sizeof h, "\"%sx\"", SHA);
    assert_int_equal(http_none_match(h, SHA), 0);
    snprintf(h, sizeof h, "\"%.63s\"", SHA);
    assert_int_equal(http_none_match(h, SHA), 0);
    snprintf(h, sizeof h, "\"%s", SHA); /* unterminated */
    assert_int_equal(http_none_match(h, SHA), 0);
    assert_int_equal(http_none_match("", SHA), 0);
    assert_int_equal(http_none_match(",,, ", SHA), 0);
}

static void test_if_range(void **state)
{
    (void)state;
    kiln_store_file f;
    memset(&f, 0, sizeof f);
    snprintf(f.sha256, sizeof f.sha256, "%s", SHA);
    f.created_at = T1994;
    char h[300];
    snprintf(h, sizeof h, "\"%s\"", SHA);
    assert_int_equal(http_if_range_holds(h, &f), 1);
    snprintf(h, sizeof h, "W/\"%s\"", SHA); /* If-Range wants a strong tag */
    assert_int_equal(http_if_range_holds(h, &f), 0);
    snprintf(h, sizeof h, "\"%s\"x", SHA);
    assert_int_equal(http_if_range_holds(h, &f), 0);
    snprintf(h, sizeof h, "\"%.63s\"", SHA);
    assert_int_equal(http_if_range_holds(h, &f), 0);
    assert_int_equal(http_if_range_holds("\"", &f), 0);

    assert_int_equal(http_if_range_holds("Sun, 06 Nov 1994 08:49:37 GMT", &f), 1);
    assert_int_equal(http_if_range_holds("Sunday, 06-Nov-94 08:49:37 GMT", &f), 1);
    assert_int_equal(http_if_range_holds("Sun Nov  6 08:49:37 1994", &f), 1);
    assert_int_equal(http_if_range_holds("Sun, 06 Nov 1994 08:49:38 GMT", &f), 0);
    assert_int_equal(http_if_range_holds("Mon, 01 Jan 2001 00:00:00 GMT", &f), 0);
    assert_int_equal(http_if_range_holds("", &f), 0);
    char d[64];
    assert_int_equal(http_date(f.created_at, d, sizeof d), 0);
    assert_int_equal(http_if_range_holds(d, &f), 1);
}

/* ---- dates ---- */

static void assert_date(const char *s, int64_t want)
{
    int64_t t = -12345;
    if (http_parse_date(s, &t) != 0)
        fail_msg("\"%s\" is refused", s);
    assert_int_equal(t, want);
}

static void test_date_forms(void **state)
{
    (void)state;
    assert_date("Sun, 06 Nov 1994 08:49:37 GMT", T1994);  /* IMF-fixdate */
    assert_date("Sunday, 06-Nov-94 08:49:37 GMT", T1994); /* RFC 850 */
    assert_date("Sun Nov  6 08:49:37 1994", T1994);       /* asctime */
    assert_date("Sun Nov 06 08:49:37 1994", T1994);       /* asctime, date3 as 2DIGIT */
    assert_date("Thu, 01 Jan 1970 00:00:00 GMT", 0);
    assert_date("Thu Jan  1 00:00:00 1970", 0);
    assert_date("Thu, 29 Feb 2024 12:00:00 GMT", INT64_C(1709208000));
    assert_date("Tue, 29 Feb 2000 00:00:00 GMT", INT64_C(951782400)); /* 2000 is leap */
    assert_date("Tue, 14 Nov 2023 22:13:20 GMT", INT64_C(1700000000));
    assert_date("Tue Nov 14 22:13:20 2023", INT64_C(1700000000));
    assert_date("Tuesday, 14-Nov-23 22:13:20 GMT", INT64_C(1700000000));
    assert_date("Fri, 31 Dec 9999 23:59:59 GMT", INT64_C(253402300799));
}

static void test_date_invalid(void **state)
{
    (void)state;
    static const char *const bad[] = {
        /* what timegm used to move to another day */
        "Mon, 29 Feb 2021 00:00:00 GMT", /* no 29 Feb in 2021 (1 Mar is a Monday) */
        "Thu, 31 Jun 2021 00:00:00 GMT",
        "Thu, 01 Jul 2021 -8:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:60 GMT", /* a leap second is refused, not clamped */
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Tue, 29 Feb 1900 00:00:00 GMT", /* 1900 is no leap year */
        /* what overflowed sscanf's %d */
        "Sun, 06 Nov 1994 08:49:99999999999 GMT",
        "Sun, 99999999999 Nov 1994 08:49:37 GMT",
        /* years */
        "Sun, 06 Nov 99999 08:49:37 GMT",
        "Wed, 31 Dec 1969 23:59:59 GMT",
        "Sat, 01 Jan 0000 00:00:00 GMT",
        /* the weekday must be the date's */
        "Mon, 06 Nov 1994 08:49:37 GMT",
        "Monday, 06-Nov-94 08:49:37 GMT",
        "Mon Nov  6 08:49:37 1994",
        /* fixed width, case-sensitive, nothing around it */
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, +6 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT",
        "sun, 06 nov 1994 08:49:37 gmt",
        "Sun, 06 NOV 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 GMT ",
        " Sun, 06 Nov 1994 08:49:37 GMT",
        "Sun,  06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37",
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun Nov 06 08:49:37 1994x",
        "Sun Nov 6 08:49:37 1994",
        "Sun Nov  6 08:49:37 94",
        "Sun, 06 Nov 1994 08:49:37 GMT\n",
        "",
        "Sun",
        "Sun, ",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t t = -12345;
        if (http_parse_date(bad[i], &t) == 0)
            fail_msg("\"%s\" is accepted as %lld", bad[i], (long long)t);
        assert_int_equal(t, -12345);
    }
}

static void test_date_write(void **state)
{
    (void)state;
    char d[64];
    assert_int_equal(http_date(T1994, d, sizeof d), 0);
    assert_string_equal(d, "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_int_equal(http_date(0, d, 30), 0);
    assert_string_equal(d, "Thu, 01 Jan 1970 00:00:00 GMT");
    int64_t t = 0;
    for (int64_t s = 0; s < INT64_C(253402300800); s += INT64_C(86399) * 367 + 12345) {
        assert_int_equal(http_date(s, d, sizeof d), 0);
        assert_int_equal(http_parse_date(d, &t), 0);
        assert_int_equal(t, s);
    }
    /* gmtime_r cannot convert these, or the year has five digits: "" */
    memset(d, 'Z', sizeof d);
    assert_int_equal(http_date(INT64_MAX, d, sizeof d), -1);
    assert_string_equal(d, "");
    memset(d, 'Z', sizeof d);
    assert_int_equal(http_date(INT64_C(253402300800), d, sizeof d), -1);
    assert_string_equal(d, "");
    /* too short a buffer is an error, not a cut date */
    memset(d, 'Z', sizeof d);
    assert_int_equal(http_date(T1994, d, 29), -1);
    assert_string_equal(d, "");
}

/* ---- Content-Disposition, written ---- */

static void assert_disposition(const char *name, const char *want)
{
    char out[KILN_HTTP_DISPOSITION_MAX];
    assert_int_equal(http_disposition(name, out, sizeof out), 0);
    assert_string_equal(out, want);
    /* and we read our own header back to the name */
    char back[KILN_STORE_FILENAME_MAX + 1];
    assert_int_equal(http_disposition_filename(out, back, sizeof back), 0);
    /* every name comes back whole: filename* carries any the fallback
     * changed */
    assert_string_equal(back, name);
}

static void test_disposition_write(void **state)
{
    (void)state;
    assert_disposition("Q4 report.xlsx", "attachment; filename=\"Q4 report.xlsx\"");
    /* quotes, backslashes and controls become '_' in the ASCII name, and
     * filename* keeps the real one */
    assert_disposition("a\"b\\c\x01"
                       "d\x7f.txt",
                       "attachment; filename=\"a_b_c_d_.txt\"; "
                       "filename*=UTF-8''a%22b%5Cc%01d%7F.txt");
    assert_disposition(
        "say \"hi\".txt",
        "attachment; filename=\"say _hi_.txt\"; filename*=UTF-8''say%20%22hi%22.txt");
    assert_disposition("a\\b.txt",
                       "attachment; filename=\"a_b.txt\"; filename*=UTF-8''a%5Cb.txt");
    assert_disposition("R\xc3\xa9sum\xc3\xa9.docx", "attachment; filename=\"R_sum_.docx\"; "
                                                    "filename*=UTF-8''R%C3%A9sum%C3%A9.docx");
    assert_disposition("\xe6\x95\xb0\xe6\x8d\xae \"q\".csv",
                       "attachment; filename=\"__ _q_.csv\"; "
                       "filename*=UTF-8''%E6%95%B0%E6%8D%AE%20%22q%22.csv");
    /* a name that reads like parameters stays one quoted value */
    assert_disposition("x; filename*=UTF-8''evil.sh",
                       "attachment; filename=\"x; filename*=UTF-8''evil.sh\"");
}

static void test_disposition_worst_case(void **state)
{
    (void)state;
    /* 253 spaces and an e-acute: the 1024-byte buffer cut filename* at a
     * %XX boundary, naming a file of fewer spaces. */
    char name[KILN_STORE_FILENAME_MAX + 2];
    memset(name, ' ', 253);
    memcpy(name + 253, "\xc3\xa9", 3);
    assert_int_equal(strlen(name), KILN_STORE_FILENAME_MAX);
    char *out = malloc(KILN_HTTP_DISPOSITION_MAX);
    assert_non_null(out);
    assert_int_equal(http_disposition(name, out, KILN_HTTP_DISPOSITION_MAX), 0);
    const char *ext = strstr(out, "; filename*=UTF-8''");
    assert_non_null(ext);
    char back[KILN_STORE_FILENAME_MAX + 1];
    const char *v = ext + strlen("; filename*=UTF-8''");
    assert_int_equal(http_pct_decode(v, strlen(v), back, sizeof back), 0);
    assert_string_equal(back, name);
    assert_int_equal(http_disposition_filename(out, back, sizeof back), 0);
    assert_string_equal(back, name);
    size_t need = strlen(out) + 1;

    /* one byte short: an error and a bare "attachment", never a cut name */
    assert_int_equal(http_disposition(name, out, need - 1), -1);
    assert_string_equal(out, "attachment");
    assert_int_equal(http_disposition(name, out, need), 0);

    /* the bound holds for every 255-byte name: 255 bytes, each a
     * character of its own in the fallback and %XX in filename* */
    assert_true(KILN_HTTP_DISPOSITION_MAX == 1063);
    memset(name, '\x01', 254);
    memcpy(name + 254, "\xc3", 2); /* not UTF-8, but the worst for the sizes */
    assert_int_equal(http_disposition(name, out, KILN_HTTP_DISPOSITION_MAX), 0);
    assert_true(strlen(out) < KILN_HTTP_DISPOSITION_MAX);

    /* past the store's limit: refused */
    memset(name, 'a', KILN_STORE_FILENAME_MAX + 1);
    name[KILN_STORE_FILENAME_MAX + 1] = '\0';
    assert_int_equal(http_disposition(name, out, KILN_HTTP_DISPOSITION_MAX), -1);
    assert_string_equal(out, "attachment");
    free(out);
}

/* ---- Content-Disposition, read ---- */

static void assert_cd(const char *h, const char *want)
{
    char out[KILN_STORE_FILENAME_MAX + 1];
    int r = http_disposition_filename(h, out, sizeof out);
    if (want && (r != 0 || strcmp(out, want) != 0))
        fail_msg("%s: %d \"%s\", not \"%s\"", h, r, r == 0 ? out : "", want);
    if (!want && r == 0)
        fail_msg("%s: reads as \"%s\"", h, out);
}

static void test_disposition_read(void **state)
{
    (void)state;
    assert_cd("attachment; filename=\"report.xlsx\"", "report.xlsx");
    assert_cd("attachment; filename=report.xlsx", "report.xlsx");
    assert_cd("attachment;filename=report.xlsx;", "report.xlsx");
    assert_cd("  attachment ;\tfilename = \"a b.txt\"  ", "a b.txt");
    assert_cd("form-data; name=\"file\"; filename=\"a\\\"b.txt\"", "a\"b.txt");
    assert_cd("attachment; filename=\"a\\\\b.txt\"", "a\\b.txt");
    assert_cd("attachment; filename=\"a;b.txt\"", "a;b.txt");
    assert_cd("attachment; FileName=\"x.txt\"", "x.txt");
    /* filename* is preferred, before or after filename */
    assert_cd("attachment; filename*=UTF-8''%E6%95%B0.csv; filename=data.csv",
              "\xe6\x95\xb0.csv");
    assert_cd("attachment; filename=\"R_sum_.docx\"; filename*=UTF-8''R%C3%A9sum%C3%A9.docx",
              "R\xc3\xa9sum\xc3\xa9.docx");
    assert_cd("inline; FILENAME*=utf-8''a%20b.txt", "a b.txt");
    assert_cd("attachment; filename*=UTF-8'en'%C3%A9.txt", "\xc3\xa9.txt");
    /* another charset: not read, so the plain name stands */
    assert_cd("attachment; filename*=iso-8859-1''%E9.txt; filename=\"e.txt\"", "e.txt");
    assert_cd("attachment; filename*=iso-8859-1''%E9.txt", NULL);

    /* filename only at a parameter's start, never inside a value */
    assert_cd("attachment; filename=\"x; filename*=UTF-8''evil.sh\"",
              "x; filename*=UTF-8''evil.sh");
    assert_cd("attachment; xfilename*=UTF-8''evil.sh; filename=\"good.txt\"", "good.txt");
    assert_cd("attachment; xfilename*=UTF-8''evil.sh", NULL);
    assert_cd("attachment; xfilename=\"evil.sh\"", NULL);
    assert_cd("attachment; name=\"filename=evil.sh\"", NULL);
    assert_cd("attachment; name=\"a\\\"; filename=evil.sh\"", NULL);

    /* malformed: no name at all */
    assert_cd("x; filename*=UTF-8''evil.sh\"", NULL); /* a trailing quote */
    assert_cd("attachment; filename=\"abc", NULL);    /* unterminated */
    assert_cd("attachment; filename=\"abc\\", NULL);
    assert_cd("attachment; filename=\"abc\" junk", NULL);
    assert_cd("attachment; filename=\"\"", NULL);
    assert_cd("attachment; filename=", NULL);
    assert_cd("attachment; filename", NULL);
    assert_cd("attachment filename=a.txt", NULL);
    assert_cd("; filename=a.txt", NULL);
    assert_cd("", NULL);
    assert_cd("attachment", NULL);
    assert_cd("attachment; filename=\"a\"; filename=\"b\"", NULL); /* given twice */
    assert_cd("attachment; filename*=UTF-8''a; filename*=UTF-8''b", NULL);
    assert_cd("attachment; filename=\"a\x01.txt\"", NULL); /* a control */
    assert_cd("attachment; filename*=\"UTF-8''a.txt\"", NULL);
    assert_cd("attachment; filename*=UTF-8''%C3.txt; filename=x", NULL); /* not UTF-8 */
    assert_cd("attachment; filename*=UTF-8''%C0%AF", NULL);              /* overlong */
    assert_cd("attachment; filename*=UTF-8''%G0", NULL);
    assert_cd("attachment; filename*=UTF-8''a%00b", NULL);
    assert_cd("attachment; filename*=UTF-8''a%2", NULL);
    assert_cd("attachment; filename*=UTF-8''", NULL);
    assert_cd("attachment; filename*=UTF-8'a.txt", NULL);
    assert_cd("attachment; filename*=''a.txt", NULL);
    assert_cd("attachment; filename*=UTF-8''a'b", NULL); /* ' is no attr-char */

    /* too long for the buffer: refused, not cut */
    char out[8];
    assert_int_equal(http_disposition_filename("a; filename=abcdefg", out, sizeof out), 0);
    assert_string_equal(out, "abcdefg");
    assert_int_equal(http_disposition_filename("a; filename=abcdefgh", out, sizeof out), -1);
    assert_int_equal(http_disposition_filename("a; filename=\"abcdefgh\"", out, sizeof out), -1);
    assert_int_equal(http_disposition_filename("a; filename*=UTF-8''abcdefgh", out, sizeof out),
                     -1);
}

static void test_pct_decode(void **state)
{
    (void)state;
    char out[8];
    assert_int_equal(http_pct_decode("%41%2fb", 7, out, sizeof out), 0);
    assert_string_equal(out, "A/b");
    assert_int_equal(http_pct_decode("abc", 2, out, sizeof out), 0);
    assert_string_equal(out, "ab");
    assert_int_equal(http_pct_decode("%4", 2, out, sizeof out), -1);
    assert_int_equal(http_pct_decode("%4g", 3, out, sizeof out), -1);
    assert_int_equal(http_pct_decode("%00", 3, out, sizeof out), -1);
    assert_int_equal(http_pct_decode("abcdefg", 7, out, sizeof out), 0);
    assert_int_equal(http_pct_decode("abcdefgh", 8, out, sizeof out), -1);
    assert_true(http_is_attr_char('a') && http_is_attr_char('~') && http_is_attr_char('!'));
    assert_false(http_is_attr_char('%') || http_is_attr_char('\'') || http_is_attr_char('*') ||
                 http_is_attr_char(' ') || http_is_attr_char(0) || http_is_attr_char(0xc3));
}

/* ---- query, headers, body, media types ---- */

static void test_query_int(void **state)
{
    (void)state;
    int64_t v = -7;
    assert_int_equal(http_query_int(NULL, 1000, &v), 0);
    assert_int_equal(http_query_int("", 1000, &v), -1);
    assert_int_equal(http_query_int("-1", 1000, &v), -1);
    assert_int_equal(http_query_int("+1", 1000, &v), -1);
    assert_int_equal(http_query_int(" 1", 1000, &v), -1);
    assert_int_equal(http_query_int("1001", 1000, &v), -1);
    assert_int_equal(http_query_int("99999999999999999999999", INT64_MAX / 16, &v), -1);
    assert_int_equal(v, -7);
    assert_int_equal(http_query_int("1000", 1000, &v), 1);
    assert_int_equal(v, 1000);
    assert_int_equal(http_query_int("007", 1000, &v), 1);
    assert_int_equal(v, 7);
    assert_int_equal(http_query_int("0", 0, &v), 1);
    assert_int_equal(v, 0);
}

static void test_headers(void **state)
{
    (void)state;
    assert_true(
        http_content_type_matches(" multipart/form-data; boundary=x", "multipart/form-data"));
    assert_true(http_content_type_matches("Application/JSON", "application/json"));
    assert_false(http_content_type_matches("application/jsonx", "application/json"));
    assert_false(http_content_type_matches(NULL, "application/json"));
    uint64_t len = 99;
    assert_int_equal(http_parse_content_length("18446744073709551615", &len), 1);
    assert_int_equal(len, UINT64_MAX);
    len = 99;
    assert_int_equal(http_parse_content_length("18446744073709551616", &len), 0);
    assert_int_equal(http_parse_content_length("-1", &len), 0);
    assert_int_equal(http_parse_content_length("1 ", &len), 0);
    assert_int_equal(http_parse_content_length(NULL, &len), 0);
    assert_int_equal(len, 99);

    json_t *o = NULL;
    json_error_t err;
    assert_int_equal(http_body_parse(NULL, 0, 1, &o, &err), 0);
    assert_true(json_is_object(o));
    json_decref(o);
    assert_int_equal(http_body_parse("{\"a\":1,\"a\":2}", 13, 1, &o, &err),
                     HTTP_BODY_INVALID_JSON);
    assert_null(o);
    assert_int_equal(http_body_parse("[1]", 3, 1, &o, &err), HTTP_BODY_NOT_OBJECT);
    assert_null(o);
    assert_int_equal(http_body_parse("", 0, 0, &o, &err), HTTP_BODY_INVALID_JSON);
}

/* The memory budget: 4 MiB of empty arrays asks jansson for far more than
 * 32 bytes a byte, so it is refused as over budget, not as invalid; the
 * same size of numbers parses. */
static void test_body_budget(void **state)
{
    (void)state;
    kiln_json_budget_install();
    size_t n = 4u << 20;
    char *text = malloc(n + 64);
    assert_non_null(text);
    size_t o = (size_t)snprintf(text, 64, "{\"spec\":{\"x\":[");
    while (o + 4 < n) {
        memcpy(text + o, "[],", 3);
        o += 3;
    }
    memcpy(text + o, "[]]}}", 5);
    o += 5;
    json_t *doc = NULL;
    json_error_t err;
    assert_int_equal(http_body_parse(text, o, 0, &doc, &err), HTTP_BODY_OVER_BUDGET);
    assert_null(doc);
    /* cut short: the budget runs out before the end would show the error */
    assert_int_equal(http_body_parse(text, o - 1, 0, &doc, &err), HTTP_BODY_OVER_BUDGET);

    o = (size_t)snprintf(text, 64, "{\"spec\":{\"x\":[");
    while (o + 12 < n) {
        memcpy(text + o, "1234567890,", 11);
        o += 11;
    }
    memcpy(text + o, "1]}}", 4);
    o += 4;
    assert_int_equal(http_body_parse(text, o, 0, &doc, &err), 0);
    assert_true(json_is_object(doc));
    json_decref(doc);
    assert_int_equal(http_body_parse("{\"a\":", 5, 0, &doc, &err), HTTP_BODY_INVALID_JSON);
    free(text);
}

/* ---- the file-name rule (api_internal.h) ---- */

static void assert_name_ok(const char *s, size_t len)
{
    const char *why = kiln_api_check_filename(s, len);
    if (why)
        fail_msg("\"%.*s\" refused: %s", (int)len, s, why);
}

static void assert_name_bad(const char *s, size_t len, const char *want)
{
    const char *why = kiln_api_check_filename(s, len);
    if (!why)
        fail_msg("\"%.*s\" accepted", (int)len, s);
    assert_string_equal(why, want);
}

static void test_filename_rule(void **state)
{
    (void)state;
    assert_name_ok("report.xlsx", 11);
    assert_name_ok("10:30 notes.csv", 15); /* ':' is for runs to refuse */
    assert_name_ok(".kiln", 5);
    assert_name_ok("...", 3);
    assert_name_ok("R\xc3\xa9sum\xc3\xa9.pdf", 12);
    assert_name_ok("\xef\xbf\xbd", 3); /* a real U+FFFD */
    assert_name_ok("\xc2\x85", 2);     /* U+0085: C1 is not among the refused */
    assert_name_ok("\xf0\x9f\x93\x8a.csv", 8);
    assert_name_bad("", 0, "is empty");
    char long_name[KILN_STORE_FILENAME_MAX + 1];
    memset(long_name, 'a', sizeof long_name);
    assert_name_ok(long_name, KILN_STORE_FILENAME_MAX);
    assert_name_bad(long_name, KILN_STORE_FILENAME_MAX + 1, "is longer than 255 bytes");
    assert_name_bad("a\0b", 3, "contains a NUL byte");
    const char *control = "contains a control character (U+0000 to U+001F or U+007F)";
    assert_name_bad("a\rb", 3, control);
    assert_name_bad("\r\nSet-Cookie: x", 15, control);
    assert_name_bad("bell\x07", 5, control);
    assert_name_bad("tab\t.txt", 8, control);
    assert_name_bad("del\x7f", 4, control);
    const char *utf8 = "is not valid UTF-8";
    assert_name_bad("\xff.txt", 5, utf8);
    assert_name_bad("\xc3", 1, utf8);             /* cut short */
    assert_name_bad("\xc3\xa9", 1, utf8);         /* cut by len */
    assert_name_bad("\xc0\xaf", 2, utf8);         /* overlong '/' */
    assert_name_bad("\xed\xa0\x80", 3, utf8);     /* a surrogate */
    assert_name_bad("\xf4\x90\x80\x80", 4, utf8); /* past U+10FFFF */
    assert_name_bad("a/b", 3, "contains '/'");
    assert_name_bad("/", 1, "contains '/'");
    assert_name_bad(".", 1, "cannot be '.' or '..'");
    assert_name_bad("..", 2, "cannot be '.' or '..'");
}

static void test_media_type(void **state)
{
    (void)state;
    static kiln_req req;
    memset(&req, 0, sizeof req);
    snprintf(req.filename, sizeof req.filename, "a.XLSX");
    http_pick_media_type(&req, NULL);
    assert_string_equal(req.media_type,
                        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    http_pick_media_type(&req, " text/csv");
    assert_string_equal(req.media_type, "text/csv");
    http_pick_media_type(&req, "application/octet-stream");
    assert_string_equal(req.media_type,
                        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    snprintf(req.filename, sizeof req.filename, "noext");
    http_pick_media_type(&req, "multipart/form-data");
    assert_string_equal(req.media_type, "application/octet-stream");
}

/* ---- routing ---- */

static void test_routes(void **state)
{
    (void)state;
    char seg[64];
    assert_int_equal(http_route_of("/v1/files", seg, sizeof seg), ROUTE_FILES);
    assert_int_equal(http_route_of("/v1/files/abc", seg, sizeof seg), ROUTE_FILE);
    assert_string_equal(seg, "abc");
    assert_int_equal(http_route_of("/v1/files/abc/content", seg, sizeof seg), ROUTE_CONTENT);
    assert_int_equal(http_route_of("/v1/files/abc/link", seg, sizeof seg), ROUTE_LINK);
    assert_int_equal(http_route_of("/v1/files/abc/x", seg, sizeof seg), ROUTE_OTHER);
    assert_int_equal(http_route_of("/v1/files/", seg, sizeof seg), ROUTE_OTHER);
    assert_int_equal(http_route_of("/v1/files//content", seg, sizeof seg), ROUTE_OTHER);
    assert_int_equal(http_route_of("/v1/sessions", seg, sizeof seg), ROUTE_SESSIONS);
    assert_int_equal(http_route_of("/mcp", seg, sizeof seg), ROUTE_MCP);
    assert_int_equal(http_route_of("/mcp/", seg, sizeof seg), ROUTE_OTHER);
    assert_true(http_method_allowed(ROUTE_MCP, "POST") &&
                http_method_allowed(ROUTE_MCP, "DELETE"));
    assert_false(http_method_allowed(ROUTE_MCP, "GET"));
    assert_int_equal(http_route_of("/v1/sessions/s1", seg, sizeof seg), ROUTE_SESSION);
    assert_string_equal(seg, "s1");
    assert_int_equal(http_route_of("/v1/sessions/s2/cells", seg, sizeof seg),
                     ROUTE_SESSION_CELLS);
    assert_string_equal(seg, "s2");
    assert_int_equal(http_route_of("/v1/sessions/s/interrupt", seg, sizeof seg),
                     ROUTE_SESSION_INTERRUPT);
    assert_int_equal(http_route_of("/v1/sessions/s/files", seg, sizeof seg), ROUTE_SESSION_FILES);
    assert_int_equal(http_route_of("/v1/sessions/s/content", seg, sizeof seg), ROUTE_OTHER);
    assert_int_equal(http_route_of("/v1/sessions/", seg, sizeof seg), ROUTE_OTHER);
    assert_int_equal(http_route_of("/v1/sessions//cells", seg, sizeof seg), ROUTE_OTHER);
    assert_int_equal(http_route_of("/v1/sessions/s/cells/x", seg, sizeof seg), ROUTE_OTHER);
    assert_int_equal(http_method_allowed(ROUTE_SESSION, "DELETE"), 1);
    assert_int_equal(http_method_allowed(ROUTE_SESSION_CELLS, "GET"), 0);
    char small[4];
    assert_int_equal(http_route_of("/v1/files/abcd", small, sizeof small), ROUTE_FILE);
    assert_string_equal(small, ""); /* does not fit: left empty */

    /* the empty method looped forever (strstr found "" at every step) */
    static const kiln_route all[] = {ROUTE_OTHER,
                                     ROUTE_FILES,
                                     ROUTE_FILE,
                                     ROUTE_CONTENT,
                                     ROUTE_LINK,
                                     ROUTE_RENDER,
                                     ROUTE_RUNS,
                                     ROUTE_HEALTHZ,
                                     ROUTE_METRICS,
                                     ROUTE_SESSIONS,
                                     ROUTE_SESSION,
                                     ROUTE_SESSION_CELLS,
                                     ROUTE_SESSION_INTERRUPT,
                                     ROUTE_SESSION_FILES};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        assert_int_equal(http_method_allowed(all[i], ""), 0);
        assert_int_equal(http_method_allowed(all[i], ","), 0);
        assert_int_equal(http_method_allowed(all[i], " "), 0);
    }
    assert_int_equal(http_method_allowed(ROUTE_FILES, "GET"), 1);
    assert_int_equal(http_method_allowed(ROUTE_FILES, "POST"), 1);
    assert_int_equal(http_method_allowed(ROUTE_FILES, "PUT"), 0);
    assert_int_equal(http_method_allowed(ROUTE_FILES, "ET"), 0);
    assert_int_equal(http_method_allowed(ROUTE_FILES, "POS"), 0);
    assert_int_equal(http_method_allowed(ROUTE_FILES, "get"), 0);
    assert_int_equal(http_method_allowed(ROUTE_FILES, "GET, POST"), 0);
    assert_int_equal(http_method_allowed(ROUTE_CONTENT, "HEAD"), 1);
    assert_int_equal(http_method_allowed(ROUTE_FILE, "DELETE"), 1);
    assert_int_equal(http_method_allowed(ROUTE_LINK, "GET"), 0);
    assert_int_equal(http_method_allowed(ROUTE_OTHER, "GET"), 0);
    assert_string_equal(http_route_allow(ROUTE_CONTENT), "GET, HEAD");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_one),         cmocka_unit_test(test_range_bad),
        cmocka_unit_test(test_range_ignored),     cmocka_unit_test(test_none_match),
        cmocka_unit_test(test_if_range),          cmocka_unit_test(test_date_forms),
        cmocka_unit_test(test_date_invalid),      cmocka_unit_test(test_date_write),
        cmocka_unit_test(test_disposition_write), cmocka_unit_test(test_disposition_worst_case),
        cmocka_unit_test(test_disposition_read),  cmocka_unit_test(test_pct_decode),
        cmocka_unit_test(test_query_int),         cmocka_unit_test(test_headers),
        cmocka_unit_test(test_media_type),        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_body_budget),       cmocka_unit_test(test_filename_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
