/*
 * pool.h - the batch's worker processes: N forked copies of the runner that
 * each do one task at a time, so that one job's crash (a writer's segfault,
 * an abort, a kill) or hang ends that job only.
 *
 * Why processes and not threads: a fault in a writer or a library it calls
 * must not take the batch, its journal or the other jobs with it. Why forked
 * once and reused, not one fork per job: a worker keeps what the first job
 * loaded (the writers' shared object, the fonts' files in the page cache) and
 * a job costs a round trip over a socket instead of a fork.
 *
 * A worker is its own process group (a terminal's ^C goes to the batch,
 * which decides what running jobs get) and dies with the batch
 * (PR_SET_PDEATHSIG): a batch killed with SIGKILL leaves no worker behind.
 * The batch's process must be single-threaded when it forks them.
 *
 * Tasks and results are JSON documents, each sent as a length (8 bytes,
 * host order) and the compact text, over one socketpair per worker.
 */
#ifndef KILN_BATCH_POOL_H
#define KILN_BATCH_POOL_H

#include <jansson.h>
#include <stddef.h>

#include "../common/error.h"

/* The largest task or result sent to or from a worker. */
#define KILN_POOL_FRAME_MAX (512ull << 20)
/* The most workers a pool has. */
#define KILN_POOL_WORKERS_MAX 256

/* What a worker does with one task: a new result (NULL: out of memory,
 * reported as a crash). Runs in the worker process. */
typedef json_t *(*kiln_pool_work_fn)(const json_t *task, void *arg);

typedef enum {
    KILN_POOL_DONE,      /* the worker answered: result */
    KILN_POOL_CRASHED,   /* the worker died or broke the protocol: signal / exit_status */
    KILN_POOL_TIMED_OUT, /* the task ran past its timeout: the worker was killed */
    KILN_POOL_KILLED,    /* kiln_pool_kill ended it */
} kiln_pool_outcome;

typedef struct kiln_pool_event {
    kiln_pool_outcome outcome;
    void *tag;      /* the submitter's */
    json_t *result; /* DONE: a new reference */
    int signal;     /* CRASHED: the signal that ended the worker, 0 when it exited */
    int exit_status;
    double wall_seconds; /* from submit to the event */
} kiln_pool_event;

typedef struct kiln_pool kiln_pool;

/* Fork n workers (1..KILN_POOL_WORKERS_MAX) running fn(task, arg). NULL with
 * err when none could be started. */
kiln_pool *kiln_pool_new(unsigned n, kiln_pool_work_fn fn, void *arg, kiln_error *err);

/* How many workers are doing a task, and how many there are. */
size_t kiln_pool_busy(const kiln_pool *p);
size_t kiln_pool_size(const kiln_pool *p);

/* Give task (borrowed) to an idle worker (there must be one: busy < size),
 * timeout_seconds > 0 to kill it past then. A worker that died while idle is
 * replaced first. KILN_E_OK, or an error (no worker could be started, the
 * task too large). */
kiln_status kiln_pool_submit(kiln_pool *p, const json_t *task, double timeout_seconds, void *tag,
                             kiln_error *err);

/* Wait up to timeout_ms (-1: no limit) for a worker's task to end, or for
 * wake_fd (-1: none) to be readable. 1 with *ev filled, 0 when the time
 * passed or wake_fd is readable, -1 with err (a worker could not be
 * replaced). A worker that crashed or timed out is replaced at once. */
int kiln_pool_wait(kiln_pool *p, int wake_fd, int timeout_ms, kiln_pool_event *ev,
                   kiln_error *err);

/* SIGKILL every busy worker's process group: their tasks come back from
 * kiln_pool_wait as KILN_POOL_KILLED. */
void kiln_pool_kill(kiln_pool *p);

/* Tell idle workers to exit, kill busy ones, wait for all. */
void kiln_pool_free(kiln_pool *p);

#endif
