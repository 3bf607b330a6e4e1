/* test_exec_cgroup.c - the job's cgroup (exec/cgroup.c) and rlimits
 * (exec/rlimits.c).
 *
 * Fake trees: plain directories standing in for /sys/fs/cgroup and a plain
 * file for /proc/self/cgroup, so the v2 path (not available on every test
 * host) and the v1 path are both checked file by file.
 *
 * Real: on this host's own cgroups, as root (skipped otherwise). Every real
 * test is harmless if the limit does not hold: the memory test touches 200
 * MiB, the fork test stops at 100 children and kills them, and every child
 * is one the test forked.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "common/error.h"
#include "exec/exec_internal.h"
#include "common/banned.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return test_dir_make(dir, sizeof dir, "cgroup");
}

static int teardown(void **state)
{
    (void)state;
    return test_dir_remove(dir);
}

/* ---- fake tree helpers -------------------------------------------------- */

static const char *at(const char *rel)
{
    static char p[4][512];
    static int next;
    char *out = p[next++ % 4];
    snprintf(out, sizeof p[0], "%s/%s", dir, rel);
    return out;
}

static void mkdirs(const char *rel)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", at(rel));
    assert_int_equal(system(cmd), 0);
}

static void put(const char *rel, const char *text)
{
    FILE *f = fopen(at(rel), "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The file's text with one trailing newline removed. */
static const char *get(const char *rel)
{
    static char buf[1024];
    FILE *f = fopen(at(rel), "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (n && buf[n - 1] == '\n')
        buf[n - 1] = '\0';
    return buf;
}

static int exists(const char *rel)
{
    return access(at(rel), F_OK) == 0;
}

static kiln_run_limits limits_of(uint64_t memory, uint32_t processes)
{
    kiln_run_limits l;
    memset(&l, 0, sizeof l);
    l.memory_bytes = memory;
    l.processes = processes;
    l.cpu_seconds = 60;
    l.file_bytes = 1 << 20;
    l.open_files = 64;
    return l;
}

static kiln_cgroup_roots fake_roots(void)
{
    static char fs[512], self[512];
    snprintf(fs, sizeof fs, "%s/fs", dir);
    snprintf(self, sizeof self, "%s/self-cgroup", dir);
    kiln_cgroup_roots r = {fs, self};
    return r;
}

/* ---- fake v2 ------------------------------------------------------------ */

/* A pure v2 host whose root group we are in ("0::/"): the root is exempt
 * from "no internal processes", so the job is its child. */
static void test_fake_v2_root(void **state)
{
    (void)state;
    mkdirs("fs");
    put("fs/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    put("fs/cgroup.subtree_control", "");
    put("fs/cgroup.procs", "1\n");
    /* Optional files exist in the fake root: the job's group gets them. */
    put("fs/memory.swap.max", "");
    put("fs/memory.oom.group", "");
    put("fs/cgroup.kill", "");
    put("self-cgroup", "0::/\n");

    kiln_cgroup_roots roots = fake_roots();
    kiln_run_limits l = limits_of(1073741824, 16);
    kiln_cgroup cg;
    kiln_error err;
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "job1", &l, &err), KILN_E_OK);
    assert_int_equal(cg.version, 2);
    assert_string_equal(cg.v2_path, at("fs/job1"));
    assert_string_equal(get("fs/cgroup.subtree_control"), "+memory +pids +cpu");
    assert_string_equal(get("fs/job1/memory.max"), "1073741824");
    assert_string_equal(get("fs/job1/memory.swap.max"), "0");
    assert_string_equal(get("fs/job1/pids.max"), "16");
    assert_string_equal(get("fs/job1/memory.oom.group"), "1");
    assert_false(exists("fs/kiln-supervisor")); /* nothing moved at the root */

    assert_int_equal(kiln_cgroup_attach(&cg, 4242, &err), KILN_E_OK);
    assert_string_equal(get("fs/job1/cgroup.procs"), "4242");

    put("fs/job1/cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n");
    put("fs/job1/memory.peak", "4096\n");
    put("fs/job1/memory.events", "low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\noom_group_kill 1\n");
    put("fs/job1/pids.events", "max 5\n");
    kiln_cgroup_usage u;
    kiln_cgroup_read_usage(&cg, &u);
    assert_int_equal(u.cpu_usec, 1500);
    assert_int_equal(u.peak_bytes, 4096);
    assert_int_equal(u.oom_kills, 2);
    assert_int_equal(u.pids_limit_hit, 1);

    /* A fake tree's cgroup.procs names a real pid (4242 could be anyone):
     * kill_all writes cgroup.kill and signals nothing. */
    kiln_cgroup_kill_all(&cg);
    assert_string_equal(get("fs/job1/cgroup.kill"), "1");

    kiln_cgroup_release(&cg);
    assert_int_equal(cg.version, 0);
    assert_string_equal(cg.v2_path, "");
}

/* No memory.peak (before 5.19), no oom_kill, no pids hit. */
static void test_fake_v2_usage_fallbacks(void **state)
{
    (void)state;
    mkdirs("fs");
    put("fs/cgroup.controllers", "memory pids\n");
    put("self-cgroup", "0::/\n");
    kiln_cgroup_roots roots = fake_roots();
    kiln_run_limits l = limits_of(64 << 20, 8);
    kiln_cgroup cg;
    kiln_error err;
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "j", &l, &err), KILN_E_OK);
    /* No optional files in the root: none made for the job. */
    assert_false(exists("fs/j/memory.swap.max"));
    assert_false(exists("fs/j/memory.oom.group"));
    put("fs/j/cpu.stat", "user_usec 1\nusage_usec 77\n");
    put("fs/j/memory.events", "oom 0\noom_kill 0\n");
    put("fs/j/pids.events", "max 0\n");
    kiln_cgroup_usage u;
    kiln_cgroup_read_usage(&cg, &u);
    assert_int_equal(u.cpu_usec, 77);
    assert_int_equal(u.peak_bytes, 0);
    assert_int_equal(u.oom_kills, 0);
    assert_int_equal(u.pids_limit_hit, 0);
    kiln_cgroup_release(&cg);
}

/* Our group is not the root and holds processes: they move into a leaf
 * and the controllers are enabled on our group, the job's parent. */
static void test_fake_v2_nested_moves_to_leaf(void **state)
{
    (void)state;
    mkdirs("fs/a/b");
    put("fs/cgroup.controllers", "cpu memory pids\n");
    put("fs/a/b/cgroup.controllers", "memory pids\n");
    put("fs/a/b/cgroup.subtree_control", "");
    put("fs/a/b/cgroup.procs", "111\n222\n");
    put("self-cgroup", "0::/a/b\n");
    kiln_cgroup_roots roots = fake_roots();
    kiln_run_limits l = limits_of(1 << 30, 64);
    kiln_cgroup cg;
    kiln_error err;
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "job", &l, &err), KILN_E_OK);
    assert_string_equal(cg.v2_path, at("fs/a/b/job"));
    assert_true(exists("fs/a/b/kiln-supervisor"));
    /* plain file: each write replaced the last, the last pid was moved */
    assert_string_equal(get("fs/a/b/kiln-supervisor/cgroup.procs"), "222");
    assert_string_equal(get("fs/a/b/cgroup.subtree_control"), "+memory +pids +cpu");
    assert_string_equal(get("fs/a/b/job/pids.max"), "64");
    kiln_cgroup_release(&cg);
}

/* Already in our leaf (an earlier job moved us): the leaf's parent is the
 * base and nothing moves again. */
static void test_fake_v2_in_leaf(void **state)
{
    (void)state;
    mkdirs("fs/svc/kiln-supervisor");
    put("fs/cgroup.controllers", "cpu memory pids\n");
    put("fs/svc/cgroup.controllers", "cpu memory pids\n");
    put("fs/svc/cgroup.subtree_control", "cpu memory pids\n");
    put("self-cgroup", "0::/svc/kiln-supervisor\n");
    kiln_cgroup_roots roots = fake_roots();
    kiln_run_limits l = limits_of(1 << 30, 64);
    kiln_cgroup cg;
    kiln_error err;
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "job", &l, &err), KILN_E_OK);
    assert_string_equal(cg.v2_path, at("fs/svc/job"));
    assert_string_equal(get("fs/svc/cgroup.subtree_control"), "cpu memory pids"); /* untouched */
    assert_false(exists("fs/svc/kiln-supervisor/cgroup.procs"));
    kiln_cgroup_release(&cg);
}

/* v2 without the memory controller delegated, and no v1: refused. */
static void test_fake_v2_no_memory(void **state)
{
    (void)state;
    mkdirs("fs/a");
    put("fs/cgroup.controllers", "cpu memory pids\n");
    put("fs/a/cgroup.controllers", "cpu pids\n");
    put("self-cgroup", "0::/a\n");
    kiln_cgroup_roots roots = fake_roots();
    kiln_run_limits l = limits_of(1 << 30, 64);
    kiln_cgroup cg;
    kiln_error err;
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "job", &l, &err), KILN_E_INTERNAL);
    assert_string_equal(err.message, "no cgroup memory controller");
    assert_int_equal(cg.version, 0);
    assert_false(exists("fs/a/job"));
    kiln_cgroup_release(&cg); /* safe on what create left */
}

static void test_bad_name(void **state)
{
    (void)state;
    mkdirs("fs");
    put("fs/cgroup.controllers", "memory pids\n");
    put("self-cgroup", "0::/\n");
    kiln_cgroup_roots roots = fake_roots();
    kiln_run_limits l = limits_of(1 << 30, 64);
    kiln_cgroup cg;
    kiln_error err;
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "../x", &l, &err), KILN_E_INTERNAL);
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "", &l, &err), KILN_E_INTERNAL);
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "..", &l, &err), KILN_E_INTERNAL);
    kiln_cgroup zero;
    memset(&zero, 0, sizeof zero);
    kiln_cgroup_release(&zero);
    kiln_cgroup_kill_all(&zero);
    kiln_cgroup_usage u;
    kiln_cgroup_read_usage(&zero, &u);
    assert_int_equal(u.cpu_usec, 0);
    assert_int_equal(kiln_cgroup_attach(&zero, 1, &err), KILN_E_INTERNAL);
}

/* ---- fake v1 (the hybrid layout of this machine) ------------------------ */

static void hybrid_tree(int memsw)
{
    mkdirs("fs/memory/process_api/x");
    mkdirs("fs/pids");
    mkdirs("fs/cpuacct");
    mkdirs("fs/unified");
    put("fs/unified/cgroup.controllers", ""); /* v2 with no controllers */
    put("fs/memory/process_api/x/memory.limit_in_bytes", "9223372036854771712\n");
    if (memsw)
        put("fs/memory/process_api/x/memory.memsw.limit_in_bytes", "9223372036854771712\n");
    put("self-cgroup", "9:name=systemd:/\n8:pids:/\n7:blkio:/\n4:memory:/process_api/x\n"
                       "2:cpuacct:/\n1:cpu:/\n0::/\n");
}

static void test_fake_v1_hybrid(void **state)
{
    (void)state;
    hybrid_tree(1);
    kiln_cgroup_roots roots = fake_roots();
    kiln_run_limits l = limits_of(1073741824, 16);
    kiln_cgroup cg;
    kiln_error err;
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "job", &l, &err), KILN_E_OK);
    assert_int_equal(cg.version, 1);
    assert_string_equal(cg.v1_memory, at("fs/memory/process_api/x/job"));
    assert_string_equal(cg.v1_pids, at("fs/pids/job"));
    assert_string_equal(cg.v1_cpuacct, at("fs/cpuacct/job"));
    assert_string_equal(get("fs/memory/process_api/x/job/memory.limit_in_bytes"), "1073741824");
    assert_string_equal(get("fs/memory/process_api/x/job/memory.memsw.limit_in_bytes"),
                        "1073741824");
    assert_string_equal(get("fs/pids/job/pids.max"), "16");
    assert_false(exists("fs/unified/job"));

    assert_int_equal(kiln_cgroup_attach(&cg, 4242, &err), KILN_E_OK);
    assert_string_equal(get("fs/memory/process_api/x/job/cgroup.procs"), "4242");
    assert_string_equal(get("fs/pids/job/cgroup.procs"), "4242");
    assert_string_equal(get("fs/cpuacct/job/cgroup.procs"), "4242");

    put("fs/cpuacct/job/cpuacct.usage", "2500000\n");
    put("fs/memory/process_api/x/job/memory.max_usage_in_bytes", "123456\n");
    put("fs/memory/process_api/x/job/memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
    put("fs/memory/process_api/x/job/memory.failcnt", "9\n");
    put("fs/pids/job/pids.events", "max 0\n");
    kiln_cgroup_usage u;
    kiln_cgroup_read_usage(&cg, &u);
    assert_int_equal(u.cpu_usec, 2500);
    assert_int_equal(u.peak_bytes, 123456);
    assert_int_equal(u.oom_kills, 3);
    assert_int_equal(u.pids_limit_hit, 0);

    /* Before 4.13 memory.oom_control has no oom_kill line: failcnt > 0
     * stands in for one kill. */
    put("fs/memory/process_api/x/job/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
    put("fs/pids/job/pids.events", "max 2\n");
    kiln_cgroup_read_usage(&cg, &u);
    assert_int_equal(u.oom_kills, 1);
    assert_int_equal(u.pids_limit_hit, 1);
    put("fs/memory/process_api/x/job/memory.failcnt", "0\n");
    kiln_cgroup_read_usage(&cg, &u);
    assert_int_equal(u.oom_kills, 0);

    kiln_cgroup_kill_all(&cg); /* fake: signals nothing (4242 is not ours) */
    kiln_cgroup_release(&cg);
    assert_int_equal(cg.version, 0);
    assert_string_equal(cg.v1_memory, "");
}

/* Swap accounting off: no memsw file, none written, still created. */
static void test_fake_v1_no_memsw(void **state)
{
    (void)state;
    hybrid_tree(0);
    kiln_cgroup_roots roots = fake_roots();
    kiln_run_limits l = limits_of(1 << 26, 16);
    kiln_cgroup cg;
    kiln_error err;
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "job", &l, &err), KILN_E_OK);
    assert_string_equal(get("fs/memory/process_api/x/job/memory.limit_in_bytes"), "67108864");
    assert_false(exists("fs/memory/process_api/x/job/memory.memsw.limit_in_bytes"));
    kiln_cgroup_release(&cg);
}

/* cpu and cpuacct mounted together, with no per-controller symlink. */
static void test_fake_v1_comounted(void **state)
{
    (void)state;
    mkdirs("fs/memory");
    mkdirs("fs/pids/p");
    mkdirs("fs/cpu,cpuacct/c");
    put("self-cgroup", "5:pids:/p\n3:cpu,cpuacct:/c\n2:memory:/\n");
    kiln_cgroup_roots roots = fake_roots();
    kiln_run_limits l = limits_of(1 << 26, 16);
    kiln_cgroup cg;
    kiln_error err;
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "job", &l, &err), KILN_E_OK);
    assert_string_equal(cg.v1_memory, at("fs/memory/job"));
    assert_string_equal(cg.v1_pids, at("fs/pids/p/job"));
    assert_string_equal(cg.v1_cpuacct, at("fs/cpu,cpuacct/c/job"));
    kiln_cgroup_release(&cg);
}

/* No cgroup at all (or v1 without memory). */
static void test_fake_none(void **state)
{
    (void)state;
    mkdirs("fs/pids");
    put("self-cgroup", "8:pids:/\n0::/\n");
    kiln_cgroup_roots roots = fake_roots();
    kiln_run_limits l = limits_of(1 << 26, 16);
    kiln_cgroup cg;
    kiln_error err;
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "job", &l, &err), KILN_E_INTERNAL);
    assert_string_equal(err.message, "no cgroup memory controller");
    /* memory present but pids missing: nothing left behind */
    mkdirs("fs/memory");
    put("self-cgroup", "4:memory:/\n");
    assert_int_equal(kiln_cgroup_create(&cg, &roots, "job", &l, &err), KILN_E_INTERNAL);
    assert_string_equal(err.message, "no cgroup pids controller");
    assert_false(exists("fs/memory/job"));
}

/* ---- real cgroups (root only) ------------------------------------------ */

static int real_seq;

/* Create a real group, or skip the test when this host cannot. */
static void real_create(kiln_cgroup *cg, uint64_t memory, uint32_t processes)
{
    if (geteuid() != 0) {
        fprintf(stderr, "  skipped: real cgroup tests need root\n");
        skip();
    }
    char name[64];
    snprintf(name, sizeof name, "kiln-test-%ld-%d", (long)getpid(), real_seq++);
    kiln_run_limits l = limits_of(memory, processes);
    kiln_error err;
    kiln_status st = kiln_cgroup_create(cg, NULL, name, &l, &err);
    if (st != KILN_E_OK) {
        fprintf(stderr, "  skipped: no usable cgroup on this host: %s\n", err.message);
        skip();
    }
}

/* A child that waits for `go` (attached) before running fn. */
static pid_t spawn_attached(const kiln_cgroup *cg, int (*fn)(int), int report_fd)
{
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(99);
        _exit(fn(report_fd));
    }
    close(go[0]);
    kiln_error err;
    kiln_status st = kiln_cgroup_attach(cg, pid, &err);
    if (st != KILN_E_OK)
        fprintf(stderr, "  attach: %s\n", err.message);
    assert_int_equal(write(go[1], "g", 1), 1);
    close(go[1]);
    assert_int_equal(st, KILN_E_OK);
    return pid;
}

static int touch_200m(int fd)
{
    (void)fd;
    size_t len = 200u << 20;
    /* volatile stores: GCC drops plain stores to memory that is then freed */
    volatile char *p = malloc(len);
    if (!p)
        return 3;
    for (size_t i = 0; i < len; i += 4096)
        p[i] = 1;
    free((void *)p);
    return 0; /* the limit did not hold */
}

static void test_real_memory_limit(void **state)
{
    (void)state;
    kiln_cgroup cg;
    real_create(&cg, 64 << 20, 16);
    pid_t pid = spawn_attached(&cg, touch_200m, -1);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    kiln_cgroup_usage u;
    kiln_cgroup_read_usage(&cg, &u);
    kiln_cgroup_release(&cg);
    fprintf(stderr, "  status 0x%x, oom_kills %llu, peak %llu\n", (unsigned)status,
            (unsigned long long)u.oom_kills, (unsigned long long)u.peak_bytes);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    assert_true(u.oom_kills >= 1);
    assert_true(u.peak_bytes > (32u << 20));
    assert_true(u.peak_bytes <= (64u << 20) + (1u << 20));
}

/* Fork up to 100 paused children; report how many worked and the errno of
 * the first failure; kill them all. */
static int fork_100(int fd)
{
    pid_t kids[100];
    int n = 0, failed_errno = 0;
    for (; n < 100; n++) {
        pid_t k = fork();
        if (k == 0) {
            pause();
            _exit(0);
        }
        if (k < 0) {
            failed_errno = errno;
            break;
        }
        kids[n] = k;
    }
    for (int i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < n; i++)
        waitpid(kids[i], NULL, 0);
    int report[2] = {n, failed_errno};
    return write(fd, report, sizeof report) == (ssize_t)sizeof report ? 0 : 4;
}

static void test_real_pids_limit(void **state)
{
    (void)state;
    kiln_cgroup cg;
    real_create(&cg, 256 << 20, 16);
    int rep[2];
    assert_int_equal(pipe(rep), 0);
    pid_t pid = spawn_attached(&cg, fork_100, rep[1]);
    close(rep[1]);
    int report[2] = {-1, -1};
    assert_int_equal(read(rep[0], report, sizeof report), (ssize_t)sizeof report);
    close(rep[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    kiln_cgroup_usage u;
    kiln_cgroup_read_usage(&cg, &u);
    kiln_cgroup_release(&cg);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(report[0], 15); /* 16 pids: the child and 15 more */
    assert_int_equal(report[1], EAGAIN);
    assert_int_equal(u.pids_limit_hit, 1);
}

/* Global so the compiler can neither drop the loop nor call it unused. */
static volatile uint64_t busy_sink;

static int busy_300ms(int fd)
{
    (void)fd;
    struct timespec ts;
    do {
        for (int i = 0; i < 100000; i++)
            busy_sink += (uint64_t)i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    } while (ts.tv_sec * 1000 + ts.tv_nsec / 1000000 < 300);
    return 0;
}

static void test_real_cpu_usage(void **state)
{
    (void)state;
    kiln_cgroup cg;
    real_create(&cg, 256 << 20, 16);
    kiln_cgroup_usage before, after;
    kiln_cgroup_read_usage(&cg, &before);
    pid_t pid = spawn_attached(&cg, busy_300ms, -1);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    kiln_cgroup_read_usage(&cg, &after);
    kiln_cgroup_release(&cg);
    assert_true(WIFEXITED(status));
    assert_true(before.cpu_usec < 100000);
    assert_true(after.cpu_usec >= 250000);
    assert_true(after.cpu_usec < 5000000);
}

static int sleep_long(int fd)
{
    (void)fd;
    sleep(60);
    return 0;
}

static void test_real_kill_all_and_release(void **state)
{
    (void)state;
    kiln_cgroup cg;
    real_create(&cg, 256 << 20, 16);
    pid_t kids[5];
    for (int i = 0; i < 5; i++)
        kids[i] = spawn_attached(&cg, sleep_long, -1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kiln_cgroup_kill_all(&cg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int i = 0; i < 5; i++) {
        int status;
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGKILL);
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "  kill_all took %.3f s\n", secs);
    assert_true(secs < 1.5);

    char paths[4][512];
    snprintf(paths[0], sizeof paths[0], "%s", cg.v2_path);
    snprintf(paths[1], sizeof paths[1], "%s", cg.v1_memory);
    snprintf(paths[2], sizeof paths[2], "%s", cg.v1_pids);
    snprintf(paths[3], sizeof paths[3], "%s", cg.v1_cpuacct);
    kiln_cgroup_release(&cg);
    for (int i = 0; i < 4; i++) {
        if (paths[i][0]) {
            struct stat st;
            assert_int_equal(stat(paths[i], &st), -1);
            assert_int_equal(errno, ENOENT);
        }
    }
}

/* The v2 calls on a real cgroup2 hierarchy. A hybrid host's unified
 * hierarchy has no controllers, so create() cannot make a v2 group here;
 * but attach (cgroup.procs), usage (cpu.stat is there without the cpu
 * controller), kill_all (cgroup.kill) and release work on any cgroup2
 * group, so the test makes one by hand and fills the struct as create
 * would. */
static void test_real_v2_without_controllers(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        fprintf(stderr, "  skipped: real cgroup tests need root\n");
        skip();
    }
    struct statfs sfs;
    const char *mount = NULL;
    if (statfs("/sys/fs/cgroup", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
        mount = "/sys/fs/cgroup";
    else if (statfs("/sys/fs/cgroup/unified", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
        mount = "/sys/fs/cgroup/unified";
    if (!mount || access("/proc/self/cgroup", R_OK) != 0) {
        fprintf(stderr, "  skipped: no cgroup2 hierarchy on this host\n");
        skip();
    }
    /* Our own v2 group, "0::PATH": the root (exempt from "no internal
     * processes") on a hybrid host. */
    FILE *f = fopen("/proc/self/cgroup", "r");
    assert_non_null(f);
    char line[512], self[512] = "";
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "0::", 3) == 0)
            snprintf(self, sizeof self, "%s", line + 3);
    fclose(f);
    self[strcspn(self, "\n")] = '\0';
    if (strcmp(self, "/") != 0) {
        fprintf(stderr, "  skipped: our cgroup2 group %s is not the root\n", self);
        skip();
    }
    kiln_cgroup cg;
    memset(&cg, 0, sizeof cg);
    snprintf(cg.v2_path, sizeof cg.v2_path, "%s/kiln-test-v2-%ld", mount, (long)getpid());
    assert_int_equal(mkdir(cg.v2_path, 0755), 0);
    cg.version = 2;
    char kill_file[600];
    snprintf(kill_file, sizeof kill_file, "%s/cgroup.kill", cg.v2_path);
    int has_kill = access(kill_file, F_OK) == 0;

    pid_t busy = spawn_attached(&cg, busy_300ms, -1);
    int status;
    assert_int_equal(waitpid(busy, &status, 0), busy);
    kiln_cgroup_usage u;
    kiln_cgroup_read_usage(&cg, &u);
    assert_true(u.cpu_usec >= 250000);

    pid_t kids[5];
    for (int i = 0; i < 5; i++)
        kids[i] = spawn_attached(&cg, sleep_long, -1);
    kiln_cgroup_kill_all(&cg);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    }
    fprintf(stderr, "  killed through %s\n", has_kill ? "cgroup.kill" : "cgroup.procs");
    char path[512];
    snprintf(path, sizeof path, "%s", cg.v2_path);
    kiln_cgroup_release(&cg);
    assert_int_equal(access(path, F_OK), -1);
}

/* ---- rlimits ------------------------------------------------------------ */

/* In a child (setrlimit is for life): apply, read back, write past
 * RLIMIT_FSIZE. Exit status: 0 fine, else the step that failed. */
static int rlimits_child(void)
{
    kiln_run_limits l = limits_of(1 << 30, 50);
    l.cpu_seconds = 2.5;
    l.file_bytes = 4096;
    l.open_files = 100;
    const char *what = NULL;
    if (kiln_rlimits_apply(&l, &what) != 0)
        return 1;
    static const struct {
        int res;
        rlim_t want;
    } checks[] = {{RLIMIT_CPU, 4},     {RLIMIT_FSIZE, 4096}, {RLIMIT_NOFILE, 100},
                  {RLIMIT_NPROC, 50},  {RLIMIT_CORE, 0},     {RLIMIT_MEMLOCK, 65536},
                  {RLIMIT_MSGQUEUE, 0}};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        struct rlimit rl;
        if (getrlimit(checks[i].res, &rl) != 0 || rl.rlim_cur != checks[i].want ||
            rl.rlim_max != checks[i].want)
            return 10 + (int)i;
    }
    signal(SIGXFSZ, SIG_IGN);
    char path[300];
    snprintf(path, sizeof path, "%s/big", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return 2;
    char buf[8192];
    memset(buf, 'x', sizeof buf);
    if (write(fd, buf, sizeof buf) != 4096) /* short write up to the limit */
        return 3;
    errno = 0;
    if (write(fd, buf, 1) != -1 || errno != EFBIG)
        return 4;
    close(fd);
    return 0;
}

static void test_rlimits_apply(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(rlimits_child());
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_rlimits_zero_refused(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        kiln_run_limits l = limits_of(1 << 30, 50);
        l.open_files = 0;
        const char *what = NULL;
        int rc = kiln_rlimits_apply(&l, &what);
        if (rc != -1 || errno != EINVAL || !what || !strstr(what, "RLIMIT_NOFILE"))
            _exit(1);
        l.open_files = 10;
        l.cpu_seconds = 0;
        rc = kiln_rlimits_apply(&l, &what);
        if (rc != -1 || errno != EINVAL || !strstr(what, "RLIMIT_CPU"))
            _exit(2);
        /* whole seconds: ceil(3) + 1 */
        l.cpu_seconds = 3;
        struct rlimit rl;
        if (kiln_rlimits_apply(&l, &what) != 0 || getrlimit(RLIMIT_CPU, &rl) != 0 ||
            rl.rlim_cur != 4)
            _exit(3);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fake_v2_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_v2_usage_fallbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_v2_nested_moves_to_leaf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_v2_in_leaf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_v2_no_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_v1_hybrid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_v1_no_memsw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_v1_comounted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_none, setup, teardown),
        cmocka_unit_test(test_real_memory_limit),
        cmocka_unit_test(test_real_pids_limit),
        cmocka_unit_test(test_real_cpu_usage),
        cmocka_unit_test(test_real_kill_all_and_release),
        cmocka_unit_test(test_real_v2_without_controllers),
        cmocka_unit_test_setup_teardown(test_rlimits_apply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rlimits_zero_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
