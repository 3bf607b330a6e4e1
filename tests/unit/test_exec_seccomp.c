/* test_exec_seccomp.c - the seccomp allow-list (exec/seccomp.c).
 *
 * Every case forks a child that sets no_new_privs (as contain() does),
 * loads a profile and then makes the call under test; the parent checks the
 * child's wait status. A child reports an errno as its exit status (0: the
 * call succeeded), so "the filter refused it" and "the filter let it
 * through" are different outcomes and every case can fail. The child exits
 * with SETUP_FAILED when the filter could not be loaded.
 *
 * Children end with _exit(), never exit(): under `make asan` LeakSanitizer
 * runs its leak check from an atexit handler, and that check stops the world
 * with clone + ptrace, both of which the filter kills. _exit() skips atexit
 * handlers, so a filtered child never starts LSan.
 *
 * The attacks are harmless even if the filter fails: ptrace only of the
 * child's own child, a mount on a directory the test made (and unmounted
 * afterwards), namespaces the child leaves at once, TIOCSTI on /dev/null
 * (not a terminal), queries and invalid arguments for keyctl, bpf, perf,
 * userfaultfd and io_uring.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "artifacts/render.h"
#include "artifacts/spec/spec.h"
#include "exec/exec_internal.h"
#include "common/banned.h"

enum { SETUP_FAILED = 254 };

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return test_dir_make(dir, sizeof dir, "seccomp");
}

static int teardown(void **state)
{
    (void)state;
    return test_dir_remove(dir);
}

/* Fork; the child installs `profile` the way the sandbox does (the parent
 * builds the BPF program and sends it over a pipe: kiln_seccomp_export /
 * kiln_seccomp_install) and exits with body()'s value. Returns the child's
 * wait status. */
static int run_filtered(kiln_seccomp_profile profile, int (*body)(void))
{
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* cmocka catches these to fail a test; in the child that would
         * resume the test runner in a second process. Die of them instead. */
        static const int crash[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++)
            signal(crash[i], SIG_DFL);
        close(pipefd[1]);
        const char *what = "?";
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            kiln_seccomp_install(pipefd[0], &what) != 0) {
            fprintf(stderr, "seccomp install failed: %s: %s\n", what, strerror(errno));
            _exit(SETUP_FAILED);
        }
        close(pipefd[0]);
        _exit(body());
    }
    close(pipefd[0]);
    const char *what = "?";
    int exported = kiln_seccomp_export(profile, pipefd[1], &what);
    close(pipefd[1]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(exported, 0);
    return status;
}

/* A sandbox whose supervisor could not build the filter reads an empty
 * program: installing it must fail, never leave the job unfiltered. */
static void test_install_refuses_empty_program(void **state)
{
    (void)state;
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    close(pipefd[1]);
    const char *what = NULL;
    assert_int_equal(kiln_seccomp_install(pipefd[0], &what), -1);
    assert_int_equal(errno, EPROTO);
    assert_non_null(what);
    close(pipefd[0]);
    /* A torn program (not a whole number of instructions) too. */
    assert_int_equal(pipe(pipefd), 0);
    assert_int_equal(write(pipefd[1], "abc", 3), 3);
    close(pipefd[1]);
    assert_int_equal(kiln_seccomp_install(pipefd[0], &what), -1);
    assert_int_equal(errno, EPROTO);
    close(pipefd[0]);
}

/* The call's errno (0 on success) as the child's exit status. */
static int errno_of(long rc)
{
    return rc < 0 ? errno : 0;
}

static void assert_exit(int status, int code)
{
    if (!WIFEXITED(status) || WEXITSTATUS(status) != code)
        fprintf(stderr, "  child: %s %d, expected exit %d\n",
                WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), code);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), code);
}

static void assert_sigsys(int status)
{
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSYS)
        fprintf(stderr, "  child: %s %d, expected SIGSYS\n",
                WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGSYS);
}

/* ---- loading ------------------------------------------------------------ */

static int body_nothing(void)
{
    return 0;
}

/* Both profiles load: every name in the tables resolves (an unknown one
 * fails the load with its name on stderr) and every rule is accepted. */
static void test_profiles_load(void **state)
{
    (void)state;
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_nothing), 0);
    assert_exit(run_filtered(KILN_SECCOMP_RENDER, body_nothing), 0);
}

/* ---- workloads that must keep working (CODE) ---------------------------- */

static const char python_job[] =
    "import numpy, pandas, matplotlib\n"
    "matplotlib.use('Agg')\n"
    "import matplotlib.pyplot as plt\n"
    "import multiprocessing, os, shutil, socket, subprocess, sys, threading, time\n"
    "d = sys.argv[1]\n"
    "df = pandas.DataFrame({'k': [1, 2, 1, 2], 'v': [1.0, 2.0, 3.0, 4.0]})\n"
    "assert df.groupby('k')['v'].sum().to_dict() == {1: 4.0, 2: 6.0}\n"
    "fig, ax = plt.subplots(); ax.plot([1, 3, 2]); fig.savefig(os.path.join(d, 'f.png'))\n"
    "assert os.path.getsize(os.path.join(d, 'f.png')) > 1000\n"
    "r = subprocess.run(['bash', '-c', 'echo hi | wc -c'], capture_output=True, text=True)\n"
    "assert r.stdout.strip() == '3', r\n"
    "def sq(x): return x * x\n"
    "if __name__ == '__main__':\n"
    "    with multiprocessing.Pool(2) as p:\n"
    "        assert p.map(sq, [1, 2, 3]) == [1, 4, 9]\n"
    "    out = []\n"
    "    ts = [threading.Thread(target=out.append, args=(i,)) for i in range(4)]\n"
    "    [t.start() for t in ts]; [t.join() for t in ts]\n"
    "    assert sorted(out) == [0, 1, 2, 3]\n"
    "    with open(os.path.join(d, 'x.txt'), 'w') as f: f.write('x')\n"
    "    shutil.copy(os.path.join(d, 'x.txt'), os.path.join(d, 'y.txt'))\n"
    "    assert sorted(os.listdir(d)) == ['f.png', 'x.txt', 'y.txt']\n"
    "    time.sleep(0.01)\n"
    "    a, b = socket.socketpair(); a.send(b'z'); assert b.recv(1) == b'z'\n"
    "    print('python ok')\n";

static char job_dir[300];

static int body_python(void)
{
    execl("/usr/bin/python3", "python3", "-c", python_job, job_dir, (char *)NULL);
    return 127;
}

/* Python with numpy, pandas and matplotlib (a groupby, a PNG), a
 * subprocess pipeline, a process pool, threads (pthread_create's clone3
 * gets ENOSYS and glibc falls back to clone), file copies, a sleep and a
 * socketpair, all under the CODE filter. */
static void test_code_python_workload(void **state)
{
    (void)state;
    snprintf(job_dir, sizeof job_dir, "%s/py", dir);
    assert_int_equal(mkdir(job_dir, 0700), 0);
    setenv("MPLCONFIGDIR", dir, 1);
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_python), 0);
}

static const char bash_job[] = "set -e\n"
                               "d=$1\n"
                               "printf 'b 2\\na 1\\nc 3\\n' > $d/in.txt\n"
                               "ls -la $d > /dev/null\n"
                               "cat $d/in.txt | sort | awk '{s+=$2} END {print s}' > $d/sum\n"
                               "grep -q '^6$' $d/sum\n"
                               "test \"$(sort $d/in.txt | head -n1)\" = 'a 1'\n"
                               "sed -n 's/a/A/p' $d/in.txt | grep -q '^A 1$'\n"
                               "test \"$(echo hi | wc -c)\" = 3\n"
                               "cp $d/in.txt $d/c.txt; mv $d/c.txt $d/e.txt; rm $d/e.txt\n"
                               "sleep 0.01\n"
                               "(echo sub) | cat > /dev/null\n"
                               "echo bash ok\n";

static int body_bash(void)
{
    execl("/bin/bash", "bash", "-c", bash_job, "bash", job_dir, (char *)NULL);
    return 127;
}

/* bash with coreutils, awk, sed, grep, pipes and a subshell. */
static void test_code_bash_workload(void **state)
{
    (void)state;
    snprintf(job_dir, sizeof job_dir, "%s/sh", dir);
    assert_int_equal(mkdir(job_dir, 0700), 0);
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_bash), 0);
}

static int body_fork(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0)
        _exit(7);
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return errno;
    return WIFEXITED(status) && WEXITSTATUS(status) == 7 ? 0 : 99;
}

/* fork() (glibc: clone without namespace flags) works under CODE. */
static void test_code_fork_allowed(void **state)
{
    (void)state;
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_fork), 0);
}

static void *thread_main(void *arg)
{
    return arg;
}

static int body_thread(void)
{
    pthread_t t;
    int rc = pthread_create(&t, NULL, thread_main, (void *)0x5);
    if (rc != 0)
        return rc;
    void *ret = NULL;
    if (pthread_join(t, &ret) != 0)
        return 98;
    return ret == (void *)0x5 ? 0 : 99;
}

/* A thread starts: clone3 fails with ENOSYS and glibc falls back to clone
 * with CLONE_THREAD etc., which the flag check lets through. */
static void test_code_thread_allowed(void **state)
{
    (void)state;
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_thread), 0);
}

static int body_unix_socket(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        return errno;
    close(fd);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return errno;
    char c = 0;
    if (write(sv[0], "q", 1) != 1 || read(sv[1], &c, 1) != 1 || c != 'q')
        return 99;
    return 0;
}

/* AF_UNIX sockets and socketpairs work under CODE. */
static void test_code_unix_socket_allowed(void **state)
{
    (void)state;
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_unix_socket), 0);
}

static int body_personality_query(void)
{
    return personality(0xffffffff) < 0 ? errno : 0;
}

/* personality(0xffffffff), the query glibc and ASan make, is allowed. */
static void test_personality_query_allowed(void **state)
{
    (void)state;
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_personality_query), 0);
    assert_exit(run_filtered(KILN_SECCOMP_RENDER, body_personality_query), 0);
}

/* ---- refused with an errno ---------------------------------------------- */

static int body_clone3(void)
{
    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.exit_signal = SIGCHLD;
    long rc = syscall(SYS_clone3, &args, sizeof args);
    if (rc == 0)
        _exit(0); /* the filter failed: the new child leaves at once */
    if (rc > 0) {
        waitpid((pid_t)rc, NULL, 0);
        return 0;
    }
    return errno;
}

/* clone3 fails with ENOSYS (without the filter it makes a child). */
static void test_clone3_enosys(void **state)
{
    (void)state;
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_clone3), ENOSYS);
}

static int body_socket_inet(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    return fd >= 0 ? (close(fd), 0) : errno;
}

static int body_socket_inet6_dgram(void)
{
    int fd = socket(AF_INET6, SOCK_DGRAM, 0);
    return fd >= 0 ? (close(fd), 0) : errno;
}

static int body_socket_netlink(void)
{
    int fd = socket(AF_NETLINK, SOCK_RAW, 0);
    return fd >= 0 ? (close(fd), 0) : errno;
}

static int body_socket_packet(void)
{
    int fd = socket(AF_PACKET, SOCK_RAW, 0);
    return fd >= 0 ? (close(fd), 0) : errno;
}

static int body_socketpair_inet(void)
{
    int sv[2];
    /* AF_INET socketpair is EOPNOTSUPP in the kernel: the filter's answer
     * must come first. */
    return socketpair(AF_INET, SOCK_STREAM, 0, sv) == 0 ? 0 : errno;
}

static int body_socket_unix_high_bits(void)
{
    /* AF_UNIX with junk in the upper half (the kernel truncates the int):
     * the exact comparison refuses it. */
    long fd = syscall(SYS_socket, (1ul << 32) | AF_UNIX, SOCK_STREAM, 0);
    return fd >= 0 ? (close((int)fd), 0) : errno;
}

/* Every family but AF_UNIX fails with EAFNOSUPPORT (a root process would
 * get a descriptor for each without the filter). */
static void test_code_socket_families_refused(void **state)
{
    (void)state;
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_socket_inet), EAFNOSUPPORT);
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_socket_inet6_dgram), EAFNOSUPPORT);
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_socket_netlink), EAFNOSUPPORT);
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_socket_packet), EAFNOSUPPORT);
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_socketpair_inet), EAFNOSUPPORT);
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_socket_unix_high_bits), EAFNOSUPPORT);
}

/* RENDER makes no socket at all, not even AF_UNIX. */
static void test_render_no_socket(void **state)
{
    (void)state;
    assert_exit(run_filtered(KILN_SECCOMP_RENDER, body_unix_socket), EAFNOSUPPORT);
}

static int body_unlisted(void)
{
    struct sched_param sp;
    /* Harmless, succeeds without the filter, and on no list: the default. */
    return errno_of(syscall(SYS_sched_getparam, 0, &sp));
}

/* A call on no list fails with ENOSYS and the process goes on. */
static void test_unlisted_enosys(void **state)
{
    (void)state;
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_unlisted), ENOSYS);
    assert_exit(run_filtered(KILN_SECCOMP_RENDER, body_unlisted), ENOSYS);
}

/* ---- killed ------------------------------------------------------------- */

static int body_ptrace_traceme(void)
{
    return errno_of(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
}

static int body_ptrace_attach(void)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0) {
        /* Dies with the (killed) parent; alarm is the backstop. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(0);
        alarm(10);
        for (;;)
            pause();
    }
    long rc = ptrace(PTRACE_ATTACH, pid, NULL, NULL);
    int err = rc < 0 ? errno : 0;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return err;
}

/* ptrace kills, whether asked for by the tracee or aimed at a process the
 * child itself started. */
static void test_ptrace_kills(void **state)
{
    (void)state;
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_ptrace_traceme));
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_ptrace_attach));
    assert_sigsys(run_filtered(KILN_SECCOMP_RENDER, body_ptrace_traceme));
}

static int body_unshare_user(void)
{
    return errno_of(unshare(CLONE_NEWUSER));
}

static int body_setns(void)
{
    return errno_of(setns(-1, 0));
}

/* unshare(CLONE_NEWUSER) and setns kill (without the filter the unshare
 * succeeds for root and for users alike). */
static void test_namespaces_kill(void **state)
{
    (void)state;
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_unshare_user));
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_setns));
}

static int clone_with(unsigned long flags)
{
    long rc = syscall(SYS_clone, flags | SIGCHLD, 0, NULL, NULL, 0);
    if (rc == 0)
        _exit(0); /* the filter failed: the new child leaves at once */
    if (rc > 0) {
        waitpid((pid_t)rc, NULL, 0);
        return 0;
    }
    return errno;
}

static int body_clone_newns(void)
{
    return clone_with(CLONE_NEWNS);
}

static int body_clone_newuser(void)
{
    return clone_with(CLONE_NEWUSER);
}

static int body_clone_newnet(void)
{
    return clone_with(CLONE_NEWNET);
}

static int body_clone_plain(void)
{
    return clone_with(0);
}

/* clone with a CLONE_NEW* flag kills; the same raw clone without one works. */
static void test_clone_namespace_flags_kill(void **state)
{
    (void)state;
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_clone_newns));
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_clone_newuser));
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_clone_newnet));
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_clone_plain), 0);
}

static char mount_dir[300];

static int body_mount(void)
{
    return errno_of(mount("none", mount_dir, "tmpfs", 0, "size=64k"));
}

/* mount kills. Aimed at a directory the test made; if the filter failed,
 * the tmpfs is unmounted again before the assertion. */
static void test_mount_kills(void **state)
{
    (void)state;
    snprintf(mount_dir, sizeof mount_dir, "%s/mnt", dir);
    assert_int_equal(mkdir(mount_dir, 0700), 0);
    int status = run_filtered(KILN_SECCOMP_CODE, body_mount);
    int unmounted = umount2(mount_dir, MNT_DETACH) == 0;
    assert_false(unmounted);
    assert_sigsys(status);
}

static int body_keyctl(void)
{
    /* KEYCTL_GET_KEYRING_ID of the session keyring, no create: a query. */
    return errno_of(syscall(SYS_keyctl, 0, -3, 0));
}

static int body_bpf(void)
{
    return errno_of(syscall(SYS_bpf, -1, NULL, 0));
}

static int body_perf(void)
{
    return errno_of(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
}

static int body_userfaultfd(void)
{
    return errno_of(syscall(SYS_userfaultfd, -1));
}

static int body_io_uring(void)
{
    return errno_of(syscall(SYS_io_uring_setup, 0, NULL));
}

static int body_init_module(void)
{
    return errno_of(syscall(SYS_init_module, NULL, 0, ""));
}

static int body_process_vm_readv(void)
{
    return errno_of(syscall(SYS_process_vm_readv, getpid(), NULL, 0, NULL, 0, 0));
}

/* The kernel's large attack surfaces and cross-process calls kill, with
 * arguments that would be a harmless query or EINVAL/EFAULT otherwise. */
static void test_attack_surfaces_kill(void **state)
{
    (void)state;
    int (*bodies[])(void) = {body_keyctl,          body_bpf,      body_perf,
                             body_userfaultfd,     body_io_uring, body_init_module,
                             body_process_vm_readv};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        assert_sigsys(run_filtered(KILN_SECCOMP_CODE, bodies[i]));
        assert_sigsys(run_filtered(KILN_SECCOMP_RENDER, bodies[i]));
    }
}

static int body_x32_getpid(void)
{
    return errno_of(syscall(0x40000000 | SYS_getpid));
}

/* An x32 system call number (bit 0x40000000) meets the bad-arch action and
 * kills, whether or not this kernel has x32 support (without the filter it
 * returns a pid or ENOSYS). */
static void test_x32_kills(void **state)
{
    (void)state;
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_x32_getpid));
    assert_sigsys(run_filtered(KILN_SECCOMP_RENDER, body_x32_getpid));
}

static int tiocsti_on_devnull(unsigned long cmd)
{
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 99;
    char c = 'x';
    /* /dev/null is not a terminal: ENOTTY without the filter. */
    long rc = syscall(SYS_ioctl, fd, cmd, &c);
    int err = rc < 0 ? errno : 0;
    close(fd);
    return err;
}

static int body_tiocsti(void)
{
    return tiocsti_on_devnull(TIOCSTI);
}

static int body_tiocsti_high_bits(void)
{
    return tiocsti_on_devnull((1ul << 32) | TIOCSTI);
}

static int body_tioclinux(void)
{
    return tiocsti_on_devnull(TIOCLINUX);
}

static int body_fionread(void)
{
    int sv[2];
    if (pipe(sv) != 0)
        return errno;
    int n = -1;
    if (write(sv[1], "abc", 3) != 3)
        return 98;
    return ioctl(sv[0], FIONREAD, &n) == 0 && n == 3 ? 0 : errno ? errno : 99;
}

/* ioctl works (FIONREAD on a pipe) but TIOCSTI and TIOCLINUX kill, also
 * with junk in the upper 32 bits the kernel would drop. */
static void test_ioctl(void **state)
{
    (void)state;
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_fionread), 0);
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_tiocsti));
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_tiocsti_high_bits));
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_tioclinux));
    assert_sigsys(run_filtered(KILN_SECCOMP_RENDER, body_tiocsti));
}

static int body_personality_set(void)
{
    return errno_of(personality(READ_IMPLIES_EXEC));
}

/* Setting any persona but PER_LINUX kills. */
static void test_personality_set_kills(void **state)
{
    (void)state;
    assert_sigsys(run_filtered(KILN_SECCOMP_CODE, body_personality_set));
}

/* ---- RENDER ------------------------------------------------------------- */

static int body_execve(void)
{
    execl("/bin/true", "true", (char *)NULL);
    return errno;
}

/* RENDER: exec and every way of making a process kill. */
static void test_render_no_exec_no_fork(void **state)
{
    (void)state;
    assert_sigsys(run_filtered(KILN_SECCOMP_RENDER, body_execve));
    assert_sigsys(run_filtered(KILN_SECCOMP_RENDER, body_fork));
    assert_sigsys(run_filtered(KILN_SECCOMP_RENDER, body_clone_plain));
    assert_sigsys(run_filtered(KILN_SECCOMP_RENDER, body_clone3));
    assert_sigsys(run_filtered(KILN_SECCOMP_RENDER, body_thread));
    /* The same exec under CODE works: the test can tell the two apart. */
    assert_exit(run_filtered(KILN_SECCOMP_CODE, body_execve), 0);
}

static const char *render_spec;
static kiln_format render_format;
static char render_path[400];

static int body_render(void)
{
    kiln_parse_options po;
    kiln_parse_options_init(&po);
    po.base_dir = dir;
    kiln_doc *doc = NULL;
    kiln_errors errs;
    kiln_errors_init(&errs);
    if (kiln_doc_parse(render_spec, strlen(render_spec), &po, &doc, &errs) != KILN_E_OK) {
        fprintf(stderr, "parse failed\n");
        return 97;
    }
    kiln_render_options opt = {.max_bytes = 0, .tmp_dir = dir};
    kiln_render_result res;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_status st = kiln_render(doc, render_format, render_path, &opt, &res, &err);
    if (st != KILN_E_OK)
        fprintf(stderr, "render failed: %s\n", err.message);
    kiln_doc_free(doc);
    return st == KILN_E_OK ? 0 : 98;
}

static void render_one(const char *spec, kiln_format format, const char *name)
{
    char *json = test_quote(spec);
    render_spec = json;
    render_format = format;
    snprintf(render_path, sizeof render_path, "%s/%s", dir, name);
    int status = run_filtered(KILN_SECCOMP_RENDER, body_render);
    free(json);
    assert_exit(status, 0);
    struct stat st;
    assert_int_equal(stat(render_path, &st), 0);
    assert_true(S_ISREG(st.st_mode) && st.st_size > 100);
}

/* The writers work under RENDER (and, in the asan build, so do the ASan and
 * UBSan runtimes around them): each format renders a small spec. */
static void test_render_all_formats(void **state)
{
    (void)state;
    static const char blocks[] =
        "{'metadata': {'title': 'T'}, 'blocks': ["
        "{'type': 'heading', 'level': 1, 'text': 'Weekly note'},"
        "{'type': 'paragraph', 'text': 'Orders are up 4% on last week.'},"
        "{'type': 'table', 'columns': [{'header': 'Region'}, {'header': 'Orders'}],"
        " 'rows': [['North', 412], ['South', 298]]}]}";
    static const char sheets[] =
        "{'sheets': [{'name': 'S', 'columns': [{'header': 'A'}, {'header': 'B'}],"
        " 'rows': [['x', 1], ['y', 2]]}]}";
    static const char slides[] =
        "{'slides': [{'layout': 'title', 'title': 'Q2', 'subtitle': 'Review'},"
        "{'title': 'Highlights', 'bullets': ['Revenue up 6%']},"
        "{'layout': 'chart', 'title': 'By region', 'chart': {'kind': 'bar',"
        " 'categories': ['N', 'S'], 'series': [{'name': 'Q2', 'values': [455, 310]}]}}]}";
    render_one(sheets, KILN_FORMAT_XLSX, "out.xlsx");
    render_one(blocks, KILN_FORMAT_DOCX, "out.docx");
    render_one(blocks, KILN_FORMAT_PDF, "out.pdf");
    render_one(slides, KILN_FORMAT_PPTX, "out.pptx");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profiles_load),
        cmocka_unit_test(test_code_python_workload),
        cmocka_unit_test(test_code_bash_workload),
        cmocka_unit_test(test_code_fork_allowed),
        cmocka_unit_test(test_code_thread_allowed),
        cmocka_unit_test(test_code_unix_socket_allowed),
        cmocka_unit_test(test_personality_query_allowed),
        cmocka_unit_test(test_clone3_enosys),
        cmocka_unit_test(test_code_socket_families_refused),
        cmocka_unit_test(test_render_no_socket),
        cmocka_unit_test(test_unlisted_enosys),
        cmocka_unit_test(test_ptrace_kills),
        cmocka_unit_test(test_namespaces_kill),
        cmocka_unit_test(test_clone_namespace_flags_kill),
        cmocka_unit_test(test_mount_kills),
        cmocka_unit_test(test_attack_surfaces_kill),
        cmocka_unit_test(test_x32_kills),
        cmocka_unit_test(test_ioctl),
        cmocka_unit_test(test_personality_set_kills),
        cmocka_unit_test(test_render_no_exec_no_fork),
        cmocka_unit_test(test_render_all_formats),
        cmocka_unit_test(test_install_refuses_empty_program),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
