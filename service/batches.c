/*
 * batches.c - /v1/batches: many documents at once, each batch a `kiln
 * batch` child whose journal the server reads into its store
 * (docs/serve.md, "Batches"; the batch itself: docs/batch.md).
 *
 * Why a child and not the runner in the server: the runner forks its
 * workers and must be single-threaded when it does (batch/pool.h), and a
 * batch that runs for an hour should take nothing of the server with it
 * when a writer crashes. The child is
 *
 *   kiln batch DIR/jobs.jsonl -o DIR/out --progress json -j N --job-timeout T
 *
 * (or --template DIR/template.json --data DIR/data.csv --name ...), DIR
 * being DATA_DIR/batches/<id>/: jobs.jsonl is the request's jobs with each
 * run's input ids rewritten as {"path": "inputs/<id>", "name": <stored
 * filename>}, the inputs hard-linked (else copied) into DIR/inputs/. Not
 * under DATA_DIR/work, which a start empties: the journal DIR/out/
 * results.jsonl is what a restarted server resumes from.
 *
 * The manager thread starts queued batches (at most --batches-running at
 * once, each child at nice 10 so that interactive renders, runs and cells
 * keep the machine), reads each child's stderr events, and on every
 * {"event": "job"} reads the journal's new lines: each finished job's files
 * are stored (source "document" or "output") and its line, the files' ids
 * added, goes into batch_results in the same transaction as the batch's
 * counts. So a server killed with kill -9 loses nothing: on its next start
 * every batch still queued or running is started again, the child it left
 * is ended first (a journal has one writer), the journal's lines without a
 * row (the server died between the two) are imported, and the new child
 * skips every job journaled before (docs/batch.md, "Resume").
 *
 * Locking: m->lock guards the list and every batch's object and status,
 * and is held while a batch's row is written, so a cancel from an HTTP
 * thread and the manager's updates never cross. Files are stored and
 * journals read outside it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "service/api_internal.h"
#include "service/http.h"
#include "service/json_budget.h"
#include "artifacts/render.h"
#include "batch/journal.h"
#include "batch/sources.h"
#include "contract/batch.h"
#include "contract/job.h"
#include "common/fdio.h"
#include "common/media_type.h"
#include "common/utf8.h"
#include "contract/errors.h"
#include "../common/banned.h"

/* A line of the child's stderr kept whole (its events are far smaller);
 * longer ones are dropped. */
#define STDERR_LINE_MAX (64u << 10)
/* What a failed batch's object keeps of the child's stderr. */
#define ERROR_TAIL 1024
/* Results a GET .../results reads from the store at a time. */
#define RESULTS_PAGE 128
/* After a stop's second SIGTERM, seconds before the child's group is
 * killed outright. */
#define STOP_KILL_SECONDS 10
/* The children's nice value. */
#define BATCH_NICE 10

typedef struct svc_batch {
    struct svc_batch *next;
    kiln_store_batch row; /* id, tenant, status, child; row.object unused */
    json_t *object;       /* the batch object as GET answers it */
    char dir[PATH_MAX];
    int reconciled; /* this server has read its journal once, from the start */
    int cancel;     /* cancelled: its child (if any) is being stopped */
    /* the child */
    pid_t pid; /* 0: none */
    int err_fd, out_fd;
    char *line;
    size_t line_len;
    int line_over;
    char tail[ERROR_TAIL];
    int terms;      /* SIGTERMs sent */
    double term_at; /* when the last was */
    /* the journal */
    uint64_t j_off;
    dev_t j_dev;
    ino_t j_ino;
    int j_skip; /* in a line too long to read: skipping to its end */
} svc_batch;

struct kiln_batches {
    pthread_mutex_t lock;
    svc_batch *list;
    int wake_fd;
    pthread_t thread;
    int started;
    int quit; /* the server stops: children are stopped, statuses stay */
    char root[PATH_MAX];
    char *jbuf; /* the journal reader's buffer (the manager's) */
    size_t jcap;
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void wake(struct kiln_batches *m)
{
    uint64_t one = 1;
    ssize_t rc = write(m->wake_fd, &one, sizeof one);
    (void)rc;
}

static json_t *time_json(int64_t t)
{
    char buf[32];
    kiln_api_time(t, buf, sizeof buf);
    return json_string(buf);
}

static int is_active(const char *status)
{
    return strcmp(status, "queued") == 0 || strcmp(status, "running") == 0;
}

/* The batch's row written from its object and status. Under m->lock. */
static void persist(kiln_server *srv, svc_batch *b)
{
    json_object_set_new(b->object, "status", json_string(b->row.status));
    char *text = json_dumps(b->object, JSON_COMPACT);
    if (!text)
        return;
    b->row.object = text;
    kiln_error err;
    memset(&err, 0, sizeof err);
    if (kiln_store_batch_put(srv->store, &b->row, &err) != KILN_STORE_OK)
        http_event(srv, "batch_store_failed",
                   json_pack("{s:s, s:s}", "batch", b->row.id, "message", err.message));
    b->row.object = NULL;
    free(text);
}

static void set_status(svc_batch *b, const char *status)
{
    snprintf(b->row.status, sizeof b->row.status, "%s", status);
}

static void batch_free(svc_batch *b)
{
    if (!b)
        return;
    if (b->err_fd >= 0)
        close(b->err_fd);
    if (b->out_fd >= 0)
        close(b->out_fd);
    json_decref(b->object);
    free(b->line);
    free(b);
}

static svc_batch *batch_new(struct kiln_batches *m, const kiln_store_batch *row, json_t *object)
{
    svc_batch *b = calloc(1, sizeof *b);
    if (!b) {
        json_decref(object);
        return NULL;
    }
    b->row = *row;
    b->row.object = NULL;
    b->object = object;
    b->err_fd = b->out_fd = -1;
    snprintf(b->dir, sizeof b->dir, "%.4000s/%s", m->root, row->id);
    return b;
}

/* ---- the child ---- */

/* Field 22 of /proc/PID/stat (the start time in clock ticks): what, with
 * the pid, names one process for good. -1 when there is none, or it is a
 * zombie (gone but for its reaping). */
static long long proc_start(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold anything */
    if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
        return -1;
    p += 2; /* field 3, the state */
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    return p ? strtoll(p, NULL, 10) : -1;
}

/* The child a previous server left for b, if it still runs: killed (its
 * group; its workers die with it, batch/pool.h), and waited for, so that
 * the journal has one writer when the next child starts. */
static void end_stale_child(kiln_server *srv, const kiln_store_batch *row)
{
    pid_t pid = (pid_t)row->child_pid;
    if (pid <= 1 || row->child_start <= 0 || proc_start(pid) != row->child_start)
        return;
    http_event(srv, "batch_stale_child",
               json_pack("{s:s, s:i}", "batch", row->id, "pid", (int)pid));
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    for (int i = 0; i < 1000 && proc_start(pid) == row->child_start; i++) {
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}

typedef struct spawn_call {
    kiln_server *srv;
    char **argv;
    kiln_api_spawned sp;
    kiln_api_reply reply;
    int rc;
} spawn_call;

/* The spawn on a thread of its own, which first lowers its priority: on
 * Linux the nice value is a thread's, and a child takes its creator's, so
 * the batch and every worker it forks run at BATCH_NICE while the manager
 * (which holds the store's lock now and then) keeps the server's. */
static void *spawn_niced(void *arg)
{
    spawn_call *c = arg;
    if (setpriority(PRIO_PROCESS, (id_t)gettid(), BATCH_NICE) != 0)
        http_event(c->srv, "batch_nice_failed", json_pack("{s:s}", "message", strerror(errno)));
    c->sp.entry = NULL; /* not on the runs' list: batches_stop ends it */
    c->rc = kiln_api_spawn(&c->srv->api, c->argv, NULL, 0, 0, &c->sp, &c->reply);
    return NULL;
}

/* The child's argv (strings in buf: each at most PATH_MAX + 64 bytes). */
static int child_argv(kiln_server *srv, svc_batch *b, char *argv[32],
                      char bufs[12][PATH_MAX + 64])
{
    int n = 0, k = 0;
    argv[n++] = (char *)srv->opt.kiln_exe;
    argv[n++] = "batch";
    const json_t *merge = json_object_get(b->object, "merge");
    if (merge) {
        struct stat st;
        argv[n++] = "--template";
        snprintf(bufs[k], sizeof bufs[k], "%s/template.json", b->dir);
        argv[n++] = bufs[k++];
        argv[n++] = "--data";
        snprintf(bufs[k], sizeof bufs[k], "%s/data.csv", b->dir);
        if (stat(bufs[k], &st) != 0)
            snprintf(bufs[k], sizeof bufs[k], "%s/data.jsonl", b->dir);
        argv[n++] = bufs[k++];
        argv[n++] = "--name";
        argv[n++] = (char *)json_string_value(json_object_get(merge, "name"));
        argv[n++] = "--format";
        argv[n++] = (char *)json_string_value(json_object_get(merge, "format"));
        argv[n++] = "--missing";
        argv[n++] = (char *)json_string_value(json_object_get(merge, "missing"));
        for (int i = 0; i < n; i++)
            if (!argv[i])
                return -1;
    } else {
        snprintf(bufs[k], sizeof bufs[k], "%s/jobs.jsonl", b->dir);
        argv[n++] = bufs[k++];
    }
    argv[n++] = "-o";
    snprintf(bufs[k], sizeof bufs[k], "%s/out", b->dir);
    argv[n++] = bufs[k++];
    argv[n++] = "--progress";
    argv[n++] = "json";
    argv[n++] = "-j";
    snprintf(bufs[k], sizeof bufs[k], "%u", srv->opt.batch_workers);
    argv[n++] = bufs[k++];
    argv[n++] = "--job-timeout";
    snprintf(bufs[k], sizeof bufs[k], "%u", srv->opt.batch_job_timeout);
    argv[n++] = bufs[k++];
    argv[n++] = "--max-bytes";
    snprintf(bufs[k], sizeof bufs[k], "%llu", (unsigned long long)srv->opt.max_file_bytes);
    argv[n++] = bufs[k++];
    argv[n] = NULL;
    return 0;
}

/* Start b's child. 0, or -1 with *why (the batch fails with it). */
static int start_child(kiln_server *srv, svc_batch *b, char *why, size_t cap)
{
    char *argv[32];
    static char bufs[12][PATH_MAX + 64]; /* the manager's thread only */
    if (child_argv(srv, b, argv, bufs) != 0) {
        snprintf(why, cap, "the batch's merge settings are missing");
        return -1;
    }
    spawn_call c = {.srv = srv, .argv = argv, .rc = -1};
    pthread_t t;
    if (pthread_create(&t, NULL, spawn_niced, &c) != 0) {
        snprintf(why, cap, "cannot start a thread to spawn kiln batch");
        return -1;
    }
    pthread_join(t, NULL);
    if (c.rc != 0) {
        snprintf(why, cap, "%s",
                 c.reply.log[0] ? c.reply.log : "cannot start kiln batch (shutting down)");
        json_decref(c.reply.body);
        return -1;
    }
    json_decref(c.reply.body);
    b->pid = c.sp.pid;
    b->err_fd = c.sp.err_fd;
    b->out_fd = c.sp.out_fd;
    fcntl(b->err_fd, F_SETFL, O_NONBLOCK);
    fcntl(b->out_fd, F_SETFL, O_NONBLOCK);
    b->line_len = 0;
    b->line_over = 0;
    b->tail[0] = '\0';
    b->terms = 0;
    b->row.child_pid = b->pid;
    b->row.child_start = proc_start(b->pid);
    return 0;
}

/* A line of the child's stderr that is no event: kept in the tail (the
 * error a failed batch reports). */
static void keep_tail(svc_batch *b, const char *line, size_t len)
{
    size_t have = strlen(b->tail);
    if (len >= sizeof b->tail - 1) {
        line += len - (sizeof b->tail - 2);
        len = sizeof b->tail - 2;
    }
    while (have > 0 && have + len + 2 > sizeof b->tail) {
        const char *nl = strchr(b->tail, '\n');
        size_t drop = nl ? (size_t)(nl - b->tail) + 1 : have;
        memmove(b->tail, b->tail + drop, have - drop + 1);
        have -= drop;
    }
    if (have)
        b->tail[have++] = '\n';
    memcpy(b->tail + have, line, len);
    b->tail[have + len] = '\0';
}

/* Read what the child wrote on stderr: 1 when a job event came (the
 * journal has news), 0 when not. */
static int read_events(svc_batch *b)
{
    int news = 0;
    char chunk[16384];
    for (;;) {
        ssize_t n = read(b->err_fd, chunk, sizeof chunk);
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            char c = chunk[i];
            if (c != '\n') {
                if (b->line_len >= STDERR_LINE_MAX) {
                    b->line_over = 1;
                    continue;
                }
                if (!b->line) {
                    b->line = malloc(STDERR_LINE_MAX + 1);
                    if (!b->line) {
                        b->line_over = 1;
                        continue;
                    }
                }
                b->line[b->line_len++] = c;
                continue;
            }
            if (!b->line_over && b->line) {
                b->line[b->line_len] = '\0';
                json_t *ev = b->line[0] == '{' ? json_loadb(b->line, b->line_len, 0, NULL) : NULL;
                const char *name = json_string_value(json_object_get(ev, "event"));
                if (name && strcmp(name, "job") == 0)
                    news = 1;
                else if (!ev)
                    keep_tail(b, b->line, b->line_len);
                json_decref(ev);
            }
            b->line_len = 0;
            b->line_over = 0;
        }
    }
    /* stdout stays empty (docs/batch.md); whatever comes is dropped. */
    while (b->out_fd >= 0 && read(b->out_fd, chunk, sizeof chunk) > 0)
        ;
    return news;
}

/* ---- the journal into the store ---- */

/* Store the files of one journal entry (borrowed, changed: each file gets
 * "file", the stored file object, or null and "file_error"; mtime_ns and
 * inode, the batch's own bookkeeping, go). */
static void store_files(kiln_server *srv, svc_batch *b, json_t *entry)
{
    const char *kind = json_string_value(json_object_get(entry, "kind"));
    int render = kind && strcmp(kind, "render") == 0;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(entry, "files"), i, f) {
        json_object_del(f, "mtime_ns");
        json_object_del(f, "inode");
        const char *name = json_string_value(json_object_get(f, "name"));
        if (!kiln_api_name_beneath(name)) {
            json_object_set_new(f, "file", json_null());
            continue;
        }
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/out/%s", b->dir, name);
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        /* A render's file is a document; a run's is one when it is of a
         * format Kiln renders (the run's render step made it, most likely),
         * else what the run wrote. */
        kiln_format fmt;
        kiln_store_source source = render || kiln_format_from_path(base, &fmt) == 0
                                       ? KILN_STORE_SOURCE_DOCUMENT
                                       : KILN_STORE_SOURCE_OUTPUT;
        kiln_store_file file;
        kiln_error err;
        memset(&err, 0, sizeof err);
        if (kiln_store_put_path(srv->store, b->row.tenant, path, base, kiln_media_type(base),
                                source, &file, &err) == KILN_STORE_OK) {
            json_object_set_new(f, "file", kiln_api_file_json(&file));
        } else {
            json_object_set_new(f, "file", json_null());
            json_object_set_new(f, "file_error", json_string(err.message));
        }
    }
}

/* counts.done: the jobs finished, ok or failed (the issue's {total, done, failed}). */
static void set_done(json_t *counts)
{
    json_object_set_new(counts, "done",
                        json_integer(json_integer_value(json_object_get(counts, "ok")) +
                                     json_integer_value(json_object_get(counts, "failed"))));
}

/* One journal line: unless its job has a result row already, its files
 * stored and its row and the batch's counts written. */
static void import_line(kiln_server *srv, svc_batch *b, const char *text, size_t len)
{
    json_t *entry = json_loadb(text, len, 0, NULL);
    const char *id = json_string_value(json_object_get(entry, "id"));
    const char *status = json_string_value(json_object_get(entry, "status"));
    if (!id || !status || kiln_store_batch_result_has(srv->store, b->row.id, id) != 0) {
        json_decref(entry);
        return;
    }
    store_files(srv, b, entry);
    char *line = json_dumps(entry, JSON_COMPACT);
    char job_id[KILN_BATCH_ID_MAX + 1];
    snprintf(job_id, sizeof job_id, "%s", id);
    int ok = strcmp(status, "ok") == 0;
    json_decref(entry); /* id and status were the entry's */
    if (!line)
        return;
    struct kiln_batches *m = srv->batches;
    pthread_mutex_lock(&m->lock);
    json_t *counts = json_object_get(b->object, "counts");
    const char *which = ok ? "ok" : "failed";
    json_object_set_new(counts, which,
                        json_integer(json_integer_value(json_object_get(counts, which)) + 1));
    set_done(counts);
    char *object = json_dumps(b->object, JSON_COMPACT);
    int inserted = 0;
    kiln_error err;
    memset(&err, 0, sizeof err);
    b->row.object = object;
    kiln_store_result r = object ? kiln_store_batch_result_put(srv->store, &b->row, job_id, line,
                                                               &inserted, &err)
                                 : KILN_STORE_ERROR;
    b->row.object = NULL;
    if (!inserted) /* the counts stay as the rows say */
        json_object_set_new(counts, which,
                            json_integer(json_integer_value(json_object_get(counts, which)) - 1));
    set_done(counts);
    pthread_mutex_unlock(&m->lock);
    if (r != KILN_STORE_OK)
        http_event(srv, "batch_store_failed",
                   json_pack("{s:s, s:s}", "batch", b->row.id, "message",
                             object ? err.message : "out of memory"));
    else if (inserted)
        kiln_metrics_batch_job(srv->metrics, which);
    free(object);
    free(line);
}

/* Read the journal's lines past what was read, importing each. The
 * journal is append-only while a child runs; a child starting may cut a
 * torn last line or rewrite it (renamed over: another inode), and then it
 * is read again from the start (the rows say which lines are in). */
static void sync_journal(kiln_server *srv, svc_batch *b)
{
    struct kiln_batches *m = srv->batches;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/out/results.jsonl", b->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return;
    }
    if (st.st_ino != b->j_ino || st.st_dev != b->j_dev || (uint64_t)st.st_size < b->j_off) {
        b->j_off = 0;
        b->j_skip = 0;
        b->j_ino = st.st_ino;
        b->j_dev = st.st_dev;
    }
    if (!m->jbuf) {
        m->jcap = KILN_JOURNAL_LINE_MAX + 65536;
        m->jbuf = malloc(m->jcap);
        if (!m->jbuf) {
            close(fd);
            return;
        }
    }
    size_t have = 0;
    for (;;) {
        ssize_t n = pread(fd, m->jbuf + have, m->jcap - have, (off_t)(b->j_off + have));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
        size_t start = 0;
        for (;;) {
            char *nl = memchr(m->jbuf + start, '\n', have - start);
            if (!nl)
                break;
            size_t len = (size_t)(nl - (m->jbuf + start));
            if (!b->j_skip && len > 0)
                import_line(srv, b, m->jbuf + start, len);
            b->j_skip = 0;
            start += len + 1;
        }
        b->j_off += start;
        memmove(m->jbuf, m->jbuf + start, have - start);
        have -= start;
        if (have == m->jcap) { /* a line past the longest: skipped */
            b->j_skip = 1;
            b->j_off += have;
            have = 0;
        }
    }
    close(fd);
}

/* ---- the manager ---- */

/* b's child ended with status (waitpid's): the batch's end, unless the
 * server is stopping (then it stays running and resumes next start). */
static void child_ended(kiln_server *srv, svc_batch *b, int status)
{
    struct kiln_batches *m = srv->batches;
    read_events(b);
    sync_journal(srv, b);
    close(b->err_fd);
    close(b->out_fd);
    b->err_fd = b->out_fd = -1;
    b->pid = 0;
    pthread_mutex_lock(&m->lock);
    b->row.child_pid = b->row.child_start = 0;
    const char *ended = NULL;
    if (b->cancel) {
        ended = "cancelled";
    } else if (m->quit) {
        ended = NULL; /* resumes at the next start */
    } else if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 1)) {
        ended = "completed";
    } else {
        ended = "failed";
        char why[ERROR_TAIL + 64];
        if (WIFSIGNALED(status))
            snprintf(why, sizeof why, "kiln batch ended by signal %d%s%s", WTERMSIG(status),
                     b->tail[0] ? ": " : "", b->tail);
        else
            snprintf(why, sizeof why, "kiln batch exited with status %d%s%s", WEXITSTATUS(status),
                     b->tail[0] ? ": " : "", b->tail);
        json_object_set_new(b->object, "error", json_string(why));
    }
    if (ended) {
        set_status(b, ended);
        json_object_set_new(b->object, "finished_at", time_json((int64_t)time(NULL)));
    }
    persist(srv, b);
    pthread_mutex_unlock(&m->lock);
    if (ended) {
        kiln_metrics_batch(srv->metrics, ended);
        /* Over: its results and files are in the store; the directory was for
         * resuming, and held a second copy of every file. */
        kiln_api_rmtree(b->dir);
    }
    http_event(srv, "batch_child_ended",
               json_pack("{s:s, s:s, s:i}", "batch", b->row.id, "status",
                         ended ? ended : "running", "exit",
                         WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
}

/* Signals toward a child being stopped (a cancel or the server's stop):
 * SIGTERM, another a moment later (the first lets running jobs finish, the
 * second kills them: docs/batch.md), then the group's SIGKILL. */
static void stop_child(svc_batch *b, double now)
{
    if (b->terms == 0 || (b->terms == 1 && now - b->term_at >= 0.3)) {
        kill(b->pid, SIGTERM);
        b->terms++;
        b->term_at = now;
    } else if (b->terms >= 2 && now - b->term_at >= STOP_KILL_SECONDS) {
        kill(-b->pid, SIGKILL);
        kill(b->pid, SIGKILL);
    }
}

/* Start what may start: queued batches (and, after a restart, running ones
 * without a child) while fewer than --batches-running have one. Batches
 * that ended leave the list. Under m->lock (let go while a child starts). */
static void start_and_prune(kiln_server *srv)
{
    struct kiln_batches *m = srv->batches;
    unsigned running = 0;
    for (svc_batch *b = m->list; b; b = b->next)
        running += b->pid != 0;
    /* Oldest first: the list is newest first, so walk it and remember the
     * last candidate each time round. */
    while (!m->quit && running < srv->opt.batches_running) {
        svc_batch *pick = NULL;
        for (svc_batch *b = m->list; b; b = b->next)
            if (!b->pid && !b->cancel && is_active(b->row.status))
                pick = b;
        if (!pick)
            break;
        svc_batch *b = pick;
        pthread_mutex_unlock(&m->lock);
        if (!b->reconciled) {
            /* A line journaled after the last row of a server that died. */
            sync_journal(srv, b);
            b->reconciled = 1;
        }
        char why[KILN_MESSAGE_MAX];
        int rc = start_child(srv, b, why, sizeof why);
        pthread_mutex_lock(&m->lock);
        if (rc != 0) {
            set_status(b, "failed");
            json_object_set_new(b->object, "error", json_string(why));
            json_object_set_new(b->object, "finished_at", time_json((int64_t)time(NULL)));
            persist(srv, b);
            kiln_metrics_batch(srv->metrics, "failed");
            continue;
        }
        if (!b->cancel) /* else cancelled while it started: the loop stops it */
            set_status(b, "running");
        if (json_is_null(json_object_get(b->object, "started_at")))
            json_object_set_new(b->object, "started_at", time_json((int64_t)time(NULL)));
        persist(srv, b);
        running++;
    }
    for (svc_batch **p = &m->list; *p;) {
        svc_batch *b = *p;
        if (!b->pid && (!is_active(b->row.status) || m->quit)) {
            *p = b->next;
            if (!is_active(b->row.status))
                kiln_api_rmtree(b->dir); /* a batch cancelled before it started */
            batch_free(b);
        } else {
            p = &b->next;
        }
    }
}

static void *manager_main(void *arg)
{
    kiln_server *srv = arg;
    struct kiln_batches *m = srv->batches;
    struct pollfd *pf = NULL;
    svc_batch **polled = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&m->lock);
    for (;;) {
        start_and_prune(srv);
        size_t n = 0;
        for (svc_batch *b = m->list; b; b = b->next)
            n += b->pid != 0;
        if (m->quit && n == 0)
            break;
        if (n + 1 > cap) {
            size_t grown = (n + 1) * 2;
            struct pollfd *npf = realloc(pf, grown * sizeof *npf);
            if (npf)
                pf = npf;
            svc_batch **np = realloc(polled, grown * sizeof *np);
            if (np)
                polled = np;
            if (!npf || !np) {
                pthread_mutex_unlock(&m->lock);
                struct timespec nap = {0, 100 * 1000 * 1000};
                nanosleep(&nap, NULL);
                pthread_mutex_lock(&m->lock);
                continue;
            }
            cap = grown;
        }
        double now = mono();
        size_t k = 0;
        pf[k++] = (struct pollfd){.fd = m->wake_fd, .events = POLLIN};
        for (svc_batch *b = m->list; b; b = b->next) {
            if (!b->pid)
                continue;
            if (b->cancel || m->quit)
                stop_child(b, now);
            polled[k] = b;
            pf[k++] = (struct pollfd){.fd = b->err_fd, .events = POLLIN};
        }
        pthread_mutex_unlock(&m->lock);
        /* A child's end is seen by waitpid: poll wakes at least twice a
         * second to look (its workers may hold the pipe a moment longer). */
        int r = poll(pf, k, 250);
        if (r > 0 && (pf[0].revents & POLLIN)) {
            uint64_t v;
            ssize_t got = read(m->wake_fd, &v, sizeof v);
            (void)got;
        }
        for (size_t i = 1; i < k; i++) {
            svc_batch *b = polled[i];
            if (r > 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) && read_events(b))
                sync_journal(srv, b);
            int status = 0;
            pid_t w = waitpid(b->pid, &status, WNOHANG);
            if (w == b->pid)
                child_ended(srv, b, status);
        }
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&m->lock);
    free(pf);
    free(polled);
    return NULL;
}

/* ---- start and stop ---- */

static void load_active(const kiln_store_batch *row, void *arg)
{
    kiln_server *srv = arg;
    struct kiln_batches *m = srv->batches;
    json_t *object = json_loads(row->object, 0, NULL);
    if (!json_is_object(object)) {
        json_decref(object);
        return;
    }
    svc_batch *b = batch_new(m, row, object);
    if (!b)
        return;
    b->next = m->list; /* oldest first in, so the list is newest first */
    m->list = b;
}

/* A directory under batches/ whose row never came (the server died while
 * the batch was made) is removed. */
static void remove_orphan_dirs(kiln_server *srv)
{
    struct kiln_batches *m = srv->batches;
    int fd = open(m->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        kiln_store_batch row;
        kiln_error err;
        memset(&err, 0, sizeof err);
        kiln_store_result r = kiln_store_batch_get(srv->store, NULL, de->d_name, &row, &err);
        /* ... and so is one of a batch that ended (the server died before it
         * removed it). */
        int over = r == KILN_STORE_OK && !is_active(row.status);
        kiln_store_batch_release(&row);
        if (r == KILN_STORE_NOT_FOUND || over) {
            char path[PATH_MAX * 2];
            snprintf(path, sizeof path, "%s/%s", m->root, de->d_name);
            kiln_api_rmtree(path);
        }
    }
    closedir(d);
}

kiln_status batches_start(kiln_server *srv, kiln_error *err)
{
    struct kiln_batches *m = calloc(1, sizeof *m);
    if (!m)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    pthread_mutex_init(&m->lock, NULL);
    srv->batches = m;
    m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m->wake_fd < 0)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot make an eventfd: %s",
                              strerror(errno));
    if (snprintf(m->root, sizeof m->root, "%s/batches", srv->opt.data_dir) >= 4000)
        return kiln_error_set(err, KILN_E_USAGE, "/data-dir",
                              "the data directory's path is too long");
    if (mkdir(m->root, 0700) != 0 && errno != EEXIST)
        return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create %s: %s", m->root,
                              strerror(errno));
    remove_orphan_dirs(srv);
    kiln_error e;
    memset(&e, 0, sizeof e);
    if (kiln_store_batch_list(srv->store, NULL, 1, 0, INT64_MAX, load_active, srv, NULL, &e) !=
        KILN_STORE_OK)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "reading the batches: %s", e.message);
    unsigned resumed = 0;
    for (svc_batch *b = m->list; b; b = b->next) {
        end_stale_child(srv, &b->row);
        b->row.child_pid = b->row.child_start = 0;
        resumed++;
    }
    if (resumed)
        http_event(srv, "batches_resumed", json_pack("{s:i}", "batches", (int)resumed));
    if (pthread_create(&m->thread, NULL, manager_main, srv) != 0)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start the batch manager");
    m->started = 1;
    return KILN_E_OK;
}

void batches_stop(kiln_server *srv)
{
    struct kiln_batches *m = srv->batches;
    if (!m || !m->started)
        return;
    pthread_mutex_lock(&m->lock);
    m->quit = 1;
    pthread_mutex_unlock(&m->lock);
    wake(m);
    pthread_join(m->thread, NULL);
    m->started = 0;
}

void batches_free(kiln_server *srv)
{
    struct kiln_batches *m = srv->batches;
    if (!m)
        return;
    batches_stop(srv);
    while (m->list) {
        svc_batch *b = m->list;
        m->list = b->next;
        batch_free(b);
    }
    if (m->wake_fd >= 0)
        close(m->wake_fd);
    free(m->jbuf);
    pthread_mutex_destroy(&m->lock);
    free(m);
    srv->batches = NULL;
}

void batches_counts(kiln_server *srv, unsigned *queued, unsigned *running, uint64_t *jobs_left)
{
    struct kiln_batches *m = srv->batches;
    *queued = *running = 0;
    *jobs_left = 0;
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    for (svc_batch *b = m->list; b; b = b->next) {
        if (!is_active(b->row.status))
            continue;
        *(strcmp(b->row.status, "queued") == 0 ? queued : running) += 1;
        const json_t *c = json_object_get(b->object, "counts");
        json_int_t left = json_integer_value(json_object_get(c, "total")) -
                          json_integer_value(json_object_get(c, "ok")) -
                          json_integer_value(json_object_get(c, "failed"));
        *jobs_left += left > 0 ? (uint64_t)left : 0;
    }
    pthread_mutex_unlock(&m->lock);
}

/* ---- POST /v1/batches: the request into a batch directory ---- */

typedef struct builder {
    kiln_server *srv;
    const char *tenant;
    char dir[PATH_MAX];
    int fd; /* jobs.jsonl being written */
    kiln_errors *errs;
    kiln_run_limits max;
    size_t count;
    size_t *index; /* the request's job index of each line written */
    size_t index_cap;
} builder;

/* e's pointer with prefix before it (cut at a character when too long). */
static void prefix_pointer(kiln_error *e, const char *prefix)
{
    char ptr[KILN_POINTER_MAX];
    if (snprintf(ptr, sizeof ptr, "%s%s", prefix, e->pointer) >= (int)sizeof ptr)
        kiln_utf8_cut(ptr);
    memcpy(e->pointer, ptr, sizeof ptr);
}

/* errors found for one job (pointers inside it) into b's, under at. */
static void move_errors(builder *b, const char *at, uint64_t line, const kiln_errors *found)
{
    for (size_t i = 0; i < found->count; i++) {
        kiln_error e = found->items[i];
        prefix_pointer(&e, at);
        if (line) {
            char msg[KILN_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "line %llu: %.400s", (unsigned long long)line, e.message);
            snprintf(e.message, sizeof e.message, "%s", msg);
        }
        kiln_errors_add(b->errs, &e);
    }
    b->errs->dropped += found->dropped;
}

/* A stored input as DIR/inputs/<id>: hard-linked to the body (one store, one
 * file system), else copied. OK, NOT_FOUND, GONE, or ERROR. */
static kiln_store_result materialise(builder *b, const char *id, const char *name,
                                     kiln_store_file *file)
{
    kiln_error err;
    memset(&err, 0, sizeof err);
    int fd = -1;
    kiln_store_result r = kiln_store_open_body(b->srv->store, b->tenant, id, file, &fd, &err);
    if (r != KILN_STORE_OK)
        return r;
    char dest[PATH_MAX + 300], src[64];
    snprintf(dest, sizeof dest, "%s/%s", b->dir, name);
    snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
    struct stat st;
    if (lstat(dest, &st) == 0 || linkat(AT_FDCWD, src, AT_FDCWD, dest, AT_SYMLINK_FOLLOW) == 0) {
        close(fd);
        return KILN_STORE_OK;
    }
    int out = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    char buf[65536];
    ssize_t n = 0;
    while (out >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
        if (kiln_write_all(out, buf, (size_t)n) != 0) {
            n = -1;
            break;
        }
    int failed = out < 0 || n < 0 || fsync(out) != 0;
    if (out >= 0)
        close(out);
    close(fd);
    return failed ? KILN_STORE_ERROR : KILN_STORE_OK;
}

/* A run job's inputs (file ids) materialised, and its line's run member
 * rewritten in path form. NULL with errors in found. */
static json_t *run_line(builder *b, const kiln_batch_job *job, kiln_errors *found)
{
    const json_t *ids = job->run.inputs;
    size_t n = json_array_size(ids);
    char(*paths)[KILN_STORE_ID_LEN + 16] = calloc(n + 1, sizeof *paths);
    const char **path_ptrs = calloc(n + 1, sizeof *path_ptrs);
    const char **names = calloc(n + 1, sizeof *names);
    kiln_store_file *files = calloc(n + 1, sizeof *files);
    json_t *out = NULL;
    if (!paths || !path_ptrs || !names || !files) {
        kiln_errors_addf(found, KILN_E_NOMEM, "", "out of memory");
        goto release;
    }
    for (size_t k = 0; k < n; k++) {
        const char *id = json_string_value(json_array_get(ids, k));
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/run/inputs/%zu", k);
        snprintf(paths[k], sizeof paths[k], "inputs/%s", id ? id : "");
        path_ptrs[k] = paths[k];
        names[k] = files[k].filename;
        kiln_store_result r = id && kiln_api_valid_id(id)
                                  ? materialise(b, id, paths[k], &files[k])
                                  : KILN_STORE_NOT_FOUND;
        if (r == KILN_STORE_NOT_FOUND)
            kiln_errors_addf(found, KILN_E_INVALID_JOB, ptr, "no file with the id '%.40s'",
                             id ? id : "");
        else if (r == KILN_STORE_GONE)
            kiln_errors_addf(found, KILN_E_INVALID_JOB, ptr, "the file '%.40s' has expired", id);
        else if (r != KILN_STORE_OK)
            kiln_errors_addf(found, KILN_E_INTERNAL, ptr, "the file '%.40s' cannot be read", id);
    }
    if (found->count)
        goto release;
    kiln_errors names_found;
    kiln_errors_init(&names_found);
    if (kiln_job_check_input_names(names, NULL, n, &names_found) != 0) {
        for (size_t i = 0; i < names_found.count; i++) {
            kiln_error e = names_found.items[i];
            prefix_pointer(&e, "/run");
            kiln_errors_add(found, &e);
        }
        goto release;
    }
    json_t *rq = kiln_job_request_json(&job->run, path_ptrs, names, n);
    out = rq ? json_pack("{s:s, s:o}", "id", job->id, "run", rq) : NULL;
    if (!out)
        kiln_errors_addf(found, KILN_E_NOMEM, "", "out of memory");
release:
    free(paths);
    free(path_ptrs);
    free(names);
    free(files);
    return out;
}

/* One job of the request (index: its place in the batch; line: its line in
 * an uploaded jobs file, 0 inline): checked, rewritten and written. */
static void add_job(builder *b, const json_t *doc, size_t index, uint64_t line)
{
    char at[48];
    snprintf(at, sizeof at, "/jobs/%zu", index);
    kiln_errors *found = malloc(sizeof *found);
    if (!found) {
        kiln_errors_addf(b->errs, KILN_E_NOMEM, at, "out of memory");
        return;
    }
    kiln_errors_init(found);
    kiln_batch_job job;
    kiln_batch_job_options opt = {.inputs = KILN_JOB_INPUT_IDS, .max = &b->max, .unset = &b->max};
    json_t *rewritten = NULL;
    if (kiln_batch_job_parse(doc, &opt, &job, found) == KILN_E_OK) {
        if (job.kind == KILN_BATCH_RENDER && job.spec_file)
            kiln_errors_addf(found, KILN_E_INVALID_JOB, "/render/spec_file",
                             "spec_file names a file on the server's disk, which the service "
                             "does not read: give the spec inline (spec)");
        else if (job.kind == KILN_BATCH_RUN)
            rewritten = run_line(b, &job, found);
    }
    if (found->count == 0 && b->errs->count == 0) {
        char *text = json_dumps(rewritten ? rewritten : doc, JSON_COMPACT);
        if (!text || kiln_write_all(b->fd, text, strlen(text)) != 0 ||
            kiln_write_all(b->fd, "\n", 1) != 0)
            kiln_errors_addf(found, KILN_E_WRITE, "", "cannot write the batch's jobs");
        free(text);
        if (b->count == b->index_cap) {
            size_t cap = b->index_cap ? b->index_cap * 2 : 256;
            size_t *grown = realloc(b->index, cap * sizeof *grown);
            if (grown) {
                b->index = grown;
                b->index_cap = cap;
            }
        }
        if (b->count < b->index_cap)
            b->index[b->count] = index;
    }
    b->count++;
    move_errors(b, at, line, found);
    json_decref(rewritten);
    free(found);
}

/* The jobs of an uploaded JSON Lines file, one per line (blank lines
 * skipped), each as add_job. */
static void add_jobs_file(builder *b, const char *id)
{
    kiln_store_file file;
    kiln_error err;
    memset(&err, 0, sizeof err);
    int fd = -1;
    kiln_store_result r = id && kiln_api_valid_id(id)
                              ? kiln_store_open_body(b->srv->store, b->tenant, id, &file, &fd,
                                                     &err)
                              : KILN_STORE_NOT_FOUND;
    if (r != KILN_STORE_OK) {
        kiln_errors_addf(b->errs, KILN_E_INVALID_JOB, "/input_file_id", "%s",
                         r == KILN_STORE_GONE ? "the file has expired" : "no file with this id");
        return;
    }
    char *text = malloc(file.bytes + 1);
    size_t have = 0;
    ssize_t n = 1;
    while (text && have < file.bytes && (n = read(fd, text + have, file.bytes - have)) > 0)
        have += (size_t)n;
    close(fd);
    if (!text || have != file.bytes) {
        kiln_errors_addf(b->errs, KILN_E_INTERNAL, "/input_file_id", "cannot read the file");
        free(text);
        return;
    }
    text[have] = '\0';
    uint64_t line = 0;
    size_t index = 0;
    for (char *p = text; p < text + have && b->errs->count < KILN_ERRORS_MAX;) {
        char *nl = memchr(p, '\n', (size_t)(text + have - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(text + have - p);
        line++;
        size_t i = 0;
        while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
            i++;
        if (i < len) {
            if (index >= b->srv->opt.batch_max_jobs) {
                kiln_errors_addf(b->errs, KILN_E_LIMIT, "/input_file_id",
                                 "the file holds more than %u jobs, the most a batch may have "
                                 "(--batch-max-jobs)",
                                 b->srv->opt.batch_max_jobs);
                break;
            }
            json_error_t je;
            int over = 0;
            json_t *doc = kiln_json_budget_load(p, len, JSON_REJECT_DUPLICATES, &je, &over);
            if (!doc) {
                char at[48];
                snprintf(at, sizeof at, "/jobs/%zu", index);
                kiln_errors_addf(b->errs, KILN_E_INVALID_JOB, at,
                                 "line %llu: not valid JSON at column %d: %.200s",
                                 (unsigned long long)line, je.column,
                                 over ? "it needs too much memory" : je.text);
                b->count++;
            } else {
                add_job(b, doc, index, line);
            }
            json_decref(doc);
            index++;
        }
        p += len + 1;
    }
    free(text);
}

/* The check kiln batch makes itself (repeated ids and file names, paths)
 * on the jobs file written, its "line N: " errors pointed at their jobs. */
static void check_jobs_file(builder *b, const char *path)
{
    kiln_batch_jobs_file jf = {.path = path, .base_dir = b->dir};
    kiln_errors *found = malloc(sizeof *found);
    if (!found) {
        kiln_errors_addf(b->errs, KILN_E_NOMEM, "", "out of memory");
        return;
    }
    kiln_errors_init(found);
    size_t count = 0;
    if (kiln_batch_jobs_check(&jf, 0, &count, found) != KILN_E_OK) {
        for (size_t i = 0; i < found->count; i++) {
            kiln_error e = found->items[i];
            unsigned long long line = 0;
            int used = 0;
            if (sscanf(e.message, "line %llu: %n", &line, &used) == 1 && used > 0 && line > 0 &&
                line <= b->count && line - 1 < b->index_cap) {
                char at[48], msg[KILN_MESSAGE_MAX];
                snprintf(at, sizeof at, "/jobs/%zu", b->index[line - 1]);
                prefix_pointer(&e, at);
                snprintf(msg, sizeof msg, "%s", e.message + used);
                snprintf(e.message, sizeof e.message, "%s", msg);
            }
            kiln_errors_add(b->errs, &e);
        }
    }
    free(found);
}

/* A text file in the batch directory, durable before the row names it. */
static int write_file(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int rc = kiln_write_all(fd, text, strlen(text)) == 0 && fsync(fd) == 0 ? 0 : -1;
    close(fd);
    return rc;
}

static void fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* The merge: template.json, the data file as data.csv or data.jsonl (by
 * its stored name), and kiln batch's own check of the rows' names. The
 * settings go into *merge (new). */
static void build_merge(builder *b, const json_t *body, json_t **merge)
{
    const json_t *tmpl = json_object_get(body, "template");
    const char *data_id = json_string_value(json_object_get(body, "data_file_id"));
    const json_t *format = json_object_get(body, "format");
    const json_t *name = json_object_get(body, "name");
    const json_t *missing = json_object_get(body, "missing");
    kiln_errors *errs = b->errs;
    kiln_format fmt = KILN_FORMAT_PDF, by_name;
    int have_format = 0;
    if (!json_is_object(tmpl))
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/template",
                         "template must be a spec (an object) with {{field}} placeholders");
    if (!data_id)
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/data_file_id",
                         "data_file_id (the id of an uploaded CSV or JSON Lines file) is "
                         "required");
    if (format &&
        (!json_is_string(format) || kiln_format_from_name(json_string_value(format), &fmt) != 0))
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/format",
                         "format must be xlsx, docx, pdf or pptx");
    else
        have_format = format != NULL;
    if (!json_is_string(name) || kiln_format_from_path(json_string_value(name), &by_name) != 0)
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/name",
                         "name must be a pattern ending in .xlsx, .docx, .pdf or .pptx "
                         "({{customer_id}}.pdf)");
    else if (have_format && by_name != fmt)
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/name",
                         "name does not end in the extension of format");
    else
        fmt = by_name;
    const char *miss = missing ? json_string_value(missing) : "error";
    if (!miss || (strcmp(miss, "error") != 0 && strcmp(miss, "empty") != 0))
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/missing", "missing must be error or empty");
    if (errs->count)
        return;
    kiln_store_file file;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_result r = kiln_api_valid_id(data_id)
                              ? kiln_store_get(b->srv->store, b->tenant, data_id, &file, &err)
                              : KILN_STORE_NOT_FOUND;
    const char *ext = r == KILN_STORE_OK ? strrchr(file.filename, '.') : NULL;
    const char *data_name = NULL;
    if (ext && strcasecmp(ext, ".csv") == 0)
        data_name = "data.csv";
    else if (ext && (strcasecmp(ext, ".jsonl") == 0 || strcasecmp(ext, ".ndjson") == 0))
        data_name = "data.jsonl";
    if (r != KILN_STORE_OK || !data_name) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/data_file_id", "%s",
                         r == KILN_STORE_GONE ? "the file has expired"
                         : r != KILN_STORE_OK ? "no file with this id"
                                              : "the data file's name must end in .csv, .jsonl "
                                                "or .ndjson (that says how it is read)");
        return;
    }
    if (materialise(b, data_id, data_name, &file) != KILN_STORE_OK) {
        kiln_errors_addf(errs, KILN_E_INTERNAL, "/data_file_id", "cannot read the file");
        return;
    }
    char *text = json_dumps(tmpl, JSON_COMPACT);
    if (!text || write_file(b->dir, "template.json", text) != 0) {
        free(text);
        kiln_errors_addf(errs, KILN_E_WRITE, "", "cannot write the batch's template");
        return;
    }
    free(text);
    char tpath[PATH_MAX + 32], dpath[PATH_MAX + 32];
    snprintf(tpath, sizeof tpath, "%s/template.json", b->dir);
    snprintf(dpath, sizeof dpath, "%s/%s", b->dir, data_name);
    kiln_batch_merge mg = {.template_path = tpath,
                           .data_path = dpath,
                           .base_dir = b->dir,
                           .format = fmt,
                           .name = json_string_value(name),
                           .missing = strcmp(miss, "empty") == 0 ? KILN_MERGE_MISSING_EMPTY
                                                                 : KILN_MERGE_MISSING_ERROR};
    kiln_errors *found = malloc(sizeof *found);
    if (!found) {
        kiln_errors_addf(errs, KILN_E_NOMEM, "", "out of memory");
        return;
    }
    kiln_errors_init(found);
    size_t count = 0;
    if (kiln_batch_merge_check(&mg, 0, &count, found) != KILN_E_OK) {
        for (size_t i = 0; i < found->count; i++) {
            kiln_error e = found->items[i];
            /* A template's error has its pointer; the rest are the data's
             * or the name's. */
            if (e.pointer[0])
                prefix_pointer(&e, "/template");
            else
                snprintf(e.pointer, sizeof e.pointer, "%s",
                         strstr(e.message, "--name") ? "/name" : "/data_file_id");
            kiln_errors_add(errs, &e);
        }
        errs->dropped += found->dropped;
    } else if (count > b->srv->opt.batch_max_jobs) {
        kiln_errors_addf(errs, KILN_E_LIMIT, "/data_file_id",
                         "the data holds %zu rows, more than the %u a batch may have "
                         "(--batch-max-jobs)",
                         count, b->srv->opt.batch_max_jobs);
    }
    free(found);
    b->count = count;
    *merge = json_pack("{s:s, s:s, s:s, s:s}", "data_file_id", data_id, "name",
                       json_string_value(name), "format", kiln_writer_for(fmt)->name, "missing",
                       miss);
}

static void invalid_batch(kiln_api_reply *reply, const kiln_errors *errs)
{
    size_t n = errs->count + errs->dropped;
    char msg[96];
    snprintf(msg, sizeof msg, "The batch has %zu error%s.", n, n == 1 ? "" : "s");
    kiln_api_reply_error(reply, 422, "invalid_batch", msg, kiln_errors_json(errs));
}

/* Members of the body other than the known ones, and the one form chosen. */
static int body_form(const json_t *body, kiln_errors *errs)
{
    static const char *const known[] = {"jobs",   "input_file_id", "template", "data_file_id",
                                        "format", "name",          "missing",  NULL};
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)body, key, v) {
        int ok = 0;
        for (const char *const *k = known; *k; k++)
            ok |= strcmp(*k, key) == 0;
        if (!ok) {
            char ptr[KILN_POINTER_MAX];
            snprintf(ptr, sizeof ptr, "/%.200s", key);
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, ptr, "unknown member '%.100s'", key);
        }
    }
    int forms = (json_object_get(body, "jobs") != NULL) +
                (json_object_get(body, "input_file_id") != NULL) +
                (json_object_get(body, "template") != NULL);
    if (forms != 1) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "",
                         "a batch is {\"jobs\": [...]}, {\"input_file_id\": ID} or "
                         "{\"template\": {...}, \"data_file_id\": ID, \"name\": PATTERN}: "
                         "exactly one of them");
        return -1;
    }
    return 0;
}

static enum MHD_Result batch_create(kiln_req *req, const json_t *body)
{
    kiln_server *srv = req->srv;
    struct kiln_batches *m = srv->batches;
    /* The tenant's limit first: nothing is spent on a batch that cannot
     * be queued. */
    unsigned mine = 0;
    pthread_mutex_lock(&m->lock);
    for (svc_batch *b = m->list; b; b = b->next)
        mine += is_active(b->row.status) && strcmp(b->row.tenant, req->tenant) == 0;
    pthread_mutex_unlock(&m->lock);
    if (mine >= srv->opt.batches_per_tenant) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "This tenant has %u batches queued or running, the most it may have "
                 "(--batches-per-tenant): wait for one to end.",
                 mine);
        req->retry_after = 10;
        return http_error(req, MHD_HTTP_TOO_MANY_REQUESTS, "too_many_batches", msg,
                          json_pack("{s:i}", "limit", (int)srv->opt.batches_per_tenant));
    }

    builder b = {.srv = srv, .tenant = req->tenant, .fd = -1};
    b.errs = malloc(sizeof *b.errs);
    if (!b.errs)
        return http_internal(req, "out of memory");
    kiln_errors_init(b.errs);
    b.max = srv->api.run_max;
    kiln_job_limits_fill(&b.max);
    kiln_api_reply reply;
    memset(&reply, 0, sizeof reply);
    json_t *merge = NULL;
    kiln_store_batch row;
    memset(&row, 0, sizeof row);
    enum MHD_Result res = MHD_NO;
    if (body_form(body, b.errs) != 0) {
        invalid_batch(&reply, b.errs);
        goto reply;
    }
    if (kiln_store_new_id(row.id) != 0) {
        kiln_api_reply_internal(&reply, "cannot make an id: %s", strerror(errno));
        goto reply;
    }
    snprintf(row.tenant, sizeof row.tenant, "%s", req->tenant);
    snprintf(b.dir, sizeof b.dir, "%.4000s/%s", m->root, row.id);
    char inputs[PATH_MAX + 16], out[PATH_MAX + 16];
    snprintf(inputs, sizeof inputs, "%s/inputs", b.dir);
    snprintf(out, sizeof out, "%s/out", b.dir);
    if (mkdir(b.dir, 0700) != 0 || mkdir(inputs, 0700) != 0 || mkdir(out, 0700) != 0) {
        kiln_api_reply_internal(&reply, "cannot make the batch directory %s: %s", b.dir,
                                strerror(errno));
        goto remove_dir;
    }
    const json_t *jobs = json_object_get(body, "jobs");
    const char *kind = json_object_get(body, "template") ? "merge" : "jobs";
    if (strcmp(kind, "jobs") == 0) {
        char tmp[PATH_MAX + 32], path[PATH_MAX + 32];
        snprintf(tmp, sizeof tmp, "%s/jobs.jsonl.tmp", b.dir);
        snprintf(path, sizeof path, "%s/jobs.jsonl", b.dir);
        b.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (b.fd < 0) {
            kiln_api_reply_internal(&reply, "cannot write %s: %s", tmp, strerror(errno));
            goto remove_dir;
        }
        if (jobs) {
            if (!json_is_array(jobs))
                kiln_errors_addf(b.errs, KILN_E_INVALID_JOB, "/jobs",
                                 "jobs must be an array of jobs");
            else if (json_array_size(jobs) == 0)
                kiln_errors_addf(b.errs, KILN_E_INVALID_JOB, "/jobs", "a batch needs a job");
            else if (json_array_size(jobs) > srv->opt.batch_max_jobs)
                kiln_errors_addf(b.errs, KILN_E_LIMIT, "/jobs",
                                 "%zu jobs, more than the %u a batch may have "
                                 "(--batch-max-jobs)",
                                 json_array_size(jobs), srv->opt.batch_max_jobs);
            size_t i;
            const json_t *job;
            if (b.errs->count == 0)
                json_array_foreach(jobs, i, job)
                    add_job(&b, job, i, 0);
        } else {
            add_jobs_file(&b, json_string_value(json_object_get(body, "input_file_id")));
            if (b.errs->count == 0 && b.count == 0)
                kiln_errors_addf(b.errs, KILN_E_INVALID_JOB, "/input_file_id",
                                 "the file holds no job");
        }
        int synced = fsync(b.fd) == 0;
        close(b.fd);
        b.fd = -1;
        if (b.errs->count == 0 && (!synced || rename(tmp, path) != 0)) {
            kiln_api_reply_internal(&reply, "cannot write %s: %s", path, strerror(errno));
            goto remove_dir;
        }
        if (b.errs->count == 0)
            check_jobs_file(&b, path);
    } else {
        build_merge(&b, body, &merge);
    }
    if (b.errs->count || b.errs->dropped) {
        invalid_batch(&reply, b.errs);
        goto remove_dir;
    }
    fsync_dir(b.dir);
    fsync_dir(m->root);

    int64_t now = (int64_t)time(NULL);
    row.created_at = now;
    snprintf(row.status, sizeof row.status, "queued");
    json_t *object = json_pack("{s:s, s:s, s:s, s:{s:I, s:i, s:i, s:i}, s:o, s:n, s:n}", "id",
                               row.id, "kind", kind, "status", "queued", "counts", "total",
                               (json_int_t)b.count, "done", 0, "ok", 0, "failed", 0, "created_at",
                               time_json(now), "started_at", "finished_at");
    if (object && merge)
        json_object_set(object, "merge", merge);
    svc_batch *sb = object ? batch_new(m, &row, object) : NULL;
    if (!sb) {
        kiln_api_reply_internal(&reply, "out of memory");
        goto remove_dir;
    }
    sb->reconciled = 1;
    pthread_mutex_lock(&m->lock);
    char *text = json_dumps(sb->object, JSON_COMPACT);
    sb->row.object = text;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_result r = text ? kiln_store_batch_put(srv->store, &sb->row, &err)
                               : KILN_STORE_ERROR;
    sb->row.object = NULL;
    free(text);
    if (r == KILN_STORE_OK) {
        sb->next = m->list;
        m->list = sb;
        reply.body = json_deep_copy(sb->object);
    }
    pthread_mutex_unlock(&m->lock);
    if (r != KILN_STORE_OK) {
        batch_free(sb);
        kiln_api_reply_internal(&reply, "storing the batch: %s", err.message);
        goto remove_dir;
    }
    wake(m);
    reply.status = 202;
    snprintf(reply.location, sizeof reply.location, "/v1/batches/%s", row.id);
    goto reply;

remove_dir:
    if (b.dir[0])
        kiln_api_rmtree(b.dir);
reply:
    json_decref(merge);
    free(b.index);
    free(b.errs);
    if (reply.status == 500 && reply.log[0])
        http_event(srv, "batch_create_failed", json_pack("{s:s}", "message", reply.log));
    res = http_json_location(req, reply.status, reply.body, reply.location);
    return res;
}

/* ---- the other routes ---- */

static void list_one(const kiln_store_batch *row, void *arg)
{
    json_t *o = json_loads(row->object, 0, NULL);
    if (json_is_object(o))
        json_array_append_new(arg, o);
    else
        json_decref(o);
}

static enum MHD_Result batch_list(kiln_req *req)
{
    int64_t limit, offset;
    enum MHD_Result bad;
    if (http_list_page(req, &limit, &offset, &bad) != 0)
        return bad;
    json_t *list = json_array();
    int64_t total = 0;
    kiln_error err;
    memset(&err, 0, sizeof err);
    if (!list || kiln_store_batch_list(req->srv->store, req->tenant, 0, offset, limit, list_one,
                                       list, &total, &err) != KILN_STORE_OK) {
        json_decref(list);
        return http_internal(req, err.message[0] ? err.message : "out of memory");
    }
    return http_json(req, MHD_HTTP_OK,
                     json_pack("{s:o, s:I, s:I, s:I}", "batches", list, "total",
                               (json_int_t)total, "limit", (json_int_t)limit, "offset",
                               (json_int_t)offset));
}

/* The tenant's batch object (new), or NULL with *r the reply queued. */
static json_t *batch_lookup(kiln_req *req, enum MHD_Result *r)
{
    kiln_store_batch row;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_result sr = kiln_store_batch_get(req->srv->store, req->tenant, req->id, &row,
                                                &err);
    if (sr != KILN_STORE_OK) {
        *r = sr == KILN_STORE_NOT_FOUND ? http_not_found(req) : http_internal(req, err.message);
        return NULL;
    }
    json_t *o = json_loads(row.object, 0, NULL);
    kiln_store_batch_release(&row);
    if (!json_is_object(o)) {
        json_decref(o);
        *r = http_internal(req, "a batch's stored object is not JSON");
        return NULL;
    }
    return o;
}

static enum MHD_Result batch_cancel(kiln_req *req)
{
    kiln_server *srv = req->srv;
    struct kiln_batches *m = srv->batches;
    json_t *o = NULL;
    pthread_mutex_lock(&m->lock);
    for (svc_batch *b = m->list; b; b = b->next) {
        if (strcmp(b->row.id, req->id) != 0 || strcmp(b->row.tenant, req->tenant) != 0)
            continue;
        if (is_active(b->row.status)) {
            b->cancel = 1;
            set_status(b, "cancelled");
            if (!b->pid) {
                json_object_set_new(b->object, "finished_at", time_json((int64_t)time(NULL)));
                kiln_metrics_batch(srv->metrics, "cancelled");
            }
            persist(srv, b);
        }
        o = json_deep_copy(b->object);
        break;
    }
    pthread_mutex_unlock(&m->lock);
    wake(m);
    if (o)
        return http_json(req, MHD_HTTP_OK, o);
    enum MHD_Result r;
    o = batch_lookup(req, &r); /* ended before: nothing to cancel */
    return o ? http_json(req, MHD_HTTP_OK, o) : r;
}

/* GET .../results: the rows streamed a page at a time. */
typedef struct results_stream {
    kiln_server *srv;
    char id[KILN_STORE_ID_LEN + 1];
    int64_t last;
    char *buf;
    size_t len, pos, cap;
    int done;
} results_stream;

static void stream_one(int64_t seq, const char *line, void *arg)
{
    results_stream *s = arg;
    size_t n = strlen(line);
    if (s->len + n + 1 > s->cap) {
        size_t cap = (s->len + n + 1) * 2;
        char *grown = realloc(s->buf, cap);
        if (!grown)
            return; /* the line is read again with the next page */
        s->buf = grown;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, line, n);
    s->buf[s->len + n] = '\n';
    s->len += n + 1;
    s->last = seq;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    results_stream *s = cls;
    if (s->pos == s->len) {
        if (s->done)
            return MHD_CONTENT_READER_END_OF_STREAM;
        s->pos = s->len = 0;
        int64_t before = s->last;
        kiln_error err;
        memset(&err, 0, sizeof err);
        if (kiln_store_batch_results(s->srv->store, s->id, s->last, RESULTS_PAGE, stream_one, s,
                                     &err) != KILN_STORE_OK)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (s->last == before) {
            s->done = 1;
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
    }
    size_t n = s->len - s->pos < max ? s->len - s->pos : max;
    memcpy(out, s->buf + s->pos, n);
    s->pos += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    results_stream *s = cls;
    free(s->buf);
    free(s);
}

static enum MHD_Result batch_results(kiln_req *req)
{
    enum MHD_Result r;
    json_t *o = batch_lookup(req, &r);
    if (!o)
        return r;
    json_decref(o);
    results_stream *s = calloc(1, sizeof *s);
    if (!s)
        return http_internal(req, "out of memory");
    s->srv = req->srv;
    snprintf(s->id, sizeof s->id, "%s", req->id);
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536,
                                                                  stream_read, s, stream_free);
    if (!resp) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-ndjson");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return http_queue(req, MHD_HTTP_OK, resp, 0);
}

enum MHD_Result batches_request(kiln_req *req)
{
    kiln_server *srv = req->srv;
    if (!srv->batches)
        return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "Batches are not available.", NULL);
    int post = strcmp(req->method, "POST") == 0;
    if (req->route == ROUTE_BATCHES && post) {
        json_t *body = NULL;
        enum MHD_Result res = MHD_NO;
        if (http_body_json(req, 0, &body, &res) != 0)
            return res;
        res = batch_create(req, body);
        json_decref(body);
        return res;
    }
    switch (req->route) {
    case ROUTE_BATCHES:
        return batch_list(req);
    case ROUTE_BATCH: {
        enum MHD_Result r;
        json_t *o = batch_lookup(req, &r);
        return o ? http_json(req, MHD_HTTP_OK, o) : r;
    }
    case ROUTE_BATCH_RESULTS:
        return batch_results(req);
    case ROUTE_BATCH_CANCEL:
        return batch_cancel(req);
    default:
        return http_not_found(req);
    }
}
