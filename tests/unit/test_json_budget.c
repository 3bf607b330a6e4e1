/* test_json_budget.c - service/json_budget.c: request JSON within a memory
 * budget; JSON that needs far more memory than its size is refused, a
 * spec's ordinary JSON is not. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "service/json_budget.h"
#include "test_util.h"
#include "common/banned.h"

/* "{"x": [ITEM,ITEM,...]}" of about len bytes. */
static char *repeat(const char *item, size_t len, size_t *out_len)
{
    char *text = malloc(len + 64);
    assert_non_null(text);
    size_t n = (size_t)snprintf(text, len + 64, "{\"x\": [");
    size_t item_len = strlen(item);
    while (n + item_len + 4 < len) {
        memcpy(text + n, item, item_len);
        n += item_len;
        text[n++] = ',';
    }
    n--; /* the last comma */
    n += (size_t)snprintf(text + n, len + 64 - n, "]}");
    *out_len = n;
    return text;
}

static void refuses_empty_containers(void **state)
{
    (void)state;
    size_t len;
    char *text = repeat("[]", 4u << 20, &len);
    json_error_t error;
    int over = 0;
    json_t *doc = kiln_json_budget_load(text, len, 0, &error, &over);
    assert_null(doc);
    assert_true(over);
    free(text);
    text = repeat("{}", 4u << 20, &len);
    over = 0;
    assert_null(kiln_json_budget_load(text, len, 0, &error, &over));
    assert_true(over);
    free(text);
}

static void accepts_rows_of_values(void **state)
{
    (void)state;
    size_t len;
    char *text = repeat("[12345, 2.5, \"North\", true, null]", 4u << 20, &len);
    json_error_t error;
    int over = 1;
    json_t *doc = kiln_json_budget_load(text, len, 0, &error, &over);
    assert_non_null(doc);
    assert_false(over);
    assert_true(json_array_size(json_object_get(doc, "x")) > 100000);
    json_decref(doc);
    free(text);
    /* Bare small numbers, the densest ordinary JSON (16x). */
    text = repeat("1", 4u << 20, &len);
    doc = kiln_json_budget_load(text, len, 0, &error, &over);
    assert_non_null(doc);
    assert_false(over);
    json_decref(doc);
    free(text);
}

static void syntax_errors_are_not_budget_errors(void **state)
{
    (void)state;
    json_error_t error;
    int over = 1;
    assert_null(kiln_json_budget_load("{\"a\": ", 6, 0, &error, &over));
    assert_false(over);
    assert_int_equal(error.line, 1);
}

static void only_the_parse_is_counted(void **state)
{
    (void)state;
    /* Outside a budgeted load, jansson allocates without limit. */
    json_t *big = json_array();
    for (int i = 0; i < 200000; i++)
        assert_int_equal(json_array_append_new(big, json_array()), 0);
    json_decref(big);
    /* A small text gets the minimum budget. */
    assert_int_equal(kiln_json_budget_for(10), KILN_JSON_BUDGET_MIN);
    assert_int_equal(kiln_json_budget_for(1u << 20), (size_t)KILN_JSON_BUDGET_RATIO << 20);
}

int main(void)
{
    kiln_json_budget_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refuses_empty_containers),
        cmocka_unit_test(accepts_rows_of_values),
        cmocka_unit_test(syntax_errors_are_not_budget_errors),
        cmocka_unit_test(only_the_parse_is_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
