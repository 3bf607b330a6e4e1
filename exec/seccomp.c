/*
 * seccomp.c - the libseccomp allow-list loaded just before the job's code
 * runs (KILN_SECCOMP_CODE: python or bash, and everything they start) or
 * before the writers render untrusted specs in-process (KILN_SECCOMP_RENDER).
 *
 * Three outcomes, chosen per call:
 *   - allowed: the calls the workloads were seen to make under `strace -f -c`
 *     (python3 importing numpy, pandas and matplotlib, saving a PNG, running
 *     a subprocess pipeline, a multiprocessing pool, threads, file copies,
 *     sleeps and a socketpair; bash with coreutils and pipes; the writers for
 *     every format, also built with ASan and UBSan), plus the ordinary POSIX
 *     calls a data-analysis job makes that those runs happened not to (stat
 *     variants, rename, symlink, poll variants, ...). Each group below says
 *     why it is there.
 *   - failing with ENOSYS: everything not listed (the default action). ENOSYS
 *     is what an old kernel answers, so libc and Python take their fallback
 *     paths instead of crashing (clone3 -> clone, statx -> fstatat, ...).
 *   - killing the whole process with SIGSYS: the calls that only an escape or
 *     an attack on the host needs (ptrace, mount, namespaces, keyring, bpf,
 *     perf, userfaultfd, io_uring, modules, kexec, ...). The supervisor reports
 *     a main process killed by SIGSYS as "seccomp_violation", so a job that
 *     tries one is named, not just failed.
 *
 * The lists are tables of names resolved with seccomp_syscall_resolve_name, so
 * a name this libseccomp does not know fails the load loudly (the unit test
 * loads both profiles) instead of silently dropping a rule.
 *
 * Architecture: the filter holds the native x86_64 arch only. A call made
 * through any other ABI (i386 int 0x80, or x32, whose numbers carry bit
 * 0x40000000 under the x86_64 audit arch) meets the bad-arch action,
 * KILL_PROCESS: libseccomp's x86_64 filter sends every number with the x32
 * bit there when x32 is not one of the filter's arches (the unit test checks
 * this with syscall(0x40000000 | __NR_getpid); the i386 path is not tested:
 * the machine the tests were written on faults on int 0x80 before seccomp
 * sees it). Deny-lists were bypassed
 * through x32 numbers elsewhere; an allow-list keyed on exact numbers plus
 * that check leaves no such gap.
 *
 * Arguments the kernel truncates to 32 bits (ioctl's cmd, socket's family)
 * are compared so that junk in the upper half cannot slip past: allow rules
 * match the exact 64-bit value, deny rules mask the lower 32 bits.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

#define KILN_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* clang-format off: each line of a syscall list is one theme */
/* ---- allowed in both profiles ------------------------------------------ */

/* Reading and writing open files, and the file system calls the writers
 * make: kiln_output opens an unnamed O_TMPFILE, fills it, fsyncs it and
 * names it with linkat (renameat to replace an existing file); the PDF
 * writer opens fonts; everyone stats and lists directories. All of these
 * are bounded by the mount namespace (read-only root, size-limited tmpfs). */
static const char *const allow_files[] = {
    "read",     "write",       "readv",      "writev",    "pread64",   "pwrite64",
    "preadv",   "pwritev",     "lseek",      "open",      "openat",    "creat",
    "close",    "close_range", "fstat",      "stat",      "lstat",     "newfstatat",
    "statx",    "fstatfs",     "statfs",     "access",    "faccessat", "faccessat2",
    "readlink", "readlinkat",  "getdents64", "getcwd",    "fcntl",     "dup",
    "dup2",     "dup3",        "flock",      "ftruncate", "truncate",  "fallocate",
    "fsync",    "fdatasync",   "fadvise64",  "link",      "linkat",    "rename",
    "renameat", "renameat2",   "unlink",     "unlinkat",  "mkdir",     "mkdirat",
    "rmdir",    "fchmod",      "umask",
};

/* Memory: malloc, the dynamic loader, and the sanitizer runtimes (ASan maps
 * its shadow with mmap/mprotect and returns memory with madvise). The PDF
 * writer hands libharu its trimmed copy of a font as a memfd
 * (pdf_font_trim.c; without one it embeds the whole font); a memfd is
 * anonymous memory, counted against the cgroup like any other. */
static const char *const allow_memory[] = {
    "brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "msync", "memfd_create",
};

/* Threads, signals and the process's own state. futex, set_robust_list,
 * rseq and set_tid_address are set up by glibc for every process; ASan runs
 * its error reports on an alternate signal stack (sigaltstack) and checks
 * /proc/self/exe and /proc/self/maps; abort() and raise() end in tgkill.
 * kill and tgkill reach only processes in the sandbox's own PID namespace
 * with the same uid. restart_syscall is how the kernel resumes an
 * interrupted sleep. */
static const char *const allow_process[] = {
    "futex",           "set_robust_list", "rseq",
    "set_tid_address", "arch_prctl",      "prctl",
    "rt_sigaction",    "rt_sigprocmask",  "rt_sigreturn",
    "rt_sigsuspend",   "rt_sigpending",   "rt_sigtimedwait",
    "sigaltstack",     "restart_syscall", "kill",
    "tgkill",          "getpid",          "gettid",
    "getppid",         "getuid",          "geteuid",
    "getgid",          "getegid",         "getresuid",
    "getresgid",       "getgroups",       "exit",
    "exit_group",      "sched_yield",     "sched_getaffinity",
    "getrlimit",       "prlimit64",       "getrusage",
};

/* Time, randomness and facts about the machine (uname and sysinfo answer
 * from the sandbox's UTS namespace and cgroup-limited view). */
static const char *const allow_info[] = {
    "clock_gettime",   "clock_getres", "gettimeofday", "time",    "nanosleep",
    "clock_nanosleep", "getrandom",    "uname",        "sysinfo",
};

/* ---- allowed for the job's code only ------------------------------------ */

/* Running programs and managing child processes: bash pipelines, Python's
 * subprocess (vfork-style clone through posix_spawn) and multiprocessing
 * (fork). clone is added separately with its flags checked; clone3 is left
 * to the default ENOSYS (see add_clone_rules). setsid and setpgid let
 * subprocess's start_new_session and bash job control work; the PID
 * namespace and the cgroup bound what they can reach. */
static const char *const allow_code_process[] = {
    "execve",  "execveat", "fork",      "vfork",     "wait4",  "waitid",
    "getpgrp", "getpgid",  "setpgid",   "getsid",    "setsid", "setrlimit",
    "times",   "alarm",    "getitimer", "setitimer", "pause",
};

/* Waiting on several descriptors and the pipes between processes
 * (subprocess, multiprocessing's result pipes, asyncio's event loop). */
static const char *const allow_code_io[] = {
    "pipe",        "pipe2",        "poll",          "ppoll",           "select",
    "pselect6",    "epoll_create", "epoll_create1", "epoll_ctl",       "epoll_wait",
    "epoll_pwait", "eventfd2",     "sendfile",      "copy_file_range",
};

/* More file system calls that scripts use (os.symlink, os.mkfifo,
 * os.utime, shutil.copystat's chmod and xattr reads, cd in bash). A
 * symlink or FIFO the job plants in /mnt/data is refused by the collector;
 * mknod of a device needs CAP_MKNOD, which the job does not have. */
static const char *const allow_code_files[] = {
    "chdir",     "fchdir",    "chmod",     "fchmodat",   "symlink",
    "symlinkat", "mknod",     "mknodat",   "utimensat",  "getxattr",
    "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
};

/* Operations on sockets. Only AF_UNIX sockets can be made (add_socket_rules)
 * and the network namespace is empty, so these reach nothing but other
 * processes of the job (multiprocessing's managers, socketpair). */
static const char *const allow_code_sockets[] = {
    "connect", "bind",    "listen",   "accept",      "accept4",     "sendto",     "recvfrom",
    "sendmsg", "recvmsg", "shutdown", "getsockname", "getpeername", "getsockopt", "setsockopt",
};

/* ---- killed in both profiles -------------------------------------------- */

/* Calls that only an escape or an attack on the host needs: reading or
 * steering other processes (ptrace, process_vm_*, pidfd_getfd, kcmp,
 * process_madvise); changing the file system tree or namespaces (mount and
 * the new mount API, pivot_root, chroot, unshare, setns); the kernel's
 * large attack surfaces (keyring, bpf, perf events, userfaultfd, io_uring);
 * the machine itself (modules, kexec, reboot, swap, clocks, host and domain
 * names, quotas, accounting, the kernel log, I/O ports); and handle-based
 * opens that step around path checks (open_by_handle_at). None of them has
 * a use in a data-analysis job or a writer, so trying one ends the job with
 * SIGSYS ("seccomp_violation") rather than a quiet error. */
static const char *const kill_always[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "process_madvise",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "clock_adjtime",
    "sethostname",
    "setdomainname",
    "quotactl",
    "acct",
    "lookup_dcookie",
    "vhangup",
    "iopl",
    "ioperm",
    "syslog",
    "nfsservctl",
    "uselib",
    "open_by_handle_at",
    "name_to_handle_at",
};

/* RENDER only: the writers run in-process after fork and neither exec nor
 * start a process or thread, so any of these is an exploit at work. Here
 * clone is killed whatever its flags, and clone3 too (no libc fallback is
 * wanted where no process may be made). */
static const char *const kill_render[] = {
    "execve", "execveat", "fork", "vfork", "clone", "clone3",
};

/* ---- building the filter ------------------------------------------------ */
/* clang-format on */

/* Names an unknown system call for *what; set only on that failure. */
static char unknown_name_what[128];

/* Add one unconditional rule per name. 0, or -1 with errno and *what. */
static int add_names(scmp_filter_ctx ctx, uint32_t action, const char *const *names, size_t count,
                     const char **what)
{
    for (size_t i = 0; i < count; i++) {
        int nr = seccomp_syscall_resolve_name(names[i]);
        if (nr == __NR_SCMP_ERROR) {
            snprintf(unknown_name_what, sizeof unknown_name_what,
                     "seccomp: unknown system call \"%s\" in the allow-list", names[i]);
            *what = unknown_name_what;
            errno = EINVAL;
            return -1;
        }
        int rc = seccomp_rule_add_exact(ctx, action, nr, 0);
        if (rc < 0) {
            *what = "seccomp_rule_add (a listed system call)";
            errno = -rc;
            return -1;
        }
    }
    return 0;
}

/* A comparison with every field set (libseccomp's SCMP_Ax macros leave
 * datum_b to the compiler, which -Wmissing-field-initializers rejects).
 * MASKED_EQ: a is the mask, b the value. */
static struct scmp_arg_cmp arg_cmp(unsigned arg, enum scmp_compare op, uint64_t a, uint64_t b)
{
    return (struct scmp_arg_cmp){.arg = arg, .op = op, .datum_a = a, .datum_b = b};
}

/* One conditional rule; same failure convention. */
static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, const char *what_text,
                    unsigned count, const struct scmp_arg_cmp *cmp, const char **what)
{
    int rc = seccomp_rule_add_exact_array(ctx, action, nr, count, cmp);
    if (rc < 0) {
        *what = what_text;
        errno = -rc;
        return -1;
    }
    return 0;
}

/* clone (CODE only): allowed without namespace flags; any CLONE_NEW* bit
 * kills. clone's flags are its first argument, in a register seccomp can
 * read. CLONE_NEWTIME (0x80) is not among them: in clone's flags that bit
 * is part of the exit signal, and the kernel accepts CLONE_NEWTIME only from
 * clone3 and unshare, both refused here. clone3 passes its flags in memory
 * seccomp cannot read, so it stays unlisted: ENOSYS, and glibc falls back to
 * clone (pthread_create and posix_spawn both do). */
static int add_clone_rules(scmp_filter_ctx ctx, const char **what)
{
    static const uint64_t ns_flags[] = {
        CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
        CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
    };
    uint64_t all = 0;
    for (size_t i = 0; i < KILN_COUNT(ns_flags); i++) {
        struct scmp_arg_cmp cmp = arg_cmp(0, SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]);
        if (add_rule(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone),
                     "seccomp_rule_add (clone with a namespace flag)", 1, &cmp, what) != 0)
            return -1;
        all |= ns_flags[i];
    }
    struct scmp_arg_cmp cmp = arg_cmp(0, SCMP_CMP_MASKED_EQ, all, 0);
    return add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), "seccomp_rule_add (clone)", 1, &cmp,
                    what);
}

/* socket and socketpair: AF_UNIX only, in CODE (multiprocessing, asyncio's
 * self-pipe, socket.socketpair, nscd lookups by ls). Any other family fails
 * with EAFNOSUPPORT, as if the kernel had no network stack: programs that
 * probe for IPv6 or netlink take that in their stride. RENDER makes no
 * socket at all. The allow rule compares the full 64-bit argument, so a
 * family with junk in the upper half (which the kernel would truncate to
 * AF_UNIX) is refused rather than let through; that is harmless. */
static int add_socket_rules(scmp_filter_ctx ctx, kiln_seccomp_profile profile, const char **what)
{
    static const int calls[] = {SCMP_SYS(socket), SCMP_SYS(socketpair)};
    for (size_t i = 0; i < KILN_COUNT(calls); i++) {
        if (profile == KILN_SECCOMP_RENDER) {
            if (add_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[i], "seccomp_rule_add (socket)",
                         0, NULL, what) != 0)
                return -1;
            continue;
        }
        struct scmp_arg_cmp unix_only = arg_cmp(0, SCMP_CMP_EQ, AF_UNIX, 0);
        struct scmp_arg_cmp other = arg_cmp(0, SCMP_CMP_NE, AF_UNIX, 0);
        if (add_rule(ctx, SCMP_ACT_ALLOW, calls[i], "seccomp_rule_add (socket AF_UNIX)", 1,
                     &unix_only, what) != 0 ||
            add_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[i],
                     "seccomp_rule_add (socket, other families)", 1, &other, what) != 0)
            return -1;
    }
    return 0;
}

/* ioctl: terminals (isatty's TCGETS, window size), FIONREAD and the like
 * are needed by stdio, Python and bash. TIOCSTI pushes characters into a
 * terminal's input and TIOCLINUX reaches the console: both kill. The kernel
 * reads cmd as 32 bits, so the kill rules mask the lower half.
 *
 * Rules of one call that overlap are tried in the order libseccomp lays them
 * out; for these rules that is the order they are added (seen with
 * seccomp_export_pfc, libseccomp 2.5.4): the kill rules go in first, then
 * one allow rule for "anything but TIOCSTI" (an unconditional allow would
 * replace the conditional rules altogether, and two comparisons of one
 * argument cannot share a rule). The unit test
 * checks TIOCSTI with junk in the upper half and TIOCLINUX, so a libseccomp
 * that orders them differently fails the test rather than the sandbox. */
static int add_ioctl_rules(scmp_filter_ctx ctx, const char **what)
{
    static const uint64_t banned[] = {TIOCSTI, TIOCLINUX};
    for (size_t i = 0; i < KILN_COUNT(banned); i++) {
        struct scmp_arg_cmp cmp = arg_cmp(1, SCMP_CMP_MASKED_EQ, 0xffffffffu, banned[i]);
        if (add_rule(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(ioctl),
                     "seccomp_rule_add (ioctl TIOCSTI, TIOCLINUX)", 1, &cmp, what) != 0)
            return -1;
    }
    struct scmp_arg_cmp rest = arg_cmp(1, SCMP_CMP_NE, TIOCSTI, 0);
    return add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), "seccomp_rule_add (ioctl)", 1, &rest,
                    what);
}

/* personality: glibc, Python and the ASan runtime only read it
 * (0xffffffff) or set the default (PER_LINUX, 0). Any other persona
 * (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE before an exec, ...) would weaken
 * the process's own defences, and kills. Same ordering as ioctl: the two
 * exact allow rules first, then "anything above 0" kills (the unit test
 * checks 0xffffffff passes and READ_IMPLIES_EXEC kills). */
static int add_personality_rules(scmp_filter_ctx ctx, const char **what)
{
    static const uint64_t allowed[] = {0xffffffffu, 0};
    for (size_t i = 0; i < KILN_COUNT(allowed); i++) {
        struct scmp_arg_cmp cmp = arg_cmp(0, SCMP_CMP_EQ, allowed[i], 0);
        if (add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(personality),
                     "seccomp_rule_add (personality query)", 1, &cmp, what) != 0)
            return -1;
    }
    struct scmp_arg_cmp other = arg_cmp(0, SCMP_CMP_GT, 0, 0);
    return add_rule(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(personality),
                    "seccomp_rule_add (personality, other personas)", 1, &other, what);
}

typedef struct kiln_seccomp_table {
    const char *const *names;
    size_t count;
} kiln_seccomp_table;

#define KILN_TABLE(a)      \
    {                      \
        (a), KILN_COUNT(a) \
    }

static const kiln_seccomp_table allowed_both[] = {
    KILN_TABLE(allow_files),
    KILN_TABLE(allow_memory),
    KILN_TABLE(allow_process),
    KILN_TABLE(allow_info),
};
static const kiln_seccomp_table allowed_code[] = {
    KILN_TABLE(allow_code_process),
    KILN_TABLE(allow_code_io),
    KILN_TABLE(allow_code_files),
    KILN_TABLE(allow_code_sockets),
};

static int add_tables(scmp_filter_ctx ctx, uint32_t action, const kiln_seccomp_table *tables,
                      size_t count, const char **what)
{
    for (size_t i = 0; i < count; i++)
        if (add_names(ctx, action, tables[i].names, tables[i].count, what) != 0)
            return -1;
    return 0;
}

static int add_profile(scmp_filter_ctx ctx, kiln_seccomp_profile profile, const char **what)
{
    if (add_tables(ctx, SCMP_ACT_ALLOW, allowed_both, KILN_COUNT(allowed_both), what) != 0 ||
        add_names(ctx, SCMP_ACT_KILL_PROCESS, kill_always, KILN_COUNT(kill_always), what) != 0 ||
        add_ioctl_rules(ctx, what) != 0 || add_personality_rules(ctx, what) != 0 ||
        add_socket_rules(ctx, profile, what) != 0)
        return -1;
    if (profile == KILN_SECCOMP_RENDER)
        return add_names(ctx, SCMP_ACT_KILL_PROCESS, kill_render, KILN_COUNT(kill_render), what);
    if (add_tables(ctx, SCMP_ACT_ALLOW, allowed_code, KILN_COUNT(allowed_code), what) != 0)
        return -1;
    return add_clone_rules(ctx, what);
}

/* The filter for a profile, ready to load or export. NULL with errno and
 * *what on failure. */
static scmp_filter_ctx build_filter(kiln_seccomp_profile profile, const char **what)
{
    /* The tables name x86_64 system calls, and the x32 check below relies on
     * the x86_64 filter: refuse to guess on any other machine. */
    if (seccomp_arch_native() != SCMP_ARCH_X86_64) {
        *what = "seccomp: the allow-list is written for x86_64 only";
        errno = ENOSYS;
        return NULL;
    }
    /* Unlisted calls fail with ENOSYS, so libc and Python fall back. */
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
    if (!ctx) {
        *what = "seccomp_init";
        errno = ENOMEM;
        return NULL;
    }
    int rc;
    /* Another ABI (i386, x32) is an attempt to step around the list. */
    if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0) {
        *what = "seccomp_attr_set (bad-arch action)";
        goto fail_release_ctx;
    }
    /* The filter covers every thread of the process, should there be any. */
    if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) < 0) {
        *what = "seccomp_attr_set (TSYNC)";
        goto fail_release_ctx;
    }
    /* contain() sets no_new_privs itself as a step of its own; the filter
     * must not be the only thing that does. Without it (and without
     * CAP_SYS_ADMIN) the load fails with EACCES, which is what we want. */
    if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0) {
        *what = "seccomp_attr_set (no_new_privs left to the caller)";
        goto fail_release_ctx;
    }
    if (add_profile(ctx, profile, what) != 0) {
        rc = -errno;
        goto fail_release_ctx;
    }
    return ctx;

fail_release_ctx:
    seccomp_release(ctx);
    errno = -rc;
    return NULL;
}

int kiln_seccomp_export(kiln_seccomp_profile profile, int fd, const char **what)
{
    scmp_filter_ctx ctx = build_filter(profile, what);
    if (!ctx)
        return -1;
    int rc = seccomp_export_bpf(ctx, fd);
    seccomp_release(ctx);
    if (rc < 0) {
        *what = "seccomp_export_bpf";
        errno = -rc;
        return -1;
    }
    return 0;
}

/* Far above any filter Kiln builds (about 300 instructions), and the
 * kernel's own limit (BPF_MAXINSNS). */
#define KILN_SECCOMP_MAX_INSNS 4096

int kiln_seccomp_build(kiln_seccomp_profile profile, kiln_seccomp_program *prog,
                       const char **what)
{
    prog->bpf = NULL;
    prog->len = 0;
    /* libseccomp 2.5 exports to a file descriptor only. */
    int fd = memfd_create("kiln-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
        *what = "memfd_create for the seccomp filter";
        return -1;
    }
    int rc = -1;
    if (kiln_seccomp_export(profile, fd, what) < 0)
        goto close_fd;
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size > (off_t)(KILN_SECCOMP_MAX_INSNS * sizeof(struct sock_filter))) {
        *what = "export the seccomp filter";
        errno = E2BIG;
        goto close_fd;
    }
    prog->bpf = malloc((size_t)size);
    if (!prog->bpf || pread(fd, prog->bpf, (size_t)size, 0) != size) {
        *what = "read back the seccomp filter";
        free(prog->bpf);
        prog->bpf = NULL;
        if (errno == 0)
            errno = EIO;
        goto close_fd;
    }
    prog->len = (size_t)size;
    rc = 0;
close_fd:
    close(fd);
    return rc;
}

void kiln_seccomp_program_release(kiln_seccomp_program *prog)
{
    free(prog->bpf);
    prog->bpf = NULL;
    prog->len = 0;
}

int kiln_seccomp_install(int fd, const char **what)
{
    static struct sock_filter insns[KILN_SECCOMP_MAX_INSNS];
    size_t got = 0, cap = sizeof insns;
    for (;;) {
        ssize_t n = read(fd, (char *)insns + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *what = "read the seccomp filter";
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
        if (got == cap) {
            *what = "read the seccomp filter (too long)";
            errno = E2BIG;
            return -1;
        }
    }
    /* An empty or torn program means the supervisor could not build the
     * filter: no filter is no sandbox, so this is a setup failure. */
    if (got == 0 || got % sizeof insns[0] != 0) {
        *what = "receive the seccomp filter";
        errno = EPROTO;
        return -1;
    }
    struct sock_fprog prog = {.len = (unsigned short)(got / sizeof insns[0]), .filter = insns};
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
        *what = "install the seccomp filter";
        return -1;
    }
    return 0;
}
