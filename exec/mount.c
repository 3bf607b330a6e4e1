/*
 * mount.c - the mount namespace: a root that holds what the interpreters
 * need and nothing else, almost all of it read-only.
 *
 * The root is a small tmpfs. Into it go read-only binds of the parts of
 * /usr the interpreters use (and the top-level /lib, /bin ... as the host
 * has them: symlinks into /usr on a merged-/usr Debian, real directories
 * elsewhere), a handful of /etc files the interpreters read, a fresh /proc
 * for the job's PID namespace with its host-describing entries masked, a
 * /dev of five device nodes, size-limited tmpfs /tmp and /dev/shm, the job
 * directory at /mnt/data, and the host paths `kiln run --ro-bind` names.
 * There is no /sys. After pivot_root the host's tree is detached and the
 * root itself is remounted read-only.
 *
 * The sandbox's mount namespace belongs to its user namespace, so every
 * mount copied from the host is "locked": its nosuid/nodev/noexec/atime
 * flags cannot be cleared, only added to. remount_ro() reads them back with
 * statvfs and keeps them, else the kernel answers EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/dirs.h"
#include "exec/exec_internal.h"
#include "../common/banned.h"

/* Where the new root is built. Any directory would do since the mount is
 * private to the sandbox; /tmp exists everywhere. The job directory lives
 * under the host's /tmp, so it is opened before this mount hides it. */
#define NEWROOT "/tmp"

/* Top-level names that are symlinks into /usr on merged-/usr systems and
 * directories elsewhere: mirrored as the host has them. */
static const char *const top_level[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};

/* What of the host's /usr the sandbox sees: the programs, libraries and
 * data the interpreters use, each mirrored as the host has it. /usr itself
 * is a directory of the root, so whatever else a host keeps there never
 * shows, whatever its name: /usr/local (tools installed by hand, their
 * configuration, pip's packages), /usr/src, /usr/include, /usr/etc. A list
 * of what to show fails closed where masking the known names would miss
 * the next one; `--ro-bind /usr/local` adds it back when asked. */
static const char *const usr_binds[] = {"bin",   "sbin",   "lib",     "lib32",
                                        "lib64", "libx32", "libexec", "share"};

/* /proc entries that describe the host rather than the job, masked the way
 * container runtimes mask them (runc's maskedPaths, plus the hardware and
 * boot details): a file gets /dev/null bound over it and reads as empty, a
 * directory an empty read-only tmpfs. What programs size themselves by
 * (meminfo, cpuinfo, stat, uptime, loadavg) stays. */
/* clang-format off: the last line is the directories masked with a tmpfs */
static const char *const proc_masked[] = {
    "kcore",       "kallsyms",      "keys",      "key-users", "timer_list",  "timer_stats",
    "sched_debug", "latency_stats", "config.gz", "iomem",     "ioports",     "partitions",
    "swaps",       "diskstats",     "modules",   "cmdline",   "vmallocinfo", "slabinfo",
    "acpi",        "asound",        "bus",       "driver",    "fs",          "irq",
    "scsi",
};
/* clang-format on */

/* /proc entries bound read-only over themselves (runc's readonlyPaths): the
 * job's uid cannot write them anyway; this holds whatever their modes. */
static const char *const proc_read_only[] = {"sys", "sysrq-trigger"};

/* /etc entries the interpreters read, bound read-only when the host has
 * them. Why each: the dynamic linker's cache and config; numpy's BLAS is a
 * symlink through /etc/alternatives; fontconfig (matplotlib) reads
 * /etc/fonts; matplotlib its matplotlibrc; Python's mimetypes mime.types;
 * time zones; bash's startup files and terminal database. */
static const char *const etc_binds[] = {
    "ld.so.cache", "ld.so.conf",    "ld.so.conf.d", "alternatives", "fonts",      "matplotlibrc",
    "mime.types",  "localtime",     "timezone",     "python3",      "python3.11", "bash.bashrc",
    "inputrc",     "nsswitch.conf", "protocols",    "services",     "terminfo",
};

/* Files written into the root's /etc: the job's identity, not the host's. */
static const char etc_passwd[] = "root:x:0:0:root:/:/usr/sbin/nologin\n"
                                 "kiln:x:1000:1000:Kiln job:/tmp:/bin/bash\n"
                                 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char etc_group[] = "root:x:0:\nkiln:x:1000:\nnogroup:x:65534:\n";
static const char etc_hosts[] = "127.0.0.1\tlocalhost " KILN_SANDBOX_HOSTNAME "\n"
                                "::1\tlocalhost ip6-localhost\n";
static const char etc_hostname[] = KILN_SANDBOX_HOSTNAME "\n";

/* Device nodes bound from the host's /dev: mknod is not possible in a user
 * namespace, and these five are harmless. */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

static int fail(const char **what, const char *step)
{
    *what = step;
    return -1;
}

/* mkdir -p below NEWROOT (path is absolute inside the new root). */
static int make_dirs(const char *path, mode_t mode)
{
    char buf[PATH_MAX + 8];
    int n = snprintf(buf, sizeof buf, "%s%s", NEWROOT, path);
    if (n < 0 || (size_t)n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return kiln_mkdir_p(buf, 0755, mode);
}

static int write_file(const char *path, const char *data, size_t len, mode_t mode)
{
    char buf[PATH_MAX + 8];
    int n = snprintf(buf, sizeof buf, "%s%s", NEWROOT, path);
    if (n < 0 || (size_t)n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* Parent directories first, so blobs can name any path. */
    char *slash = strrchr(buf, '/');
    if (slash && slash != buf) {
        *slash = '\0';
        if (make_dirs(buf + strlen(NEWROOT), 0755) < 0)
            return -1;
        *slash = '/';
    }
    int fd = open(buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    if (fchmod(fd, mode) < 0) { /* the umask must not decide */
        close(fd);
        return -1;
    }
    return close(fd);
}

/* Re-apply a bind mount's flags read-only, keeping the flags the kernel
 * locked when the mount was copied into this namespace. */
/* chown a written file and its directory to the job's uid (KILN_SANDBOX_GID
 * as group), before the job drops to it. */
static int give_to_job(const char *path_in_root, uid_t owner)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s%s", NEWROOT, path_in_root);
    if (lchown(buf, owner, KILN_SANDBOX_GID) < 0)
        return -1;
    char *slash = strrchr(buf, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    return lchown(buf, owner, KILN_SANDBOX_GID);
}

static int remount_ro(const char *target, unsigned long extra)
{
    struct statvfs sv;
    if (statvfs(target, &sv) < 0)
        return -1;
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | extra;
    if (sv.f_flag & ST_NOSUID)
        flags |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV)
        flags |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC)
        flags |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME)
        flags |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME)
        flags |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME)
        flags |= MS_RELATIME;
    return mount(NULL, target, NULL, flags, NULL);
}

/* Make the mount at target and every mount below it read-only, nosuid,
 * plus `extra` (MS_NODEV, MS_NOEXEC): a recursive bind copies the host's
 * submounts, and a remount would change only the top one. Flags the kernel
 * locked are only ever added to, never cleared. */
static int make_tree_ro(const char *target, unsigned long extra)
{
    struct mount_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
    if (extra & MS_NODEV)
        attr.attr_set |= MOUNT_ATTR_NODEV;
    if (extra & MS_NOEXEC)
        attr.attr_set |= MOUNT_ATTR_NOEXEC;
    return mount_setattr(AT_FDCWD, target, AT_RECURSIVE, &attr, sizeof attr);
}

/* Bind host path `source` at `target` (inside the new root), read-only.
 * The target is created as a file or directory to match the source. */
static int bind_ro(const char *source, const char *target_in_root, unsigned long extra)
{
    struct stat st;
    if (stat(source, &st) < 0)
        return -1;
    char target[512];
    snprintf(target, sizeof target, "%s%s", NEWROOT, target_in_root);
    if (S_ISDIR(st.st_mode)) {
        if (make_dirs(target_in_root, 0755) < 0)
            return -1;
    } else if (write_file(target_in_root, "", 0, 0644) < 0) {
        return -1;
    }
    if (mount(source, target, NULL, MS_BIND | MS_REC, NULL) < 0)
        return -1;
    return make_tree_ro(target, extra);
}

/* Mirror host path `host` at the same place in the root: a symlink as a
 * symlink, a directory as a read-only bind; nothing when the host has
 * neither. */
static int mirror(const char *host, const char **what)
{
    char target[PATH_MAX], link[PATH_MAX];
    struct stat st;
    if (lstat(host, &st) < 0)
        return 0;
    if (S_ISLNK(st.st_mode)) {
        ssize_t n = readlink(host, link, sizeof link - 1);
        if (n < 0)
            return fail(what, "read a symlink of /usr or the top level");
        link[n] = '\0';
        snprintf(target, sizeof target, "%s%s", NEWROOT, host);
        if (symlink(link, target) < 0)
            return fail(what, "mirror a symlink of /usr or the top level");
    } else if (S_ISDIR(st.st_mode) && bind_ro(host, host, MS_NODEV) < 0) {
        return fail(what, "bind a directory of /usr or the top level");
    }
    return 0;
}

static int mount_tmpfs(const char *target_in_root, uint64_t bytes, const char *mode,
                       unsigned long flags)
{
    char target[512], opts[96];
    snprintf(target, sizeof target, "%s%s", NEWROOT, target_in_root);
    if (make_dirs(target_in_root, 0755) < 0)
        return -1;
    snprintf(opts, sizeof opts, "size=%llu,mode=%s", (unsigned long long)bytes, mode);
    return mount("tmpfs", target, "tmpfs", flags, opts);
}

static int mask_proc(const char **what)
{
    char target[128];
    for (size_t i = 0; i < sizeof proc_masked / sizeof proc_masked[0]; i++) {
        snprintf(target, sizeof target, "%s/proc/%s", NEWROOT, proc_masked[i]);
        struct stat st;
        if (lstat(target, &st) < 0) {
            if (errno == ENOENT)
                continue; /* not in this kernel */
            return fail(what, "look at a /proc entry to mask");
        }
        if (S_ISDIR(st.st_mode)) {
            if (mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "size=4k,mode=0555") < 0)
                return fail(what, "mask a /proc directory");
        } else if (S_ISREG(st.st_mode)) {
            if (mount("/dev/null", target, NULL, MS_BIND, NULL) < 0 ||
                remount_ro(target, MS_NOSUID | MS_NOEXEC) < 0)
                return fail(what, "mask a /proc file");
        }
        /* A symlink (device-tree, on some machines) points into /sys,
         * which the sandbox does not have. */
    }
    for (size_t i = 0; i < sizeof proc_read_only / sizeof proc_read_only[0]; i++) {
        snprintf(target, sizeof target, "%s/proc/%s", NEWROOT, proc_read_only[i]);
        if (access(target, F_OK) < 0)
            continue;
        if (mount(target, target, NULL, MS_BIND | MS_REC, NULL) < 0 ||
            make_tree_ro(target, MS_NODEV | MS_NOEXEC) < 0)
            return fail(what, "make a /proc entry read-only");
    }
    return 0;
}

/*
 * The host paths `kiln run --ro-bind` names, each at the same path in the
 * root, read-only, nosuid, nodev, with what is mounted below it. The
 * supervisor checked each is absolute, canonical (no symlink in it), a
 * directory or regular file, and clear of the sandbox's own parts
 * (run.c). open_host_paths opens them again without following any
 * symlink, so one swapped in since is refused rather than followed, and
 * before the new root covers the host's /tmp; bind_host_paths binds each
 * by its descriptor, shorter paths first so a parent never hides a child.
 */
typedef struct host_paths {
    const char *path[KILN_RUN_RO_BINDS_MAX];
    int fd[KILN_RUN_RO_BINDS_MAX];
    size_t count;
} host_paths;

static void host_paths_close(host_paths *hp)
{
    for (size_t i = 0; i < hp->count; i++)
        if (hp->fd[i] >= 0)
            close(hp->fd[i]);
    hp->count = 0;
}

static int by_length(const void *a, const void *b)
{
    size_t x = strlen(*(const char *const *)a), y = strlen(*(const char *const *)b);
    return x < y ? -1 : x > y;
}

static int open_host_paths(const kiln_mount_plan *plan, host_paths *hp, const char **what)
{
    hp->count = 0;
    if (plan->ro_bind_count > KILN_RUN_RO_BINDS_MAX) {
        errno = E2BIG;
        return fail(what, "open the --ro-bind paths");
    }
    if (plan->ro_bind_count == 0)
        return 0; /* (and no memcpy from a NULL list) */
    memcpy(hp->path, plan->ro_binds, plan->ro_bind_count * sizeof hp->path[0]);
    qsort(hp->path, plan->ro_bind_count, sizeof hp->path[0], by_length);
    for (size_t i = 0; i < plan->ro_bind_count; i++) {
        struct open_how how;
        memset(&how, 0, sizeof how);
        how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
        how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
        hp->fd[i] = (int)syscall(SYS_openat2, AT_FDCWD, hp->path[i], &how, sizeof how);
        hp->count = i + 1;
        struct stat st;
        if (hp->fd[i] < 0 || fstat(hp->fd[i], &st) < 0)
            return fail(what, "open a --ro-bind path");
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            errno = EINVAL;
            return fail(what, "open a --ro-bind path");
        }
    }
    return 0;
}

static int bind_host_paths(const host_paths *hp, const char **what)
{
    for (size_t i = 0; i < hp->count; i++) {
        char source[64], target[PATH_MAX + 8];
        struct stat st, there;
        if (fstat(hp->fd[i], &st) < 0)
            return fail(what, "bind a --ro-bind path");
        snprintf(source, sizeof source, "/proc/self/fd/%d", hp->fd[i]);
        snprintf(target, sizeof target, "%s%s", NEWROOT, hp->path[i]);
        /* Made in the root's tmpfs (or the sandbox's /tmp) unless already
         * visible, inside a read-only bind where it could not be made. */
        if (lstat(target, &there) < 0 &&
            (S_ISDIR(st.st_mode) ? make_dirs(hp->path[i], 0755)
                                 : write_file(hp->path[i], "", 0, 0644)) < 0)
            return fail(what, "make the mount point of a --ro-bind path");
        if (mount(source, target, NULL, MS_BIND | MS_REC, NULL) < 0 ||
            make_tree_ro(target, MS_NODEV) < 0)
            return fail(what, "bind a --ro-bind path");
    }
    return 0;
}

static int build_etc(const char **what)
{
    char source[128], target[128];
    for (size_t i = 0; i < sizeof etc_binds / sizeof etc_binds[0]; i++) {
        snprintf(source, sizeof source, "/etc/%s", etc_binds[i]);
        if (access(source, F_OK) < 0)
            continue;
        snprintf(target, sizeof target, "/etc/%s", etc_binds[i]);
        if (bind_ro(source, target, MS_NODEV) < 0)
            return fail(what, "bind a file of /etc");
    }
    if (write_file("/etc/passwd", etc_passwd, sizeof etc_passwd - 1, 0644) < 0 ||
        write_file("/etc/group", etc_group, sizeof etc_group - 1, 0644) < 0 ||
        write_file("/etc/hosts", etc_hosts, sizeof etc_hosts - 1, 0644) < 0 ||
        write_file("/etc/hostname", etc_hostname, sizeof etc_hostname - 1, 0644) < 0)
        return fail(what, "write /etc");
    return 0;
}

static int build_dev(const kiln_mount_plan *plan, const char **what)
{
    char source[64], target[64];
    if (mount_tmpfs("/dev", 64 * 1024, "0755", MS_NOSUID | MS_NOEXEC) < 0)
        return fail(what, "mount /dev");
    for (size_t i = 0; i < sizeof dev_nodes / sizeof dev_nodes[0]; i++) {
        snprintf(source, sizeof source, "/dev/%s", dev_nodes[i]);
        snprintf(target, sizeof target, "%s/dev/%s", NEWROOT, dev_nodes[i]);
        if (write_file(target + strlen(NEWROOT), "", 0, 0666) < 0)
            return fail(what, "create a /dev node");
        if (mount(source, target, NULL, MS_BIND, NULL) < 0)
            return fail(what, "bind a /dev node");
        if (remount_ro(target, MS_NOSUID | MS_NOEXEC) < 0 &&
            mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC, NULL) < 0)
            return fail(what, "restrict a /dev node");
    }
    static const char *const links[][2] = {
        {"/proc/self/fd", "/dev/fd"},
        {"/proc/self/fd/0", "/dev/stdin"},
        {"/proc/self/fd/1", "/dev/stdout"},
        {"/proc/self/fd/2", "/dev/stderr"},
    };
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(target, sizeof target, "%s%s", NEWROOT, links[i][1]);
        if (symlink(links[i][0], target) < 0)
            return fail(what, "link /dev/fd");
    }
    /* Python's multiprocessing needs POSIX semaphores, which live here. */
    if (mount_tmpfs("/dev/shm", plan->tmp_bytes, "1777", MS_NOSUID | MS_NODEV | MS_NOEXEC) < 0)
        return fail(what, "mount /dev/shm");
    return 0;
}

int kiln_mount_root(const kiln_mount_plan *plan, const char **what)
{
    /* Nothing done from here on may propagate back to the host. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return fail(what, "make the mount tree private");

    int job_fd = open(plan->job_dir_host, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (job_fd < 0)
        return fail(what, "open the job directory");
    host_paths hp;
    if (open_host_paths(plan, &hp, what) < 0)
        goto close_host_paths;

    /* The root holds directories, a few /etc files and the blobs (the
     * program, up to 16 MiB, the helper module, the font list): sized to
     * fit them, read-only once they are written. */
    uint64_t root_bytes = 4u << 20;
    for (size_t i = 0; i < plan->file_count; i++)
        root_bytes += plan->files[i].len + 4096;
    char root_opts[64];
    snprintf(root_opts, sizeof root_opts, "size=%llu,mode=0755", (unsigned long long)root_bytes);
    if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, root_opts) < 0)
        goto close_host_paths_fail_root;

    /* The parts of /usr the interpreters use, and the top level, mirrored
     * from the host. */
    if (make_dirs("/usr", 0755) < 0) {
        *what = "make /usr";
        goto close_host_paths;
    }
    for (size_t i = 0; i < sizeof usr_binds / sizeof usr_binds[0]; i++) {
        char host[64];
        snprintf(host, sizeof host, "/usr/%s", usr_binds[i]);
        if (mirror(host, what) < 0)
            goto close_host_paths;
    }
    for (size_t i = 0; i < sizeof top_level / sizeof top_level[0]; i++) {
        char host[64];
        snprintf(host, sizeof host, "/%s", top_level[i]);
        if (mirror(host, what) < 0)
            goto close_host_paths;
    }
    if (build_etc(what) < 0)
        goto close_host_paths;

    /* A /proc of the job's own PID namespace: it shows the job's processes
     * only. */
    if (make_dirs("/proc", 0555) < 0 ||
        mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
        *what = "mount /proc";
        goto close_host_paths;
    }
    if (mask_proc(what) < 0)
        goto close_host_paths;
    if (build_dev(plan, what) < 0)
        goto close_host_paths;
    if (mount_tmpfs("/tmp", plan->tmp_bytes, "1777", MS_NOSUID | MS_NODEV) < 0) {
        *what = "mount /tmp";
        goto close_host_paths;
    }

    /* The job directory, read-write. */
    char job_source[64];
    snprintf(job_source, sizeof job_source, "/proc/self/fd/%d", job_fd);
    if (make_dirs(KILN_JOB_DIR, 0755) < 0 ||
        mount(job_source, NEWROOT KILN_JOB_DIR, NULL, MS_BIND, NULL) < 0 ||
        mount(NULL, NEWROOT KILN_JOB_DIR, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV,
              NULL) < 0) {
        *what = "bind the job directory";
        goto close_host_paths;
    }
    close(job_fd);
    job_fd = -1;

    for (size_t i = 0; i < plan->file_count; i++) {
        const kiln_file_blob *f = &plan->files[i];
        if (write_file(f->path, f->data, f->len, f->mode) < 0)
            return fail(what, "write the job's program and libraries");
        if (f->job_owned && give_to_job(f->path, plan->job_dir_owner) < 0)
            return fail(what, "hand a cache file to the job");
    }
    if (bind_host_paths(&hp, what) < 0)
        goto close_host_paths;
    host_paths_close(&hp);

    /* Swap roots: the host's tree ends up stacked under the new root and is
     * detached at once, so nothing of it stays reachable. */
    if (chdir(NEWROOT) < 0)
        return fail(what, "enter the new root");
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        return fail(what, "pivot_root");
    if (umount2(".", MNT_DETACH) < 0)
        return fail(what, "detach the host's root");
    if (chdir("/") < 0)
        return fail(what, "enter /");
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
        return fail(what, "make the root read-only");
    return 0;

close_host_paths_fail_root:
    *what = "mount the new root";
close_host_paths:
    host_paths_close(&hp);
    if (job_fd >= 0)
        close(job_fd);
    return -1;
}
