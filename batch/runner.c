/*
 * runner.c - a batch, run (runner.h).
 *
 * One loop, single-threaded (the workers are forked from it): take a job
 * when a worker is free and no stop was asked for, else wait for a worker's
 * answer, the stop descriptor or the next progress tick. Workers are started
 * only when the first job that has to run comes: a batch found done in its
 * journal forks nothing.
 */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "execute.h"
#include "journal.h"
#include "pool.h"
#include "../common/dirs.h"
#include "../common/banned.h"

void kiln_batch_item_release(kiln_batch_item *item)
{
    free(item->id);
    json_decref(item->task);
    json_decref(item->failed);
    json_decref(item->deferred);
    memset(item, 0, sizeof *item);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Journal lines wait here until the files they name are durable: one
 * syncfs for many documents instead of an fsync each (which kept a worker
 * waiting on the disk for longer than a small document took to make). */
#define PENDING_MAX 256
#define PENDING_SECONDS 0.5

typedef struct batch {
    const kiln_batch_options *opt;
    kiln_journal *journal;
    kiln_pool *pool;
    int out_fd;
    kiln_batch_summary sum;
    double started, last_tick;
    json_t *pending; /* entries finished, not yet journaled */
    double pending_since;
} batch;

/* Is the file the journal names still what it recorded? The size, mtime and
 * inode when they are unchanged (journal.h says why that is enough), else
 * the contents hashed again. Never through a link. */
static int file_intact(const batch *b, const kiln_journal_file *f)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int fd = (int)syscall(SYS_openat2, b->out_fd, f->name, &how, sizeof how);
    if (fd < 0)
        return 0;
    struct stat st;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == f->bytes;
    close(fd);
    if (!ok)
        return 0;
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (mtime == f->mtime_ns && (uint64_t)st.st_ino == f->inode)
        return 1;
    unsigned char sha[32];
    uint64_t bytes, inode;
    int64_t mt;
    return kiln_file_sha256(b->out_fd, f->name, sha, &bytes, &mt, &inode) == 0 &&
           bytes == f->bytes && memcmp(sha, f->sha256, 32) == 0;
}

/* 1 when the journal's result for item stands (it is skipped), with *ok
 * whether that result is a success. */
static int already_done(const batch *b, const kiln_batch_item *item, int *ok)
{
    const kiln_journal_entry *e = kiln_journal_find(b->journal, item->id);
    if (!e || !e->has_input_sha256 || memcmp(e->input_sha256, item->input_sha256, 32) != 0)
        return 0;
    if (!e->ok) {
        /* A job killed past the job timeout gets another go under a longer one. */
        double now_limit = b->opt->job_timeout, then_limit = e->job_timeout;
        int longer = e->timed_out &&
                     (now_limit <= 0 || (then_limit > 0 && now_limit > then_limit));
        *ok = 0;
        return !b->opt->retry_failed && !longer;
    }
    for (size_t i = 0; i < e->file_count; i++)
        if (!file_intact(b, &e->files[i]))
            return 0;
    *ok = 1;
    return 1;
}

static void progress(batch *b, const json_t *entry)
{
    b->sum.progress.elapsed = now_seconds() - b->started;
    b->sum.progress.running = b->pool ? kiln_pool_busy(b->pool) : 0;
    if (b->opt->on_progress)
        b->opt->on_progress(b->opt->progress_arg, &b->sum.progress, entry);
    b->last_tick = now_seconds();
}

static void iso_now(char out[64])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

/* The journal line of a finished job: who it was, then what it did (the
 * worker's result members, or an error saying how it ended). */
static json_t *entry_for(const kiln_batch_item *item, const json_t *outcome, double wall,
                         double job_timeout)
{
    char hex[65], when[64];
    kiln_sha256_hex(item->input_sha256, hex);
    iso_now(when);
    const char *status = json_string_value(json_object_get(outcome, "status"));
    json_t *e = json_pack("{s:s, s:s, s:s}", "id", item->id, "status",
                          status && strcmp(status, "ok") == 0 ? "ok" : "failed", "kind",
                          item->kind ? item->kind : "render");
    if (!e)
        return NULL;
    if (item->line)
        json_object_set_new(e, "line", json_integer((json_int_t)item->line));
    json_object_set_new(e, "input_sha256", json_string(hex));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)outcome, key, v)
        if (strcmp(key, "status") != 0)
            json_object_set(e, key, v);
    if (!json_object_get(e, "files"))
        json_object_set_new(e, "files", json_array());
    if (!json_object_get(e, "errors"))
        json_object_set_new(e, "errors", json_array());
    json_object_set_new(e, "wall_seconds", json_real((double)(long long)(wall * 1e6) / 1e6));
    json_object_set_new(e, "job_timeout", json_real(job_timeout));
    json_object_set_new(e, "finished_at", json_string(when));
    return e;
}

/* An outcome made here, for a job whose worker gave none. */
static json_t *outcome_error(const char *code, const char *message)
{
    return json_pack("{s:s, s:[{s:s, s:s}], s:i}", "status", "failed", "errors", "code", code,
                     "message", message, "more_errors", 0);
}

/* Make the pending entries' files durable (one syncfs of the output's file
 * system), then journal the entries: a line never names a file that could
 * still be lost. */
static kiln_status flush(batch *b, kiln_error *err)
{
    size_t n = json_array_size(b->pending);
    if (n == 0)
        return KILN_E_OK;
    if (syncfs(b->out_fd) != 0)
        return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot sync %s: %s", b->opt->out_dir,
                              strerror(errno));
    kiln_status st = KILN_E_OK;
    for (size_t i = 0; i < n && st == KILN_E_OK; i++)
        st = kiln_journal_append(b->journal, json_array_get(b->pending, i), err);
    json_array_clear(b->pending);
    if (st == KILN_E_OK)
        st = kiln_journal_sync(b->journal, 0, err);
    return st;
}

static kiln_status flush_due(batch *b, kiln_error *err)
{
    size_t n = json_array_size(b->pending);
    if (n == 0 || (n < PENDING_MAX && now_seconds() - b->pending_since < PENDING_SECONDS))
        return KILN_E_OK;
    return flush(b, err);
}

static kiln_status record(batch *b, const kiln_batch_item *item, const json_t *outcome,
                          double wall, kiln_error *err)
{
    json_t *e = entry_for(item, outcome, wall, b->opt->job_timeout);
    if (!e)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    if (json_array_size(b->pending) == 0)
        b->pending_since = now_seconds();
    if (json_array_append(b->pending, e) != 0) {
        json_decref(e);
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    }
    if (strcmp(json_string_value(json_object_get(e, "status")), "ok") == 0)
        b->sum.progress.ok++;
    else
        b->sum.progress.failed++;
    progress(b, e);
    json_decref(e);
    return flush_due(b, err);
}

/* A worker's task ended: journal it (a killed one is not: it runs next
 * time). */
static kiln_status settle(batch *b, kiln_pool_event *ev, kiln_error *err)
{
    kiln_batch_item *item = ev->tag;
    kiln_status st = KILN_E_OK;
    json_t *outcome = NULL;
    char message[256];
    switch (ev->outcome) {
    case KILN_POOL_DONE:
        outcome = ev->result;
        ev->result = NULL;
        break;
    case KILN_POOL_CRASHED:
        if (ev->signal)
            snprintf(message, sizeof message,
                     "the worker doing this job was killed by signal %d (%s)", ev->signal,
                     strsignal(ev->signal));
        else
            snprintf(message, sizeof message,
                     "the worker doing this job exited with status %d without a result",
                     ev->exit_status);
        outcome = outcome_error("crashed", message);
        break;
    case KILN_POOL_TIMED_OUT:
        snprintf(message, sizeof message, "the job ran past the job timeout of %g s",
                 b->opt->job_timeout);
        outcome = outcome_error("timeout", message);
        break;
    case KILN_POOL_KILLED:
        b->sum.killed++;
        break;
    }
    if (ev->outcome != KILN_POOL_KILLED)
        st = outcome ? record(b, item, outcome, ev->wall_seconds, err)
                     : kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    json_decref(outcome);
    kiln_batch_item_release(item);
    free(item);
    return st;
}

/* The next job: skipped, failed at once, or given to a worker. */
static kiln_status take(batch *b, kiln_batch_source *src, kiln_batch_item *item, kiln_error *err)
{
    int ok;
    if (already_done(b, item, &ok)) {
        b->sum.progress.skipped++;
        if (ok)
            b->sum.progress.ok++;
        else
            b->sum.progress.failed++;
        /* The front end hears of it too: {"id", "status", "line", "skipped": true} */
        json_t *e = json_pack("{s:s, s:s, s:b}", "id", item->id, "status", ok ? "ok" : "failed",
                              "skipped", 1);
        if (e && item->line)
            json_object_set_new(e, "line", json_integer((json_int_t)item->line));
        progress(b, e);
        json_decref(e);
        kiln_batch_item_release(item);
        return KILN_E_OK;
    }
    if (item->deferred && src->build && src->build(src->arg, item, err) != 0) {
        kiln_batch_item_release(item);
        return err->code;
    }
    if (item->failed || !item->task) {
        json_t *outcome = item->failed ? json_deep_copy(item->failed) : json_object();
        json_object_set_new(outcome, "status", json_string("failed"));
        kiln_status st = record(b, item, outcome, 0, err);
        json_decref(outcome);
        kiln_batch_item_release(item);
        return st;
    }
    if (!b->pool && !(b->pool = kiln_pool_new(b->opt->workers, kiln_batch_execute, NULL, err))) {
        kiln_batch_item_release(item);
        return err->code;
    }
    kiln_batch_item *held = malloc(sizeof *held);
    if (!held) {
        kiln_batch_item_release(item);
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    }
    *held = *item;
    memset(item, 0, sizeof *item);
    kiln_status st = kiln_pool_submit(b->pool, held->task, b->opt->job_timeout, held, err);
    /* The worker has its own copy now. */
    json_decref(held->task);
    held->task = NULL;
    if (st != KILN_E_OK) {
        kiln_batch_item_release(held);
        free(held);
    }
    return st;
}

/* The staging area, emptied of what an earlier, killed batch left. */
static kiln_status prepare_staging(const char *out_dir, kiln_error *err)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", out_dir, KILN_BATCH_STAGING) >= (int)sizeof path)
        return kiln_error_set(err, KILN_E_WRITE, NULL, "the output directory's path is too long");
    kiln_remove_tree(path);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create %s: %s", path,
                              strerror(errno));
    return KILN_E_OK;
}

kiln_status kiln_batch_run(const kiln_batch_options *opt, kiln_batch_source *src,
                           kiln_batch_summary *out, kiln_error *err)
{
    batch b;
    memset(&b, 0, sizeof b);
    b.opt = opt;
    b.sum.progress.total = opt->total;
    b.started = b.last_tick = now_seconds();
    b.out_fd = open(opt->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (b.out_fd < 0)
        return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot open %s: %s", opt->out_dir,
                              strerror(errno));
    /* One batch per output directory at a time: a second would empty the
     * first's staging area and compact its journal from under it. The lock
     * goes with the descriptor, so a killed batch leaves none behind. */
    kiln_status st;
    if (flock(b.out_fd, LOCK_EX | LOCK_NB) != 0) {
        st = kiln_error_set(err, KILN_E_WRITE, NULL,
                            errno == EWOULDBLOCK
                                ? "another kiln batch is using %s: wait for it to end"
                                : "cannot lock %s: %s",
                            opt->out_dir, strerror(errno));
        goto close_out;
    }
    if ((st = prepare_staging(opt->out_dir, err)) != KILN_E_OK)
        goto close_out;
    if (!(b.pending = json_array())) {
        st = kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        goto close_out;
    }
    if (!(b.journal = kiln_journal_open(opt->out_dir, err))) {
        st = err->code;
        goto close_out;
    }
    progress(&b, NULL);
    int exhausted = 0;
    kiln_error fatal;
    memset(&fatal, 0, sizeof fatal);
    int interval_ms = opt->progress_interval > 0 ? (int)(opt->progress_interval * 1000) : 1000;
    for (;;) {
        kiln_batch_stop stop = opt->stop ? opt->stop(opt->stop_arg) : KILN_BATCH_GO;
        if (fatal.code != KILN_E_OK && stop == KILN_BATCH_GO)
            stop = KILN_BATCH_DRAIN;
        if (stop != KILN_BATCH_GO && !b.sum.progress.stopping && fatal.code == KILN_E_OK) {
            b.sum.progress.stopping = 1;
            b.sum.stopped = 1;
            progress(&b, NULL);
        }
        if (stop == KILN_BATCH_KILL && b.pool)
            kiln_pool_kill(b.pool);
        size_t busy = b.pool ? kiln_pool_busy(b.pool) : 0;
        if (stop == KILN_BATCH_GO && !exhausted && (!b.pool || busy < kiln_pool_size(b.pool))) {
            kiln_batch_item item;
            memset(&item, 0, sizeof item);
            int r = src->next(src->arg, &item, &fatal);
            if (r == 0)
                exhausted = 1;
            else if (r > 0 && take(&b, src, &item, &fatal) != KILN_E_OK &&
                     fatal.code == KILN_E_OK)
                fatal.code = KILN_E_INTERNAL;
            continue;
        }
        if (busy == 0)
            break;
        kiln_pool_event ev;
        int r = kiln_pool_wait(b.pool, opt->stop_fd, interval_ms, &ev, &fatal);
        if (r < 0)
            break;
        if (r > 0 && settle(&b, &ev, &fatal) != KILN_E_OK && fatal.code == KILN_E_OK)
            fatal.code = KILN_E_INTERNAL;
        if (now_seconds() - b.last_tick >= interval_ms / 1000.0)
            progress(&b, NULL);
        /* fdatasync'd about every second while lines come (journal.h) */
        if (flush_due(&b, &fatal) != KILN_E_OK ||
            kiln_journal_sync(b.journal, 0, &fatal) != KILN_E_OK)
            break;
    }
    kiln_error sync_err;
    memset(&sync_err, 0, sizeof sync_err);
    kiln_status sync_st = flush(&b, &sync_err);
    if (sync_st == KILN_E_OK)
        sync_st = kiln_journal_sync(b.journal, 1, &sync_err);
    if (fatal.code != KILN_E_OK) {
        *err = fatal;
        st = fatal.code;
    } else if (sync_st != KILN_E_OK) {
        *err = sync_err;
        st = sync_st;
    }
    size_t finished = b.sum.progress.ok + b.sum.progress.failed;
    b.sum.not_run = opt->total > finished ? opt->total - finished : 0;
    progress(&b, NULL);
    *out = b.sum;
    kiln_pool_free(b.pool);
    kiln_journal_free(b.journal);
close_out:
    close(b.out_fd);
    json_decref(b.pending);
    return st;
}
