/* test_service_api.c - the job side of `kiln serve` (service/api.c, jobs.c,
 * render_api.c, runs_api.c): the job pool, the files-in-use registry, and
 * POST /v1/render and /v1/runs without HTTP, against a store in a temporary
 * directory. The real runs need root (kiln run makes namespaces) and the
 * kiln executable ($KILN_BIN, else bin/kiln beside the build's tests). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "common/error.h"
#include "contract/limits.h"
#include "service/api.h"
#include "service/store.h"
#include "service/store_testing.h"
#include "common/banned.h"

/* ---- the job pool ---- */

/* A gate jobs wait at until the test opens it. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open;
static int order[64];
static int order_len;
static int cancelled;

static void gate_reset(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = 0;
    order_len = 0;
    cancelled = 0;
    pthread_mutex_unlock(&gate_lock);
}

static void gate_release(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

/* Record the job's number; job 0 first waits at the gate. */
static void job_record(void *arg)
{
    int n = (int)(intptr_t)arg;
    pthread_mutex_lock(&gate_lock);
    while (n == 0 && !gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    if (order_len < 64)
        order[order_len++] = n;
    pthread_mutex_unlock(&gate_lock);
}

static void job_cancel(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&gate_lock);
    cancelled++;
    pthread_mutex_unlock(&gate_lock);
}

static void wait_counts(kiln_jobs *jobs, unsigned running, unsigned queued)
{
    for (int i = 0; i < 5000; i++) {
        unsigned r, q;
        kiln_jobs_counts(jobs, &r, &q);
        if (r == running && q == queued)
            return;
        usleep(1000);
    }
    fail_msg("the pool never reached %u running, %u queued", running, queued);
}

/* A pool of one worker, held at the gate by job 0, with room for queue_max
 * more: the state every queue test starts from. */
static kiln_jobs *one_worker_held(unsigned queue_max)
{
    kiln_jobs *jobs;
    kiln_error err;
    gate_reset();
    assert_int_equal(kiln_jobs_init(&jobs, 1, queue_max, &err), KILN_E_OK);
    assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)0), 0);
    wait_counts(jobs, 1, 0);
    return jobs;
}

static void test_jobs_order(void **state)
{
    (void)state;
    kiln_jobs *jobs = one_worker_held(10);
    for (int i = 1; i <= 5; i++)
        assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)i), 0);
    wait_counts(jobs, 1, 5);
    gate_release();
    wait_counts(jobs, 0, 0);
    kiln_jobs_shutdown(jobs, job_cancel);
    assert_int_equal(order_len, 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(order[i], i);
    assert_int_equal(cancelled, 0);
}

static void test_jobs_queue_full(void **state)
{
    (void)state;
    kiln_jobs *jobs = one_worker_held(2);
    assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)1), 0);
    assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)2), 0);
    /* Two wait: the third is refused, and the caller keeps its argument. */
    assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)3), -1);
    gate_release();
    wait_counts(jobs, 0, 0);
    kiln_jobs_shutdown(jobs, job_cancel);
    assert_int_equal(order_len, 3);
}

/* queue_max 0: a free worker takes a job, however soon after the pool
 * started or its last job ended; a busy one refuses. */
static void test_jobs_no_queue(void **state)
{
    (void)state;
    kiln_jobs *jobs;
    kiln_error err;
    for (int round = 0; round < 200; round++) {
        gate_reset();
        assert_int_equal(kiln_jobs_init(&jobs, 1, 0, &err), KILN_E_OK);
        /* at once: the worker may not have reached its wait */
        assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)1), 0);
        wait_counts(jobs, 0, 0);
        /* at once after its job: it may not be back at its wait */
        assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)2), 0);
        wait_counts(jobs, 0, 0);
        kiln_jobs_shutdown(jobs, NULL);
    }
    jobs = one_worker_held(0);
    assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)1), -1);
    gate_release();
    wait_counts(jobs, 0, 0);
    kiln_jobs_shutdown(jobs, NULL);
}

static int odd_gone(void *arg)
{
    return (int)(intptr_t)arg % 2;
}

/* Queued jobs whose requester left are taken out and answered at once; the
 * others keep their places and their order. */
static void test_jobs_drop_gone(void **state)
{
    (void)state;
    kiln_jobs *jobs = one_worker_held(10);
    for (int i = 1; i <= 6; i++)
        assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)i), 0);
    assert_int_equal(kiln_jobs_drop_gone(jobs, odd_gone, job_cancel), 3);
    wait_counts(jobs, 1, 3);
    assert_int_equal(cancelled, 3);
    /* room again: the queue holds 10 */
    for (int i = 7; i <= 13; i += 2)
        assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)(i + 1)), 0);
    gate_release();
    wait_counts(jobs, 0, 0);
    kiln_jobs_shutdown(jobs, NULL);
    int want[] = {0, 2, 4, 6, 8, 10, 12, 14};
    assert_int_equal(order_len, 8);
    for (int i = 0; i < 8; i++)
        assert_int_equal(order[i], want[i]);
}

static void *shutdown_thread(void *arg)
{
    kiln_jobs_shutdown(arg, job_cancel);
    return NULL;
}

static void test_jobs_shutdown_cancels(void **state)
{
    (void)state;
    kiln_jobs *jobs = one_worker_held(5);
    assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)1), 0);
    assert_int_equal(kiln_jobs_submit(jobs, job_record, (void *)(intptr_t)2), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, shutdown_thread, jobs), 0);
    /* The queued two are cancelled at once, while job 0 still runs. */
    for (int i = 0; i < 5000; i++) {
        pthread_mutex_lock(&gate_lock);
        int c = cancelled;
        pthread_mutex_unlock(&gate_lock);
        if (c == 2)
            break;
        usleep(1000);
    }
    pthread_mutex_lock(&gate_lock);
    assert_int_equal(cancelled, 2);
    assert_int_equal(order_len, 0);
    pthread_mutex_unlock(&gate_lock);
    gate_release();
    pthread_join(t, NULL);
    /* Only the running job ran. */
    assert_int_equal(order_len, 1);
    assert_int_equal(order[0], 0);
}

static int counter;

static void job_count(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST);
}

static void *submitter(void *arg)
{
    kiln_jobs *jobs = arg;
    intptr_t failed = 0;
    for (int i = 0; i < 100; i++)
        if (kiln_jobs_submit(jobs, job_count, NULL) != 0)
            failed++;
    return (void *)failed;
}

static void test_jobs_concurrent(void **state)
{
    (void)state;
    counter = 0;
    kiln_jobs *jobs;
    kiln_error err;
    assert_int_equal(kiln_jobs_init(&jobs, 4, 1000, &err), KILN_E_OK);
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&t[i], NULL, submitter, jobs), 0);
    for (int i = 0; i < 8; i++) {
        void *failed;
        pthread_join(t[i], &failed);
        assert_int_equal((intptr_t)failed, 0);
    }
    wait_counts(jobs, 0, 0);
    kiln_jobs_shutdown(jobs, NULL);
    assert_int_equal(counter, 800);
}

/* ---- the in-use registry ---- */

static void test_inuse(void **state)
{
    (void)state;
    kiln_inuse *u;
    kiln_error err;
    assert_int_equal(kiln_inuse_init(&u, &err), KILN_E_OK);
    const char *a = "0123456789abcdef0123456789abcdef";
    const char *b = "fedcba9876543210fedcba9876543210";
    const char *ids[] = {a, b};
    assert_false(kiln_inuse_busy(u, "t1", a));
    kiln_inuse_take(u, "t1", ids, 2);
    kiln_inuse_take(u, "t1", ids, 1);
    assert_true(kiln_inuse_busy(u, "t1", a));
    assert_true(kiln_inuse_busy(u, "t1", b));
    assert_false(kiln_inuse_busy(u, "t2", a)); /* tenants apart */
    kiln_inuse_release(u, "t1", ids, 2);
    assert_true(kiln_inuse_busy(u, "t1", a)); /* taken twice, released once */
    assert_false(kiln_inuse_busy(u, "t1", b));
    kiln_inuse_release(u, "t1", ids, 1);
    assert_false(kiln_inuse_busy(u, "t1", a));
    kiln_inuse_release(u, "t1", ids, 1); /* one release too many: harmless */
    assert_false(kiln_inuse_busy(u, "t1", a));
    kiln_inuse_free(u);
}

static void test_shared_json(void **state)
{
    (void)state;
    char buf[32];
    kiln_api_time(1796029200, buf, sizeof buf);
    assert_string_equal(buf, "2026-11-30T09:00:00Z");
    assert_true(kiln_api_valid_id("0123456789abcdef0123456789abcdef"));
    assert_false(kiln_api_valid_id("0123456789ABCDEF0123456789abcdef"));
    assert_false(kiln_api_valid_id("0123456789abcdef0123456789abcde"));
    assert_false(kiln_api_valid_id("0123456789abcdef0123456789abcdef0"));
    assert_false(kiln_api_valid_id("../456789abcdef0123456789abcdef"));
    json_t *e = kiln_api_error("not_found", "No such file.", NULL);
    char *text = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"error\":{\"code\":\"not_found\",\"details\":{},"
                              "\"message\":\"No such file.\"}}");
    free(text);
    json_decref(e);
}

/* ---- render and run against a store ---- */

static char dir[256];
static char work[300];
static char kiln_exe[PATH_MAX];
static kiln_api_ctx ctx;
static int64_t clock_now;

static int64_t test_clock(void *arg)
{
    (void)arg;
    return clock_now ? clock_now : (int64_t)time(NULL);
}

static int setup_store(void **state)
{
    (void)state;
    if (test_dir_make(dir, sizeof dir, "service-api") != 0)
        return -1;
    snprintf(work, sizeof work, "%s/work", dir);
    if (mkdir(work, 0700) != 0)
        return -1;
    kiln_store_options opt = {.dir = dir};
    kiln_error err;
    memset(&ctx, 0, sizeof ctx);
    if (kiln_store_open(&ctx.store, &opt, &err) != KILN_E_OK) {
        fprintf(stderr, "kiln_store_open: %s\n", err.message);
        return -1;
    }
    kiln_store_set_clock(ctx.store, test_clock, NULL);
    if (kiln_inuse_init(&ctx.inuse, &err) != KILN_E_OK)
        return -1;
    ctx.work_dir = work;
    ctx.max_file_bytes = 30u << 20;
    /* $KILN_BIN, else BUILD/bin/kiln beside BUILD/tests (make BIN=BUILD/bin/kiln),
     * else bin/kiln (the default BIN, from the checkout's root). */
    char beside[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", beside, sizeof beside - 16);
    beside[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(beside, '/');
    if (slash)
        test_copy(slash, sizeof beside - (size_t)(slash - beside), "/../bin/kiln");
    const char *candidates[] = {getenv("KILN_BIN"), beside, "bin/kiln"};
    kiln_exe[0] = '\0';
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
        if (candidates[i] && realpath(candidates[i], kiln_exe) && access(kiln_exe, X_OK) == 0)
            break;
        else
            kiln_exe[0] = '\0';
    ctx.kiln_exe = kiln_exe;
    return 0;
}

static int teardown_store(void **state)
{
    (void)state;
    kiln_store_close(ctx.store);
    kiln_inuse_free(ctx.inuse);
    return test_dir_remove(dir);
}

/* The work directory holds nothing once a job is done. */
static void assert_work_empty(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", work);
    assert_int_equal(system(cmd), 0);
}

static json_t *load(const char *text)
{
    char *q = test_quote(text);
    json_error_t je;
    json_t *j = json_loads(q, 0, &je);
    if (!j)
        fail_msg("bad test JSON: %s: %s", je.text, q);
    free(q);
    return j;
}

static void dump_reply(const kiln_api_reply *r)
{
    char *t = json_dumps(r->body, JSON_COMPACT);
    fprintf(stderr, "  reply %d %s%s%s\n", r->status, t ? t : "(null)", r->log[0] ? " log: " : "",
            r->log);
    free(t);
}

static void assert_status(const kiln_api_reply *r, int status)
{
    if (r->status != status)
        dump_reply(r);
    assert_int_equal(r->status, status);
}

static const char *error_code(const kiln_api_reply *r)
{
    return json_string_value(json_object_get(json_object_get(r->body, "error"), "code"));
}

static json_t *error_details(const kiln_api_reply *r)
{
    return json_object_get(json_object_get(r->body, "error"), "details");
}

static kiln_store_file put_file(const char *path, const char *name, const char *media)
{
    kiln_store_file f;
    kiln_error err;
    kiln_store_result r = kiln_store_put_path(ctx.store, "t1", path, name, media,
                                              KILN_STORE_SOURCE_INPUT, &f, &err);
    if (r != KILN_STORE_OK)
        fail_msg("put %s: %s", path, err.message);
    return f;
}

static kiln_store_file put_text(const char *name, const char *text)
{
    char path[400];
    snprintf(path, sizeof path, "%s/upload.tmp", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    kiln_store_file file = put_file(path, name, "text/plain");
    unlink(path);
    return file;
}

static void test_render_good(void **state)
{
    (void)state;
    json_t *rq = load(
        "{'format': 'xlsx', 'filename': 'report ü.xlsx',"
        " 'spec': {'sheets': [{'name': 'S', 'rows': [[1, 'a\\r\\nb'], [2, 'b']]}]}}");
    kiln_api_reply r;
    char *request_before = json_dumps(rq, JSON_COMPACT);
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 201);
    /* The spec was parsed as the request's tree, which it leaves as it was
     * (the parser normalises line breaks in copies of its own). */
    char *request_after = json_dumps(rq, JSON_COMPACT);
    assert_string_equal(request_before, request_after);
    assert_non_null(strstr(request_after, "a\\r\\nb"));
    free(request_before);
    free(request_after);
    const char *id = json_string_value(json_object_get(r.body, "id"));
    assert_true(kiln_api_valid_id(id));
    assert_string_equal(json_string_value(json_object_get(r.body, "filename")), "report ü.xlsx");
    assert_string_equal(json_string_value(json_object_get(r.body, "media_type")),
                        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    assert_null(json_object_get(r.body, "warnings"));
    char loc[96];
    snprintf(loc, sizeof loc, "/v1/files/%s", id);
    assert_string_equal(r.location, loc);
    /* The body in the store is the zip, of the size reported. */
    kiln_store_file f;
    int fd;
    kiln_error err;
    assert_int_equal(kiln_store_open_body(ctx.store, "t1", id, &f, &fd, &err), KILN_STORE_OK);
    char magic[2];
    assert_int_equal(read(fd, magic, 2), 2);
    assert_memory_equal(magic, "PK", 2);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    close(fd);
    assert_int_equal((uint64_t)sb.st_size, f.bytes);
    assert_int_equal(json_integer_value(json_object_get(r.body, "bytes")), (json_int_t)f.bytes);
    /* Another tenant does not see it. */
    assert_int_equal(kiln_store_get(ctx.store, "t2", id, &f, &err), KILN_STORE_NOT_FOUND);
    json_decref(r.body);
    json_decref(rq);
    assert_work_empty();

    /* No format: from the filename; no filename: document.EXT. */
    rq = load("{'filename': 'x.pdf', 'spec': {'blocks': [{'type': 'paragraph', 'text': 'hi'}]}}");
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 201);
    assert_string_equal(json_string_value(json_object_get(r.body, "media_type")),
                        "application/pdf");
    json_decref(r.body);
    json_decref(rq);
    rq = load("{'format': 'pptx', 'spec': {'slides': [{'title': 'T'}]}}");
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 201);
    assert_string_equal(json_string_value(json_object_get(r.body, "filename")), "document.pptx");
    json_decref(r.body);
    json_decref(rq);
    assert_work_empty();
}

static void test_render_bad_request(void **state)
{
    (void)state;
    static const struct {
        const char *request, *pointer;
    } cases[] = {
        {"{'format': 'odt', 'spec': {}}", "/format"},
        {"{'format': 3, 'spec': {}}", "/format"},
        {"{'spec': {}}", "/format"},
        {"{'filename': 'x.txt', 'spec': {}}", "/format"},
        {"{'format': 'xlsx'}", "/spec"},
        {"{'format': 'xlsx', 'spec': []}", "/spec"},
        {"{'format': 'xlsx', 'spec': {}, 'filename': 'a/b.xlsx'}", "/filename"},
        {"{'format': 'xlsx', 'spec': {}, 'filename': ''}", "/filename"},
        {"{'format': 'xlsx', 'spec': {}, 'filename': 'a\\nb'}", "/filename"},
        {"{'format': 'xlsx', 'spec': {}, 'inputs': 'x'}", "/inputs"},
        {"{'format': 'xlsx', 'spec': {}, 'inputs': ['0123456789abcdef0123456789abcdef', 'a', 7]}",
         "/inputs/2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *rq = load(cases[i].request);
        kiln_api_reply r;
        kiln_api_render(&ctx, "t1", rq, &r);
        assert_status(&r, 400);
        assert_string_equal(error_code(&r), "invalid_request");
        assert_string_equal(json_string_value(json_object_get(error_details(&r), "pointer")),
                            cases[i].pointer);
        json_decref(r.body);
        json_decref(rq);
    }
    /* An unknown format names the ones there are. */
    json_t *rq = load("{'format': 'odt', 'spec': {}}");
    kiln_api_reply r;
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_int_equal(json_array_size(json_object_get(error_details(&r), "allowed")), 4);
    json_decref(r.body);
    json_decref(rq);
    /* A long name: 255 bytes is fine, 256 not. */
    char name[300];
    memset(name, 'a', 251);
    test_copy(name + 251, sizeof name - 251, ".pdf");
    rq = json_pack("{s:s, s:{s:[{s:s, s:s}]}}", "filename", name, "spec", "blocks", "type",
                   "paragraph", "text", "x");
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 201);
    json_decref(r.body);
    json_object_set_new(
        rq, "filename",
        json_string(
            "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.pdf"));
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 400);
    json_decref(r.body);
    json_decref(rq);
    assert_work_empty();
}

static void test_render_invalid_spec(void **state)
{
    (void)state;
    json_t *rq = load("{'format': 'docx', 'spec': {'version': 2, 'metadata': {'titel': 'x'},"
                      " 'blocks': [{'type': 'paragraph', 'text': 'x', 'bold': true}]}}");
    kiln_api_reply r;
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 422);
    assert_string_equal(error_code(&r), "invalid_spec");
    json_t *details = error_details(&r);
    json_t *errors = json_object_get(details, "errors");
    assert_true(json_array_size(errors) >= 3);
    assert_int_equal(json_integer_value(json_object_get(details, "dropped")), 0);
    int seen_version = 0, seen_titel = 0, seen_bold = 0;
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e) {
        const char *p = json_string_value(json_object_get(e, "pointer"));
        assert_non_null(p);
        assert_non_null(json_string_value(json_object_get(e, "code")));
        assert_non_null(json_string_value(json_object_get(e, "message")));
        seen_version |= strcmp(p, "/version") == 0;
        seen_titel |= strcmp(p, "/metadata/titel") == 0;
        seen_bold |= strcmp(p, "/blocks/0/bold") == 0;
    }
    if (!(seen_version && seen_titel && seen_bold))
        dump_reply(&r);
    assert_true(seen_version && seen_titel && seen_bold);
    json_decref(r.body);
    json_decref(rq);

    /* A path that is not an input: an error, and no host path in it. */
    rq = load("{'format': 'docx', 'spec': {'blocks': [{'type': 'image', 'image': "
              "{'path': '/etc/passwd'}}, {'type': 'image', 'image': {'path': 'nothere.png'}}]}}");
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 422);
    errors = json_object_get(error_details(&r), "errors");
    assert_int_equal(json_array_size(errors), 2);
    char *text = json_dumps(r.body, 0);
    assert_null(strstr(text, work));
    free(text);
    /* Each says what to do instead: upload, list the id in inputs, use the id (the
     * absolute path stays refused as invalid, the missing one unreadable). */
    json_array_foreach(errors, i, e) {
        const char *m = json_string_value(json_object_get(e, "message"));
        assert_string_equal(json_string_value(json_object_get(e, "code")),
                            i == 0 ? "invalid_spec" : "unreadable_input");
        assert_non_null(strstr(m, i == 0 ? "\"/etc/passwd\"" : "\"nothere.png\""));
        assert_non_null(strstr(m, "POST /v1/files"));
        assert_non_null(strstr(m, "\"inputs\""));
    }
    json_decref(r.body);
    json_decref(rq);
    /* A well-formed id that is not in inputs: say so. */
    rq = load("{'format': 'docx', 'spec': {'blocks': [{'type': 'paragraph', 'text': 'x'}, "
              "{'type': 'image', 'image': {'path': '0123456789abcdef0123456789abcdef'}}]}}");
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 422);
    errors = json_object_get(error_details(&r), "errors");
    assert_int_equal(json_array_size(errors), 1);
    e = json_array_get(errors, 0);
    assert_string_equal(json_string_value(json_object_get(e, "pointer")), "/blocks/1/image/path");
    assert_non_null(
        strstr(json_string_value(json_object_get(e, "message")), "not in \"inputs\""));
    json_decref(r.body);
    json_decref(rq);
    assert_work_empty();
}

static void test_render_inputs(void **state)
{
    (void)state;
    /* From the checkout's root (make unit) or from BUILD/tests. */
    const char *logo_path = access("samples/images/kiln_logo.png", R_OK) == 0
                                ? "samples/images/kiln_logo.png"
                                : "../../samples/images/kiln_logo.png";
    kiln_store_file logo = put_file(logo_path, "logo.png", "image/png");
    char *spec = NULL;
    assert_true(asprintf(&spec,
                         "{\"format\": \"docx\", \"inputs\": [\"%s\"], \"spec\": {\"blocks\": "
                         "[{\"type\": \"image\", \"image\": {\"path\": \"%s\"}}]}}",
                         logo.id, logo.id) > 0);
    json_t *rq = json_loads(spec, 0, NULL);
    assert_non_null(rq);
    kiln_api_reply r;
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 201);
    assert_true((uint64_t)json_integer_value(json_object_get(r.body, "bytes")) > logo.bytes / 2);
    json_decref(r.body);
    /* The inputs are released after the render. */
    assert_false(kiln_inuse_busy(ctx.inuse, "t1", logo.id));
    /* Another tenant's id is unknown: 404 naming the input. */
    kiln_api_render(&ctx, "t2", rq, &r);
    assert_status(&r, 404);
    assert_string_equal(error_code(&r), "not_found");
    assert_string_equal(json_string_value(json_object_get(error_details(&r), "pointer")),
                        "/inputs/0");
    json_decref(r.body);
    json_decref(rq);
    free(spec);

    /* A CSV input as a sheet's data. */
    kiln_store_file csv = put_text("data.csv", "name,n\na,1\nb,2\n");
    assert_true(
        asprintf(&spec,
                 "{\"filename\": \"d.xlsx\", \"inputs\": [\"%s\"], \"spec\": {\"sheets\": "
                 "[{\"data\": {\"path\": \"%s\", \"format\": \"csv\"}}]}}",
                 csv.id, csv.id) > 0);
    rq = json_loads(spec, 0, NULL);
    assert_non_null(rq);
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 201);
    json_decref(r.body);
    json_decref(rq);
    free(spec);

    /* An unknown or malformed id: 404 with its pointer. */
    rq = load("{'format': 'xlsx', 'inputs': ['0123456789abcdef0123456789abcdef'], 'spec': {}}");
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 404);
    assert_string_equal(json_string_value(json_object_get(error_details(&r), "pointer")),
                        "/inputs/0");
    json_decref(r.body);
    json_decref(rq);
    assert_work_empty();
}

static void test_render_too_large(void **state)
{
    (void)state;
    kiln_api_ctx small = ctx;
    small.max_file_bytes = 1000;
    json_t *rq = load("{'format': 'xlsx', 'spec': {'sheets': [{'rows': [[1, 'a']]}]}}");
    kiln_api_reply r;
    kiln_error err;
    int64_t before = -1, after = -1;
    uint64_t bytes_before = kiln_store_bytes(ctx.store);
    assert_int_equal(kiln_store_list(ctx.store, "t1", 0, 10, NULL, NULL, &before, &err),
                     KILN_STORE_OK);
    kiln_api_render(&small, "t1", rq, &r);
    assert_status(&r, 413);
    assert_string_equal(error_code(&r), "too_large");
    assert_int_equal(json_integer_value(json_object_get(error_details(&r), "limit")), 1000);
    json_decref(r.body);
    json_decref(rq);
    assert_work_empty();
    /* The document was being written into the store's own temporary file:
     * nothing of it stays there. */
    assert_int_equal(kiln_store_list(ctx.store, "t1", 0, 10, NULL, NULL, &after, &err),
                     KILN_STORE_OK);
    assert_int_equal(after, before);
    assert_int_equal(kiln_store_bytes(ctx.store), bytes_before);
}

/* Renders from several threads at once (the pool's workers). */
static void *render_thread(void *arg)
{
    (void)arg;
    static const char *const specs[] = {
        "{\"format\": \"xlsx\", \"spec\": {\"sheets\": [{\"rows\": [[1, 2]]}]}}",
        "{\"format\": \"docx\", \"spec\": {\"blocks\": [{\"type\": \"heading\", \"text\": \"x\"},"
        " {\"type\": \"chart\", \"kind\": \"column\", \"categories\": [\"a\", \"b\"],"
        " \"series\": [{\"values\": [1, 2]}]}]}}",
        "{\"format\": \"pdf\", \"spec\": {\"blocks\": [{\"type\": \"paragraph\", \"text\": \"x\"}]}}",
        "{\"format\": \"pptx\", \"spec\": {\"slides\": [{\"title\": \"x\", \"bullets\": [\"a\"]}]}}",
    };
    intptr_t failures = 0;
    for (int i = 0; i < 8; i++) {
        json_t *rq = json_loads(specs[i % 4], 0, NULL);
        kiln_api_reply r;
        kiln_api_render(&ctx, "t1", rq, &r);
        if (r.status != 201) {
            dump_reply(&r);
            failures++;
        }
        json_decref(r.body);
        json_decref(rq);
    }
    return (void *)failures;
}

static void test_render_threads(void **state)
{
    (void)state;
    pthread_t t[6];
    for (int i = 0; i < 6; i++)
        assert_int_equal(pthread_create(&t[i], NULL, render_thread, NULL), 0);
    intptr_t failures = 0;
    for (int i = 0; i < 6; i++) {
        void *f;
        pthread_join(t[i], &f);
        failures += (intptr_t)f;
    }
    assert_int_equal(failures, 0);
    assert_work_empty();
}

static void test_run_invalid(void **state)
{
    (void)state;
    kiln_api_ctx c = ctx;
    kiln_job_limits_default(&c.run_max);
    json_t *rq = load("{'language': 'perl', 'render': 1, 'args': ['a', 2],"
                      " 'limits': {'memory_bytes': 1e12, 'bogus': 1, 'wall_seconds': -1,"
                      " 'processes': 2.5, 'cpu_seconds': 10}}");
    kiln_api_reply r;
    kiln_api_run(&c, "t1", rq, -1, &r);
    assert_status(&r, 422);
    assert_string_equal(error_code(&r), "invalid_run");
    json_t *errors = json_object_get(error_details(&r), "errors");
    static const char *const want[] = {"/code",
                                       "/language",
                                       "/render",
                                       "/args/1",
                                       "/limits/memory_bytes",
                                       "/limits/bogus",
                                       "/limits/wall_seconds",
                                       "/limits/processes"};
    assert_int_equal(json_array_size(errors), sizeof want / sizeof want[0]);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int found = 0;
        size_t i;
        json_t *e;
        json_array_foreach(errors, i, e)
            found |= strcmp(json_string_value(json_object_get(e, "pointer")), want[k]) == 0;
        if (!found)
            dump_reply(&r);
        assert_true(found);
    }
    json_decref(r.body);
    json_decref(rq);

    /* A ':' in an input's name is a name like any other: the job request
     * names each input in a member of its own (contract/job.h), not as
     * kiln run's -i PATH:NAME. */
    kiln_store_file colon = put_text("a:b.csv", "x\n");
    char *text = NULL;
    assert_true(asprintf(&text,
                         "{\"code\": \"print(open('a:b.csv').read())\", \"inputs\": [\"%s\"]}",
                         colon.id) > 0);
    rq = json_loads(text, 0, NULL);
    kiln_api_run(&c, "t1", rq, -1, &r);
    if (r.status != 503) { /* 503: no sandbox here (not root) */
        assert_status(&r, 200);
        assert_string_equal(json_string_value(
                                json_object_get(json_object_get(r.body, "stdout"), "text")),
                            "x\n\n");
    }
    json_decref(r.body);
    json_decref(rq);
    free(text);

    /* An input whose stored name /mnt/data cannot hold. */
    kiln_store_file odd = put_text(".kiln", "x\n");
    assert_true(asprintf(&text, "{\"code\": \"print(1)\", \"inputs\": [\"%s\"]}", odd.id) > 0);
    rq = json_loads(text, 0, NULL);
    kiln_api_run(&c, "t1", rq, -1, &r);
    assert_status(&r, 422);
    errors = json_object_get(error_details(&r), "errors");
    assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "pointer")),
                        "/inputs/0");
    json_decref(r.body);
    json_decref(rq);
    free(text);
    assert_false(kiln_inuse_busy(ctx.inuse, "t1", odd.id));

    /* An unknown input: 404. */
    rq = load("{'code': 'print(1)', 'inputs': ['0123456789abcdef0123456789abcdef']}");
    kiln_api_run(&c, "t1", rq, -1, &r);
    assert_status(&r, 404);
    json_decref(r.body);
    json_decref(rq);
    assert_work_empty();
}

static int can_run(void)
{
    if (geteuid() != 0 || !kiln_exe[0]) {
        fprintf(stderr, "  (skipped: %s)\n", geteuid() != 0 ? "not root" : "no kiln executable");
        return 0;
    }
    return 1;
}

static void test_run_real(void **state)
{
    (void)state;
    if (!can_run())
        skip();
    kiln_api_ctx c = ctx;
    kiln_job_limits_default(&c.run_max);
    json_t *rq = load("{'code': 'print(1)', 'limits': {'wall_seconds': 30}}");
    kiln_api_reply r;
    kiln_api_run(&c, "t1", rq, -1, &r);
    if (r.status == 503)
        dump_reply(&r);
    assert_status(&r, 200);
    assert_string_equal(json_string_value(json_object_get(r.body, "status")), "ok");
    assert_string_equal(json_string_value(
                            json_object_get(json_object_get(r.body, "stdout"), "text")),
                        "1\n");
    assert_null(json_object_get(r.body, "out_dir"));
    assert_true(json_number_value(
                    json_object_get(json_object_get(r.body, "limits"), "wall_seconds")) == 30);
    json_decref(r.body);
    json_decref(rq);

    /* An input read by name, args, and a file written: stored. */
    kiln_store_file in = put_text("data.csv", "a,b\n1,2\n");
    char *text = NULL;
    assert_true(asprintf(&text,
                         "{\"language\": \"bash\", \"inputs\": [\"%s\"], \"args\": [\"x y\"],"
                         " \"code\": \"cat data.csv > copy.csv; echo \\\"$1\\\" > arg.txt\"}",
                         in.id) > 0);
    rq = json_loads(text, 0, NULL);
    assert_non_null(rq);
    kiln_api_run(&c, "t1", rq, -1, &r);
    assert_status(&r, 200);
    json_t *files = json_object_get(r.body, "files");
    int seen_copy = 0, seen_input = 0;
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) {
        const char *name = json_string_value(json_object_get(f, "name"));
        json_t *file = json_object_get(f, "file");
        const char *id = json_string_value(json_object_get(file, "id"));
        if (!id)
            dump_reply(&r);
        assert_true(kiln_api_valid_id(id));
        kiln_store_file got;
        kiln_error err;
        assert_int_equal(kiln_store_get(ctx.store, "t1", id, &got, &err), KILN_STORE_OK);
        assert_string_equal(got.filename, name);
        if (strcmp(name, "copy.csv") == 0) {
            /* The input's bytes under a name of its own: a file the run made. */
            seen_copy = 1;
            assert_int_equal(got.bytes, in.bytes);
            assert_string_equal(got.sha256, in.sha256);
            assert_string_not_equal(got.id, in.id);
            assert_int_equal(got.source, KILN_STORE_SOURCE_OUTPUT);
        }
        if (strcmp(name, "data.csv") == 0) {
            /* The input, unchanged: not stored again. */
            seen_input = 1;
            assert_string_equal(id, in.id);
            assert_int_equal(got.source, KILN_STORE_SOURCE_INPUT);
            assert_string_equal(json_string_value(json_object_get(file, "source")), "input");
        }
        if (strcmp(name, "arg.txt") == 0)
            assert_int_equal(got.bytes, 4);
    }
    assert_true(seen_copy && seen_input);
    json_decref(r.body);
    json_decref(rq);
    free(text);

    /* render: a spec the code saved comes back as a stored document. */
    rq = load("{'render': true, 'code': 'import kiln\\nkiln.save_spec({\\'blocks\\': "
              "[{\\'type\\': \\'rule\\'}]}, \\'r.docx\\')'}");
    kiln_api_run(&c, "t1", rq, -1, &r);
    assert_status(&r, 200);
    json_t *doc = json_array_get(json_object_get(r.body, "documents"), 0);
    if (!doc)
        dump_reply(&r);
    assert_non_null(doc);
    const char *id = json_string_value(json_object_get(json_object_get(doc, "file"), "id"));
    assert_true(kiln_api_valid_id(id));
    kiln_store_file got;
    kiln_error err;
    assert_int_equal(kiln_store_get(ctx.store, "t1", id, &got, &err), KILN_STORE_OK);
    assert_string_equal(got.filename, "r.docx");
    assert_string_equal(
        got.media_type,
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document");
    assert_int_equal(got.source, KILN_STORE_SOURCE_DOCUMENT);
    json_decref(r.body);
    json_decref(rq);
    assert_work_empty();
}

static void test_render_gone(void **state)
{
    (void)state;
    clock_now = 1700000000;
    kiln_store_file old = put_text("old.csv", "a\n1\n");
    clock_now = 1700000000 + 2 * KILN_STORE_DEFAULT_TTL;
    uint64_t removed = 0;
    kiln_error err;
    assert_int_equal(kiln_store_sweep(ctx.store, clock_now, &removed, &err), KILN_STORE_OK);
    char *text = NULL;
    assert_true(asprintf(&text, "{\"format\": \"xlsx\", \"inputs\": [\"%s\"], \"spec\": {}}",
                         old.id) > 0);
    json_t *rq = json_loads(text, 0, NULL);
    kiln_api_reply r;
    kiln_api_render(&ctx, "t1", rq, &r);
    clock_now = 0;
    assert_status(&r, 410);
    assert_string_equal(error_code(&r), "gone");
    assert_string_equal(json_string_value(json_object_get(error_details(&r), "pointer")),
                        "/inputs/0");
    const char *msg = json_string_value(
        json_object_get(json_object_get(r.body, "error"), "message"));
    assert_non_null(strstr(msg, "expired at 2023-11-15T22:13:20Z"));
    json_decref(r.body);
    json_decref(rq);
    free(text);
    assert_work_empty();
}

static void test_render_warnings(void **state)
{
    (void)state;
    /* A character no embedded font has (a private-use code point). */
    json_t *rq = load("{'format': 'pdf', 'spec': {'blocks': [{'type': 'paragraph',"
                      " 'text': 'x \\ue000 y'}]}}");
    kiln_api_reply r;
    kiln_api_render(&ctx, "t1", rq, &r);
    assert_status(&r, 201);
    json_t *w = json_object_get(r.body, "warnings");
    if (json_array_size(w) != 1)
        dump_reply(&r);
    assert_int_equal(json_array_size(w), 1);
    json_t *w0 = json_array_get(w, 0);
    assert_string_equal(json_string_value(json_object_get(w0, "code")), "missing_glyphs");
    assert_int_equal(json_integer_value(json_object_get(w0, "first")), 0xE000);
    assert_non_null(strstr(json_string_value(json_object_get(w0, "message")), "U+E000"));
    json_decref(r.body);
    json_decref(rq);
}

/* A kiln executable that cannot set up the sandbox (as without root). */
static void test_run_sandbox_unavailable(void **state)
{
    (void)state;
    char fake[400];
    snprintf(fake, sizeof fake, "%s/fake-kiln", dir);
    FILE *f = fopen(fake, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\necho 'kiln: error: kiln run needs root: cannot drop groups "
          "(Operation not permitted)' >&2\nexit 70\n",
          f);
    fclose(f);
    assert_int_equal(chmod(fake, 0755), 0);
    kiln_api_ctx c = ctx;
    c.kiln_exe = fake;
    json_t *rq = load("{'code': 'print(1)'}");
    kiln_api_reply r;
    kiln_api_run(&c, "t1", rq, -1, &r);
    assert_status(&r, 503);
    assert_string_equal(error_code(&r), "sandbox_unavailable");
    assert_non_null(
        strstr(json_string_value(json_object_get(error_details(&r), "reason")), "needs root"));
    json_decref(r.body);
    json_decref(rq);
    assert_work_empty();
}

static void *run_thread(void *arg)
{
    kiln_api_reply *r = arg;
    kiln_api_ctx c = ctx;
    kiln_job_limits_default(&c.run_max);
    json_t *rq = json_loads("{\"language\": \"bash\", \"code\": \"sleep 30\"}", 0, NULL);
    kiln_api_run(&c, "t1", rq, -1, r);
    json_decref(rq);
    return NULL;
}

/* The client's side of a connection: open, then gone once its peer closes. */
static void test_client_gone(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_false(kiln_api_client_gone(-1));
    assert_false(kiln_api_client_gone(sv[0]));
    /* Data waiting (a pipelined request) is not a hang-up. */
    assert_int_equal(write(sv[1], "GET", 3), 3);
    assert_false(kiln_api_client_gone(sv[0]));
    close(sv[1]);
    assert_true(kiln_api_client_gone(sv[0]));
    close(sv[0]);
}

struct gone_run {
    int client_fd;
    kiln_api_reply reply;
};

static void *gone_run_thread(void *arg)
{
    struct gone_run *g = arg;
    kiln_api_ctx c = ctx;
    kiln_job_limits_default(&c.run_max);
    json_t *rq = json_loads("{\"language\": \"bash\", \"code\": \"echo hi > f.txt; sleep 30\"}",
                            0, NULL);
    kiln_api_run(&c, "t1", rq, g->client_fd, &g->reply);
    json_decref(rq);
    return NULL;
}

/* A run whose client goes away is killed at once: no reply to send,
 * nothing stored, the scratch directory gone. */
static void test_run_client_gone(void **state)
{
    (void)state;
    if (!can_run())
        skip();
    int64_t total = 0;
    kiln_error err;
    assert_int_equal(kiln_store_list(ctx.store, "t1", 0, 1, NULL, NULL, &total, &err),
                     KILN_STORE_OK);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct gone_run g = {.client_fd = sv[0]};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, gone_run_thread, &g), 0);
    sleep(1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    close(sv[1]);
    pthread_join(t, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 3);
    assert_true(g.reply.client_gone);
    assert_null(g.reply.body);
    close(sv[0]);
    int64_t after = 0;
    assert_int_equal(kiln_store_list(ctx.store, "t1", 0, 1, NULL, NULL, &after, &err),
                     KILN_STORE_OK);
    assert_int_equal(after, total);
    assert_work_empty();
}

/* Shutdown: a run in flight is killed and answers 503; none starts after.
 * Last: kiln_api_kill_runs is for good. */
static void test_run_killed_at_shutdown(void **state)
{
    (void)state;
    if (!can_run())
        skip();
    kiln_api_reply r;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_thread, &r), 0);
    sleep(2);
    time_t start = time(NULL);
    kiln_api_kill_runs();
    pthread_join(t, NULL);
    assert_true(time(NULL) - start < 10);
    assert_status(&r, 503);
    assert_string_equal(error_code(&r), "unavailable");
    json_decref(r.body);
    run_thread(&r);
    assert_status(&r, 503);
    json_decref(r.body);
    assert_work_empty();
}

int main(void)
{
    const struct CMUnitTest pool[] = {
        cmocka_unit_test(test_jobs_order),
        cmocka_unit_test(test_jobs_queue_full),
        cmocka_unit_test(test_jobs_no_queue),
        cmocka_unit_test(test_jobs_drop_gone),
        cmocka_unit_test(test_jobs_shutdown_cancels),
        cmocka_unit_test(test_jobs_concurrent),
        cmocka_unit_test(test_inuse),
        cmocka_unit_test(test_shared_json),
        cmocka_unit_test(test_client_gone),
    };
    const struct CMUnitTest jobs[] = {
        cmocka_unit_test(test_render_good),
        cmocka_unit_test(test_render_bad_request),
        cmocka_unit_test(test_render_invalid_spec),
        cmocka_unit_test(test_render_inputs),
        cmocka_unit_test(test_render_too_large),
        cmocka_unit_test(test_render_threads),
        cmocka_unit_test(test_run_invalid),
        cmocka_unit_test(test_run_real),
        cmocka_unit_test(test_render_gone),
        cmocka_unit_test(test_render_warnings),
        cmocka_unit_test(test_run_sandbox_unavailable),
        cmocka_unit_test(test_run_client_gone),
        cmocka_unit_test(test_run_killed_at_shutdown),
    };
    int failed = cmocka_run_group_tests_name("service_api_pool", pool, NULL, NULL);
    failed += cmocka_run_group_tests_name("service_api_jobs", jobs, setup_store, teardown_store);
    return failed;
}
