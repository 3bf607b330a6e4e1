/* test_metrics.c - the service's metrics (service/metrics.c): counters,
 * histograms and gauges written in the Prometheus text format 0.0.4, with
 * label values escaped and the series bounded. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "common/error.h"
#include "service/api.h"
#include "common/banned.h"

static kiln_metrics *make(void)
{
    kiln_metrics *m = NULL;
    kiln_error err;
    assert_int_equal(kiln_metrics_init(&m, &err), KILN_E_OK);
    assert_non_null(m);
    return m;
}

static char *text_of(kiln_metrics *m, uint64_t stored, unsigned running, unsigned queued)
{
    size_t len = 0;
    char *t = kiln_metrics_text(m, stored, running, queued, 0, 0, 0, &len);
    assert_non_null(t);
    assert_int_equal(strlen(t), len);
    return t;
}

/* The line that starts with prefix (a whole series name and labels). */
static const char *line_with(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, n) == 0)
            return p;
    return NULL;
}

/* The value after "prefix " as an integer; fails the test when absent. */
static long long value_of(const char *text, const char *prefix)
{
    char key[512];
    snprintf(key, sizeof key, "%s ", prefix);
    const char *l = line_with(text, key);
    if (!l)
        fail_msg("no series %s in:\n%s", prefix, text);
    return strtoll(l + strlen(key), NULL, 10);
}

static void test_empty_has_every_family(void **state)
{
    (void)state;
    kiln_metrics *m = make();
    char *t = text_of(m, 1234, 2, 3);
    static const char *const families[][2] = {
        {"kiln_http_requests_total", "counter"},
        {"kiln_http_request_duration_seconds", "histogram"},
        {"kiln_http_response_bytes_total", "counter"},
        {"kiln_runs_total", "counter"},
        {"kiln_renders_total", "counter"},
        {"kiln_store_bytes", "gauge"},
        {"kiln_jobs_running", "gauge"},
        {"kiln_jobs_queued", "gauge"},
        {"kiln_mcp_requests_total", "counter"},
        {"kiln_mcp_sessions_open", "gauge"},
    };
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        char help[128], type[128];
        snprintf(help, sizeof help, "# HELP %s ", families[i][0]);
        snprintf(type, sizeof type, "# TYPE %s %s\n", families[i][0], families[i][1]);
        assert_non_null(line_with(t, help));
        assert_non_null(line_with(t, type));
    }
    assert_int_equal(value_of(t, "kiln_store_bytes"), 1234);
    assert_int_equal(value_of(t, "kiln_jobs_running"), 2);
    assert_int_equal(value_of(t, "kiln_jobs_queued"), 3);
    /* The text ends with a newline (the format wants one per line). */
    assert_int_equal(t[strlen(t) - 1], '\n');
    free(t);
    kiln_metrics_free(m);
}

static void test_requests_counted_by_labels(void **state)
{
    (void)state;
    kiln_metrics *m = make();
    kiln_metrics_request(m, "GET", "/v1/files", 200, 0.001, 10);
    kiln_metrics_request(m, "GET", "/v1/files", 200, 0.002, 20);
    kiln_metrics_request(m, "GET", "/v1/files", 404, 0.003, 5);
    kiln_metrics_request(m, "POST", "/v1/files", 201, 0.5, 100);
    /* An invented method shares one label. */
    kiln_metrics_request(m, "BREW", "other", 405, 0.001, 1);
    char *t = text_of(m, 0, 0, 0);
    assert_int_equal(
        value_of(t,
                 "kiln_http_requests_total{method=\"GET\",route=\"/v1/files\",status=\"200\"}"),
        2);
    assert_int_equal(
        value_of(t,
                 "kiln_http_requests_total{method=\"GET\",route=\"/v1/files\",status=\"404\"}"),
        1);
    assert_int_equal(
        value_of(t,
                 "kiln_http_requests_total{method=\"POST\",route=\"/v1/files\",status=\"201\"}"),
        1);
    assert_int_equal(
        value_of(t, "kiln_http_requests_total{method=\"other\",route=\"other\",status=\"405\"}"),
        1);
    assert_null(strstr(t, "BREW"));
    assert_int_equal(value_of(t, "kiln_http_response_bytes_total{route=\"/v1/files\"}"), 135);
    free(t);
    kiln_metrics_free(m);
}

static void test_histogram_cumulative(void **state)
{
    (void)state;
    kiln_metrics *m = make();
    const double times[] = {0.004, 0.005, 0.02, 0.3, 3, 42};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        kiln_metrics_request(m, "POST", "/v1/render", 201, times[i], 0);
    char *t = text_of(m, 0, 0, 0);
#define B(le) "kiln_http_request_duration_seconds_bucket{route=\"/v1/render\",le=\"" le "\"}"
    /* le is "less than or equal": 0.005 falls in the 0.005 bucket. */
    assert_int_equal(value_of(t, B("0.005")), 2);
    assert_int_equal(value_of(t, B("0.01")), 2);
    assert_int_equal(value_of(t, B("0.025")), 3);
    assert_int_equal(value_of(t, B("0.25")), 3);
    assert_int_equal(value_of(t, B("0.5")), 4);
    assert_int_equal(value_of(t, B("2.5")), 4);
    assert_int_equal(value_of(t, B("5")), 5);
    assert_int_equal(value_of(t, B("10")), 5);
    assert_int_equal(value_of(t, B("+Inf")), 6);
#undef B
    assert_int_equal(value_of(t,
                              "kiln_http_request_duration_seconds_count{route=\"/v1/render\"}"),
                     6);
    const char *sum = line_with(t,
                                "kiln_http_request_duration_seconds_sum{route=\"/v1/render\"} ");
    assert_non_null(sum);
    double s = strtod(strchr(sum, '}') + 2, NULL);
    assert_true(s > 45.32 && s < 45.33);
    /* Buckets are written in increasing order, +Inf last. */
    const char *p5 = strstr(t, "le=\"5\""), *p10 = strstr(t, "le=\"10\""),
               *inf = strstr(t, "le=\"+Inf\"");
    assert_true(p5 && p10 && inf && p5 < p10 && p10 < inf);
    free(t);
    kiln_metrics_free(m);
}

static void test_runs_and_renders(void **state)
{
    (void)state;
    kiln_metrics *m = make();
    kiln_metrics_run(m, "ok");
    kiln_metrics_run(m, "ok");
    kiln_metrics_run(m, "timeout");
    kiln_metrics_render(m, "xlsx", "ok");
    kiln_metrics_render(m, "xlsx", "error");
    kiln_metrics_render(m, "pdf", "ok");
    char *t = text_of(m, 0, 0, 0);
    assert_int_equal(value_of(t, "kiln_runs_total{outcome=\"ok\"}"), 2);
    assert_int_equal(value_of(t, "kiln_runs_total{outcome=\"timeout\"}"), 1);
    assert_int_equal(value_of(t, "kiln_renders_total{format=\"xlsx\",result=\"ok\"}"), 1);
    assert_int_equal(value_of(t, "kiln_renders_total{format=\"xlsx\",result=\"error\"}"), 1);
    assert_int_equal(value_of(t, "kiln_renders_total{format=\"pdf\",result=\"ok\"}"), 1);
    free(t);
    kiln_metrics_free(m);
}

static void test_labels_escaped(void **state)
{
    (void)state;
    kiln_metrics *m = make();
    kiln_metrics_run(m, "a\"b\\c\nd");
    char *t = text_of(m, 0, 0, 0);
    assert_int_equal(value_of(t, "kiln_runs_total{outcome=\"a\\\"b\\\\c\\nd\"}"), 1);
    /* No raw newline inside a series line: every line is a comment or
     * NAME{...} VALUE. */
    for (const char *p = t; *p; p = strchr(p, '\n') + 1) {
        if (*p != '#')
            assert_non_null(memchr(p, ' ', (size_t)(strchr(p, '\n') - p)));
    }
    free(t);
    kiln_metrics_free(m);
}

static void test_series_bounded(void **state)
{
    (void)state;
    kiln_metrics *m = make();
    char label[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(label, sizeof label, "o%d", i);
        kiln_metrics_run(m, label);
    }
    char *t = text_of(m, 0, 0, 0);
    size_t series = 0;
    for (const char *p = t; (p = strstr(p, "\nkiln_runs_total{")) != NULL; p++)
        series++;
    assert_int_equal(series, 1024);
    assert_true(value_of(t, "kiln_metrics_dropped_total") == 3000 - 1024);
    free(t);
    kiln_metrics_free(m);
}

struct worker_arg {
    kiln_metrics *m;
};

static void *hammer(void *arg)
{
    struct worker_arg *w = arg;
    for (int i = 0; i < 10000; i++)
        kiln_metrics_request(w->m, "GET", "/healthz", 200, 0.001, 1);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    kiln_metrics *m = make();
    pthread_t t[4];
    struct worker_arg w = {m};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &w), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    char *text = text_of(m, 0, 0, 0);
    assert_int_equal(
        value_of(text,
                 "kiln_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"200\"}"),
        40000);
    assert_int_equal(value_of(text, "kiln_http_response_bytes_total{route=\"/healthz\"}"), 40000);
    free(text);
    kiln_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_has_every_family),
        cmocka_unit_test(test_requests_counted_by_labels),
        cmocka_unit_test(test_histogram_cumulative),
        cmocka_unit_test(test_runs_and_renders),
        cmocka_unit_test(test_labels_escaped),
        cmocka_unit_test(test_series_bounded),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
