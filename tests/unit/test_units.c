/* test_units.c - common/units.c: the sizes `kiln run` and `kiln serve`
 * take on their command lines and in config files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/units.h"
#include "common/banned.h"

static void sizes_read(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(kiln_parse_size("1", &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(kiln_parse_size("30M", &v), 0);
    assert_int_equal(v, 30ull << 20);
    assert_int_equal(kiln_parse_size("64k", &v), 0);
    assert_int_equal(v, 64ull << 10);
    assert_int_equal(kiln_parse_size("2GiB", &v), 0);
    assert_int_equal(v, 2ull << 30);
    assert_int_equal(kiln_parse_size("5mb", &v), 0);
    assert_int_equal(v, 5ull << 20);
    assert_int_equal(kiln_parse_size("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
}

static void nonsense_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "0",
        "0M",
        "-1",
        "+5",
        " 5",
        "5 ",
        "5T",
        "5MM",
        "5Mx",
        "M",
        "18446744073709551616",
        "17179869184G",
        "1.5M",
        "0x10",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        assert_int_equal(kiln_parse_size(bad[i], &v), -1);
        assert_int_equal(v, 7); /* untouched */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes_read),
        cmocka_unit_test(nonsense_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
