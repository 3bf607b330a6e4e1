/* test_store.c - the service's file store (service/store.c): bodies on disk,
 * metadata in SQLite, tenants kept apart, expiry, and recovery after a crash. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/unit/test_util.h"

#include "common/error.h"
#include "service/store.h"
#include "service/store_testing.h"
#include "common/banned.h"

static char dir[256];
static int64_t clock_now = 1700000000;

static int64_t test_clock(void *arg)
{
    (void)arg;
    return clock_now;
}

static int setup(void **state)
{
    (void)state;
    clock_now = 1700000000;
    return test_dir_make(dir, sizeof dir, "store");
}

static int teardown(void **state)
{
    (void)state;
    return test_dir_remove(dir);
}

static kiln_store *open_store(uint64_t max_bytes)
{
    kiln_store_options opt = {.dir = dir, .ttl_seconds = 0, .max_bytes = max_bytes};
    kiln_store *store = NULL;
    kiln_error err;
    kiln_status st = kiln_store_open(&store, &opt, &err);
    if (st != KILN_E_OK)
        fprintf(stderr, "kiln_store_open: %s\n", err.message);
    assert_int_equal(st, KILN_E_OK);
    kiln_store_set_clock(store, test_clock, NULL);
    return store;
}

/* Entries of DIR/content other than . and .. */
static int content_entries(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/content", dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static int content_has(const char *name)
{
    char path[512];
    struct stat sb;
    snprintf(path, sizeof path, "%s/content/%s", dir, name);
    return lstat(path, &sb) == 0;
}

static kiln_store_result upload(kiln_store *store, const char *tenant, const char *name,
                                const void *data, size_t len, kiln_store_file *file)
{
    kiln_store_upload *up = NULL;
    kiln_error err;
    kiln_store_result r = kiln_store_begin(store, tenant, name, "text/plain",
                                           KILN_STORE_SOURCE_INPUT, &up, &err);
    if (r != KILN_STORE_OK)
        return r;
    r = kiln_store_write(up, data, len, &err);
    if (r != KILN_STORE_OK) {
        kiln_store_abort(up);
        return r;
    }
    r = kiln_store_commit(up, file, &err);
    if (r != KILN_STORE_OK)
        fprintf(stderr, "kiln_store_commit: %s\n", err.message);
    return r;
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

static int is_id(const char *id)
{
    if (strlen(id) != KILN_STORE_ID_LEN)
        return 0;
    for (const char *p = id; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

#define HELLO_SHA "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
static const char NAME_UTF8[] = "Bericht \xc3\xbc"
                                "ber Stra\xc3\x9f"
                                "e \xe2\x80\x93 "
                                "\xe5\xa0\xb1\xe5\x91\x8a.xlsx";

static void test_upload_and_get(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_upload *up = NULL;
    kiln_error err;
    kiln_store_file f, g;
    assert_int_equal(kiln_store_begin(store, "acme", NAME_UTF8,
                                      "application/vnd.openxmlformats-officedocument."
                                      "spreadsheetml.sheet",
                                      KILN_STORE_SOURCE_INPUT, &up, &err),
                     KILN_STORE_OK);
    assert_int_equal(kiln_store_write(up, "hello ", 6, &err), KILN_STORE_OK);
    assert_int_equal(kiln_store_write(up, "world", 5, &err), KILN_STORE_OK);
    assert_int_equal(kiln_store_commit(up, &f, &err), KILN_STORE_OK);
    assert_true(is_id(f.id));
    assert_string_equal(f.tenant, "acme");
    assert_string_equal(f.filename, NAME_UTF8);
    assert_string_equal(f.media_type,
                        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    assert_string_equal(f.sha256, HELLO_SHA);
    assert_int_equal(f.bytes, 11);
    assert_int_equal(f.created_at, clock_now);
    assert_int_equal(f.expires_at, clock_now + KILN_STORE_DEFAULT_TTL);
    assert_int_equal(f.expired, 0);

    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_OK);
    assert_memory_equal(&f, &g, sizeof f);

    /* An empty body is a file too (sha256 of nothing). */
    assert_int_equal(upload(store, "acme", "", "", 0, &f), KILN_STORE_OK);
    assert_int_equal(f.bytes, 0);
    assert_string_equal(f.sha256,
                        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    kiln_store_close(store);
}

/* The body stored as content/ID is data[0..len). */
static void assert_body(const char *id, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/content/%s", dir, id);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    unsigned char *back = malloc(len + 1);
    assert_non_null(back);
    assert_int_equal(fread(back, 1, len + 1, fp), len);
    fclose(fp);
    assert_memory_equal(back, data, len);
    free(back);
}

static void test_body_content(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    /* Past the store's write buffer (256 KiB) a few times, in the odd
     * pieces an HTTP library hands over, with a part-filled buffer left
     * for the commit to write. */
    size_t len = 700001, piece = 65299;
    unsigned char *data = malloc(len);
    assert_non_null(data);
    for (size_t i = 0; i < len; i++)
        data[i] = (unsigned char)(i * 7 + (i >> 9));
    kiln_store_file f, g;
    kiln_store_upload *up = NULL;
    kiln_error werr;
    assert_int_equal(kiln_store_begin(store, "acme", "data.bin", "text/plain",
                                      KILN_STORE_SOURCE_INPUT, &up, &werr),
                     KILN_STORE_OK);
    for (size_t at = 0; at < len; at += piece)
        assert_int_equal(kiln_store_write(up, data + at, at + piece > len ? len - at : piece,
                                          &werr),
                         KILN_STORE_OK);
    assert_int_equal(kiln_store_commit(up, &f, &werr), KILN_STORE_OK);
    assert_int_equal(f.bytes, len);

    /* On disk, under its id. */
    assert_body(f.id, data, len);

    /* And through open_body. */
    unsigned char *back = malloc(len + 1);
    assert_non_null(back);
    int fd = -1;
    kiln_error err;
    assert_int_equal(kiln_store_open_body(store, "acme", f.id, &g, &fd, &err), KILN_STORE_OK);
    assert_true(fd >= 0);
    assert_string_equal(g.id, f.id);
    memset(back, 0, len);
    size_t got = 0;
    ssize_t n;
    while ((n = read(fd, back + got, len + 1 - got)) > 0)
        got += (size_t)n;
    close(fd);
    assert_int_equal(got, len);
    assert_memory_equal(back, data, len);
    free(back);
    free(data);
    kiln_store_close(store);
}

static int compare_ids(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static void count_session(const char *id, const char *tenant, const char *object, void *arg)
{
    (void)id;
    (void)object;
    assert_string_equal(tenant, "acme");
    (*(int *)arg)++;
}

/* A session's object by id and tenant: another tenant's is NOT_FOUND, an
 * update replaces it, an ended one leaves the live list. */
static void test_sessions(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_error err;
    char id[KILN_STORE_ID_LEN + 1], *text = NULL;
    assert_int_equal(kiln_store_new_id(id), 0);
    assert_true(is_id(id));
    assert_int_equal(kiln_store_session_put(store, "acme", id, 5, 0, "{\"v\":1}", &err),
                     KILN_STORE_OK);
    assert_int_equal(kiln_store_session_get(store, "acme", id, &text, &err), KILN_STORE_OK);
    assert_string_equal(text, "{\"v\":1}");
    free(text);
    assert_int_equal(kiln_store_session_get(store, "other", id, &text, &err),
                     KILN_STORE_NOT_FOUND);
    assert_null(text);
    int live = 0, all = 0;
    assert_int_equal(kiln_store_session_list(store, NULL, 1, count_session, &live, &err),
                     KILN_STORE_OK);
    assert_int_equal(live, 1);
    assert_int_equal(kiln_store_session_put(store, "acme", id, 5, 1, "{\"v\":2}", &err),
                     KILN_STORE_OK);
    live = 0;
    kiln_store_session_list(store, NULL, 1, count_session, &live, &err);
    kiln_store_session_list(store, "acme", 0, count_session, &all, &err);
    assert_int_equal(live, 0);
    assert_int_equal(all, 1);
    assert_int_equal(kiln_store_session_get(store, "acme", id, &text, &err), KILN_STORE_OK);
    assert_string_equal(text, "{\"v\":2}");
    free(text);
    kiln_store_close(store);
}

static void test_ids_unique(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    enum { N = 1000 };
    char(*ids)[KILN_STORE_ID_LEN + 1] = calloc(N, sizeof *ids);
    assert_non_null(ids);
    for (int i = 0; i < N; i++) {
        kiln_store_file f;
        assert_int_equal(upload(store, "acme", "x", "x", 1, &f), KILN_STORE_OK);
        assert_true(is_id(f.id));
        memcpy(ids[i], f.id, sizeof ids[i]);
    }
    qsort(ids, N, sizeof *ids, compare_ids);
    for (int i = 1; i < N; i++)
        assert_string_not_equal(ids[i - 1], ids[i]);
    free(ids);
    assert_int_equal(content_entries(), N);
    kiln_store_close(store);
}

static void too_large_case(int named)
{
    kiln_store *store = open_store(10);
    kiln_store_force_named_temp(store, named);
    kiln_store_file f;
    kiln_error err;
    /* At the limit: fine, in one write or several. */
    assert_int_equal(upload(store, "acme", "ten", "0123456789", 10, &f), KILN_STORE_OK);
    assert_int_equal(f.bytes, 10);
    assert_int_equal(content_entries(), 1);

    /* One byte over in one write. */
    assert_int_equal(upload(store, "acme", "eleven", "0123456789A", 11, &f),
                     KILN_STORE_TOO_LARGE);
    assert_int_equal(content_entries(), 1);

    /* One byte over after the limit was reached: refused at once, and the
     * temporary file is already gone before the caller aborts. */
    kiln_store_upload *up = NULL;
    assert_int_equal(kiln_store_begin(store, "acme", "y", "text/plain", KILN_STORE_SOURCE_INPUT,
                                      &up, &err),
                     KILN_STORE_OK);
    assert_int_equal(kiln_store_write(up, "01234", 5, &err), KILN_STORE_OK);
    assert_int_equal(kiln_store_write(up, "56789", 5, &err), KILN_STORE_OK);
    assert_int_equal(kiln_store_write(up, "A", 1, &err), KILN_STORE_TOO_LARGE);
    assert_int_equal(err.code, KILN_E_TOO_LARGE);
    assert_int_equal(err.limit, 10);
    assert_int_equal(err.actual, 11);
    assert_int_equal(content_entries(), 1);
    /* Nothing more can be done with it but abort. */
    assert_int_equal(kiln_store_write(up, "", 0, &err), KILN_STORE_ERROR);
    kiln_store_abort(up);
    assert_int_equal(content_entries(), 1);

    assert_int_equal(kiln_store_begin(store, "acme", "y", "text/plain", KILN_STORE_SOURCE_INPUT,
                                      &up, &err),
                     KILN_STORE_OK);
    assert_int_equal(kiln_store_write(up, "0123456789AB", 12, &err), KILN_STORE_TOO_LARGE);
    assert_int_equal(kiln_store_commit(up, &f, &err), KILN_STORE_ERROR); /* frees up */
    assert_int_equal(content_entries(), 1);

    int64_t total = -1;
    assert_int_equal(kiln_store_list(store, "acme", 0, 10, NULL, NULL, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(total, 1);
    kiln_store_close(store);
}

static void test_max_bytes_exact(void **state)
{
    (void)state;
    too_large_case(0);
}

static void test_max_bytes_exact_named_temp(void **state)
{
    (void)state;
    too_large_case(1);
}

static void test_abort_leaves_nothing(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_error err;
    for (int named = 0; named <= 1; named++) {
        kiln_store_force_named_temp(store, named);
        kiln_store_upload *up = NULL;
        assert_int_equal(kiln_store_begin(store, "acme", "a", "text/plain",
                                          KILN_STORE_SOURCE_INPUT, &up, &err),
                         KILN_STORE_OK);
        assert_int_equal(kiln_store_write(up, "partial", 7, &err), KILN_STORE_OK);
        /* The unnamed temporary has no entry; the named one has one. */
        assert_int_equal(content_entries(), named);
        kiln_store_abort(up);
        assert_int_equal(content_entries(), 0);
    }
    kiln_store_abort(NULL);
    int64_t total = -1;
    assert_int_equal(kiln_store_list(store, "acme", 0, 10, NULL, NULL, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(total, 0);
    assert_int_equal(kiln_store_bytes(store), 0);
    kiln_store_close(store);
}

/* Write the whole of data at fd, as a writer other than the store would. */
static void write_fd(int fd, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t done = 0; done < len;) {
        ssize_t n = pwrite(fd, p + done, len - done, (off_t)done);
        assert_true(n > 0);
        done += (size_t)n;
    }
}

/* A body written into the upload's own file by someone else: committed
 * with its size and SHA-256 read back from the file, the same as the same
 * bytes through kiln_store_write. */
static void test_commit_written(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    size_t len = 700001;
    unsigned char *data = malloc(len);
    assert_non_null(data);
    for (size_t i = 0; i < len; i++)
        data[i] = (unsigned char)(i * 7 + (i >> 9));
    kiln_store_file through_write;
    assert_int_equal(upload(store, "acme", "w.bin", data, len, &through_write), KILN_STORE_OK);
    kiln_error err;
    for (int named = 0; named <= 1; named++) {
        kiln_store_force_named_temp(store, named);
        kiln_store_upload *up = NULL;
        assert_int_equal(kiln_store_begin(store, "acme", "r.docx", "application/x-test",
                                          KILN_STORE_SOURCE_DOCUMENT, &up, &err),
                         KILN_STORE_OK);
        int fd = kiln_store_upload_fd(up);
        assert_true(fd >= 0);
        write_fd(fd, data, len);
        kiln_store_file f, g;
        assert_int_equal(kiln_store_commit_written(up, &f, &err), KILN_STORE_OK);
        assert_true(is_id(f.id));
        assert_int_equal(f.bytes, len);
        assert_string_equal(f.sha256, through_write.sha256);
        assert_string_equal(f.filename, "r.docx");
        assert_string_equal(f.media_type, "application/x-test");
        assert_int_equal(f.source, KILN_STORE_SOURCE_DOCUMENT);
        /* Stored under its id, with its row: the body as written. */
        assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_OK);
        assert_int_equal(g.bytes, len);
        assert_string_equal(g.sha256, f.sha256);
        assert_body(f.id, data, len);
        /* No temporary left: the bodies only. */
        assert_int_equal(content_entries(), 2 + named);
    }
    /* A known digest. */
    kiln_store_upload *up = NULL;
    assert_int_equal(kiln_store_begin(store, "acme", "h", "text/plain",
                                      KILN_STORE_SOURCE_DOCUMENT, &up, &err),
                     KILN_STORE_OK);
    write_fd(kiln_store_upload_fd(up), "hello world", 11);
    kiln_store_file h;
    assert_int_equal(kiln_store_commit_written(up, &h, &err), KILN_STORE_OK);
    assert_string_equal(h.sha256, HELLO_SHA);
    assert_int_equal(h.bytes, 11);
    free(data);
    kiln_store_close(store);
}

/* Past max_bytes: refused, nothing kept; max_bytes itself is fine. An
 * aborted or mixed-up upload keeps nothing either. */
static void test_commit_written_refusals(void **state)
{
    (void)state;
    kiln_store *store = open_store(10);
    kiln_error err;
    kiln_store_file f;
    for (int named = 0; named <= 1; named++) {
        kiln_store_force_named_temp(store, named);
        kiln_store_upload *up = NULL;
        assert_int_equal(kiln_store_begin(store, "acme", "big", "text/plain",
                                          KILN_STORE_SOURCE_DOCUMENT, &up, &err),
                         KILN_STORE_OK);
        write_fd(kiln_store_upload_fd(up), "0123456789A", 11);
        memset(&err, 0, sizeof err);
        assert_int_equal(kiln_store_commit_written(up, &f, &err), KILN_STORE_TOO_LARGE);
        assert_int_equal(err.code, KILN_E_TOO_LARGE);
        assert_int_equal(err.limit, 10);
        assert_int_equal(err.actual, 11);
        assert_int_equal(content_entries(), 0);

        /* Written, then abandoned. */
        assert_int_equal(kiln_store_begin(store, "acme", "a", "text/plain",
                                          KILN_STORE_SOURCE_DOCUMENT, &up, &err),
                         KILN_STORE_OK);
        write_fd(kiln_store_upload_fd(up), "partial", 7);
        assert_int_equal(content_entries(), named);
        kiln_store_abort(up);
        assert_int_equal(content_entries(), 0);

        /* kiln_store_write and a body written by someone else: refused. */
        assert_int_equal(kiln_store_begin(store, "acme", "m", "text/plain",
                                          KILN_STORE_SOURCE_DOCUMENT, &up, &err),
                         KILN_STORE_OK);
        assert_int_equal(kiln_store_write(up, "abc", 3, &err), KILN_STORE_OK);
        assert_int_equal(kiln_store_commit_written(up, &f, &err), KILN_STORE_ERROR);
        assert_int_equal(content_entries(), 0);
    }
    kiln_store_force_named_temp(store, 0);
    kiln_store_upload *up = NULL;
    assert_int_equal(kiln_store_begin(store, "acme", "exact", "text/plain",
                                      KILN_STORE_SOURCE_DOCUMENT, &up, &err),
                     KILN_STORE_OK);
    write_fd(kiln_store_upload_fd(up), "0123456789", 10);
    assert_int_equal(kiln_store_commit_written(up, &f, &err), KILN_STORE_OK);
    assert_int_equal(f.bytes, 10);
    int64_t total = -1;
    assert_int_equal(kiln_store_list(store, "acme", 0, 10, NULL, NULL, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(total, 1);
    assert_int_equal(content_entries(), 1);
    kiln_store_close(store);
}

static void count_file(const kiln_store_file *file, void *arg)
{
    (void)file;
    (*(int *)arg)++;
}

static void test_cross_tenant(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_file f, g;
    kiln_error err;
    assert_int_equal(upload(store, "acme", "secret.txt", "s3cret", 6, &f), KILN_STORE_OK);
    char missing[KILN_STORE_ID_LEN + 1];
    memset(missing, 'a', KILN_STORE_ID_LEN);
    missing[KILN_STORE_ID_LEN] = '\0';

    /* Another tenant's id answers exactly as a missing one. */
    assert_int_equal(kiln_store_get(store, "evil", f.id, &g, &err), KILN_STORE_NOT_FOUND);
    assert_int_equal(kiln_store_get(store, "evil", missing, &g, &err), KILN_STORE_NOT_FOUND);
    int fd = 12345;
    assert_int_equal(kiln_store_open_body(store, "evil", f.id, &g, &fd, &err),
                     KILN_STORE_NOT_FOUND);
    assert_int_equal(fd, -1);
    assert_int_equal(kiln_store_delete(store, "evil", f.id, &err), KILN_STORE_NOT_FOUND);
    assert_int_equal(kiln_store_delete(store, "", f.id, &err), KILN_STORE_NOT_FOUND);
    int n = 0;
    int64_t total = -1;
    assert_int_equal(kiln_store_list(store, "evil", 0, 100, count_file, &n, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(n, 0);
    assert_int_equal(total, 0);

    /* ... and the owner still has it, delete attempts notwithstanding. */
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_OK);
    assert_true(content_has(f.id));
    assert_int_equal(kiln_store_list(store, "acme", 0, 100, count_file, &n, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(total, 1);
    kiln_store_close(store);
}

static void test_malformed_ids(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_file f, g;
    kiln_error err;
    assert_int_equal(upload(store, "acme", "a", "a", 1, &f), KILN_STORE_OK);
    char upper[KILN_STORE_ID_LEN + 1], longer[KILN_STORE_ID_LEN + 2];
    for (int i = 0; i <= KILN_STORE_ID_LEN; i++)
        upper[i] = (char)(f.id[i] >= 'a' && f.id[i] <= 'f' ? f.id[i] - 32 : f.id[i]);
    snprintf(longer, sizeof longer, "%s0", f.id);
    char dotted[KILN_STORE_ID_LEN + 1];
    memset(dotted, 'a', KILN_STORE_ID_LEN);
    memcpy(dotted, "../", 3);
    dotted[KILN_STORE_ID_LEN] = '\0';
    const char *bad[] = {"../x", "",     "abc",        upper,
                         longer, dotted, "../kiln.db", "0123456789abcdef0123456789abcde/",
                         NULL};
    if (strcmp(upper, f.id) == 0)
        bad[3] = "ABCDEF0123456789ABCDEF0123456789"; /* an id with no hex letters */
    for (int i = 0; bad[i]; i++) {
        int fd = -1;
        assert_int_equal(kiln_store_get(store, "acme", bad[i], &g, &err), KILN_STORE_NOT_FOUND);
        assert_int_equal(kiln_store_open_body(store, "acme", bad[i], &g, &fd, &err),
                         KILN_STORE_NOT_FOUND);
        assert_int_equal(kiln_store_delete(store, "acme", bad[i], &err), KILN_STORE_NOT_FOUND);
    }
    assert_int_equal(kiln_store_get(store, "acme", NULL, &g, &err), KILN_STORE_NOT_FOUND);
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_OK);

    /* Even rows a damaged database holds under such ids are never looked
     * up: the id is refused before any query. */
    char path[512];
    snprintf(path, sizeof path, "%s/kiln.db", dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO files (id, tenant, filename, media_type, sha256, "
                                  "bytes, created_at, expires_at) SELECT '../x', tenant, "
                                  "filename, media_type, sha256, bytes, created_at, expires_at "
                                  "FROM files; INSERT INTO files (id, tenant, filename, "
                                  "media_type, sha256, bytes, created_at, expires_at) SELECT "
                                  "upper(id), tenant, filename, media_type, sha256, bytes, "
                                  "created_at, expires_at FROM files WHERE id != '../x'",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    for (int i = 0; i < 2; i++) {
        const char *id = i ? bad[3] : "../x";
        int fd = -1;
        assert_int_equal(kiln_store_get(store, "acme", id, &g, &err), KILN_STORE_NOT_FOUND);
        assert_int_equal(kiln_store_open_body(store, "acme", id, &g, &fd, &err),
                         KILN_STORE_NOT_FOUND);
        assert_int_equal(kiln_store_delete(store, "acme", id, &err), KILN_STORE_NOT_FOUND);
    }
    kiln_store_close(store);
}

typedef struct {
    char ids[20][KILN_STORE_ID_LEN + 1];
    int n;
} id_list;

static void collect(const kiln_store_file *file, void *arg)
{
    id_list *l = arg;
    if (l->n < 20)
        memcpy(l->ids[l->n++], file->id, KILN_STORE_ID_LEN + 1);
}

static void test_list(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_error err;
    char made[7][KILN_STORE_ID_LEN + 1];
    for (int i = 0; i < 7; i++) {
        kiln_store_file f;
        /* Two files in the same second: the later one still lists first. */
        if (i != 4)
            clock_now += 10;
        assert_int_equal(upload(store, "acme", "f", "z", 1, &f), KILN_STORE_OK);
        memcpy(made[i], f.id, sizeof made[i]);
    }
    kiln_store_file other;
    assert_int_equal(upload(store, "other", "f", "z", 1, &other), KILN_STORE_OK);

    id_list l = {.n = 0};
    int64_t total = 0;
    assert_int_equal(kiln_store_list(store, "acme", 0, 1000, collect, &l, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(total, 7);
    assert_int_equal(l.n, 7);
    for (int i = 0; i < 7; i++)
        assert_string_equal(l.ids[i], made[6 - i]);

    l.n = 0;
    assert_int_equal(kiln_store_list(store, "acme", 2, 3, collect, &l, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(total, 7);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.ids[0], made[4]);
    assert_string_equal(l.ids[1], made[3]);
    assert_string_equal(l.ids[2], made[2]);

    l.n = 0;
    assert_int_equal(kiln_store_list(store, "acme", 6, 5, collect, &l, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.ids[0], made[0]);
    l.n = 0;
    assert_int_equal(kiln_store_list(store, "acme", 7, 5, collect, &l, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(l.n, 0);
    assert_int_equal(total, 7);

    assert_int_equal(kiln_store_list(store, "acme", 0, 0, collect, &l, &total, &err),
                     KILN_STORE_ERROR);
    assert_int_equal(kiln_store_list(store, "acme", 0, 1001, collect, &l, &total, &err),
                     KILN_STORE_ERROR);
    assert_int_equal(kiln_store_list(store, "acme", -1, 10, collect, &l, &total, &err),
                     KILN_STORE_ERROR);
    kiln_store_close(store);
}

static void test_delete(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_file f, keep, g;
    kiln_error err;
    assert_int_equal(upload(store, "acme", "a", "abc", 3, &f), KILN_STORE_OK);
    assert_int_equal(upload(store, "acme", "b", "defg", 4, &keep), KILN_STORE_OK);
    assert_true(content_has(f.id));
    assert_int_equal(kiln_store_delete(store, "acme", f.id, &err), KILN_STORE_OK);
    assert_false(content_has(f.id));
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_NOT_FOUND);
    assert_int_equal(kiln_store_delete(store, "acme", f.id, &err), KILN_STORE_NOT_FOUND);
    assert_int_equal(kiln_store_get(store, "acme", keep.id, &g, &err), KILN_STORE_OK);
    assert_true(content_has(keep.id));
    assert_int_equal(content_entries(), 1);
    assert_int_equal(kiln_store_bytes(store), 4);
    kiln_store_close(store);
}

static void test_expiry(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_file f, fresh, g;
    kiln_error err;
    uint64_t removed = 99;
    assert_int_equal(upload(store, "acme", "old.txt", "old", 3, &f), KILN_STORE_OK);
    clock_now += 3600;
    assert_int_equal(upload(store, "acme", "new.txt", "new!", 4, &fresh), KILN_STORE_OK);
    assert_int_equal(f.expires_at, f.created_at + KILN_STORE_DEFAULT_TTL);

    /* A second before expiry: nothing happens. */
    clock_now = f.expires_at - 1;
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_OK);
    assert_int_equal(kiln_store_sweep(store, clock_now, &removed, &err), KILN_STORE_OK);
    assert_int_equal(removed, 0);

    /* At expiry, before any sweep: gone already, with the row filled. */
    clock_now = f.expires_at;
    memset(&g, 0, sizeof g);
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_GONE);
    assert_string_equal(g.id, f.id);
    assert_string_equal(g.filename, "old.txt");
    assert_int_equal(g.expires_at, f.expires_at);
    assert_int_equal(g.expired, 1);
    int fd = 12345;
    assert_int_equal(kiln_store_open_body(store, "acme", f.id, &g, &fd, &err), KILN_STORE_GONE);
    assert_int_equal(fd, -1);
    assert_int_equal(kiln_store_get(store, "evil", f.id, &g, &err), KILN_STORE_NOT_FOUND);

    /* The sweep removes the body; the row still answers GONE. */
    assert_true(content_has(f.id));
    assert_int_equal(kiln_store_sweep(store, clock_now, &removed, &err), KILN_STORE_OK);
    assert_int_equal(removed, 1);
    assert_false(content_has(f.id));
    assert_true(content_has(fresh.id));
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_GONE);
    assert_int_equal(g.expired, 1);
    assert_int_equal(kiln_store_bytes(store), 4);
    assert_int_equal(kiln_store_sweep(store, clock_now, &removed, &err), KILN_STORE_OK);
    assert_int_equal(removed, 0);

    /* Expired files are not listed. */
    int64_t total = -1;
    assert_int_equal(kiln_store_list(store, "acme", 0, 10, NULL, NULL, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(total, 1);

    /* A reopen's orphan pass keeps the expired row (it has no body by design). */
    kiln_store_close(store);
    store = open_store(0);
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_GONE);

    /* Seven days past expiry the row goes too: then it is simply not found. */
    clock_now = f.expires_at + 7 * 24 * 3600 - 1;
    assert_int_equal(kiln_store_sweep(store, clock_now, &removed, &err), KILN_STORE_OK);
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_GONE);
    /* The newer file expired meanwhile: this pass took its body. */
    assert_int_equal(removed, 1);
    assert_int_equal(kiln_store_get(store, "acme", fresh.id, &g, &err), KILN_STORE_GONE);
    assert_int_equal(content_entries(), 0);
    clock_now = f.expires_at + 7 * 24 * 3600;
    assert_int_equal(kiln_store_sweep(store, clock_now, &removed, &err), KILN_STORE_OK);
    assert_int_equal(removed, 0);
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_NOT_FOUND);
    assert_int_equal(kiln_store_get(store, "acme", fresh.id, &g, &err), KILN_STORE_GONE);

    /* A file never swept while live, swept for the first time after its
     * grace period: its body and its row both go. */
    clock_now += 100;
    assert_int_equal(upload(store, "acme", "late", "l", 1, &f), KILN_STORE_OK);
    assert_int_equal(kiln_store_sweep(store, f.expires_at + 8 * 24 * 3600, &removed, &err),
                     KILN_STORE_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(content_entries(), 0);
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_NOT_FOUND);
    kiln_store_close(store);
}

static void test_ttl_option(void **state)
{
    (void)state;
    kiln_store_options opt = {.dir = dir, .ttl_seconds = 60};
    kiln_store *store = NULL;
    kiln_error err;
    assert_int_equal(kiln_store_open(&store, &opt, &err), KILN_E_OK);
    kiln_store_set_clock(store, test_clock, NULL);
    kiln_store_file f;
    assert_int_equal(upload(store, "acme", "a", "a", 1, &f), KILN_STORE_OK);
    assert_int_equal(f.expires_at, clock_now + 60);
    kiln_store_close(store);
    opt.ttl_seconds = -1;
    assert_int_equal(kiln_store_open(&store, &opt, &err), KILN_E_USAGE);
}

static void test_bytes(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_file a, b, c;
    kiln_error err;
    assert_int_equal(kiln_store_bytes(store), 0);
    assert_int_equal(upload(store, "acme", "a", "12345", 5, &a), KILN_STORE_OK);
    assert_int_equal(upload(store, "other", "b", "1234567", 7, &b), KILN_STORE_OK);
    assert_int_equal(kiln_store_bytes(store), 12);
    clock_now += 100;
    assert_int_equal(upload(store, "acme", "c", "123", 3, &c), KILN_STORE_OK);
    assert_int_equal(kiln_store_bytes(store), 15);
    assert_int_equal(kiln_store_delete(store, "other", b.id, &err), KILN_STORE_OK);
    assert_int_equal(kiln_store_bytes(store), 8);
    uint64_t removed = 0;
    assert_int_equal(kiln_store_sweep(store, a.expires_at, &removed, &err), KILN_STORE_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(kiln_store_bytes(store), 3);
    kiln_store_close(store);
}

static void test_put_path(void **state)
{
    (void)state;
    kiln_store *store = open_store(20);
    kiln_store_file f, g;
    kiln_error err;
    char src[512];
    snprintf(src, sizeof src, "%s/hello.txt", dir);
    FILE *fp = fopen(src, "wb");
    assert_non_null(fp);
    fputs("hello world", fp);
    fclose(fp);
    assert_int_equal(kiln_store_put_path(store, "acme", src, "report.pdf", "application/pdf",
                                         KILN_STORE_SOURCE_OUTPUT, &f, &err),
                     KILN_STORE_OK);
    assert_string_equal(f.sha256, HELLO_SHA);
    assert_int_equal(f.bytes, 11);
    assert_string_equal(f.filename, "report.pdf");
    assert_string_equal(f.media_type, "application/pdf");
    assert_int_equal(f.source, KILN_STORE_SOURCE_OUTPUT);
    assert_int_equal(kiln_store_get(store, "acme", f.id, &g, &err), KILN_STORE_OK);
    assert_int_equal(g.source, KILN_STORE_SOURCE_OUTPUT);
    assert_true(content_has(f.id));
    /* The source is copied, not moved. */
    struct stat sb;
    assert_int_equal(stat(src, &sb), 0);

    fp = fopen(src, "wb");
    assert_non_null(fp);
    fputs("this is more than twenty bytes", fp);
    fclose(fp);
    assert_int_equal(kiln_store_put_path(store, "acme", src, "big", "text/plain",
                                         KILN_STORE_SOURCE_OUTPUT, &f, &err),
                     KILN_STORE_TOO_LARGE);
    assert_int_equal(kiln_store_put_path(store, "acme", dir, "dir", "text/plain",
                                         KILN_STORE_SOURCE_OUTPUT, &f, &err),
                     KILN_STORE_ERROR);
    snprintf(src, sizeof src, "%s/missing", dir);
    assert_int_equal(kiln_store_put_path(store, "acme", src, "m", "text/plain",
                                         KILN_STORE_SOURCE_OUTPUT, &f, &err),
                     KILN_STORE_ERROR);
    assert_int_equal(content_entries(), 1);
    kiln_store_close(store);
}

/* Each file keeps how it came to be; its name is the API's word for it. */
static void test_sources(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_file f, g;
    kiln_error err;
    assert_int_equal(upload(store, "acme", "in.csv", "a\n", 2, &f), KILN_STORE_OK);
    assert_int_equal(f.source, KILN_STORE_SOURCE_INPUT);
    char src[512];
    snprintf(src, sizeof src, "%s/doc.bin", dir);
    write_file(src, "doc");
    assert_int_equal(kiln_store_put_path(store, "acme", src, "doc.pdf", "application/pdf",
                                         KILN_STORE_SOURCE_DOCUMENT, &g, &err),
                     KILN_STORE_OK);
    kiln_store_close(store);
    store = open_store(0); /* read back from the database, not a cache */
    assert_int_equal(kiln_store_get(store, "acme", f.id, &f, &err), KILN_STORE_OK);
    assert_int_equal(f.source, KILN_STORE_SOURCE_INPUT);
    assert_int_equal(kiln_store_get(store, "acme", g.id, &g, &err), KILN_STORE_OK);
    assert_int_equal(g.source, KILN_STORE_SOURCE_DOCUMENT);
    kiln_store_close(store);
    assert_string_equal(kiln_store_source_name(KILN_STORE_SOURCE_INPUT), "input");
    assert_string_equal(kiln_store_source_name(KILN_STORE_SOURCE_OUTPUT), "output");
    assert_string_equal(kiln_store_source_name(KILN_STORE_SOURCE_DOCUMENT), "document");
    assert_null(kiln_store_source_name(KILN_STORE_SOURCE_UNKNOWN));
}

static int64_t db_int(const char *sql)
{
    char path[512];
    snprintf(path, sizeof path, "%s/kiln.db", dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

static void db_exec(const char *sql)
{
    char path[512];
    snprintf(path, sizeof path, "%s/kiln.db", dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* A database of the first version (no source column) is brought up to date
 * at open, its rows kept with no source (null: nobody knows it any more);
 * one of a later version than this Kiln knows is refused. */
static void test_schema_upgrade(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/content", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    static const char id[] = "0123456789abcdef0123456789abcdef";
    snprintf(path, sizeof path, "%s/content/%s", dir, id);
    write_file(path, "hello world");
    db_exec("CREATE TABLE files (id TEXT NOT NULL UNIQUE, tenant TEXT NOT NULL,"
            " filename TEXT NOT NULL, media_type TEXT NOT NULL, sha256 TEXT NOT NULL,"
            " bytes INTEGER NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,"
            " expired INTEGER NOT NULL DEFAULT 0);"
            "INSERT INTO files VALUES ('0123456789abcdef0123456789abcdef', 'acme', 'old.txt',"
            " 'text/plain', '" HELLO_SHA "', 11, 1700000000, 1800000000, 0);"
            "PRAGMA user_version = 1;");
    kiln_store *store = open_store(0);
    kiln_store_file f;
    kiln_error err;
    assert_int_equal(kiln_store_get(store, "acme", id, &f, &err), KILN_STORE_OK);
    assert_string_equal(f.filename, "old.txt");
    assert_int_equal(f.source, KILN_STORE_SOURCE_UNKNOWN);
    assert_int_equal(upload(store, "acme", "new.txt", "x", 1, &f), KILN_STORE_OK);
    assert_int_equal(f.source, KILN_STORE_SOURCE_INPUT);
    kiln_store_close(store);
    assert_int_equal(db_int("PRAGMA user_version"), 3);
    assert_int_equal(db_int("SELECT count(*) FROM batches"), 0); /* 3's tables made */
    assert_int_equal(db_int("SELECT count(*) FROM files WHERE source IS NULL"), 1);
    assert_int_equal(db_int("SELECT count(*) FROM files WHERE source = 'input'"), 1);
    /* Opened again: nothing more to do. */
    store = open_store(0);
    kiln_store_close(store);

    db_exec("PRAGMA user_version = 4");
    kiln_store_options opt = {.dir = dir};
    store = NULL;
    assert_int_equal(kiln_store_open(&store, &opt, &err), KILN_E_INTERNAL);
    assert_null(store);
    assert_non_null(strstr(err.message, "newer Kiln"));
}

static void test_validation(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_file f;
    char name[300];
    memset(name, 'n', sizeof name);
    name[KILN_STORE_FILENAME_MAX] = '\0';
    assert_int_equal(upload(store, "acme", name, "a", 1, &f), KILN_STORE_OK);
    assert_string_equal(f.filename, name);
    name[KILN_STORE_FILENAME_MAX] = 'n';
    name[KILN_STORE_FILENAME_MAX + 1] = '\0';
    assert_int_equal(upload(store, "acme", name, "a", 1, &f), KILN_STORE_ERROR);
    assert_int_equal(upload(store, "acme", "bad\xc3", "a", 1, &f), KILN_STORE_ERROR);
    assert_int_equal(upload(store, "acme", "\xc0\xaf", "a", 1, &f), KILN_STORE_ERROR);
    assert_int_equal(upload(store, "acme", "\xed\xa0\x80", "a", 1, &f), KILN_STORE_ERROR);
    assert_int_equal(upload(store, "", "a", "a", 1, &f), KILN_STORE_ERROR);
    char tenant[80];
    memset(tenant, 't', sizeof tenant);
    tenant[KILN_STORE_TENANT_MAX + 1] = '\0';
    assert_int_equal(upload(store, tenant, "a", "a", 1, &f), KILN_STORE_ERROR);
    tenant[KILN_STORE_TENANT_MAX] = '\0';
    assert_int_equal(upload(store, tenant, "a", "a", 1, &f), KILN_STORE_OK);
    assert_int_equal(content_entries(), 2);
    kiln_store_close(store);
}

/* Killed between link and commit, or between a temporary's creation and
 * its removal: the next open removes what was left. A live row whose body
 * the disk lost is dropped so the id answers 404. */
static void test_crash_orphans(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_file keep, lost, g;
    kiln_error err;
    assert_int_equal(upload(store, "acme", "keep", "keep", 4, &keep), KILN_STORE_OK);
    assert_int_equal(upload(store, "acme", "lost", "lost", 4, &lost), KILN_STORE_OK);
    kiln_store_close(store);

    char path[512];
    const char *orphan = "0123456789abcdef0123456789abcdef";
    snprintf(path, sizeof path, "%s/content/%s", dir, orphan);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs("orphan", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/content/.tmp-00112233445566778899aabbccddeeff", dir);
    fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs("half", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/content/README", dir); /* not ours: kept */
    fp = fopen(path, "wb");
    assert_non_null(fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/content/%s", dir, lost.id);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(content_entries(), 4);

    store = open_store(0);
    kiln_store_recovery rec;
    kiln_store_last_recovery(store, &rec);
    assert_int_equal(rec.orphan_bodies, 1);
    assert_int_equal(rec.temporaries, 1);
    assert_int_equal(rec.lost_rows, 1);
    assert_false(content_has(orphan));
    assert_false(content_has(".tmp-00112233445566778899aabbccddeeff"));
    assert_true(content_has("README"));
    assert_true(content_has(keep.id));
    assert_int_equal(content_entries(), 2);
    assert_int_equal(kiln_store_get(store, "acme", keep.id, &g, &err), KILN_STORE_OK);
    assert_int_equal(kiln_store_get(store, "acme", lost.id, &g, &err), KILN_STORE_NOT_FOUND);
    assert_int_equal(kiln_store_get(store, "acme", orphan, &g, &err), KILN_STORE_NOT_FOUND);
    kiln_store_close(store);

    /* A clean reopen finds nothing to do. */
    store = open_store(0);
    kiln_store_last_recovery(store, &rec);
    assert_int_equal(rec.orphan_bodies + rec.temporaries + rec.lost_rows, 0);
    kiln_store_close(store);
}

/* A child process opens the store, begins an upload, writes half of it and
 * is killed with SIGKILL; the next open finds no row, no body, no temporary. */
static void crash_child_case(int named)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        kiln_store_options opt = {.dir = dir};
        kiln_store *store = NULL;
        kiln_store_upload *up = NULL;
        kiln_error err;
        static char half[1 << 16];
        memset(half, 'h', sizeof half);
        if (kiln_store_open(&store, &opt, &err) != KILN_E_OK)
            _exit(1);
        kiln_store_force_named_temp(store, named);
        if (kiln_store_begin(store, "acme", "big.bin", "application/octet-stream",
                             KILN_STORE_SOURCE_INPUT, &up, &err) != KILN_STORE_OK ||
            kiln_store_write(up, half, sizeof half, &err) != KILN_STORE_OK)
            _exit(1);
        if (write(fds[1], "w", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    char c = 0;
    assert_int_equal(read(fds[0], &c, 1), 1); /* the child is mid-upload */
    close(fds[0]);
    assert_int_equal(content_entries(), named); /* a named temporary is visible */
    assert_int_equal(kill(pid, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    kiln_store *store = open_store(0);
    kiln_store_recovery rec;
    kiln_store_last_recovery(store, &rec);
    assert_int_equal(rec.temporaries, (uint64_t)named);
    assert_int_equal(content_entries(), 0);
    kiln_error err;
    int64_t total = -1;
    assert_int_equal(kiln_store_list(store, "acme", 0, 10, NULL, NULL, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(total, 0);
    assert_int_equal(kiln_store_bytes(store), 0);
    kiln_store_close(store);
}

static void test_crash_killed_upload(void **state)
{
    (void)state;
    crash_child_case(0);
}

static void test_crash_killed_upload_named_temp(void **state)
{
    (void)state;
    crash_child_case(1);
}

typedef struct {
    kiln_store *store;
    char tenant[16];
    int failures;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    for (int i = 0; i < 50; i++) {
        char body[64];
        int len = snprintf(body, sizeof body, "%s file %d", a->tenant, i);
        kiln_store_file f, g;
        kiln_error err;
        if (upload(a->store, a->tenant, body, body, (size_t)len, &f) != KILN_STORE_OK ||
            kiln_store_get(a->store, a->tenant, f.id, &g, &err) != KILN_STORE_OK ||
            g.bytes != (uint64_t)len)
            a->failures++;
    }
    return NULL;
}

static void test_concurrency(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    pthread_t threads[4];
    worker_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].store = store;
        snprintf(args[i].tenant, sizeof args[i].tenant, "t%d", i % 2);
        args[i].failures = 0;
        assert_int_equal(pthread_create(&threads[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(args[i].failures, 0);
    }
    assert_int_equal(content_entries(), 200);
    kiln_error err;
    for (int t = 0; t < 2; t++) {
        char tenant[8];
        snprintf(tenant, sizeof tenant, "t%d", t);
        int n = 0;
        int64_t total = 0;
        assert_int_equal(kiln_store_list(store, tenant, 0, 1000, count_file, &n, &total, &err),
                         KILN_STORE_OK);
        assert_int_equal(n, 100);
        assert_int_equal(total, 100);
    }
    kiln_store_close(store);
}

typedef struct {
    kiln_store_file files[4];
    int n;
} file_list;

static void collect_file(const kiln_store_file *file, void *arg)
{
    file_list *l = arg;
    if (l->n < 4)
        l->files[l->n++] = *file;
}

static void test_reopen_keeps_everything(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_file a, b, g;
    kiln_error err;
    assert_int_equal(upload(store, "acme", NAME_UTF8, "hello world", 11, &a), KILN_STORE_OK);
    clock_now++;
    assert_int_equal(upload(store, "acme", "b", "bb", 2, &b), KILN_STORE_OK);
    kiln_store_close(store);

    char path[512];
    struct stat sb;
    snprintf(path, sizeof path, "%s/kiln.db", dir);
    assert_int_equal(stat(path, &sb), 0);

    store = open_store(0);
    kiln_store_recovery rec;
    kiln_store_last_recovery(store, &rec);
    assert_int_equal(rec.orphan_bodies + rec.temporaries + rec.lost_rows, 0);
    assert_int_equal(kiln_store_get(store, "acme", a.id, &g, &err), KILN_STORE_OK);
    assert_memory_equal(&a, &g, sizeof a);
    file_list l = {.n = 0};
    int64_t total = 0;
    assert_int_equal(kiln_store_list(store, "acme", 0, 10, collect_file, &l, &total, &err),
                     KILN_STORE_OK);
    assert_int_equal(total, 2);
    assert_memory_equal(&l.files[0], &b, sizeof b);
    assert_memory_equal(&l.files[1], &a, sizeof a);
    int fd = -1;
    assert_int_equal(kiln_store_open_body(store, "acme", a.id, &g, &fd, &err), KILN_STORE_OK);
    char buf[32];
    assert_int_equal(read(fd, buf, sizeof buf), 11);
    close(fd);
    assert_memory_equal(buf, "hello world", 11);
    assert_int_equal(kiln_store_bytes(store), 13);
    kiln_store_close(store);
}

static void test_wal_mode(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_file f;
    assert_int_equal(upload(store, "acme", "a", "a", 1, &f), KILN_STORE_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/kiln.db", dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    /* The row is there for another reader, committed. */
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM files", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
    snprintf(path, sizeof path, "%s/kiln.db-wal", dir);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    kiln_store_close(store);
}

static void test_creates_missing_directories(void **state)
{
    (void)state;
    char nested[512];
    snprintf(nested, sizeof nested, "%s/a/b/store", dir);
    kiln_store_options opt = {.dir = nested};
    kiln_store *store = NULL;
    kiln_error err;
    assert_int_equal(kiln_store_open(&store, &opt, &err), KILN_E_OK);
    kiln_store_file f;
    assert_int_equal(upload(store, "acme", "a", "a", 1, &f), KILN_STORE_OK);
    char path[600];
    struct stat sb;
    snprintf(path, sizeof path, "%s/content/%s", nested, f.id);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    snprintf(path, sizeof path, "%s/content", nested);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    kiln_store_close(store);
    opt.dir = "";
    assert_int_equal(kiln_store_open(&store, &opt, &err), KILN_E_USAGE);
}

static void test_one_process_at_a_time(void **state)
{
    (void)state;
    kiln_store *store = open_store(0);
    kiln_store_options opt = {.dir = dir};
    kiln_store *second = NULL;
    kiln_error err;
    assert_int_equal(kiln_store_open(&second, &opt, &err), KILN_E_USAGE);
    assert_null(second);
    assert_non_null(strstr(err.message, "in use"));
    /* The holder is named, from /proc/locks: here, this very process. */
    char pid_text[48];
    snprintf(pid_text, sizeof pid_text, "(pid %ld)", (long)getpid());
    assert_non_null(strstr(err.message, pid_text));
    long pid = 0;
    assert_int_equal(kiln_store_holder(dir, &pid), 1);
    assert_int_equal(pid, (long)getpid());
    kiln_store_close(store);
    assert_int_equal(kiln_store_holder(dir, &pid), 0);
    assert_int_equal(kiln_store_open(&second, &opt, &err), KILN_E_OK);
    kiln_store_close(second);
    kiln_store_close(NULL);
    /* No store there at all: nobody holds it, and nothing is made. */
    char none[PATH_MAX];
    snprintf(none, sizeof none, "%s/no-store-here", dir);
    assert_int_equal(kiln_store_holder(none, &pid), 0);
    struct stat sb;
    assert_int_equal(stat(none, &sb), -1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_upload_and_get),
        T(test_body_content),
        T(test_sessions),
        T(test_ids_unique),
        T(test_max_bytes_exact),
        T(test_max_bytes_exact_named_temp),
        T(test_abort_leaves_nothing),
        T(test_commit_written),
        T(test_commit_written_refusals),
        T(test_cross_tenant),
        T(test_malformed_ids),
        T(test_list),
        T(test_delete),
        T(test_expiry),
        T(test_ttl_option),
        T(test_bytes),
        T(test_put_path),
        T(test_sources),
        T(test_schema_upgrade),
        T(test_validation),
        T(test_crash_orphans),
        T(test_crash_killed_upload),
        T(test_crash_killed_upload_named_temp),
        T(test_concurrency),
        T(test_reopen_keeps_everything),
        T(test_wal_mode),
        T(test_creates_missing_directories),
        T(test_one_process_at_a_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
