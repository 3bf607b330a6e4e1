/* test_exec_collect.c - output files collected without following a symlink
 * or leaving the job directory (exec/collect.c).
 *
 * Each test builds a real tree under a fresh temporary directory (job/ is
 * the job directory, out/ the out directory), opens job/ O_PATH|O_DIRECTORY
 * as the supervisor does, and collects. Every hostile entry here points at
 * something the test itself made or at a host file that is only ever read
 * by the test's own assertions (/etc/passwd: the point is that nothing of
 * it is copied).
 *
 * Hard links to host files are not tested because they cannot exist: the
 * real job directory is a tmpfs of its own, and link(2) across file
 * systems fails with EXDEV. A hard link between two of the job's own files
 * is an ordinary file and is collected (test_hardlink_inside_job).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <dlfcn.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "common/media_type.h"
#include "exec/exec_internal.h"
#include "common/banned.h"

#define SHA_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SHA_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/* FIPS 180-2's third example: one million 'a'. Bigger than the copy
 * buffer, so several reads are hashed. */
#define SHA_MILLION_A "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

static char root[256];
static char job[300];
static char out[300];

/* What one kiln_collect call returned. */
static kiln_collect_result res;
static json_t *files; /* res's, for short assertions */
static json_t *refused;
static uint64_t refused_more;
static int cap_hit;
static kiln_error err;

static int setup(void **state)
{
    (void)state;
    if (test_dir_make(root, sizeof root, "collect") != 0)
        return -1;
    snprintf(job, sizeof job, "%s/job", root);
    snprintf(out, sizeof out, "%s/out", root);
    files = refused = NULL;
    return mkdir(job, 0755) == 0 && mkdir(out, 0755) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    kiln_collect_result_release(&res);
    files = refused = NULL;
    return test_dir_remove(root);
}

static char *in_job(const char *rel)
{
    static char p[1024];
    snprintf(p, sizeof p, "%s/%s", job, rel);
    return p;
}

static char *in_out(const char *rel)
{
    static char p[1024];
    snprintf(p, sizeof p, "%s/%s", out, rel);
    return p;
}

/* mkdir -p of rel's parents under job/, then write the file. */
static void put(const char *rel, const void *data, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", job, rel);
    for (char *s = strchr(path + strlen(job) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
        *s = '/';
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static void put_str(const char *rel, const char *text)
{
    put(rel, text, strlen(text));
}

static kiln_status collect(const kiln_collect_limits *lim, const char *const *skip,
                           const char *out_dir)
{
    kiln_collect_result_release(&res);
    files = refused = NULL;
    int fd = open(job, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    kiln_collect_limits none;
    memset(&none, 0, sizeof none);
    kiln_status st = kiln_collect(fd, out_dir, lim ? lim : &none, skip, &res, &err);
    close(fd);
    files = res.files;
    refused = res.refused;
    refused_more = res.refused_more;
    cap_hit = res.cap_hit;
    if (st == KILN_E_OK) {
        assert_true(json_is_array(files));
        assert_true(json_is_array(refused));
        assert_true(res.not_examined == 0 ? res.stopped_in == NULL : res.stopped_in != NULL);
    }
    return st;
}

static json_t *entry(json_t *array, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(array, i, v) {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
            return v;
    }
    return NULL;
}

/* The reason name was refused for, or NULL when it is not listed. */
static const char *reason(const char *name)
{
    json_t *v = entry(refused, name);
    return v ? json_string_value(json_object_get(v, "reason")) : NULL;
}

static void assert_file(const char *name, uint64_t bytes, const char *media, const char *sha)
{
    json_t *v = entry(files, name);
    if (!v)
        fail_msg("'%s' was not collected", name);
    assert_int_equal(json_integer_value(json_object_get(v, "bytes")), bytes);
    assert_string_equal(json_string_value(json_object_get(v, "media_type")), media);
    assert_string_equal(json_string_value(json_object_get(v, "sha256")), sha);
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* Entries of out/ other than . and .. (recursively), via find. */
static int out_entries(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "find '%s' -mindepth 1 | wc -l", out);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

static void assert_same_bytes(const char *a, const char *b)
{
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    assert_int_equal(system(cmd), 0);
}

/* A unix socket the test listens on, bound at job/NAME. */
static int bound_socket(const char *name)
{
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    const char *path = in_job(name);
    assert_true(strlen(path) < sizeof addr.sun_path);
    memcpy(addr.sun_path, path, strlen(path));
    assert_int_equal(bind(s, (struct sockaddr *)&addr, sizeof addr), 0);
    return s;
}

/* ---- what is collected ------------------------------------------------- */

static void test_regular_files_hashed_and_copied(void **state)
{
    (void)state;
    put_str("abc.txt", "abc");
    put_str("empty.csv", "");
    char *million = malloc(1000000);
    assert_non_null(million);
    memset(million, 'a', 1000000);
    put("sub/dir/a.csv", million, 1000000);
    free(million);
    put_str("Report.XLSX", "abc");

    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    assert_int_equal(json_array_size(files), 4);
    assert_int_equal(json_array_size(refused), 0);
    assert_int_equal(refused_more, 0);
    assert_int_equal(cap_hit, 0);
    assert_file("abc.txt", 3, "text/plain", SHA_ABC);
    assert_file("empty.csv", 0, "text/csv", SHA_EMPTY);
    assert_file("sub/dir/a.csv", 1000000, "text/csv", SHA_MILLION_A);
    assert_file("Report.XLSX", 3,
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", SHA_ABC);
    /* Sorted by name, byte order. */
    const char *order[] = {"Report.XLSX", "abc.txt", "empty.csv", "sub/dir/a.csv"};
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(files, i), "name")),
                            order[i]);
    assert_same_bytes(in_job("abc.txt"), in_out("abc.txt"));
    assert_same_bytes(in_job("empty.csv"), in_out("empty.csv"));
    assert_same_bytes(in_job("sub/dir/a.csv"), in_out("sub/dir/a.csv"));
    struct stat sb;
    assert_int_equal(stat(in_out("sub/dir"), &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0755);
    /* No temporary file left beside the copies. */
    assert_int_equal(out_entries(), 6); /* 4 files + sub + sub/dir */
}

static void test_hash_only_without_out_dir(void **state)
{
    (void)state;
    put_str("abc.txt", "abc");
    put_str("d/e.json", "");
    assert_int_equal(collect(NULL, NULL, NULL), KILN_E_OK);
    assert_file("abc.txt", 3, "text/plain", SHA_ABC);
    assert_file("d/e.json", 0, "application/json", SHA_EMPTY);
    assert_int_equal(out_entries(), 0);
}

static void test_hardlink_inside_job(void **state)
{
    (void)state;
    put_str("a.txt", "abc");
    char a[1024];
    snprintf(a, sizeof a, "%s", in_job("a.txt")); /* in_job's buffer is reused */
    assert_int_equal(link(a, in_job("b.txt")), 0);
    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    assert_file("a.txt", 3, "text/plain", SHA_ABC);
    assert_file("b.txt", 3, "text/plain", SHA_ABC);
    assert_int_equal(json_array_size(refused), 0);
}

static void test_skip_top_level_only(void **state)
{
    (void)state;
    put_str(".kiln/report.docx.spec.json", "{}");
    put_str("sub/.kiln/x.txt", "abc");
    put_str("keep.txt", "abc");
    const char *const skip[] = {".kiln", NULL};
    assert_int_equal(collect(NULL, skip, out), KILN_E_OK);
    assert_int_equal(json_array_size(files), 2);
    assert_file("keep.txt", 3, "text/plain", SHA_ABC);
    assert_file("sub/.kiln/x.txt", 3, "text/plain", SHA_ABC);
    assert_false(exists(in_out(".kiln")));
}

/* ---- what is refused --------------------------------------------------- */

static void test_symlink_to_host_file(void **state)
{
    (void)state;
    assert_int_equal(symlink("/etc/passwd", in_job("passwd")), 0);
    put_str("ok.txt", "abc");
    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    assert_string_equal(reason("passwd"), "symlink");
    assert_null(entry(files, "passwd"));
    assert_int_equal(cap_hit, 0);
    assert_false(exists(in_out("passwd")));
    assert_int_equal(out_entries(), 1);
}

static void test_directory_symlinks(void **state)
{
    (void)state;
    put_str("real/x.txt", "abc");
    assert_int_equal(symlink("real", in_job("inside")), 0);   /* to the job's own dir */
    assert_int_equal(symlink("/etc", in_job("host")), 0);     /* to a host dir */
    assert_int_equal(symlink("../..", in_job("real/up")), 0); /* out of the job dir */
    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    assert_file("real/x.txt", 3, "text/plain", SHA_ABC);
    assert_int_equal(json_array_size(files), 1);
    assert_string_equal(reason("inside"), "symlink");
    assert_string_equal(reason("host"), "symlink");
    assert_string_equal(reason("real/up"), "symlink");
    /* Nothing reached through a symlinked directory. */
    assert_null(entry(files, "inside/x.txt"));
    assert_null(entry(files, "host/passwd"));
    assert_false(exists(in_out("inside")));
    assert_false(exists(in_out("host")));
    assert_false(exists(in_out("real/up")));
}

static void test_dangling_symlink(void **state)
{
    (void)state;
    assert_int_equal(symlink("nowhere/at/all", in_job("dangling")), 0);
    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    assert_string_equal(reason("dangling"), "symlink");
    assert_int_equal(json_array_size(files), 0);
}

static void test_fifo_refused_without_blocking(void **state)
{
    (void)state;
    assert_int_equal(mkfifo(in_job("pipe"), 0644), 0);
    put_str("after.txt", "abc");
    alarm(5); /* a blocking open would hang here: die instead */
    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    alarm(0);
    assert_string_equal(reason("pipe"), "not a regular file");
    assert_file("after.txt", 3, "text/plain", SHA_ABC);
    assert_int_equal(cap_hit, 0);
}

static void test_socket_refused(void **state)
{
    (void)state;
    int s = bound_socket("sock");
    assert_int_equal(listen(s, 1), 0);
    alarm(5);
    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    alarm(0);
    close(s);
    assert_string_equal(reason("sock"), "not a regular file");
    assert_int_equal(json_array_size(files), 0);
}

static void test_device_refused(void **state)
{
    (void)state;
    /* A copy of /dev/null's node; never opened by the collector. */
    if (mknod(in_job("null"), S_IFCHR | 0644, makedev(1, 3)) != 0)
        skip(); /* no CAP_MKNOD here */
    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    assert_string_equal(reason("null"), "not a regular file");
    assert_int_equal(json_array_size(files), 0);
    assert_false(exists(in_out("null")));
}

/*
 * The collector looks at fstatat() only as a hint. To prove the decision is
 * made on the descriptor openat2() returns, this program's own fstatat()
 * (which the collector, linked into it statically, calls instead of libc's)
 * can lie the way a race would: an entry swapped after it was looked at.
 * A symlink then looks like what it points to, and anything else that is
 * not a directory looks like a regular file.
 */
static int hint_lies;
static int lies_told; /* proof the collector called this fstatat at all */

int fstatat(int dirfd, const char *restrict path, struct stat *restrict sb, int flags)
{
    static int (*real)(int, const char *, struct stat *, int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "fstatat");
    int rc = real(dirfd, path, sb, flags);
    if (rc != 0 || !hint_lies)
        return rc;
    if (S_ISREG(sb->st_mode) || S_ISDIR(sb->st_mode))
        return 0;
    lies_told++;
    if (S_ISLNK(sb->st_mode) && real(dirfd, path, sb, flags & ~AT_SYMLINK_NOFOLLOW) == 0 &&
        (S_ISDIR(sb->st_mode) || S_ISREG(sb->st_mode)))
        return 0;
    sb->st_mode = (sb->st_mode & 07777) | S_IFREG;
    return 0;
}

static void test_hint_is_not_trusted(void **state)
{
    (void)state;
    put_str("real/x.txt", "abc");
    assert_int_equal(symlink("/etc/passwd", in_job("passwd")), 0);
    assert_int_equal(symlink("real", in_job("inside")), 0);
    assert_int_equal(symlink("/etc", in_job("host")), 0);
    assert_int_equal(symlink("nowhere", in_job("dangling")), 0);
    assert_int_equal(mkfifo(in_job("pipe"), 0644), 0);
    int s = bound_socket("sock");
    int have_dev = mknod(in_job("null"), S_IFCHR | 0644, makedev(1, 3)) == 0;

    hint_lies = 1;
    alarm(5); /* a FIFO opened without O_NONBLOCK would hang here */
    kiln_status st = collect(NULL, NULL, out);
    alarm(0);
    hint_lies = 0;
    close(s);
    assert_int_equal(st, KILN_E_OK);
    assert_true(lies_told >= 6);
    assert_int_equal(json_array_size(files), 1);
    assert_file("real/x.txt", 3, "text/plain", SHA_ABC);
    assert_string_equal(reason("passwd"), "symlink");
    assert_string_equal(reason("inside"), "symlink");
    assert_string_equal(reason("host"), "symlink");
    assert_string_equal(reason("dangling"), "symlink");
    assert_string_equal(reason("pipe"), "not a regular file");
    assert_string_equal(reason("sock"), "not a regular file");
    if (have_dev)
        assert_string_equal(reason("null"), "not a regular file");
    assert_int_equal(out_entries(), 2); /* real and real/x.txt */
}

static void test_sparse_terabyte_refused_instantly(void **state)
{
    (void)state;
    int fd = open(in_job("huge.bin"), O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    if (ftruncate(fd, (off_t)1 << 40) != 0) {
        close(fd);
        skip(); /* the test file system cannot hold a 1 TiB sparse file */
    }
    close(fd);
    put_str("small.txt", "abc");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(seconds < 1.0); /* refused on its size, not after reading */
    assert_string_equal(reason("huge.bin"), "file over the per-file limit");
    assert_int_equal(cap_hit, 1);
    assert_file("small.txt", 3, "text/plain", SHA_ABC);
    assert_false(exists(in_out("huge.bin")));
}

static void test_per_file_limit_exact(void **state)
{
    (void)state;
    put_str("at.txt", "0123456789");
    put_str("over.txt", "0123456789A");
    kiln_collect_limits lim = {.file_bytes = 10};
    assert_int_equal(collect(&lim, NULL, out), KILN_E_OK);
    assert_int_equal(json_array_size(files), 1);
    assert_non_null(entry(files, "at.txt"));
    assert_string_equal(reason("over.txt"), "file over the per-file limit");
    assert_int_equal(cap_hit, 1);
    assert_false(exists(in_out("over.txt")));
}

static void test_count_cap_and_refused_list_cap(void **state)
{
    (void)state;
    for (int i = 0; i < 150; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%03d.txt", i);
        put_str(name, "abc");
    }
    kiln_collect_limits lim = {.files = 100, .max_refused = 10};
    assert_int_equal(collect(&lim, NULL, out), KILN_E_OK);
    assert_int_equal(json_array_size(files), 100);
    assert_int_equal(json_array_size(refused), 10);
    assert_int_equal(refused_more, 40);
    assert_int_equal(cap_hit, 1);
    /* Names are walked in sorted order, so which files pass is fixed. */
    assert_non_null(entry(files, "f000.txt"));
    assert_non_null(entry(files, "f099.txt"));
    assert_null(entry(files, "f100.txt"));
    assert_string_equal(reason("f100.txt"), "over the file count limit");
    assert_string_equal(reason("f109.txt"), "over the file count limit");
    assert_null(reason("f110.txt")); /* counted, not listed */
    assert_int_equal(out_entries(), 100);
}

/* Count-cap refusals give way in the list to a refusal of another reason,
 * however many came first; every refusal is counted by its reason; a
 * directory's own files are met before its subdirectories'. */
static void test_refusals_of_their_own_reason_are_listed(void **state)
{
    (void)state;
    for (int i = 0; i < 40; i++) {
        char name[32];
        snprintf(name, sizeof name, "a_cache/f%03d.txt", i);
        put_str(name, "abc");
    }
    put_str("report.csv", "a,b\n");
    put_str("zz_big.bin", "0123456789"); /* over file_bytes below */
    put_str("zz_link_target", "t");
    assert_int_equal(symlink("zz_link_target", in_job("zz_link")), 0);
    kiln_collect_limits lim = {.files = 10, .file_bytes = 5, .max_refused = 4};
    assert_int_equal(collect(&lim, NULL, out), KILN_E_OK);
    /* the top's files first: report.csv and zz_link_target are collected */
    assert_non_null(entry(files, "report.csv"));
    assert_non_null(entry(files, "zz_link_target"));
    assert_int_equal(json_array_size(files), 10);
    /* listed: the two of their own reason, and two count-cap ones */
    assert_int_equal(json_array_size(refused), 4);
    assert_string_equal(reason("zz_big.bin"), "file over the per-file limit");
    assert_string_equal(reason("zz_link"), "symlink");
    json_t *by = res.refused_by_reason;
    assert_int_equal(json_integer_value(json_object_get(by, "over the file count limit")), 32);
    assert_int_equal(json_integer_value(json_object_get(by, "file over the per-file limit")), 1);
    assert_int_equal(json_integer_value(json_object_get(by, "symlink")), 1);
    assert_int_equal(refused_more, 34 - 4);
}

static void test_total_cap(void **state)
{
    (void)state;
    char block[400];
    memset(block, 'x', sizeof block);
    put("a.bin", block, sizeof block);
    put("b.bin", block, sizeof block);
    put("c.bin", block, sizeof block);
    put_str("d.txt", "abc"); /* still fits after c is refused */
    kiln_collect_limits lim = {.total_bytes = 1000};
    assert_int_equal(collect(&lim, NULL, out), KILN_E_OK);
    assert_int_equal(json_array_size(files), 3);
    assert_non_null(entry(files, "a.bin"));
    assert_non_null(entry(files, "b.bin"));
    assert_non_null(entry(files, "d.txt"));
    assert_string_equal(reason("c.bin"), "over the total size limit");
    assert_int_equal(cap_hit, 1);
    assert_false(exists(in_out("c.bin")));
}

static void test_depth_cap(void **state)
{
    (void)state;
    put_str("top.txt", "abc");
    put_str("a/one.txt", "abc");
    put_str("a/b/two.txt", "abc");
    put_str("a/b/c/three.txt", "abc");
    kiln_collect_limits lim = {.max_depth = 2};
    assert_int_equal(collect(&lim, NULL, out), KILN_E_OK);
    assert_int_equal(json_array_size(files), 3);
    assert_non_null(entry(files, "a/b/two.txt"));
    assert_string_equal(reason("a/b/c"), "too deep");
    assert_null(entry(files, "a/b/c/three.txt"));
    assert_int_equal(cap_hit, 0);
}

static void test_entry_cap(void **state)
{
    (void)state;
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "d/f%02d.txt", i);
        put_str(name, "abc");
    }
    put_str("z/late.txt", "abc");
    /* The top's own "d" and "z" first, then 4 of d's entries (the 4 that
     * sort first); the rest of d, and z's late.txt, are counted. */
    kiln_collect_limits lim = {.max_entries = 6};
    assert_int_equal(collect(&lim, NULL, out), KILN_E_OK);
    assert_int_equal(json_array_size(files), 4);
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "d/f%02d.txt", i);
        assert_non_null(entry(files, name));
    }
    assert_null(entry(files, "z/late.txt"));
    assert_int_equal(json_array_size(refused), 0); /* nothing named: counted */
    assert_int_equal(res.not_examined, 17);
    assert_int_equal(refused_more, 17);
    assert_int_equal(res.max_entries, 6);
    assert_string_equal(res.stopped_in, "d");
    assert_int_equal(cap_hit, 1);
    assert_int_equal(out_entries(), 5); /* d and its 4 files */
}

/* The sample of issue 15: many small files and one large one, the large one
 * written first (a tmpfs lists the newest first, so the old walk never read
 * its name). Which entries are examined follows their names, not readdir;
 * whatever is not examined is counted, with what is below it. */
static void test_entry_cap_by_name_and_counted_below(void **state)
{
    (void)state;
    char *big = malloc(1 << 20);
    assert_non_null(big);
    memset(big, 'b', 1 << 20);
    put("big.bin", big, 1 << 20);
    free(big);
    for (int i = 0; i < 300; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%04d", i);
        put_str(name, "x");
    }
    put_str("zdir/a/one.txt", "abc");
    put_str("zdir/a/two.txt", "abc");
    put_str("zdir/three.txt", "abc");
    kiln_collect_limits lim = {.max_entries = 50, .files = 10, .max_refused = 5};
    assert_int_equal(collect(&lim, NULL, NULL), KILN_E_OK);
    assert_file("big.bin", 1 << 20, "application/octet-stream",
                "e56ec8dc1862be6c09c53620cbc0f00f639de2a51c882745fbbc4e144714b3c2");
    assert_int_equal(json_array_size(files), 10);
    assert_non_null(entry(files, "f0008"));
    assert_null(entry(files, "f0009"));
    /* Examined: big.bin and f0000..f0048, 40 of them refused on the count
     * (5 listed, 35 counted). Not examined: f0049..f0299 (251), zdir, and
     * the 5 entries below it (a, a/one.txt, a/two.txt, three.txt). */
    assert_int_equal(res.not_examined, 251 + 1 + 4);
    assert_int_equal(json_array_size(refused), 5);
    assert_int_equal(refused_more, 35 + res.not_examined);
    assert_string_equal(res.stopped_in, ".");
    assert_int_equal(cap_hit, 1);
}

/* ---- path length -------------------------------------------------------- */

/* Make job/D/D/.../D (levels directories named 255 times `c`, the deepest
 * last) and a file in it named `leaf_len` times 'x', by descriptor: the
 * paths are longer than the host's PATH_MAX from the test's directory. */
static void put_long(int levels, size_t leaf_len, int leaf_is_dir)
{
    char name[256];
    int fd = open(job, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    for (int i = 0; i < levels; i++) {
        memset(name, 'a' + i, 255);
        name[255] = '\0';
        assert_true(mkdirat(fd, name, 0755) == 0 || errno == EEXIST);
        int next = openat(fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(next >= 0);
        close(fd);
        fd = next;
    }
    memset(name, 'x', leaf_len);
    name[leaf_len] = '\0';
    if (leaf_is_dir) {
        assert_int_equal(mkdirat(fd, name, 0755), 0);
        int dir = openat(fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(dir >= 0);
        int f = openat(dir, "in.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(f >= 0);
        close(f);
        close(dir);
    } else {
        int f = openat(fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(f >= 0);
        assert_int_equal(write(f, "abc", 3), 3);
        close(f);
    }
    close(fd);
}

/* The name of the file put_long(levels, leaf_len) made. malloc'd. */
static char *long_name(int levels, size_t leaf_len)
{
    char *p = malloc((size_t)levels * 256 + leaf_len + 1), *o = p;
    assert_non_null(p);
    for (int i = 0; i < levels; i++) {
        memset(o, 'a' + i, 255);
        o[255] = '/';
        o += 256;
    }
    memset(o, 'x', leaf_len);
    o[leaf_len] = '\0';
    return p;
}

static void test_path_too_long(void **state)
{
    (void)state;
    /* /mnt/data/NAME at most 4095 bytes: NAME at most 4085. Fifteen levels
     * take 3840 of it (depth 15, under the depth limit of 16). */
    put_long(15, 245, 0); /* 4085: fits */
    put_long(15, 246, 0); /* 4086: one too many */
    put_long(15, 244, 1); /* a directory of 4084: "/x" would not fit */
    char *fits = long_name(15, 245), *over = long_name(15, 246), *dir = long_name(15, 244);
    assert_int_equal(strlen(fits), 4085);
    assert_int_equal(collect(NULL, NULL, NULL), KILN_E_OK);
    assert_file(fits, 3, "application/octet-stream", SHA_ABC);
    assert_int_equal(json_array_size(files), 1);
    assert_string_equal(reason(over), "path too long");
    assert_string_equal(reason(dir), "path too long");
    assert_int_equal(json_array_size(refused), 2);
    assert_int_equal(cap_hit, 0);

    /* Copied to out/, DIR/NAME is the longer path: the limit is what is
     * left of 4095 after DIR and its slash. */
    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    assert_int_equal(json_array_size(files), 0);
    assert_string_equal(reason(fits), "path too long");
    assert_string_equal(reason(over), "path too long");
    assert_int_equal(out_entries(), 0);
    free(fits);
    free(over);
    free(dir);
}

static void test_names_not_utf8(void **state)
{
    (void)state;
    put_str("bad\xff.txt", "abc");
    put_str("ctl\x01.txt", "abc");
    put_str("overlong\xc0\xaf.txt", "abc");
    put_str("baddir\xfe/inner.txt", "abc");
    put_str("caf\xc3\xa9.txt", "abc"); /* fine */
    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    assert_int_equal(json_array_size(files), 1);
    assert_file("caf\xc3\xa9.txt", 3, "text/plain", SHA_ABC);
    assert_string_equal(reason("bad\xef\xbf\xbd.txt"), "name not UTF-8");
    assert_string_equal(reason("ctl\xef\xbf\xbd.txt"), "name with a control character");
    assert_string_equal(reason("overlong\xef\xbf\xbd\xef\xbf\xbd.txt"), "name not UTF-8");
    assert_string_equal(reason("baddir\xef\xbf\xbd"), "name not UTF-8");
    assert_int_equal(json_array_size(refused), 4);
    assert_int_equal(cap_hit, 0);
    assert_int_equal(out_entries(), 1);
}

/* ---- the out directory ------------------------------------------------- */

static void test_out_dir_not_writable_is_an_error(void **state)
{
    (void)state;
    put_str("a.txt", "abc");
    /* The tests run as root, which permissions do not stop: a regular file
     * where the directory should be cannot be written by anyone. */
    char blocked[400];
    snprintf(blocked, sizeof blocked, "%s/not-a-dir", root);
    int fd = open(blocked, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    close(fd);
    memset(&err, 0, sizeof err);
    kiln_status st = collect(NULL, NULL, blocked);
    assert_int_equal(st, KILN_E_WRITE);
    assert_true(strlen(err.message) > 0);
    assert_null(files);
    assert_null(refused);
    assert_null(res.stopped_in);
}

static void test_replaces_existing_file_atomically(void **state)
{
    (void)state;
    put_str("a.txt", "abc");
    put_str("b.txt", "abc");
    /* An old a.txt held open, and an old b.txt that is a symlink to a file
     * the test made: both must be replaced, neither written through. */
    int fd = open(in_out("a.txt"), O_RDWR | O_CREAT, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "old", 3), 3);
    char victim[400];
    snprintf(victim, sizeof victim, "%s/victim", root);
    int vfd = open(victim, O_WRONLY | O_CREAT, 0644);
    assert_true(vfd >= 0);
    assert_int_equal(write(vfd, "victim", 6), 6);
    close(vfd);
    assert_int_equal(symlink(victim, in_out("b.txt")), 0);

    assert_int_equal(collect(NULL, NULL, out), KILN_E_OK);
    assert_same_bytes(in_job("a.txt"), in_out("a.txt"));
    char buf[8] = {0};
    assert_int_equal(pread(fd, buf, sizeof buf, 0), 3); /* the old inode, untouched */
    assert_memory_equal(buf, "old", 3);
    close(fd);
    struct stat sb;
    assert_int_equal(lstat(in_out("b.txt"), &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_same_bytes(in_job("b.txt"), in_out("b.txt"));
    FILE *f = fopen(victim, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "victim");
}

/* ---- media types ------------------------------------------------------- */

static void test_media_types(void **state)
{
    (void)state;
    assert_string_equal(
        kiln_media_type("r.docx"),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document");
    assert_string_equal(
        kiln_media_type("deck.PPTX"),
        "application/vnd.openxmlformats-officedocument.presentationml.presentation");
    assert_string_equal(kiln_media_type("a/b/c.pdf"), "application/pdf");
    assert_string_equal(kiln_media_type("t.tsv"), "text/tab-separated-values");
    assert_string_equal(kiln_media_type("n.md"), "text/markdown");
    assert_string_equal(kiln_media_type("l.jsonl"), "application/x-ndjson");
    assert_string_equal(kiln_media_type("p.Jpeg"), "image/jpeg");
    assert_string_equal(kiln_media_type("p.jpg"), "image/jpeg");
    assert_string_equal(kiln_media_type("v.svg"), "image/svg+xml");
    assert_string_equal(kiln_media_type("w.webp"), "image/webp");
    assert_string_equal(kiln_media_type("d.parquet"), "application/vnd.apache.parquet");
    assert_string_equal(kiln_media_type("s.py"), "text/x-python");
    assert_string_equal(kiln_media_type("s.sh"), "application/x-sh");
    assert_string_equal(kiln_media_type("old.xls"), "application/vnd.ms-excel");
    assert_string_equal(kiln_media_type("noext"), "application/octet-stream");
    assert_string_equal(kiln_media_type(".csv"), "application/octet-stream");
    assert_string_equal(kiln_media_type("dir.csv/file"), "application/octet-stream");
    assert_string_equal(kiln_media_type("x.unknown"), "application/octet-stream");
    assert_string_equal(kiln_media_type(""), "application/octet-stream");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    umask(022); /* the out directory's subdirectories are checked for 0755 */
    const struct CMUnitTest tests[] = {
        T(test_regular_files_hashed_and_copied),
        T(test_hash_only_without_out_dir),
        T(test_hardlink_inside_job),
        T(test_skip_top_level_only),
        T(test_symlink_to_host_file),
        T(test_directory_symlinks),
        T(test_dangling_symlink),
        T(test_fifo_refused_without_blocking),
        T(test_socket_refused),
        T(test_device_refused),
        T(test_hint_is_not_trusted),
        T(test_sparse_terabyte_refused_instantly),
        T(test_per_file_limit_exact),
        T(test_count_cap_and_refused_list_cap),
        T(test_refusals_of_their_own_reason_are_listed),
        T(test_total_cap),
        T(test_depth_cap),
        T(test_entry_cap),
        T(test_entry_cap_by_name_and_counted_below),
        T(test_path_too_long),
        T(test_names_not_utf8),
        T(test_out_dir_not_writable_is_an_error),
        T(test_replaces_existing_file_atomically),
        cmocka_unit_test(test_media_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
