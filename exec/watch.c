/*
 * watch.c - a contained process from spawn to its end: its stdout and
 * stderr captured, its wall and CPU time held to the limits, its report
 * read (kiln_watch_run, kiln_sandbox_run in exec_internal.h).
 *
 * The job (run.c), each render (render_job.c) and the font-list warm-up
 * (fontcache.c) are all watched the same way, by this file; it calls
 * nothing of theirs.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

/* How often the supervisor reads the cgroup's CPU time: a job can overrun
 * its CPU limit by this much at most. */
#define KILN_CPU_POLL_MS 50

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Read what is there; 1 at end of file, 0 otherwise. */
static int drain(int fd, kiln_stream *s, uint64_t *total)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            kiln_stream_feed(s, buf, (size_t)n);
            *total += (uint64_t)n;
            continue;
        }
        if (n == 0)
            return 1;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN ? 0 : 1;
    }
}

static void end_sandbox(const kiln_watch *w, pid_t init_pid)
{
    /* Killing the PID namespace's init makes the kernel kill every process
     * in it; the cgroup kill also catches one caught mid-fork. */
    kill(init_pid, SIGKILL);
    if (w->cg)
        kiln_cgroup_kill_all(w->cg);
}

void kiln_watch_run(kiln_watch *w, pid_t init_pid)
{
    const kiln_run_limits *l = w->limits;
    double start = now_seconds();
    double wall_deadline = start + l->wall_seconds;
    uint64_t cpu_limit_usec = (uint64_t)(l->cpu_seconds * 1e6);
    uint64_t streamed = 0;
    int out_open = 1, err_open = 1, report_open = 1, killed = 0;

    fcntl(w->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(w->err_fd, F_SETFL, O_NONBLOCK);
    while (out_open || err_open || report_open) {
        double now = now_seconds();
        if (!killed && now >= wall_deadline) {
            w->timeout = KILN_TIMEOUT_WALL;
            end_sandbox(w, init_pid);
            killed = 1;
        }
        if (!killed && w->cg) {
            kiln_cgroup_usage u;
            kiln_cgroup_read_usage(w->cg, &u);
            if (u.cpu_usec > cpu_limit_usec) {
                w->timeout = KILN_TIMEOUT_CPU;
                end_sandbox(w, init_pid);
                killed = 1;
            }
        }
        int wait_ms = KILN_CPU_POLL_MS;
        if (!killed && (wall_deadline - now) * 1000 < wait_ms)
            wait_ms = (int)((wall_deadline - now) * 1000) + 1;

        struct pollfd fds[3];
        int n = 0, out_i = -1, err_i = -1, rep_i = -1;
        if (out_open) {
            out_i = n;
            fds[n++] = (struct pollfd){.fd = w->out_fd, .events = POLLIN};
        }
        if (err_open) {
            err_i = n;
            fds[n++] = (struct pollfd){.fd = w->err_fd, .events = POLLIN};
        }
        if (report_open) {
            rep_i = n;
            fds[n++] = (struct pollfd){.fd = w->report_fd, .events = POLLIN};
        }
        if (poll(fds, (nfds_t)n, wait_ms) < 0 && errno != EINTR)
            break;
        if (out_i >= 0 && fds[out_i].revents && drain(w->out_fd, w->out, &streamed))
            out_open = 0;
        if (err_i >= 0 && fds[err_i].revents && drain(w->err_fd, w->err, &streamed))
            err_open = 0;
        if (rep_i >= 0 && fds[rep_i].revents) {
            kiln_contain_report r;
            ssize_t got = read(w->report_fd, &r, sizeof r);
            if (got == (ssize_t)sizeof r && r.kind == KILN_REPORT_SETUP && !w->setup_failed) {
                w->setup_failed = 1;
                r.what[sizeof r.what - 1] = '\0';
                snprintf(w->setup_what, sizeof w->setup_what, "%s", r.what);
                w->setup_errno = r.err_no;
            } else if (got == (ssize_t)sizeof r && r.kind == KILN_REPORT_EXITED) {
                w->exited = 1;
                w->wait_status = r.wait_status;
            } else if (got <= 0 && !(got < 0 && errno == EINTR)) {
                report_open = 0;
            }
        }
        if (!killed && streamed > l->stream_kill_bytes) {
            w->stream_killed = 1;
            end_sandbox(w, init_pid);
            killed = 1;
        }
    }
    close(w->out_fd);
    close(w->err_fd);
    close(w->report_fd);
    while (waitpid(init_pid, NULL, 0) < 0 && errno == EINTR)
        ;
    w->wall_seconds = now_seconds() - start;
    /* Whatever is left (a process that escaped the namespace's death, which
     * should be impossible) goes with the cgroup. */
    if (w->cg)
        kiln_cgroup_kill_all(w->cg);
}

kiln_status kiln_sandbox_run(kiln_contain_job *job, const kiln_idmap *map, const kiln_cgroup *cg,
                             kiln_stream *out, kiln_stream *err_stream, kiln_watch *w,
                             kiln_error *err)
{
    int o[2] = {-1, -1}, e[2] = {-1, -1}, r[2] = {-1, -1};
    kiln_status st = KILN_E_OK;
    memset(w, 0, sizeof *w);
    if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0 || pipe2(r, O_CLOEXEC) < 0) {
        st = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot make pipes: %s", strerror(errno));
        goto close_pipes;
    }
    job->stdout_fd = o[1];
    job->stderr_fd = e[1];
    job->report_fd = r[1];
    pid_t init_pid = kiln_contain_spawn(job, map, cg, err);
    if (init_pid < 0) {
        st = err && err->code != KILN_E_OK ? err->code : KILN_E_INTERNAL;
        goto close_pipes;
    }
    /* Only the sandbox holds the write ends now: end of file on them means
     * every process of the job is gone. */
    close(o[1]);
    close(e[1]);
    close(r[1]);
    o[1] = e[1] = r[1] = -1;
    w->out_fd = o[0];
    w->err_fd = e[0];
    w->report_fd = r[0];
    w->out = out;
    w->err = err_stream;
    w->limits = job->limits;
    w->cg = cg;
    o[0] = e[0] = r[0] = -1; /* kiln_watch_run closes them */
    kiln_watch_run(w, init_pid);

close_pipes:
    for (int i = 0; i < 2; i++) {
        if (o[i] >= 0)
            close(o[i]);
        if (e[i] >= 0)
            close(e[i]);
        if (r[i] >= 0)
            close(r[i]);
    }
    return st;
}
