/*
 * jobs.c - the bounded pool every render and run goes through (api.h).
 *
 * A fixed set of worker threads takes jobs from one FIFO queue. The queue
 * is bounded so that a burst of requests becomes 429s rather than memory:
 * a job is refused when queue_max jobs already wait for a worker. A job
 * that a free worker will take does not count as waiting, so queue_max 0
 * still lets every free worker take one. A worker is free when it runs no
 * job, whether or not it has reached its wait yet: counting the workers
 * asleep on `wake` instead refused the first job of a pool just started,
 * and a job arriving as a worker was between two.
 */
#include "service/api.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "../common/banned.h"

typedef struct job {
    struct job *next;
    void (*fn)(void *arg);
    void *arg;
} job;

struct kiln_jobs {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a job arrived, or the pool is stopping */
    job *head, *tail;
    unsigned queued;  /* jobs in the queue */
    unsigned running; /* jobs in fn() now */
    unsigned queue_max;
    int stopping;
    pthread_t *threads;
    unsigned thread_count;
};

static void *worker(void *arg)
{
    kiln_jobs *jobs = arg;
    pthread_mutex_lock(&jobs->lock);
    for (;;) {
        while (!jobs->stopping && !jobs->head)
            pthread_cond_wait(&jobs->wake, &jobs->lock);
        /* Stopping: what is still queued is kiln_jobs_shutdown's to cancel. */
        if (jobs->stopping)
            break;
        job *j = jobs->head;
        jobs->head = j->next;
        if (!jobs->head)
            jobs->tail = NULL;
        jobs->queued--;
        jobs->running++;
        pthread_mutex_unlock(&jobs->lock);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&jobs->lock);
        jobs->running--;
    }
    pthread_mutex_unlock(&jobs->lock);
    return NULL;
}

kiln_status kiln_jobs_init(kiln_jobs **out, unsigned workers, unsigned queue_max, kiln_error *err)
{
    *out = NULL;
    if (workers == 0)
        return kiln_error_set(err, KILN_E_USAGE, NULL, "the job pool needs at least one worker");
    kiln_jobs *jobs = calloc(1, sizeof *jobs);
    if (!jobs)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    jobs->threads = calloc(workers, sizeof *jobs->threads);
    if (!jobs->threads) {
        free(jobs);
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    }
    jobs->queue_max = queue_max;
    pthread_mutex_init(&jobs->lock, NULL);
    pthread_cond_init(&jobs->wake, NULL);
    for (unsigned i = 0; i < workers; i++) {
        int rc = pthread_create(&jobs->threads[i], NULL, worker, jobs);
        if (rc != 0) {
            kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start a job worker: %s",
                           strerror(rc));
            kiln_jobs_shutdown(jobs, NULL);
            return KILN_E_INTERNAL;
        }
        jobs->thread_count++;
    }
    *out = jobs;
    return KILN_E_OK;
}

int kiln_jobs_submit(kiln_jobs *jobs, void (*fn)(void *arg), void *arg)
{
    job *j = malloc(sizeof *j);
    if (!j)
        return -1;
    j->next = NULL;
    j->fn = fn;
    j->arg = arg;
    pthread_mutex_lock(&jobs->lock);
    /* Jobs beyond the free workers wait; at most queue_max of them. */
    unsigned free_workers = jobs->thread_count - jobs->running;
    if (jobs->stopping || jobs->queued >= jobs->queue_max + free_workers) {
        pthread_mutex_unlock(&jobs->lock);
        free(j);
        return -1;
    }
    if (jobs->tail)
        jobs->tail->next = j;
    else
        jobs->head = j;
    jobs->tail = j;
    jobs->queued++;
    pthread_cond_signal(&jobs->wake);
    pthread_mutex_unlock(&jobs->lock);
    return 0;
}

unsigned kiln_jobs_drop_gone(kiln_jobs *jobs, int (*gone)(void *arg), void (*dropped)(void *arg))
{
    job *out = NULL, **at;
    unsigned n = 0;
    pthread_mutex_lock(&jobs->lock);
    at = &jobs->head;
    jobs->tail = NULL;
    while (*at) {
        job *j = *at;
        if (gone(j->arg)) {
            *at = j->next;
            jobs->queued--;
            j->next = out;
            out = j;
            n++;
        } else {
            jobs->tail = j;
            at = &j->next;
        }
    }
    pthread_mutex_unlock(&jobs->lock);
    /* Outside the lock: what a dropped job does (answering its request)
     * may need the pool. */
    while (out) {
        job *j = out;
        out = j->next;
        dropped(j->arg);
        free(j);
    }
    return n;
}

void kiln_jobs_counts(kiln_jobs *jobs, unsigned *running, unsigned *queued)
{
    pthread_mutex_lock(&jobs->lock);
    if (running)
        *running = jobs->running;
    if (queued)
        *queued = jobs->queued;
    pthread_mutex_unlock(&jobs->lock);
}

void kiln_jobs_shutdown(kiln_jobs *jobs, void (*cancel)(void *arg))
{
    if (!jobs)
        return;
    pthread_mutex_lock(&jobs->lock);
    jobs->stopping = 1;
    job *waiting = jobs->head;
    jobs->head = jobs->tail = NULL;
    jobs->queued = 0;
    pthread_cond_broadcast(&jobs->wake);
    pthread_mutex_unlock(&jobs->lock);

    /* Cancel the queued jobs first: their clients get their 503 now rather
     * than after the running jobs end. */
    while (waiting) {
        job *next = waiting->next;
        if (cancel)
            cancel(waiting->arg);
        free(waiting);
        waiting = next;
    }
    for (unsigned i = 0; i < jobs->thread_count; i++)
        pthread_join(jobs->threads[i], NULL);
    pthread_cond_destroy(&jobs->wake);
    pthread_mutex_destroy(&jobs->lock);
    free(jobs->threads);
    free(jobs);
}
