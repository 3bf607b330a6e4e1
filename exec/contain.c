/*
 * contain.c - the containment sequence, in order.
 *
 * kiln_contain_spawn() clones the sandbox's first process into new user,
 * PID, mount, network, IPC and UTS namespaces, writes its id maps and puts
 * it in the job's cgroup. kiln_contain() is that process: read top to
 * bottom it is the whole story of what the sandbox is. It becomes PID 1 of
 * the job (pid.c), and the job's program is its one child, which drops
 * everything and execs (or, to render, calls the writers).
 *
 * Every step that fails is reported to the supervisor as a setup failure
 * naming the step; the job's code never runs in a sandbox that is missing
 * a piece.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

#define KILN_SANDBOX_NAMESPACES \
    (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)

/* Tell the supervisor which step failed, then end. Only async-signal-safe
 * calls: this runs in a child of a possibly multithreaded program. */
static _Noreturn void setup_failed(const kiln_contain_job *job, const char *what, int err_no)
{
    kiln_contain_report r;
    memset(&r, 0, sizeof r);
    r.kind = KILN_REPORT_SETUP;
    r.err_no = err_no;
    /* r is zeroed: the copy ends with a NUL. */
    memcpy(r.what, what, strnlen(what, sizeof r.what - 1));
    ssize_t ignored = write(job->report_fd, &r, sizeof r);
    (void)ignored;
    _exit(127);
}

/* The job's main process: from PID 2 of the sandbox to the job's code. */
static _Noreturn void become_job(const kiln_contain_job *job)
{
    const char *what = NULL;

    /* Its own session: a job cannot reach the supervisor's terminal. */
    if (setsid() < 0)
        setup_failed(job, "start a session", errno);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(job->stdout_fd, 1) < 0 ||
        dup2(job->stderr_fd, 2) < 0)
        setup_failed(job, "connect standard input and output", errno);
    if (devnull != 0)
        close(devnull);
    close(job->stdout_fd);
    close(job->stderr_fd);
    if (chdir(KILN_JOB_DIR) < 0)
        setup_failed(job, "enter the job directory", errno);
    if (kiln_rlimits_apply(job->limits, &what) < 0)
        setup_failed(job, what, errno);
    if (kiln_user_drop(&what) < 0)
        setup_failed(job, what, errno);
    /* Last, so that everything above could use any system call. The
     * supervisor built the filter while we were setting up. */
    if (kiln_seccomp_install(job->filter_fd, &what) < 0)
        setup_failed(job, what, errno);
    close(job->filter_fd);

    if (job->payload) {
        /* No exec follows, so nothing of the supervisor's may stay: its
         * environment goes, and the report pipe (the outcome leaves on
         * stdout). */
        clearenv();
        close(job->report_fd);
        _exit(job->payload(job->payload_arg));
    }
    execve(job->argv[0], job->argv, job->envp);
    setup_failed(job, "start the interpreter", errno);
}

/* A session's init: ready, then PID 1 reaping the orphans of the
 * interpreter's processes until the supervisor ends the sandbox (the
 * interpreter itself is the zygote's: zygote.c). */
static void on_child(int sig)
{
    (void)sig;
}

static _Noreturn void hold(const kiln_contain_job *job)
{
    close(job->stdout_fd);
    close(job->stderr_fd);
    close(job->filter_fd);
    if (kiln_pid_init_hide_command_line() < 0)
        setup_failed(job, "hide the host's command line from /proc/1", errno);
    /* A handler, not a blocked signal: the kernel reaps for an init that
     * ignores SIGCHLD, and waits at the namespace's end for the processes
     * an init that blocks it has not reaped. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_child;
    sigaction(SIGCHLD, &sa, NULL);
    kiln_contain_report r;
    memset(&r, 0, sizeof r);
    r.kind = KILN_REPORT_READY;
    if (write(job->report_fd, &r, sizeof r) != (ssize_t)sizeof r)
        _exit(127);
    for (;;) {
        if (waitpid(-1, NULL, __WALL) < 0 && errno == ECHILD)
            pause();
    }
}

/* Keep only the five pipes the sandbox uses, renumbered 3..7 and
 * close-on-exec, and close every other descriptor the supervisor had: a
 * server's sockets, the job directory's O_PATH descriptor in the
 * supervisor's mount namespace. Close-on-exec alone would not do: the
 * init and a render never exec. */
static int keep_only_own_descriptors(kiln_contain_job *job)
{
    int *fds[] = {&job->go_fd, &job->filter_fd, &job->report_fd, &job->stdout_fd,
                  &job->stderr_fd};
    enum { COUNT = sizeof fds / sizeof fds[0], FIRST = 3, PARK = 64 };
    /* Out of the way first, so no dup3 below overwrites one still needed. */
    for (int i = 0; i < COUNT; i++) {
        int moved = fcntl(*fds[i], F_DUPFD_CLOEXEC, PARK);
        if (moved < 0)
            return -1;
        *fds[i] = moved;
    }
    for (int i = 0; i < COUNT; i++) {
        if (dup3(*fds[i], FIRST + i, O_CLOEXEC) < 0)
            return -1;
        *fds[i] = FIRST + i;
    }
    return (int)syscall(SYS_close_range, FIRST + COUNT, ~0u, 0);
}

int kiln_contain(void *arg)
{
    kiln_contain_job *job = arg;
    const char *what = NULL;

    /* 0. Nothing of the supervisor's open files comes along, its standard
     *    input and output included (a session's supervisor speaks to its
     *    client on them: the sandbox must not hold them open). */
    if (keep_only_own_descriptors(job) < 0)
        setup_failed(job, "close the supervisor's descriptors", errno);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)
        setup_failed(job, "connect the init's standard input and output", errno);
    if (devnull > 2)
        close(devnull);

    /* 1. Die with the supervisor, and wait until it has written our id
     *    maps. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        setup_failed(job, "set the parent-death signal", errno);
    char go;
    if (read(job->go_fd, &go, 1) != 1 || go != 'g')
        _exit(127); /* the supervisor gave up on us */

    /* 2. Become uid 0 of the new user namespace (mapped to an unprivileged
     *    host uid) with its capabilities, for the steps below only. A change
     *    of credentials clears the parent-death signal: it is set again,
     *    and a supervisor already gone ends us here. */
    pid_t supervisor = getppid();
    if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
        setup_failed(job, "become root of the user namespace", errno);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        setup_failed(job, "set the parent-death signal", errno);
    if (getppid() != supervisor)
        _exit(127);

    /* 3. UTS and network: our own host name; no interface but loopback. */
    if (kiln_uts_set(&what) < 0 || kiln_net_check_isolated(&what) < 0)
        setup_failed(job, what, errno);

    /* 4. The minimal read-only root, /proc, /dev, /tmp and /mnt/data.
     *    Meanwhile the supervisor moves us into the job's cgroup. */
    if (kiln_mount_root(&job->mount, &what) < 0)
        setup_failed(job, what, errno);

    /* 5. Nothing of the job may start outside its cgroup: wait until we
     *    are in it, then take a cgroup namespace rooted there. */
    if (read(job->go_fd, &go, 1) != 1 || go != 'c')
        _exit(127);
    close(job->go_fd);
    if (unshare(CLONE_NEWCGROUP) < 0)
        setup_failed(job, "enter a cgroup namespace", errno);

    /* 6. A session's sandbox holds no job of its own: its interpreter
     *    joins from the zygote. Say we are ready, then reap. */
    if (!job->argv && !job->payload)
        hold(job);

    /* 6. The job's process (it installs the seccomp filter last, just
     *    before exec); this one stays as init. */
    pid_t main_child = fork();
    if (main_child < 0)
        setup_failed(job, "start the job's process", errno);
    if (main_child == 0)
        become_job(job);

    close(job->stdout_fd);
    close(job->stderr_fd);
    close(job->filter_fd);
    /* Nothing of the host's command line for the job to read in /proc/1. */
    if (kiln_pid_init_hide_command_line() < 0)
        setup_failed(job, "hide the host's command line from /proc/1", errno);

    /* 7. Reap until the job's process ends, then end everything else. */
    kiln_contain_report r;
    memset(&r, 0, sizeof r);
    r.kind = KILN_REPORT_EXITED;
    r.wait_status = kiln_pid_init_wait(main_child);
    ssize_t ignored = write(job->report_fd, &r, sizeof r);
    (void)ignored;
    _exit(0);
}

/*
 * Send the child bytes it reads during its setup. The child may have ended
 * already (a setup step failed, and its report on report_fd says which):
 * that is no error of ours, and must not end this process with SIGPIPE,
 * which is blocked for the write and, when the write raised it, taken.
 * 0 sent, 1 the child has gone, -1 an error (errno).
 */
static int send_to_child(int fd, const void *buf, size_t len)
{
    sigset_t pipe_only, old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    const char *p = buf;
    ssize_t n = 0;
    while (len > 0) {
        n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        p += n;
        len -= (size_t)n;
    }
    int saved = errno, rc = len == 0 ? 0 : -1;
    if (n < 0 && saved == EPIPE) {
        static const struct timespec now = {0, 0};
        sigtimedwait(&pipe_only, NULL, &now);
        rc = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return rc;
}

/* 1 when the child has ended (not reaped: kiln_watch_run reaps it). */
static int child_ended(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

pid_t kiln_contain_spawn(kiln_contain_job *job, const kiln_idmap *map, const kiln_cgroup *cg,
                         kiln_error *err)
{
    int go[2], filter[2];
    if (pipe2(go, O_CLOEXEC) < 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "", "cannot make a pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(filter, O_CLOEXEC) < 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "", "cannot make a pipe: %s", strerror(errno));
        goto close_go;
    }
    job->go_fd = go[0];
    job->filter_fd = filter[0];

    /* clone() with fork semantics (no new stack): the child gets a copy of
     * this process, as with fork, but in new namespaces. */
    /* The user namespace's owner is whoever's euid creates it: for a
     * session, the zygote's uid, which may then enter it (zygote.c). Only
     * the effective uid changes, for the clone alone; root's saved uid
     * brings the capabilities back after. */
    if (job->userns_owner != 0 && setresuid((uid_t)-1, job->userns_owner, (uid_t)-1) < 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "", "cannot take the zygote's uid: %s",
                       strerror(errno));
        goto close_filter;
    }
    pid_t pid = (pid_t)syscall(SYS_clone, KILN_SANDBOX_NAMESPACES | SIGCHLD, NULL, NULL, NULL, 0);
    int clone_errno = errno;
    if (pid != 0 && job->userns_owner != 0 && setresuid((uid_t)-1, 0, (uid_t)-1) < 0)
        _exit(127); /* a supervisor that cannot be root again must not go on */
    errno = clone_errno;
    if (pid < 0) {
        int saved = errno;
        kiln_error_set(err, KILN_E_INTERNAL, "", "cannot create the sandbox's namespaces: %s%s",
                       strerror(saved),
                       saved == EPERM ? " (kiln run needs root or CAP_SYS_ADMIN)" : "");
        goto close_filter;
    }
    if (pid == 0) {
        close(go[1]);
        close(filter[1]);
        _exit(kiln_contain(job));
    }
    close(go[0]);
    close(filter[0]);

    /* Maps first: the child cannot set up anything before them. The
     * cgroup move (slow on v1, where each hierarchy migrates the task) then
     * runs while the child mounts its root. */
    /* Once the child has the maps it sets itself up, and may fail and end
     * at any step: from then on an ended child is not an error here, its
     * report is what the caller reads (as a setup failure). */
    kiln_status st = kiln_user_write_maps(pid, map, err);
    int gone = 0, rc = 0;
    if (st == KILN_E_OK && (rc = send_to_child(go[1], "g", 1)) < 0)
        st = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot start the sandbox: %s",
                            strerror(errno));
    gone = rc == 1;
    if (st == KILN_E_OK && !gone && cg) {
        kiln_error attach_err;
        memset(&attach_err, 0, sizeof attach_err);
        st = kiln_cgroup_attach(cg, pid, &attach_err);
        if (st != KILN_E_OK && child_ended(pid)) {
            st = KILN_E_OK; /* it could not be moved because it had ended */
            gone = 1;
        } else if (st != KILN_E_OK && err) {
            *err = attach_err;
        }
    }
    if (st == KILN_E_OK && !gone && (rc = send_to_child(go[1], "c", 1)) < 0)
        st = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot start the sandbox: %s",
                            strerror(errno));
    gone = gone || rc == 1;
    close(go[1]);
    /* The filter: a few kilobytes, well within a pipe's buffer. Without it
     * the job reads an empty program and ends as a setup failure. */
    if (st == KILN_E_OK && !gone && job->filter && job->filter->len > 0 &&
        send_to_child(filter[1], job->filter->bpf, job->filter->len) < 0)
        st = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot send the seccomp filter: %s",
                            strerror(errno));
    close(filter[1]);
    if (st != KILN_E_OK) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;

close_filter:
    close(filter[0]);
    close(filter[1]);
close_go:
    close(go[0]);
    close(go[1]);
    return -1;
}
