/*
 * runner.h - a batch, run: its jobs taken one at a time from a source,
 * each skipped when the journal holds its result already, else given to a
 * worker, and its result journaled (docs/batch.md).
 *
 * The runner is the library under `kiln batch` (and, next, the service's
 * batches): it never prints; what happens reaches the front end through the
 * progress callback, and a stop comes from the front end through stop().
 *
 * A job is skipped (resume) when its id's last journal entry is "ok", was
 * made from inputs with the same hash, and names files that are all still
 * in the output directory with the hash recorded; or, unless retry_failed,
 * when that entry is "failed" with the same input hash (its failure stands
 * and is counted). Every other job runs.
 */
#ifndef KILN_BATCH_RUNNER_H
#define KILN_BATCH_RUNNER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/error.h"

/* One job as a source yields it. */
typedef struct kiln_batch_item {
    char *id;                       /* malloc'd: the runner frees it */
    uint64_t line;                  /* where it came from (the JSONL or data line), 0 = none */
    unsigned char input_sha256[32]; /* everything the job's outcome depends on */
    json_t *task;                   /* new: what the worker gets (execute.h); NULL when failed */
    json_t *failed;                 /* new: {"errors", "more_errors"}: the job failed before it
                                       could run (a mail merge error) */
    json_t *deferred;               /* new, the source's: what build() makes the task from */
    const char *kind;               /* "render" / "run" (static) */
} kiln_batch_item;

typedef struct kiln_batch_source {
    /* The next job: 1 with *item, 0 at the end, -1 with err (the batch
     * cannot go on: an input that became unreadable). */
    int (*next)(void *arg, kiln_batch_item *item, kiln_error *err);
    /* NULL, or: make the task (or the failure) of an item next() left
     * deferred, once the journal says it has to run. 0, or -1 with err. */
    int (*build)(void *arg, kiln_batch_item *item, kiln_error *err);
    void *arg;
} kiln_batch_source;

typedef struct kiln_batch_progress {
    size_t total;   /* jobs in the batch */
    size_t ok;      /* finished ok (skipped ones included) */
    size_t failed;  /* finished failed (skipped ones included) */
    size_t skipped; /* of those, found done in the journal */
    size_t running;
    double elapsed; /* seconds since the batch began */
    int stopping;   /* a stop was asked for: no more jobs are started */
} kiln_batch_progress;

typedef enum {
    KILN_BATCH_GO = 0, /* carry on */
    KILN_BATCH_DRAIN,  /* start no more jobs; let the running ones finish */
    KILN_BATCH_KILL,   /* ... and kill the running ones now */
} kiln_batch_stop;

typedef struct kiln_batch_options {
    const char *out_dir; /* absolute; exists */
    unsigned workers;    /* jobs at once, 1..KILN_POOL_WORKERS_MAX */
    int retry_failed;    /* run failed jobs again */
    double job_timeout;  /* seconds a job may take before its worker is killed; 0 = none */
    size_t total;        /* the number of jobs the source yields (the caller counted them) */
    /* After each job ends (entry: its journal line, borrowed) or is skipped
     * (entry: {"id", "status", "line", "skipped": true}), and about every
     * interval seconds (entry NULL). */
    void (*on_progress)(void *arg, const kiln_batch_progress *p, const json_t *entry);
    void *progress_arg;
    double progress_interval;
    /* Asked after each event and whenever stop_fd is readable (-1: none). */
    kiln_batch_stop (*stop)(void *arg);
    void *stop_arg;
    int stop_fd;
} kiln_batch_options;

typedef struct kiln_batch_summary {
    kiln_batch_progress progress;
    size_t not_run; /* jobs not started because of a stop */
    size_t killed;  /* jobs killed by a stop (no journal line: they run next time) */
    int stopped;    /* the batch ended early on a stop */
} kiln_batch_summary;

/* Run the batch. KILN_E_OK when it went through (whatever the jobs did: the
 * summary says), else the error that stopped it (the journal cannot be
 * written, a worker cannot be started, a source error). */
kiln_status kiln_batch_run(const kiln_batch_options *opt, kiln_batch_source *src,
                           kiln_batch_summary *out, kiln_error *err);

/* Free what an item holds. */
void kiln_batch_item_release(kiln_batch_item *item);

#endif
