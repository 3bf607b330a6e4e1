/*
 * test_contract.c - the one contract under every front end (contract/):
 * the limits table against the docs that list it (docs/run.md, docs/serve.md,
 * docs/openapi.json's RunLimits), the shapes of errors, error lists, render
 * results and warnings, and job requests checked and written back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/unit/test_util.h"

#include "artifacts/render.h"
#include "contract/job.h"
#include "contract/limits.h"
#include "contract/report.h"
#include "common/utf8.h"
#include "common/banned.h"

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The line of text that starts with prefix, or NULL; *line_end set. */
static const char *find_row(const char *text, const char *prefix)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, strlen(prefix)) == 0)
            return p;
    return NULL;
}

/* Cell k (0-based) of a markdown table row, into out. */
static void cell(const char *row, int k, char *out, size_t cap)
{
    const char *p = row;
    for (int i = 0; i <= k; i++) {
        p = strchr(p, '|');
        assert_non_null(p);
        p++;
    }
    const char *end = strchr(p, '|');
    assert_non_null(end);
    while (*p == ' ')
        p++;
    size_t n = (size_t)(end - p);
    while (n && p[n - 1] == ' ')
        n--;
    assert_true(n < cap);
    memcpy(out, p, n);
    out[n] = '\0';
}

static const char *placeholder(const kiln_limit_def *d, int serve)
{
    switch (d->kind) {
    case KILN_LIMIT_SECONDS:
        return serve ? "DURATION" : "SECONDS";
    case KILN_LIMIT_BYTES:
        return "SIZE";
    case KILN_LIMIT_COUNT:
        break;
    }
    return "N";
}

/* docs/run.md: | `--FLAG PH` | `member` | default | bounds | ... in the table's order. */
static void test_run_md_lists_the_table(void **state)
{
    (void)state;
    char *text = read_file("docs/run.md");
    const char *prev = NULL;
    for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT; i++) {
        const kiln_limit_def *d = &kiln_limit_defs[i];
        char prefix[96], got[256], want[256], lo[32], hi[32];
        snprintf(prefix, sizeof prefix, "| `--%s %s` |", d->flag, placeholder(d, 0));
        const char *row = find_row(text, prefix);
        if (!row)
            fail_msg("docs/run.md has no row %s", prefix);
        assert_true(row > prev); /* the table's order */
        prev = row;
        cell(row, 1, got, sizeof got);
        snprintf(want, sizeof want, "`%s`", d->member);
        assert_string_equal(got, want);
        cell(row, 2, got, sizeof got);
        kiln_limit_format(d, d->def, want, sizeof want);
        assert_string_equal(got, want);
        cell(row, 3, got, sizeof got);
        kiln_limit_format(d, d->min, lo, sizeof lo);
        kiln_limit_format(d, d->max, hi, sizeof hi);
        if (d->kind == KILN_LIMIT_SECONDS)
            snprintf(want, sizeof want, "more than %s, at most %s", lo, hi);
        else
            snprintf(want, sizeof want, "%s to %s", lo, hi);
        assert_string_equal(got, want);
    }
    /* and no row for a limit the table does not have */
    size_t rows = 0;
    const char *table = strstr(text, "| flag | JSON member |");
    assert_non_null(table);
    const char *table_end = strstr(table, "\n\n");
    for (const char *p = table; (p = strstr(p, "\n| `--")) && (!table_end || p < table_end); p++)
        rows++;
    assert_int_equal(rows, KILN_JOB_LIMIT_COUNT);
    free(text);
}

/* docs/serve.md: | `--run-FLAG PH` | `KILN_RUN_FLAG` | `run-flag` | `default` | ...
 * `limits.member` ... */
static void test_serve_md_lists_the_table(void **state)
{
    (void)state;
    char *text = read_file("docs/serve.md");
    size_t rows = 0;
    for (const char *p = text; (p = strstr(p, "\n| `--run-")); p++)
        rows++;
    assert_int_equal(rows, KILN_JOB_LIMIT_COUNT);
    const char *prev = NULL;
    for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT; i++) {
        const kiln_limit_def *d = &kiln_limit_defs[i];
        char prefix[96], got[256], want[256], env[64];
        snprintf(prefix, sizeof prefix, "| `--run-%s %s` |", d->flag, placeholder(d, 1));
        const char *row = find_row(text, prefix);
        if (!row)
            fail_msg("docs/serve.md has no row %s", prefix);
        assert_true(row > prev);
        prev = row;
        size_t o = (size_t)snprintf(env, sizeof env, "`KILN_RUN_");
        for (const char *f = d->flag; *f; f++)
            env[o++] = *f == '-' ? '_' : (char)(*f - 32 * (*f >= 'a' && *f <= 'z'));
        snprintf(env + o, sizeof env - o, "`");
        cell(row, 1, got, sizeof got);
        assert_string_equal(got, env);
        cell(row, 2, got, sizeof got);
        snprintf(want, sizeof want, "`run-%s`", d->flag);
        assert_string_equal(got, want);
        cell(row, 3, got, sizeof got);
        char def[32];
        kiln_limit_format(d, d->def, def, sizeof def);
        snprintf(want, sizeof want, "`%s%s`", def, d->kind == KILN_LIMIT_SECONDS ? "s" : "");
        assert_string_equal(got, want);
        cell(row, 4, got, sizeof got);
        snprintf(want, sizeof want, "`limits.%s`", d->member);
        assert_non_null(strstr(got, want));
        char lo[32], hi[32];
        kiln_limit_format(d, d->min, lo, sizeof lo);
        kiln_limit_format(d, d->max, hi, sizeof hi);
        if (d->kind == KILN_LIMIT_SECONDS)
            snprintf(want, sizeof want, "(more than %s, at most `%ss`)", lo, hi);
        else
            snprintf(want, sizeof want, "(`%s` to `%s`)", lo, hi);
        if (!strstr(got, want))
            fail_msg("docs/serve.md, --run-%s: no bounds %s in: %s", d->flag, want, got);
    }
    free(text);
}

/* docs/openapi.json's RunLimits: a property per row, in order, with its bounds. */
static void test_openapi_run_limits_are_the_table(void **state)
{
    (void)state;
    json_error_t je;
    json_t *api = json_load_file("docs/openapi.json", 0, &je);
    assert_non_null(api);
    json_t *props = json_object_get(
        json_object_get(json_object_get(json_object_get(api, "components"), "schemas"),
                        "RunLimits"),
        "properties");
    assert_int_equal(json_object_size(props), KILN_JOB_LIMIT_COUNT);
    size_t i = 0;
    const char *key;
    json_t *p;
    json_object_foreach(props, key, p) {
        const kiln_limit_def *d = &kiln_limit_defs[i++];
        assert_string_equal(key, d->member);
        const char *type = json_string_value(json_object_get(p, "type"));
        assert_string_equal(type, d->kind == KILN_LIMIT_SECONDS ? "number" : "integer");
        assert_true(json_number_value(json_object_get(p, "maximum")) == d->max);
        if (d->kind == KILN_LIMIT_SECONDS)
            assert_true(json_number_value(json_object_get(p, "exclusiveMinimum")) == d->min);
        else
            assert_true(json_number_value(json_object_get(p, "minimum")) == d->min);
    }
    json_decref(api);
}

static void test_table_rows_are_whole(void **state)
{
    (void)state;
    kiln_run_limits l;
    kiln_job_limits_default(&l);
    for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT; i++) {
        const kiln_limit_def *d = &kiln_limit_defs[i];
        assert_non_null(d->member);
        assert_non_null(d->flag);
        assert_non_null(d->meaning);
        assert_true(d->min <= d->def && d->def <= d->max);
        assert_true(kiln_limit_get(&l, d) == d->def);
        for (size_t j = 0; j < i; j++) {
            assert_string_not_equal(d->member, kiln_limit_defs[j].member);
            assert_string_not_equal(d->flag, kiln_limit_defs[j].flag);
            assert_int_not_equal(d->offset, kiln_limit_defs[j].offset);
        }
    }
    kiln_error err;
    assert_int_equal(kiln_job_limits_check(&l, &err), KILN_E_OK);
    l.memory_bytes = 1 << 20;
    assert_int_equal(kiln_job_limits_check(&l, &err), KILN_E_USAGE);
    assert_string_equal(err.message, "limits.memory_bytes (--memory) must be at least 16M");
}

static void test_limit_values_as_people_write_them(void **state)
{
    (void)state;
    const kiln_limit_def *wall = kiln_limit_by_member("wall_seconds");
    const kiln_limit_def *mem = kiln_limit_by_member("memory_bytes");
    const kiln_limit_def *procs = kiln_limit_by_member("processes");
    char why[128];
    double v;
    assert_int_equal(kiln_limit_parse(wall, "90", &v, why, sizeof why), 0);
    assert_true(v == 90);
    assert_int_equal(kiln_limit_parse(wall, "1.5", &v, why, sizeof why), 0);
    assert_true(v == 1.5);
    assert_int_equal(kiln_limit_parse(wall, "2m", &v, why, sizeof why), 0);
    assert_true(v == 120);
    assert_int_equal(kiln_limit_parse(wall, "1d", &v, why, sizeof why), 0);
    assert_true(v == 86400);
    assert_int_equal(kiln_limit_parse(wall, "2d", &v, why, sizeof why), -1);
    assert_string_equal(why, "may be at most 86400");
    assert_int_equal(kiln_limit_parse(wall, "0", &v, why, sizeof why), -1);
    assert_string_equal(why, "must be more than 0");
    assert_int_equal(kiln_limit_parse(wall, "5x", &v, why, sizeof why), -1);
    assert_int_equal(kiln_limit_parse(wall, "-5", &v, why, sizeof why), -1);
    assert_int_equal(kiln_limit_parse(mem, "512M", &v, why, sizeof why), 0);
    assert_true(v == 512.0 * 1024 * 1024);
    assert_int_equal(kiln_limit_parse(mem, "1M", &v, why, sizeof why), -1);
    assert_string_equal(why, "must be at least 16M");
    assert_int_equal(kiln_limit_parse(procs, "1.5", &v, why, sizeof why), -1);
    assert_int_equal(kiln_limit_parse(procs, "1000001", &v, why, sizeof why), -1);
    assert_string_equal(why, "may be at most 1000000");
    assert_null(kiln_limit_by_member("bogus"));
    char shown[32];
    kiln_limit_format(mem, 3.0 * 1024 * 1024 + 1, shown, sizeof shown);
    assert_string_equal(shown, "3145729");
}

static void assert_json(json_t *got, const char *want_text)
{
    json_t *want = json_loads(want_text, 0, NULL);
    assert_non_null(want);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("got %s, want %s", g, want_text);
    }
    json_decref(want);
    json_decref(got);
}

static void test_error_shapes(void **state)
{
    (void)state;
    kiln_error e;
    kiln_error_set(&e, KILN_E_INVALID_SPEC, "/sheets/0/name", "bad name");
    assert_json(
        kiln_error_json(&e),
        "{\"code\":\"invalid_spec\",\"pointer\":\"/sheets/0/name\",\"message\":\"bad name\"}");
    kiln_error_set(&e, KILN_E_INVALID_SPEC, "", "not JSON");
    assert_json(kiln_error_json(&e),
                "{\"code\":\"invalid_spec\",\"pointer\":\"\",\"message\":\"not JSON\"}");
    kiln_error_set(&e, KILN_E_WRITE, "", "disk full");
    assert_json(kiln_error_json(&e), "{\"code\":\"write_failed\",\"message\":\"disk full\"}");
    kiln_error_limit(&e, KILN_E_TOO_LARGE, "", 2048, 5123, "too big");
    assert_json(
        kiln_error_json(&e),
        "{\"code\":\"too_large\",\"message\":\"too big\",\"limit\":2048,\"actual\":5123}");
    kiln_error_limit(&e, KILN_E_LIMIT, "/blocks", 10, 11, "too many");
    assert_json(kiln_error_json(&e), "{\"code\":\"limit_exceeded\",\"pointer\":\"/blocks\","
                                     "\"message\":\"too many\",\"limit\":10,\"actual\":11}");

    kiln_errors errs;
    kiln_errors_init(&errs);
    assert_json(kiln_errors_json(&errs), "{\"errors\":[],\"more_errors\":0}");
    for (int i = 0; i < KILN_ERRORS_MAX + 3; i++)
        kiln_errors_addf(&errs, KILN_E_INVALID_JOB, "/code", "x");
    json_t *list = kiln_errors_json(&errs);
    assert_int_equal(json_array_size(json_object_get(list, "errors")), KILN_ERRORS_MAX);
    assert_int_equal(json_integer_value(json_object_get(list, "more_errors")), 3);
    assert_string_equal(json_string_value(
                            json_object_get(json_array_get(json_object_get(list, "errors"), 0),
                                            "code")),
                        "invalid_run");
    json_decref(list);
}

static void test_render_result_and_warnings(void **state)
{
    (void)state;
    kiln_render_result r;
    memset(&r, 0, sizeof r);
    r.format = KILN_FORMAT_PDF;
    r.bytes = 1234;
    assert_json(kiln_render_result_json(&r),
                "{\"format\":\"pdf\",\"bytes\":1234,\"warnings\":[]}");
    r.missing_glyphs = 2;
    r.missing_first = 0x1200;
    r.overflow_slides = 1;
    r.overflow_first = 3;
    kiln_warning w[KILN_WARNINGS_MAX];
    assert_int_equal(kiln_render_warnings(&r, w), 2);
    assert_string_equal(w[0].message, "2 characters have no glyph in any embedded font (the "
                                      "first is U+1200); shown as '?'");
    assert_string_equal(w[1].message, "1 slide has text that does not fit its placeholder or "
                                      "table even when shrunk (the first is slide 3)");
    json_t *j = kiln_warnings_json(&r);
    assert_int_equal(json_array_size(j), 2);
    json_t *first = json_array_get(j, 0);
    assert_string_equal(json_string_value(json_object_get(first, "code")), "missing_glyphs");
    assert_string_equal(json_string_value(json_object_get(first, "message")), w[0].message);
    assert_int_equal(json_integer_value(json_object_get(first, "count")), 2);
    assert_int_equal(json_integer_value(json_object_get(first, "first")), 0x1200);
    json_decref(j);
}

static int has_error(const kiln_errors *errs, const char *pointer, const char *code,
                     const char *text)
{
    for (size_t i = 0; i < errs->count; i++)
        if (strcmp(errs->items[i].pointer, pointer) == 0 &&
            strcmp(kiln_status_name(errs->items[i].code), code) == 0 &&
            strstr(errs->items[i].message, text))
            return 1;
    return 0;
}

static void test_job_request_errors_name_their_pointers(void **state)
{
    (void)state;
    json_t *doc = json_loads("{\"code\": 1, \"language\": \"ruby\", \"render\": 2,"
                             " \"args\": [\"a\", 1], \"inputs\": [3], \"x\": 1,"
                             " \"limits\": {\"wall_seconds\": -1, \"processes\": 1.5,"
                             " \"memory_bytes\": 1, \"cpu_seconds\": 100, \"nope\": 1}}",
                             0, NULL);
    kiln_run_limits max;
    kiln_job_limits_default(&max);
    kiln_job_parse_options opt = {.inputs = KILN_JOB_INPUT_IDS, .max = &max, .unset = &max};
    kiln_job_request rq;
    kiln_errors errs;
    assert_int_equal(kiln_job_request_parse(doc, &opt, &rq, &errs), KILN_E_INVALID_JOB);
    test_dump_errors(&errs);
    assert_true(has_error(&errs, "/x", "invalid_run", "unknown member"));
    assert_true(has_error(&errs, "/code", "invalid_run", "required"));
    assert_true(has_error(&errs, "/language", "invalid_run", "python or bash"));
    assert_true(has_error(&errs, "/render", "invalid_run", "true or false"));
    assert_true(has_error(&errs, "/args/1", "invalid_run", "string"));
    assert_true(has_error(&errs, "/inputs/0", "invalid_run", "file id"));
    assert_true(has_error(&errs, "/limits/wall_seconds", "invalid_run", "positive"));
    assert_true(has_error(&errs, "/limits/processes", "invalid_run", "whole number"));
    assert_true(has_error(&errs, "/limits/memory_bytes", "invalid_run", "at least 16M"));
    assert_true(has_error(&errs, "/limits/cpu_seconds", "limit_exceeded", "on this server"));
    assert_true(has_error(&errs, "/limits/nope", "invalid_run", "stream_kill_bytes"));
    for (size_t i = 0; i < errs.count; i++)
        if (errs.items[i].code == KILN_E_LIMIT)
            assert_int_equal(errs.items[i].limit, 60);
    json_decref(doc);
}

static void test_job_request_defaults_and_round_trip(void **state)
{
    (void)state;
    kiln_run_limits max;
    kiln_job_limits_default(&max);
    max.wall_seconds = 5;
    max.memory_bytes = 2ull << 30;
    json_t *doc = json_loads("{\"code\": \"print(1)\", \"args\": [\"-v\"], \"render\": null,"
                             " \"limits\": {\"memory_bytes\": 1073741824}}",
                             0, NULL);
    kiln_job_parse_options opt = {.inputs = KILN_JOB_INPUT_IDS, .max = &max, .unset = &max};
    kiln_job_request rq;
    kiln_errors errs;
    assert_int_equal(kiln_job_request_parse(doc, &opt, &rq, &errs), KILN_E_OK);
    assert_int_equal(rq.language, KILN_LANG_PYTHON);
    assert_int_equal(rq.render, 1);
    assert_true(rq.limits.wall_seconds == 5);           /* left out: the server's maximum */
    assert_int_equal(rq.limits.memory_bytes, 1u << 30); /* asked for */

    /* Written for a child, read back as kiln run reads it: the same job. */
    const char *paths[] = {"/proc/self/fd/4"}, *names[] = {"10:30 notes.csv"};
    json_t *child = kiln_job_request_json(&rq, paths, names, 1);
    assert_non_null(child);
    kiln_job_parse_options copt = {.inputs = KILN_JOB_INPUT_PATHS};
    kiln_job_request back;
    assert_int_equal(kiln_job_request_parse(child, &copt, &back, &errs), KILN_E_OK);
    assert_int_equal(back.code_len, rq.code_len);
    assert_memory_equal(back.code, rq.code, rq.code_len);
    assert_memory_equal(&back.limits, &rq.limits, sizeof rq.limits);
    assert_string_equal(json_string_value(json_array_get(back.args, 0)), "-v");
    assert_string_equal(json_string_value(
                            json_object_get(json_array_get(back.inputs, 0), "name")),
                        "10:30 notes.csv");
    json_decref(child);
    json_decref(doc);

    /* Without maxima the table's default is what a limit left out gets. */
    doc = json_loads("{\"code\": \"x\", \"language\": \"bash\"}", 0, NULL);
    assert_int_equal(kiln_job_request_parse(doc, &copt, &back, &errs), KILN_E_OK);
    assert_true(back.limits.wall_seconds == 60);
    assert_int_equal(back.language, KILN_LANG_BASH);
    json_decref(doc);
}

/* A session request: a job request's language, inputs, limits and render,
 * checked as a job request's are, and the session's own idle_timeout and
 * lifetime; written for a `kiln session` child and read back, the same. */
static void test_session_request(void **state)
{
    (void)state;
    json_t *doc = json_loads("{\"code\": \"x\", \"language\": \"perl\", \"idle_timeout\": 0,"
                             " \"lifetime\": 1e9, \"limits\": {\"disk_bytes\": \"1G\"}}",
                             0, NULL);
    kiln_job_parse_options opt = {.inputs = KILN_JOB_INPUT_IDS};
    kiln_session_request rq;
    kiln_errors errs;
    assert_int_equal(kiln_session_request_parse(doc, &opt, &rq, &errs), KILN_E_INVALID_JOB);
    test_dump_errors(&errs);
    assert_true(has_error(&errs, "/code", "invalid_run", "unknown member"));
    assert_true(has_error(&errs, "/language", "invalid_run", "python or bash"));
    assert_true(has_error(&errs, "/idle_timeout", "invalid_run", "30 days"));
    assert_true(has_error(&errs, "/lifetime", "invalid_run", "30 days"));
    assert_true(has_error(&errs, "/limits/disk_bytes", "invalid_run", "positive"));
    assert_int_equal(errs.count, 5);
    json_decref(doc);

    doc = json_loads("{\"language\": \"bash\", \"inputs\": [\"f1\"], \"render\": false,"
                     " \"idle_timeout\": 90.5, \"limits\": {\"memory_bytes\": 536870912}}",
                     0, NULL);
    assert_int_equal(kiln_session_request_parse(doc, &opt, &rq, &errs), KILN_E_OK);
    assert_int_equal(rq.language, KILN_LANG_BASH);
    assert_int_equal(rq.render, 0);
    assert_true(rq.idle_seconds == 90.5 && rq.lifetime_seconds == 0);
    assert_int_equal(rq.limits.memory_bytes, 512u << 20);
    assert_true(rq.limits.wall_seconds == 60);
    const char *paths[] = {"/proc/self/fd/4"}, *names[] = {"in.csv"};
    json_t *child = kiln_session_request_json(&rq, paths, names, 1);
    assert_non_null(child);
    kiln_job_parse_options copt = {.inputs = KILN_JOB_INPUT_PATHS};
    kiln_session_request back;
    assert_int_equal(kiln_session_request_parse(child, &copt, &back, &errs), KILN_E_OK);
    assert_memory_equal(&back.limits, &rq.limits, sizeof rq.limits);
    assert_int_equal(back.language, rq.language);
    assert_int_equal(back.render, rq.render);
    assert_true(back.idle_seconds == rq.idle_seconds && back.lifetime_seconds == 0);
    assert_string_equal(json_string_value(
                            json_object_get(json_array_get(back.inputs, 0), "name")),
                        "in.csv");
    json_decref(child);
    json_decref(doc);
}

/* A limit above the server's maximum says both exactly, seconds with their
 * fraction, and shows a size as the docs do. */
static void test_limit_exceeded_is_exact(void **state)
{
    (void)state;
    kiln_run_limits max;
    kiln_job_limits_default(&max);
    max.wall_seconds = 60;
    json_t *doc = json_loads("{\"code\": \"x\", \"limits\": {\"wall_seconds\": 60.5,"
                             " \"memory_bytes\": 2147483648}}",
                             0, NULL);
    kiln_job_parse_options opt = {.inputs = KILN_JOB_INPUT_IDS, .max = &max, .unset = &max};
    kiln_job_request rq;
    kiln_errors errs;
    assert_int_equal(kiln_job_request_parse(doc, &opt, &rq, &errs), KILN_E_LIMIT);
    json_t *list = kiln_errors_json(&errs);
    assert_json(json_incref(json_array_get(json_object_get(list, "errors"), 0)),
                "{\"code\":\"limit_exceeded\",\"pointer\":\"/limits/wall_seconds\","
                "\"message\":\"wall_seconds may be at most 60 on this server\","
                "\"limit\":60,\"actual\":60.5}");
    assert_json(json_incref(json_array_get(json_object_get(list, "errors"), 1)),
                "{\"code\":\"limit_exceeded\",\"pointer\":\"/limits/memory_bytes\","
                "\"message\":\"memory_bytes may be at most 1G on this server\","
                "\"limit\":1073741824,\"actual\":2147483648}");
    json_decref(list);
    json_decref(doc);
}

/* A client's member names, however long or odd, make pointers escaped as
 * RFC 6901 says and never cut inside a character, so every error reaches
 * the client as JSON (a cut one would make json_string fail). */
static void test_pointers_of_odd_member_names(void **state)
{
    (void)state;
    char key[700] = "";
    for (int i = 0; i < 300; i++)
        test_append(key, sizeof key, "\xc3\xa9"); /* é */
    json_t *doc = json_pack("{s:s, s:{s:i, s:i}, s:i}", "code", "x", "limits", key, 1, "a/b~c", 1,
                            "li/mits", 1);
    kiln_job_parse_options opt = {.inputs = KILN_JOB_INPUT_PATHS};
    kiln_job_request rq;
    kiln_errors errs;
    assert_int_not_equal(kiln_job_request_parse(doc, &opt, &rq, &errs), KILN_E_OK);
    assert_int_equal(errs.count, 3);
    assert_true(has_error(&errs, "/li~1mits", "invalid_run", "unknown member"));
    assert_true(has_error(&errs, "/limits/a~1b~0c", "invalid_run", "unknown limit"));
    json_t *list = kiln_errors_json(&errs);
    assert_non_null(list);
    assert_int_equal(json_array_size(json_object_get(list, "errors")), 3);
    for (size_t i = 0; i < errs.count; i++)
        assert_true(kiln_utf8_valid(errs.items[i].pointer, strlen(errs.items[i].pointer)));
    json_decref(list);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_md_lists_the_table),
        cmocka_unit_test(test_serve_md_lists_the_table),
        cmocka_unit_test(test_openapi_run_limits_are_the_table),
        cmocka_unit_test(test_table_rows_are_whole),
        cmocka_unit_test(test_limit_values_as_people_write_them),
        cmocka_unit_test(test_error_shapes),
        cmocka_unit_test(test_render_result_and_warnings),
        cmocka_unit_test(test_job_request_errors_name_their_pointers),
        cmocka_unit_test(test_job_request_defaults_and_round_trip),
        cmocka_unit_test(test_session_request),
        cmocka_unit_test(test_limit_exceeded_is_exact),
        cmocka_unit_test(test_pointers_of_odd_member_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
