/*
 * pool.c - forked worker processes (pool.h).
 */
#include "pool.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/fdio.h"
#include "../common/banned.h"

typedef struct worker {
    pid_t pid; /* 0: none */
    int fd;    /* the parent's end of the socketpair, -1: none */
    int busy;
    int killed; /* kiln_pool_kill ended it */
    void *tag;
    double started, deadline; /* monotonic seconds; deadline 0 = none */
    /* the result being read */
    unsigned char header[8];
    size_t header_got;
    char *body;
    size_t body_len, body_got;
} worker;

struct kiln_pool {
    worker *w;
    size_t n;
    kiln_pool_work_fn fn;
    void *arg;
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the worker's side ---- */

static int read_full(int fd, void *buf, size_t len)
{
    for (size_t got = 0; got < len;) {
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

static int send_frame(int fd, const json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    if (!text)
        return -1;
    uint64_t len = strlen(text);
    int rc = len > KILN_POOL_FRAME_MAX ? -1 : 0;
    if (rc == 0)
        rc = kiln_write_all(fd, &len, sizeof len) == 0 && kiln_write_all(fd, text, len) == 0 ? 0
                                                                                             : -1;
    free(text);
    return rc;
}

/* The worker: tasks until the parent closes its end. Never returns. */
static void worker_main(int fd, kiln_pool_work_fn fn, void *arg)
{
    for (;;) {
        uint64_t len;
        if (read_full(fd, &len, sizeof len) != 0 || len > KILN_POOL_FRAME_MAX)
            _exit(0);
        char *text = malloc(len ? len : 1);
        if (!text || read_full(fd, text, len) != 0)
            _exit(3);
        json_t *task = json_loadb(text, len, JSON_ALLOW_NUL, NULL);
        free(text);
        if (!task)
            _exit(3);
        json_t *result = fn(task, arg);
        json_decref(task);
        if (!result || send_frame(fd, result) != 0)
            _exit(4);
        json_decref(result);
    }
}

/* ---- the parent's side ---- */

static int spawn(kiln_pool *p, worker *w)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        /* Nothing of the other workers stays open here, or their parent
         * would never see them end. */
        for (size_t i = 0; i < p->n; i++)
            if (p->w[i].fd >= 0)
                close(p->w[i].fd);
        close(sv[0]);
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent)
            _exit(0);
        /* The batch may have blocked or caught signals for itself. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int s = 1; s < NSIG; s++)
            if (s != SIGKILL && s != SIGSTOP)
                signal(s, SIG_DFL);
        signal(SIGPIPE, SIG_IGN);
        /* A worker makes the same few allocations for every document (zlib's
         * and the writers' buffers of a few hundred KiB): kept on the heap
         * instead of mmapped and trimmed away after each, they cost no page
         * faults and no zeroing the next time. */
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 64 << 20);
        worker_main(sv[1], p->fn, p->arg);
    }
    close(sv[1]);
    setpgid(pid, pid); /* also here: whichever runs first, it is in place before a kill */
    w->pid = pid;
    w->fd = sv[0];
    w->busy = 0;
    w->killed = 0;
    return 0;
}

kiln_pool *kiln_pool_new(unsigned n, kiln_pool_work_fn fn, void *arg, kiln_error *err)
{
    if (n == 0 || n > KILN_POOL_WORKERS_MAX) {
        kiln_error_set(err, KILN_E_USAGE, NULL, "a pool has 1 to %d workers",
                       KILN_POOL_WORKERS_MAX);
        return NULL;
    }
    kiln_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->w = calloc(n, sizeof *p->w))) {
        free(p);
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        return NULL;
    }
    p->fn = fn;
    p->arg = arg;
    for (size_t i = 0; i < n; i++)
        p->w[i].fd = -1;
    for (size_t i = 0; i < n; i++) {
        p->n = i; /* spawn closes the fds of the workers before it */
        if (spawn(p, &p->w[i]) != 0) {
            kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start a worker: %s",
                           strerror(errno));
            kiln_pool_free(p);
            return NULL;
        }
    }
    p->n = n;
    return p;
}

size_t kiln_pool_busy(const kiln_pool *p)
{
    size_t busy = 0;
    for (size_t i = 0; i < p->n; i++)
        busy += p->w[i].busy != 0;
    return busy;
}

size_t kiln_pool_size(const kiln_pool *p)
{
    return p->n;
}

/* Reap w (it has ended or was killed): how it ended, into *ev. */
static void reap(worker *w, kiln_pool_event *ev)
{
    int status = 0;
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (ev) {
        ev->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        ev->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    w->pid = 0;
    free(w->body);
    w->body = NULL;
    w->header_got = w->body_got = w->body_len = 0;
}

static void kill_worker(worker *w)
{
    if (w->pid > 0) {
        kill(-w->pid, SIGKILL);
        kill(w->pid, SIGKILL);
    }
}

kiln_status kiln_pool_submit(kiln_pool *p, const json_t *task, double timeout_seconds, void *tag,
                             kiln_error *err)
{
    worker *w = NULL;
    for (size_t i = 0; i < p->n && !w; i++)
        if (!p->w[i].busy)
            w = &p->w[i];
    if (!w)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "no idle worker");
    for (int attempt = 0; attempt < 2; attempt++) {
        if (w->pid == 0 && spawn(p, w) != 0)
            return kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start a worker: %s",
                                  strerror(errno));
        /* An idle worker that died (killed from outside) shows as EPIPE here. */
        if (send_frame(w->fd, task) == 0) {
            w->busy = 1;
            w->tag = tag;
            w->started = now_seconds();
            w->deadline = timeout_seconds > 0 ? w->started + timeout_seconds : 0;
            return KILN_E_OK;
        }
        if (errno == ENOMEM || json_dumpb(task, NULL, 0, JSON_COMPACT) > KILN_POOL_FRAME_MAX)
            return kiln_error_set(err, KILN_E_LIMIT, NULL,
                                  "the task is larger than %llu MiB or out of memory",
                                  (unsigned long long)(KILN_POOL_FRAME_MAX >> 20));
        kill_worker(w);
        reap(w, NULL);
    }
    return kiln_error_set(err, KILN_E_INTERNAL, NULL, "a worker died as it was given a task");
}

/* Read what w has sent; 1 when its whole result is in, 0 for more to come,
 * -1 when it closed or broke the protocol. */
static int read_result(worker *w)
{
    for (;;) {
        void *to;
        size_t want;
        if (w->header_got < sizeof w->header) {
            to = w->header + w->header_got;
            want = sizeof w->header - w->header_got;
        } else {
            if (!w->body) {
                uint64_t len;
                memcpy(&len, w->header, sizeof len);
                if (len > KILN_POOL_FRAME_MAX || !(w->body = malloc(len ? len : 1)))
                    return -1;
                w->body_len = len;
            }
            if (w->body_got == w->body_len)
                return 1;
            to = w->body + w->body_got;
            want = w->body_len - w->body_got;
        }
        ssize_t n = recv(w->fd, to, want, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0)
            return -1;
        if (w->header_got < sizeof w->header)
            w->header_got += (size_t)n;
        else
            w->body_got += (size_t)n;
    }
}

static void finish(worker *w, kiln_pool_outcome outcome, kiln_pool_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->outcome = outcome;
    ev->tag = w->tag;
    ev->wall_seconds = now_seconds() - w->started;
    w->busy = 0;
    w->tag = NULL;
}

/* w's task has ended one way or another: fill *ev, replace the worker when it
 * is gone. -1 when a replacement cannot be started. */
static int settle(kiln_pool *p, worker *w, kiln_pool_event *ev, kiln_error *err)
{
    int r = read_result(w);
    if (r == 0)
        return 0;
    if (r == 1) {
        finish(w, KILN_POOL_DONE, ev);
        ev->result = json_loadb(w->body, w->body_len, JSON_ALLOW_NUL, NULL);
        free(w->body);
        w->body = NULL;
        w->header_got = w->body_got = w->body_len = 0;
        if (ev->result)
            return 1;
        ev->outcome = KILN_POOL_CRASHED; /* a result that is not JSON: broken worker */
        kill_worker(w);
    }
    int killed = w->killed;
    if (r != 1)
        finish(w, killed ? KILN_POOL_KILLED : KILN_POOL_CRASHED, ev);
    kill_worker(w); /* what it left in its group (a run's processes) goes with it */
    reap(w, ev);
    if (!killed && spawn(p, w) != 0) {
        kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start a worker: %s", strerror(errno));
        return -1;
    }
    return 1;
}

int kiln_pool_wait(kiln_pool *p, int wake_fd, int timeout_ms, kiln_pool_event *ev,
                   kiln_error *err)
{
    struct pollfd fds[KILN_POOL_WORKERS_MAX + 1];
    worker *who[KILN_POOL_WORKERS_MAX + 1];
    double start = now_seconds();
    for (;;) {
        double now = now_seconds();
        /* A task past its deadline: kill its worker, report it. */
        for (size_t i = 0; i < p->n; i++) {
            worker *w = &p->w[i];
            if (w->busy && w->deadline > 0 && now >= w->deadline) {
                finish(w, KILN_POOL_TIMED_OUT, ev);
                kill_worker(w);
                reap(w, NULL);
                if (spawn(p, w) != 0) {
                    kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start a worker: %s",
                                   strerror(errno));
                    return -1;
                }
                return 1;
            }
        }
        nfds_t nfds = 0;
        double next = timeout_ms < 0 ? -1 : start + timeout_ms / 1000.0;
        for (size_t i = 0; i < p->n; i++) {
            worker *w = &p->w[i];
            if (!w->busy || w->fd < 0)
                continue;
            fds[nfds] = (struct pollfd){.fd = w->fd, .events = POLLIN};
            who[nfds++] = w;
            if (w->deadline > 0 && (next < 0 || w->deadline < next))
                next = w->deadline;
        }
        if (wake_fd >= 0) {
            fds[nfds] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
            who[nfds++] = NULL;
        }
        int wait_ms = next < 0 ? -1 : next <= now ? 0 : (int)((next - now) * 1000) + 1;
        int n = poll(fds, nfds, wait_ms);
        if (n < 0 && errno != EINTR) {
            kiln_error_set(err, KILN_E_INTERNAL, NULL, "poll: %s", strerror(errno));
            return -1;
        }
        if (n < 0)
            return 0; /* a signal: the caller looks at what it says */
        for (nfds_t i = 0; n > 0 && i < nfds; i++) {
            if (!fds[i].revents)
                continue;
            if (!who[i])
                return 0;
            int r = settle(p, who[i], ev, err);
            if (r != 0)
                return r;
        }
        if (timeout_ms >= 0 && now_seconds() - start >= timeout_ms / 1000.0) {
            int expired = 0;
            for (size_t i = 0; i < p->n; i++)
                expired |= p->w[i].busy && p->w[i].deadline > 0 &&
                           now_seconds() >= p->w[i].deadline;
            if (!expired)
                return 0;
        }
    }
}

void kiln_pool_kill(kiln_pool *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->w[i].busy) {
            p->w[i].killed = 1;
            kill_worker(&p->w[i]);
        }
}

void kiln_pool_free(kiln_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        worker *w = &p->w[i];
        if (w->pid == 0)
            continue;
        if (w->busy)
            kill_worker(w);
        close(w->fd); /* an idle worker reads EOF and exits */
        w->fd = -1;
    }
    for (size_t i = 0; i < p->n; i++)
        if (p->w[i].pid > 0)
            reap(&p->w[i], NULL);
    free(p->w);
    free(p);
}
