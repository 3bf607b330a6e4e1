/*
 * test_util.h - what the unit test programs share. Include it after
 * <cmocka.h> (test_quote asserts with cmocka).
 */
#ifndef KILN_TEST_UTIL_H
#define KILN_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

/* Copies s into dst, which holds cap bytes; the test fails when it would
 * not fit (common/banned.h: no strcpy). */
static inline void test_copy(char *dst, size_t cap, const char *s)
{
    size_t n = strlen(s);
    assert_true(n < cap);
    memcpy(dst, s, n + 1);
}

/* Appends s to the string in dst, which holds cap bytes in all; the test
 * fails when it would not fit (no strcat). */
static inline void test_append(char *dst, size_t cap, const char *s)
{
    size_t len = strnlen(dst, cap);
    assert_true(len < cap);
    test_copy(dst + len, cap - len, s);
}

/* A private directory /tmp/kiln-test-SUITE-XXXXXX for one suite's files. 0 / -1. */
static inline int test_dir_make(char *dir, size_t cap, const char *suite)
{
    snprintf(dir, cap, "/tmp/kiln-test-%s-XXXXXX", suite);
    return mkdtemp(dir) ? 0 : -1;
}

/* Remove the directory and everything in it. 0 / -1. */
static inline int test_dir_remove(const char *dir)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* JSON written with ' for " (so specs read in C strings): a malloc'd copy. */
static inline char *test_quote(const char *s)
{
    char *out = strdup(s);
    assert_non_null(out);
    for (char *p = out; *p; p++)
        if (*p == '\'')
            *p = '"';
    return out;
}

/* TEST_UNDER_ASAN: built with AddressSanitizer, whose every malloc and free
 * unwinds its stack the exact, slow way (tests/lsan.supp): time bounds are
 * for the plain build. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_UNDER_ASAN 1
#endif
#endif

/* Every collected error on stderr, to explain a failed assertion. */
static inline void test_dump_errors(const kiln_errors *errs)
{
    for (size_t i = 0; i < errs->count; i++)
        fprintf(stderr, "  [%s] %s: %s\n", kiln_status_name(errs->items[i].code),
                errs->items[i].pointer, errs->items[i].message);
}

/* Assert that ooxml-check accepts the package at path exactly as written. The
 * checker is $OOXML_CHECK, else ../shared/tools/ooxml-check beside the
 * checkout (where make runs the tests); a missing checker fails the test,
 * as `make check` documents it needs one. */
static inline void test_ooxml_check(const char *path)
{
    const char *check = getenv("OOXML_CHECK");
    if (!check || !*check)
        check = "../shared/tools/ooxml-check";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' --quiet '%s' >&2", check, path);
    assert_int_equal(system(cmd), 0);
}

#endif
