/*
 * test_dirs.c - kiln_mkdir_p (common/dirs.c): a path and its missing parents
 * are made with their modes, an existing one is kept, and what cannot be
 * made is an error with errno.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/dirs.h"
#include "tests/unit/test_util.h"
#include "common/banned.h"

static char dir[256];

static void test_parents_made_with_their_modes(void **state)
{
    (void)state;
    char path[512];
    struct stat st;
    mode_t old = umask(0);
    snprintf(path, sizeof path, "%s/a/b/c", dir);
    assert_int_equal(kiln_mkdir_p(path, 0711, 0700), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    snprintf(path, sizeof path, "%s/a/b", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0711);
    /* again: all there, nothing changed */
    snprintf(path, sizeof path, "%s/a/b/c", dir);
    assert_int_equal(kiln_mkdir_p(path, 0755, 0755), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* trailing slash */
    snprintf(path, sizeof path, "%s/d/e/", dir);
    assert_int_equal(kiln_mkdir_p(path, 0755, 0755), 0);
    snprintf(path, sizeof path, "%s/d/e", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    umask(old);
}

static void test_errors(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/file", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/file/below", dir);
    assert_int_equal(kiln_mkdir_p(path, 0755, 0755), -1);
    assert_int_equal(errno, ENOTDIR);
    char *longer = malloc(8192);
    assert_non_null(longer);
    memset(longer, 'x', 8191);
    longer[0] = '/';
    longer[8191] = '\0';
    assert_int_equal(kiln_mkdir_p(longer, 0755, 0755), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    free(longer);
}

static int setup(void **state)
{
    (void)state;
    return test_dir_make(dir, sizeof dir, "dirs");
}

static int teardown(void **state)
{
    (void)state;
    return test_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parents_made_with_their_modes),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
