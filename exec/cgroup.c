/*
 * cgroup.c - the job's control group: limits, usage, kill, removal.
 *
 * The cgroup is the real limit on a job's memory, process count and CPU
 * time (rlimits.c is only the backstop under it): every process the job
 * starts is in the group, whatever uid or namespace it ends up in, and the
 * group's counters say what the job used and whether the kernel had to kill
 * something for it.
 *
 * Which hierarchy, in order of preference:
 *   1. cgroup v2 mounted at fs_root itself (a pure v2 host), or at
 *      fs_root/unified (a hybrid host) when the group we would create under
 *      has the memory and pids controllers available (cgroup.controllers);
 *   2. cgroup v1: one group NAME under this process's own group in each of
 *      the memory, pids and cpuacct hierarchies (fs_root/CONTROLLER).
 * A hybrid host whose unified hierarchy has no controllers (systemd's
 * default) therefore uses v1. A host with neither is refused with
 * KILN_E_INTERNAL "no cgroup memory controller".
 *
 * Fake trees. The unit tests point fs_root and proc_self_cgroup at plain
 * directories and files. Nothing in kiln_cgroup_roots says "fake"; instead
 * every decision is made by probing files, which is also how a real host is
 * told apart:
 *   - a directory is a v2 hierarchy when statfs says CGROUP2_SUPER_MAGIC, or,
 *     when it is on no cgroup file system at all (a fake tree), when it holds
 *     a "cgroup.controllers" file (only cgroup2 has one);
 *   - a control file that is missing is an error on a real cgroup file
 *     system (the kernel makes them at mkdir), but in a directory that is on
 *     no cgroup file system it is created, so a test can read back what was
 *     written. Optional files (memory.swap.max, memory.oom.group,
 *     memory.memsw.limit_in_bytes: absent when swap accounting is off) are
 *     written when the group has them on a real host, and in a fake tree
 *     when the parent group has them (the test decides by creating it);
 *   - pids read from a fake tree's cgroup.procs are never signalled: they
 *     are text a test wrote, possibly its own pid.
 * statfs is the one check that cannot be faked by accident: a test's
 * directory is never on cgroupfs, and a real group always is.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

#define CG_PATH_MAX 512
/* The v2 leaf our own processes move into when our group must delegate
 * controllers to the job's group (see base_v2). */
#define CG_LEAF "kiln-supervisor"
/* kill_all and release give up after this long. */
#define CG_WAIT_NS 1000000000LL
#define CG_POLL_NS 5000000L

static const char *roots_fs(const kiln_cgroup_roots *roots)
{
    return roots && roots->fs_root ? roots->fs_root : "/sys/fs/cgroup";
}

static const char *roots_self(const kiln_cgroup_roots *roots)
{
    return roots && roots->proc_self_cgroup ? roots->proc_self_cgroup : "/proc/self/cgroup";
}

/* dir + "/" + name into out; -1 with ENAMETOOLONG when it would be cut. */
static int path_join(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* A hierarchy's mount point plus a group path from /proc/self/cgroup
 * ("/" or "/a/b"). */
static int path_group(char *out, size_t cap, const char *mount, const char *group)
{
    while (*group == '/')
        group++;
    if (!*group) {
        int n = snprintf(out, cap, "%s", mount);
        if (n < 0 || (size_t)n >= cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        return 0;
    }
    return path_join(out, cap, mount, group);
}

/* The parent directory of path (path has at least one '/'). */
static void path_parent(char *out, size_t cap, const char *path)
{
    snprintf(out, cap, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash && slash != out)
        *slash = '\0';
}

static int file_exists(const char *dir, const char *file)
{
    char path[CG_PATH_MAX];
    return path_join(path, sizeof path, dir, file) == 0 && access(path, F_OK) == 0;
}

/* 1 when dir is on no cgroup file system: a unit test's fake tree (or the
 * tmpfs a hybrid host mounts the v1 hierarchies under). */
static int is_fake(const char *dir)
{
    struct statfs sfs;
    if (statfs(dir, &sfs) != 0)
        return 0;
    return sfs.f_type != CGROUP_SUPER_MAGIC && sfs.f_type != CGROUP2_SUPER_MAGIC;
}

static int is_v2_mount(const char *dir)
{
    struct statfs sfs;
    if (statfs(dir, &sfs) != 0)
        return 0;
    if (sfs.f_type == CGROUP2_SUPER_MAGIC)
        return 1;
    return sfs.f_type != CGROUP_SUPER_MAGIC && file_exists(dir, "cgroup.controllers");
}

enum { CG_REQUIRED = 0, CG_OPTIONAL = 1 };

/* Write value to dir/file in one write() (cgroupfs takes one value per
 * write and reports a bad one as the write's error). Returns 0 written,
 * 1 an optional file that is absent, -1 with errno. */
static int cg_write(const char *dir, const char *file, const char *value, int optional)
{
    char path[CG_PATH_MAX];
    if (path_join(path, sizeof path, dir, file))
        return -1;
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && is_fake(dir)) {
        char parent[CG_PATH_MAX];
        path_parent(parent, sizeof parent, dir);
        if (optional && !file_exists(parent, file))
            return 1;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (fd < 0)
        return errno == ENOENT && optional ? 1 : -1;
    size_t len = strlen(value);
    ssize_t n = write(fd, value, len);
    int saved = errno;
    close(fd);
    if (n != (ssize_t)len) {
        errno = n < 0 ? saved : EIO;
        return -1;
    }
    return 0;
}

/* Read dir/file (small: a stat file) into buf, NUL-terminated. -1 with
 * errno when it cannot be read. */
static int cg_read(const char *dir, const char *file, char *buf, size_t cap)
{
    char path[CG_PATH_MAX];
    if (path_join(path, sizeof path, dir, file))
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len + 1 < cap) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    close(fd);
    return 0;
}

/* The value of the line "KEY N" in a flat-keyed file's text. */
static int text_key(const char *text, const char *key, uint64_t *value)
{
    size_t klen = strlen(key);
    const char *line = text;
    while (*line) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
            *value = strtoull(line + klen + 1, NULL, 10);
            return 0;
        }
        const char *nl = strchr(line, '\n');
        if (!nl)
            break;
        line = nl + 1;
    }
    return -1;
}

static int file_key(const char *dir, const char *file, const char *key, uint64_t *value)
{
    char buf[4096];
    if (cg_read(dir, file, buf, sizeof buf))
        return -1;
    return text_key(buf, key, value);
}

/* A file holding one number ("max" or garbage: -1). */
static int file_u64(const char *dir, const char *file, uint64_t *value)
{
    char buf[64];
    if (cg_read(dir, file, buf, sizeof buf))
        return -1;
    if (!isdigit((unsigned char)buf[0]))
        return -1;
    *value = strtoull(buf, NULL, 10);
    return 0;
}

/* 1 when the space-separated list in dir/file names every controller in
 * `want` (a fake tree's subtree_control may hold "+memory +pids": the '+'
 * is ignored). */
static int has_controllers(const char *dir, const char *file, const char *const *want)
{
    char buf[512];
    if (cg_read(dir, file, buf, sizeof buf))
        return 0;
    for (; *want; want++) {
        int found = 0;
        char copy[512];
        snprintf(copy, sizeof copy, "%s", buf);
        char *save = NULL;
        for (char *tok = strtok_r(copy, " \t\n", &save); tok;
             tok = strtok_r(NULL, " \t\n", &save)) {
            if (*tok == '+')
                tok++;
            if (strcmp(tok, *want) == 0)
                found = 1;
        }
        if (!found)
            return 0;
    }
    return 1;
}

/* This process's group in one hierarchy, from a /proc/self/cgroup line
 * "ID:CONTROLLERS:PATH". controller NULL: the v2 line ("0::PATH").
 * *list gets the line's CONTROLLERS field ("cpu,cpuacct"): v1 hierarchies
 * mounted together are named that way on disk. 0 found, -1 not. */
static int self_group(const char *proc_file, const char *controller, char *path, size_t cap,
                      char *list, size_t list_cap)
{
    FILE *f = fopen(proc_file, "re");
    if (!f)
        return -1;
    char line[1024];
    int found = -1;
    while (found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = '\0';
        *c2 = '\0';
        const char *ctrls = c1 + 1, *gpath = c2 + 1;
        if (!controller) {
            if (strcmp(line, "0") == 0 && !*ctrls)
                found = 0;
        } else {
            char copy[256];
            snprintf(copy, sizeof copy, "%s", ctrls);
            char *save = NULL;
            for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                if (strcmp(tok, controller) == 0)
                    found = 0;
        }
        if (!found) {
            int n = snprintf(path, cap, "%s", gpath);
            if (n < 0 || (size_t)n >= cap || gpath[0] != '/')
                found = -1;
            if (list)
                snprintf(list, list_cap, "%s", ctrls);
            if (found)
                break; /* a path we cannot use: treat as absent */
        }
    }
    fclose(f);
    return found;
}

/* Is pid Kiln's: this process, its parent (a kiln_run_job caller), or
 * another process of the same executable (another supervisor, the server)? */
static int process_is_kiln(long pid)
{
    if (pid == (long)getpid() || pid == (long)getppid())
        return 1;
    char path[64], exe[PATH_MAX], self[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%ld/exe", pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    ssize_t m = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || m <= 0)
        return 0;
    exe[n] = '\0';
    self[m] = '\0';
    return strcmp(exe, self) == 0;
}

/* The first process in dir/cgroup.procs that is not Kiln's, or 0. */
static long foreign_process(const char *dir)
{
    char path[CG_PATH_MAX];
    if (path_join(path, sizeof path, dir, "cgroup.procs"))
        return 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    long pid, foreign = 0;
    while (!foreign && fscanf(f, "%ld", &pid) == 1)
        if (!process_is_kiln(pid))
            foreign = pid;
    fclose(f);
    return foreign;
}

/* Move every process listed in from/cgroup.procs to to/cgroup.procs. A
 * process that exits meanwhile (ESRCH) is fine. */
static int move_procs(const char *from, const char *to)
{
    char path[CG_PATH_MAX];
    if (path_join(path, sizeof path, from, "cgroup.procs"))
        return -1;
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long pid;
    int rc = 0;
    while (fscanf(f, "%ld", &pid) == 1) {
        char num[32];
        snprintf(num, sizeof num, "%ld", pid);
        if (cg_write(to, "cgroup.procs", num, CG_REQUIRED) && errno != ESRCH)
            rc = -1;
    }
    fclose(f);
    return rc;
}

/*
 * The v2 group the job's group is made under, with memory and pids enabled
 * in its cgroup.subtree_control.
 *
 * v2's "no internal processes" rule: a non-root group can enable
 * controllers for its children only while it has no processes of its own,
 * and we are in our own group. The choices were (a) make the job a sibling
 * of our group, under the parent: that takes the job out of whatever limits
 * the host put on us (a systemd service's MemoryMax, a container's limit)
 * and the parent is often outside what was delegated to us; or (b) move
 * our group's processes into a leaf child and then enable the controllers
 * on our group, which is what container runtimes do in a delegated
 * subtree. We do (b): the job stays inside our own limits, and the leaf is
 * named CG_LEAF so a later job (our process now sits in the leaf) sees that
 * and uses the leaf's parent again. Only when every process in our group is
 * Kiln's (this one, its caller, other kiln processes) do they move; a group
 * that holds anything else (a login shell, another service) was not
 * delegated to Kiln and is left as it is, with an error that says how to
 * run Kiln. The move is done once; the leaf stays (it holds the
 * supervisor's own processes) and is never removed here.
 */
static kiln_status base_v2(char *base, size_t cap, const char *mount, const char *self,
                           kiln_error *err)
{
    static const char *const need[] = {"memory", "pids", NULL};
    char own[CG_PATH_MAX];
    if (path_group(own, sizeof own, mount, self))
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cgroup path too long: %s%s", mount,
                              self);
    const char *slash = strrchr(own, '/');
    if (strcmp(own, mount) != 0 && slash && strcmp(slash + 1, CG_LEAF) == 0)
        path_parent(base, cap, own);
    else
        snprintf(base, cap, "%s", own);
    if (has_controllers(base, "cgroup.subtree_control", need))
        return KILN_E_OK;
    /* The mount's root group is tried as it is first: the host's real root
     * is exempt from the rule (and its kernel threads could not be moved).
     * A container's cgroup-namespace root looks the same but is not
     * exempt: its write fails with EBUSY and its processes move like any
     * other group's. A process forked into the group between the move and
     * the write also makes it fail with EBUSY: move again, a few times. */
    int is_root = strcmp(base, mount) == 0;
    int moved = 0;
    /* Only Kiln's own processes are ever moved: a group that also holds a
     * user's shell or another service's processes was not delegated to
     * Kiln, and rearranging it would change the host. */
    long foreign = is_root || is_fake(base) ? 0 : foreign_process(base);
    if (foreign)
        return kiln_error_set(
            err, KILN_E_INTERNAL, "",
            "cgroup v2: %s also holds processes that are not Kiln's (pid %ld), "
            "so Kiln cannot enable memory and pids limits below it; run Kiln in "
            "a cgroup of its own, e.g. `systemd-run --scope -p Delegate=yes "
            "kiln run ...`",
            base, foreign);
    for (int attempt = 0; attempt < 5; attempt++) {
        if (!is_root || attempt > 0) {
            char leaf[CG_PATH_MAX];
            if (path_join(leaf, sizeof leaf, base, CG_LEAF))
                return kiln_error_set(err, KILN_E_INTERNAL, "", "cgroup path too long: %s", base);
            if (mkdir(leaf, 0755) != 0 && errno != EEXIST)
                return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot create %s: %s", leaf,
                                      strerror(errno));
            if (move_procs(base, leaf))
                return kiln_error_set(err, KILN_E_INTERNAL, "",
                                      "cannot move processes from %s/cgroup.procs to %s: %s",
                                      base, leaf, strerror(errno));
            moved = 1;
        }
        /* cpu only adds weights; cpu.stat's usage_usec is there without it,
         * and it cannot be enabled while a realtime process exists. */
        if (cg_write(base, "cgroup.subtree_control", "+memory +pids +cpu", CG_REQUIRED) == 0 ||
            cg_write(base, "cgroup.subtree_control", "+memory +pids", CG_REQUIRED) == 0)
            return KILN_E_OK;
        if (errno != EBUSY)
            break;
    }
    return kiln_error_set(err, KILN_E_INTERNAL, "",
                          "cannot enable memory and pids in %s/cgroup.subtree_control%s: %s",
                          base, moved ? " after moving its processes to " CG_LEAF : "",
                          strerror(errno));
}

static kiln_status limit_error(kiln_cgroup *cg, const char *dir, const char *file,
                               kiln_error *err)
{
    int saved = errno;
    kiln_cgroup_release(cg);
    return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot write %s/%s: %s", dir, file,
                          strerror(saved));
}

/* Groups a killed supervisor could not remove. Kiln names its groups
 * "kiln-PID", "kiln-PID-render-N", "kiln-PID-fonts" and "kiln-PID-session" after the
 * supervisor's pid; when that
 * process is gone, so is the sandbox (its init dies with the supervisor),
 * the group is empty and rmdir succeeds. A live process with a reused pid
 * keeps its namesake; a group still in use refuses rmdir. */
static void sweep_stale(const char *parent)
{
    if (is_fake(parent))
        return;
    DIR *dir = opendir(parent);
    if (!dir)
        return;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (strncmp(de->d_name, "kiln-", 5) != 0 || !isdigit((unsigned char)de->d_name[5]))
            continue;
        char *end;
        long pid = strtol(de->d_name + 5, &end, 10);
        if ((*end != '\0' && strncmp(end, "-render-", 8) != 0 && strcmp(end, "-fonts") != 0 &&
             strcmp(end, "-session") != 0) ||
            pid <= 0 || pid > INT_MAX)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[CG_PATH_MAX];
        if (path_join(path, sizeof path, parent, de->d_name) == 0)
            rmdir(path);
    }
    closedir(dir);
}

static kiln_status create_v2(kiln_cgroup *cg, const char *mount, const char *self,
                             const char *name, const kiln_run_limits *limits, kiln_error *err)
{
    char base[CG_PATH_MAX];
    kiln_status st = base_v2(base, sizeof base, mount, self, err);
    if (st != KILN_E_OK)
        return st;
    if (path_join(cg->v2_path, sizeof cg->v2_path, base, name))
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cgroup path too long: %s/%s", base,
                              name);
    sweep_stale(base);
    if (mkdir(cg->v2_path, 0755) != 0) {
        int saved = errno;
        st = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot create cgroup %s: %s", cg->v2_path,
                            strerror(saved));
        cg->v2_path[0] = '\0';
        return st;
    }
    cg->version = 2;
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)limits->memory_bytes);
    if (cg_write(cg->v2_path, "memory.max", num, CG_REQUIRED))
        return limit_error(cg, cg->v2_path, "memory.max", err);
    /* memory.max counts RAM only: without swap.max = 0 a job could page out
     * past its limit. Absent when the kernel has no swap accounting. */
    if (cg_write(cg->v2_path, "memory.swap.max", "0", CG_OPTIONAL) < 0)
        return limit_error(cg, cg->v2_path, "memory.swap.max", err);
    snprintf(num, sizeof num, "%u", (unsigned)limits->processes);
    if (cg_write(cg->v2_path, "pids.max", num, CG_REQUIRED))
        return limit_error(cg, cg->v2_path, "pids.max", err);
    /* An OOM kills the whole job, not one process of it (4.19+). */
    if (cg_write(cg->v2_path, "memory.oom.group", "1", CG_OPTIONAL) < 0)
        return limit_error(cg, cg->v2_path, "memory.oom.group", err);
    return KILN_E_OK;
}

/* The v1 group NAME in one controller's hierarchy, made. 1: no such
 * hierarchy (err not set); -1: err set. */
static int make_v1(char *out, size_t cap, const char *fs_root, const char *proc_file,
                   const char *controller, const char *name, kiln_error *err)
{
    char self[CG_PATH_MAX], list[256], mount[CG_PATH_MAX], dir[CG_PATH_MAX];
    if (self_group(proc_file, controller, self, sizeof self, list, sizeof list))
        return 1;
    /* Hierarchies mounted together ("cpu,cpuacct") usually have a symlink
     * per controller; use the combined name when there is none. */
    struct stat st;
    if (path_join(mount, sizeof mount, fs_root, controller) || stat(mount, &st) != 0 ||
        !S_ISDIR(st.st_mode)) {
        if (path_join(mount, sizeof mount, fs_root, list) || stat(mount, &st) != 0 ||
            !S_ISDIR(st.st_mode))
            return 1;
    }
    if (path_group(dir, sizeof dir, mount, self) || path_join(out, cap, dir, name)) {
        out[0] = '\0';
        kiln_error_set(err, KILN_E_INTERNAL, "", "cgroup path too long: %s%s/%s", mount, self,
                       name);
        return -1;
    }
    sweep_stale(dir);
    if (mkdir(out, 0755) != 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "", "cannot create cgroup %s: %s", out,
                       strerror(errno));
        out[0] = '\0';
        return -1;
    }
    return 0;
}

static kiln_status create_v1(kiln_cgroup *cg, const char *fs_root, const char *proc_file,
                             const char *name, const kiln_run_limits *limits, kiln_error *err)
{
    static const struct {
        const char *controller;
        size_t offset;
    } parts[] = {
        {"memory", offsetof(kiln_cgroup, v1_memory)},
        {"pids", offsetof(kiln_cgroup, v1_pids)},
        {"cpuacct", offsetof(kiln_cgroup, v1_cpuacct)},
    };
    cg->version = 1;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char *out = (char *)cg + parts[i].offset;
        int rc = make_v1(out, sizeof cg->v1_memory, fs_root, proc_file, parts[i].controller, name,
                         err);
        if (rc == 0)
            continue;
        kiln_cgroup_release(cg);
        if (rc > 0)
            return kiln_error_set(err, KILN_E_INTERNAL, "", "no cgroup %s controller",
                                  parts[i].controller);
        return KILN_E_INTERNAL;
    }
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)limits->memory_bytes);
    /* memory first: memsw may never be below it. */
    if (cg_write(cg->v1_memory, "memory.limit_in_bytes", num, CG_REQUIRED))
        return limit_error(cg, cg->v1_memory, "memory.limit_in_bytes", err);
    /* RAM + swap: absent when swap accounting is off (swapaccount=0). */
    if (cg_write(cg->v1_memory, "memory.memsw.limit_in_bytes", num, CG_OPTIONAL) < 0)
        return limit_error(cg, cg->v1_memory, "memory.memsw.limit_in_bytes", err);
    snprintf(num, sizeof num, "%u", (unsigned)limits->processes);
    if (cg_write(cg->v1_pids, "pids.max", num, CG_REQUIRED))
        return limit_error(cg, cg->v1_pids, "pids.max", err);
    return KILN_E_OK;
}

/* A name is one path component we would be happy to rmdir later. */
static int name_ok(const char *name)
{
    if (!name || !*name || strlen(name) > 64 || !strcmp(name, ".") || !strcmp(name, ".."))
        return 0;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return 0;
    return 1;
}

kiln_status kiln_cgroup_create(kiln_cgroup *cg, const kiln_cgroup_roots *roots, const char *name,
                               const kiln_run_limits *limits, kiln_error *err)
{
    memset(cg, 0, sizeof *cg);
    if (!name_ok(name))
        return kiln_error_set(err, KILN_E_INTERNAL, "", "bad cgroup name \"%s\"",
                              name ? name : "");
    const char *fs_root = roots_fs(roots), *proc_file = roots_self(roots);

    char self[CG_PATH_MAX];
    if (self_group(proc_file, NULL, self, sizeof self, NULL, 0) == 0) {
        static const char *const need[] = {"memory", "pids", NULL};
        char mount[CG_PATH_MAX];
        int have_mount = 0;
        if (is_v2_mount(fs_root)) {
            snprintf(mount, sizeof mount, "%s", fs_root);
            have_mount = 1;
        } else if (path_join(mount, sizeof mount, fs_root, "unified") == 0 &&
                   is_v2_mount(mount)) {
            have_mount = 1;
        }
        /* Usable when the controllers reach our group (or its parent, when
         * we already sit in our own leaf): cgroup.controllers lists what
         * the parent delegates. */
        char own[CG_PATH_MAX], usable_at[CG_PATH_MAX];
        if (have_mount && path_group(own, sizeof own, mount, self) == 0) {
            const char *slash = strrchr(own, '/');
            if (strcmp(own, mount) != 0 && slash && strcmp(slash + 1, CG_LEAF) == 0)
                path_parent(usable_at, sizeof usable_at, own);
            else
                snprintf(usable_at, sizeof usable_at, "%s", own);
            if (has_controllers(usable_at, "cgroup.controllers", need))
                return create_v2(cg, mount, self, name, limits, err);
        }
    }
    return create_v1(cg, fs_root, proc_file, name, limits, err);
}

kiln_status kiln_cgroup_attach(const kiln_cgroup *cg, pid_t pid, kiln_error *err)
{
    char num[32];
    snprintf(num, sizeof num, "%ld", (long)pid);
    const char *dirs[3] = {NULL, NULL, NULL};
    if (cg->version == 2) {
        dirs[0] = cg->v2_path;
    } else if (cg->version == 1) {
        dirs[0] = cg->v1_memory;
        dirs[1] = cg->v1_pids;
        dirs[2] = cg->v1_cpuacct;
    } else {
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cgroup not created");
    }
    for (int i = 0; i < 3 && dirs[i]; i++)
        if (dirs[i][0] && cg_write(dirs[i], "cgroup.procs", num, CG_REQUIRED))
            return kiln_error_set(err, KILN_E_INTERNAL, "",
                                  "cannot add process %ld to %s/cgroup.procs: %s", (long)pid,
                                  dirs[i], strerror(errno));
    return KILN_E_OK;
}

int kiln_cgroup_oom_kills_one(const kiln_cgroup *cg)
{
    if (cg->version != 2 || !cg->v2_path[0])
        return 0; /* v1 kills one task anyway */
    return cg_write(cg->v2_path, "memory.oom.group", "0", CG_OPTIONAL);
}

void kiln_cgroup_read_usage(const kiln_cgroup *cg, kiln_cgroup_usage *usage)
{
    memset(usage, 0, sizeof *usage);
    uint64_t v = 0;
    if (cg->version == 2) {
        if (file_key(cg->v2_path, "cpu.stat", "usage_usec", &v) == 0)
            usage->cpu_usec = v;
        /* memory.peak is 5.19+; older kernels keep no high-water mark. */
        if (file_u64(cg->v2_path, "memory.peak", &v) == 0)
            usage->peak_bytes = v;
        if (file_key(cg->v2_path, "memory.events", "oom_kill", &v) == 0)
            usage->oom_kills = v;
        if (file_key(cg->v2_path, "pids.events", "max", &v) == 0)
            usage->pids_limit_hit = v > 0;
    } else if (cg->version == 1) {
        if (cg->v1_cpuacct[0] && file_u64(cg->v1_cpuacct, "cpuacct.usage", &v) == 0)
            usage->cpu_usec = v / 1000;
        if (file_u64(cg->v1_memory, "memory.max_usage_in_bytes", &v) == 0)
            usage->peak_bytes = v;
        if (file_key(cg->v1_memory, "memory.oom_control", "oom_kill", &v) == 0) {
            usage->oom_kills = v;
        } else if (file_u64(cg->v1_memory, "memory.failcnt", &v) == 0 && v > 0) {
            /* Kernels before 4.13 have no oom_kill count. failcnt counts the
             * times the limit was reached, which ends in reclaim or in an OOM
             * kill; run.c only calls it a memory limit when main also did
             * not exit 0, so "reached the limit" stands in for one kill. */
            usage->oom_kills = 1;
        }
        if (file_key(cg->v1_pids, "pids.events", "max", &v) == 0)
            usage->pids_limit_hit = v > 0;
    }
}

/* SIGKILL every pid in dir/cgroup.procs. Returns how many were listed, -1
 * when the file cannot be read. Never signals in a fake tree. A pid can in
 * principle exit and be reused between the read and the kill; the window is
 * microseconds, and the PID namespace's init dying (pid.c) ends the job
 * anyway, so this is the backstop, not the mechanism. */
static int procs_kill(const char *dir, int do_kill)
{
    char path[CG_PATH_MAX];
    if (path_join(path, sizeof path, dir, "cgroup.procs"))
        return -1;
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long pid;
    int count = 0;
    while (fscanf(f, "%ld", &pid) == 1) {
        count++;
        if (do_kill && pid > 0)
            kill((pid_t)pid, SIGKILL);
    }
    fclose(f);
    return count;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void pause_poll(void)
{
    struct timespec ts = {0, CG_POLL_NS};
    nanosleep(&ts, NULL);
}

void kiln_cgroup_kill_all(const kiln_cgroup *cg)
{
    const char *dir = cg->version == 2 ? cg->v2_path : cg->version == 1 ? cg->v1_pids : NULL;
    if (!dir || !dir[0] || is_fake(dir)) {
        /* A fake tree: cgroup.kill can be written (a test may look), but
         * nothing in it is a process of ours. */
        if (dir && dir[0] && cg->version == 2)
            cg_write(dir, "cgroup.kill", "1", CG_OPTIONAL);
        return;
    }
    /* cgroup.kill (5.14+) kills atomically, forks in flight included. */
    int killed = cg->version == 2 && cg_write(dir, "cgroup.kill", "1", CG_OPTIONAL) == 0;
    long long deadline = now_ns() + CG_WAIT_NS;
    for (;;) {
        /* Without cgroup.kill, a process can fork between our read and our
         * kill: read and kill again until nothing is listed. pids.max bounds
         * how many there can be. */
        int left = procs_kill(dir, !killed);
        if (left <= 0 || now_ns() >= deadline)
            return;
        pause_poll();
    }
}

/* rmdir, waiting for exiting processes (EBUSY) up to the deadline. */
static void remove_group(char *dir, long long deadline)
{
    if (!dir[0])
        return;
    while (rmdir(dir) != 0 && errno == EBUSY && now_ns() < deadline)
        pause_poll();
    dir[0] = '\0';
}

void kiln_cgroup_release(kiln_cgroup *cg)
{
    long long deadline = now_ns() + CG_WAIT_NS;
    remove_group(cg->v2_path, deadline);
    remove_group(cg->v1_memory, deadline);
    remove_group(cg->v1_pids, deadline);
    remove_group(cg->v1_cpuacct, deadline);
    cg->version = 0;
}
