/*
 * local.c - the backend of `kiln mcp` (local.h).
 *
 * A session is a `kiln session` child, the same program a user runs by
 * hand: its requests and events are JSON lines on its stdin and stdout
 * (contract/session.h), so the MCP server drives exactly what the CLI and
 * the service drive. A session must live in a process of its own anyway
 * (kiln_session_open changes the calling process's mounts).
 *
 * Each child has a reader thread, which hands every event to the request
 * it answers (by "id"): the events of a running cell go to the waiting
 * tool's callback as they come, its last event (the cell record, or any
 * reply to another request) wakes it. A child that dies or closes its
 * stdout ends its session: every request still waiting is told so.
 *
 * What a cell creates in /mnt/data is fetched with `get` when its record
 * arrives and written into the --out directory through the size-enforcing
 * atomic path (common/output.h), under a name no earlier file has, so
 * nothing there is ever overwritten or partial; renders go there too.
 * The files are known by a random id for as long as the process lives.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mcp/local.h"
#include "artifacts/render.h"
#include "artifacts/spec/spec.h"
#include "common/base64.h"
#include "common/dirs.h"
#include "common/fdio.h"
#include "common/line_reader.h"
#include "common/output.h"
#include "contract/errors.h"
#include "contract/report.h"
#include "common/banned.h"

extern char **environ;

/* The longest line a child writes: a `get` of the largest file kept, in
 * base64, or a cell record (docs/session.md caps its parts). */
#define LINE_MAX_BYTES (80u << 20)
/* How long a session may take to say it is ready. */
#define READY_SECONDS 60
/* The files of one cell that are fetched (the rest are listed in the record
 * without a "file"). */
#define CELL_FILES_MAX 64
/* The files the process keeps track of (the oldest are forgotten). */
#define FILES_MAX 10000

typedef struct pending {
    struct pending *next;
    json_int_t rid;
    kiln_mcp_event_fn fn;
    void *arg;
    json_t *reply; /* the last event, or NULL when the session ended first */
    int done;
} pending;

typedef struct lsession {
    struct lsession *next;
    char id[33];
    char tenant[128];
    pid_t pid;
    int to_fd, from_fd;
    pthread_t reader;
    pthread_mutex_t write_lock;
    /* Under local.lock: */
    pending *pending;
    json_int_t next_rid;
    int ready, dead, refs;
    int delivering; /* the reader is in a callback of a pending, outside the lock */
    char why[KILN_MESSAGE_MAX];
} lsession;

typedef struct local {
    kiln_mcp_backend backend; /* first: the backend's ctx is the local itself */
    char *exe, *out_dir, *request;
    unsigned max_sessions;
    uint64_t max_file_bytes;
    int out_fd;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* any pending done, any session ready or dead */
    lsession *sessions;
    unsigned n_sessions;
    json_t *files; /* file objects, oldest first */
    /* The spare session (spare_main), started ahead of its need. */
    int use_spare, spare_starting, spare_failed, spare_joinable, stopping;
    lsession *spare;
    pthread_t spare_thread;
} local;

static void random_id(char out[33])
{
    unsigned char raw[16];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n > 0)
            got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/* ---- the reader ---- */

static int streaming(const char *kind)
{
    static const char *const kinds[] = {"queued",  "started", "stdout", "stderr",
                                        "display", "result",  "error",  NULL};
    for (size_t i = 0; kinds[i]; i++)
        if (strcmp(kind, kinds[i]) == 0)
            return 1;
    return 0;
}

static void end_session_locked(local *l, lsession *s, const char *why)
{
    if (!s->dead) {
        s->dead = 1;
        snprintf(s->why, sizeof s->why, "%s", why);
    }
    for (pending *p = s->pending; p; p = p->next)
        p->done = 1;
    pthread_cond_broadcast(&l->cond);
}

static void dispatch(local *l, lsession *s, json_t *ev)
{
    const char *kind = json_string_value(json_object_get(ev, "event"));
    const json_t *id = json_object_get(ev, "id");
    if (!kind)
        return;
    pthread_mutex_lock(&l->lock);
    if (strcmp(kind, "ready") == 0) {
        s->ready = 1;
        pthread_cond_broadcast(&l->cond);
    } else if (strcmp(kind, "lost") == 0) {
        const char *m = json_string_value(
            json_object_get(json_object_get(ev, "session"), "message"));
        /* The cell under it still gets its record: the waiters are told
         * at the end of the stream, not here. */
        if (!s->dead)
            snprintf(s->why, sizeof s->why, "the session ended: %s", m ? m : "lost");
    }
    pending *p = s->pending;
    while (p && (!json_is_integer(id) || p->rid != json_integer_value(id)))
        p = p->next;
    if (!p || p->done) {
        pthread_mutex_unlock(&l->lock);
        return;
    }
    if (streaming(kind)) {
        kiln_mcp_event_fn fn = p->fn;
        void *arg = p->arg;
        /* The waiter may be woken meanwhile (the session closed under it):
         * it waits for this callback before it returns, so arg lives. */
        s->delivering++;
        pthread_mutex_unlock(&l->lock);
        if (fn)
            fn(arg, ev);
        pthread_mutex_lock(&l->lock);
        s->delivering--;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->lock);
        return;
    }
    /* The record goes to the callback too, before the waiter fetches the
     * cell's files: the request stops counting as running the cell now
     * (mcp.h). */
    if (strcmp(kind, "cell") == 0 && p->fn) {
        kiln_mcp_event_fn fn = p->fn;
        void *arg = p->arg;
        s->delivering++;
        pthread_mutex_unlock(&l->lock);
        fn(arg, ev);
        pthread_mutex_lock(&l->lock);
        s->delivering--;
    }
    p->reply = json_incref(ev);
    p->done = 1;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

typedef struct reader_arg {
    local *l;
    lsession *s;
} reader_arg;

static void on_line(void *arg, const char *line, size_t len)
{
    reader_arg *ra = arg;
    json_error_t jerr;
    json_t *ev = json_loadb(line, len, 0, &jerr);
    if (ev)
        dispatch(ra->l, ra->s, ev);
    json_decref(ev);
}

static void *reader_main(void *arg)
{
    reader_arg ra = *(reader_arg *)arg;
    free(arg);
    local *l = ra.l;
    lsession *s = ra.s;
    const char *why = "the session's process ended";
    kiln_line_reader r;
    kiln_line_reader_init(&r, LINE_MAX_BYTES);
    char chunk[1 << 16];
    for (;;) {
        ssize_t n = read(s->from_fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (kiln_line_reader_feed(&r, chunk, (size_t)n, on_line, &ra) < 0) {
            why = "out of memory";
            break;
        }
        if (r.oversized) {
            /* A line past the bound would leave its request waiting for
             * ever: the session ends instead (its child is told by the
             * close of its stdin, when it is reaped). */
            why = "the session wrote an event line longer than 80 MiB";
            pthread_mutex_lock(&l->lock);
            snprintf(s->why, sizeof s->why, "%s", why);
            pthread_mutex_unlock(&l->lock);
            break;
        }
    }
    kiln_line_reader_release(&r);
    pthread_mutex_lock(&l->lock);
    end_session_locked(l, s, s->why[0] ? s->why : why);
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* ---- sessions ---- */

static lsession *find_locked(local *l, const char *tenant, const char *id)
{
    for (lsession *s = l->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0 && strcmp(s->tenant, tenant) == 0)
            return s;
    return NULL;
}

/* The session, held (refs) until put_session; NULL with err when there is
 * none or it has ended. */
static lsession *get_session(local *l, const char *tenant, const char *id, kiln_error *err)
{
    pthread_mutex_lock(&l->lock);
    lsession *s = find_locked(l, tenant, id);
    if (s && s->dead) {
        kiln_error_set(err, KILN_E_GONE, "/session_id", "%s", s->why);
        s = NULL;
    } else if (!s) {
        kiln_error_set(err, KILN_E_GONE, "/session_id", "there is no session '%.64s'", id);
    } else {
        s->refs++;
    }
    pthread_mutex_unlock(&l->lock);
    return s;
}

static void put_session(local *l, lsession *s)
{
    pthread_mutex_lock(&l->lock);
    s->refs--;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* Send one request and wait for its last event (*reply, new). fn gets the
 * events before it. */
static kiln_status ask(local *l, lsession *s, json_t *req, kiln_mcp_event_fn fn, void *arg,
                       json_t **reply, kiln_error *err)
{
    *reply = NULL;
    pending *p = calloc(1, sizeof *p);
    if (!p)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    p->fn = fn;
    p->arg = arg;
    pthread_mutex_lock(&l->lock);
    p->rid = ++s->next_rid;
    p->next = s->pending;
    s->pending = p;
    int dead = s->dead;
    pthread_mutex_unlock(&l->lock);

    json_object_set_new(req, "id", json_integer(p->rid));
    char *line = dead ? NULL : json_dumps(req, JSON_COMPACT);
    int wrote = -1;
    if (line) {
        pthread_mutex_lock(&s->write_lock);
        wrote = kiln_write_all(s->to_fd, line, strlen(line)) == 0 &&
                        kiln_write_all(s->to_fd, "\n", 1) == 0
                    ? 0
                    : -1;
        pthread_mutex_unlock(&s->write_lock);
        free(line);
    }
    pthread_mutex_lock(&l->lock);
    if (wrote != 0)
        p->done = 1;
    while (!p->done || s->delivering)
        pthread_cond_wait(&l->cond, &l->lock);
    for (pending **pp = &s->pending; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    kiln_status st = KILN_E_OK;
    if (!p->reply)
        st = kiln_error_set(err, KILN_E_GONE, "/session_id", "%s",
                            s->why[0] ? s->why : "the session has ended");
    pthread_mutex_unlock(&l->lock);
    *reply = p->reply;
    free(p);
    return st;
}

/* A "rejected" reply as an error: its first error's code and words. */
static kiln_status rejected(const json_t *reply, kiln_error *err)
{
    const json_t *e = json_array_get(json_object_get(reply, "errors"), 0);
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *pointer = json_string_value(json_object_get(e, "pointer"));
    const char *message = json_string_value(json_object_get(e, "message"));
    kiln_status st = KILN_E_USAGE;
    for (int c = 0; code && c < KILN_E__COUNT; c++)
        if (strcmp(kiln_status_name((kiln_status)c), code) == 0)
            st = (kiln_status)c;
    kiln_error_set(err, st, pointer ? pointer : "", "%s", message ? message : "rejected");
    return st;
}

static int is_event(const json_t *reply, const char *kind)
{
    const char *k = json_string_value(json_object_get(reply, "event"));
    return k && strcmp(k, kind) == 0;
}

static kiln_status spawn_child(local *l, lsession *s, kiln_error *err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (in[i] >= 0)
                close(in[i]);
            if (out[i] >= 0)
                close(out[i]);
        }
        return kiln_error_set(err, KILN_E_INTERNAL, "", "pipe: %s", strerror(e));
    }
    char max_bytes[32];
    snprintf(max_bytes, sizeof max_bytes, "%llu", (unsigned long long)l->max_file_bytes);
    /* The session's own limit on a file it lists and gives is ours, unless
     * a request file sets the session's limits itself. */
    char *argv[5] = {l->exe, "session", "--max-file-bytes", max_bytes, NULL};
    if (l->request) {
        argv[2] = "--request";
        argv[3] = l->request;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawnattr_init(&attr);
    /* The front end's threads block SIGINT and SIGTERM to read them with a
     * signalfd; the child needs its own. */
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    int rc = posix_spawn(&s->pid, l->exe, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        close(in[1]);
        close(out[0]);
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot start %s session: %s", l->exe,
                              strerror(rc));
    }
    s->to_fd = in[1];
    s->from_fd = out[0];
    return KILN_E_OK;
}

/* Stop a session's child and free it; s is out of the list, unheld. */
static void reap(local *l, lsession *s)
{
    static const char close_line[] = "{\"op\": \"close\"}\n";
    (void)l;
    pthread_mutex_lock(&s->write_lock);
    kiln_write_all(s->to_fd, close_line, sizeof close_line - 1);
    close(s->to_fd);
    s->to_fd = -1;
    pthread_mutex_unlock(&s->write_lock);
    /* The child closes at the end of its stdin; the reader sees its
     * stdout end. A child that will not go is made to. */
    int status;
    for (int i = 0; i < 100; i++) {
        if (waitpid(s->pid, &status, WNOHANG) == s->pid)
            goto reaped;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(-s->pid, SIGKILL);
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &status, 0);
reaped:
    pthread_join(s->reader, NULL);
    close(s->from_fd);
    pthread_mutex_destroy(&s->write_lock);
    free(s);
}

/* Start a session's child and wait until it is ready; *out is not yet in
 * the list. */
static kiln_status start_session(local *l, lsession **out, kiln_error *err)
{
    *out = NULL;
    lsession *s = calloc(1, sizeof *s);
    if (!s)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    random_id(s->id);
    s->to_fd = s->from_fd = -1;
    pthread_mutex_init(&s->write_lock, NULL);

    kiln_status st = spawn_child(l, s, err);
    reader_arg *ra = st == KILN_E_OK ? malloc(sizeof *ra) : NULL;
    if (st == KILN_E_OK && !ra)
        st = kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    if (ra) {
        ra->l = l;
        ra->s = s;
        if (pthread_create(&s->reader, NULL, reader_main, ra) != 0) {
            free(ra);
            st = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot start a thread");
        }
    }
    if (st != KILN_E_OK) {
        if (s->pid > 0) {
            close(s->to_fd);
            kill(-s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
            close(s->from_fd);
        }
        pthread_mutex_destroy(&s->write_lock);
        free(s);
        return st;
    }

    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += READY_SECONDS;
    pthread_mutex_lock(&l->lock);
    while (!s->ready && !s->dead)
        if (pthread_cond_timedwait(&l->cond, &l->lock, &until) == ETIMEDOUT)
            break;
    int ready = s->ready && !s->dead;
    char why[KILN_MESSAGE_MAX];
    snprintf(why, sizeof why, "%s", s->why);
    pthread_mutex_unlock(&l->lock);
    if (!ready) {
        reap(l, s);
        return kiln_error_set(err, KILN_E_INTERNAL, "",
                              "the session did not start (%s): kiln mcp needs root for its "
                              "sandbox, and says why on its standard error",
                              why[0] ? why : "no ready event");
    }
    *out = s;
    return KILN_E_OK;
}

/* The spare: one session started ahead, so that the first cell of a
 * session does not wait for an interpreter to start (a second or more:
 * numpy, pandas and matplotlib are imported before it is ready). */
static void *spare_main(void *arg)
{
    local *l = arg;
    lsession *s = NULL;
    kiln_error err;
    memset(&err, 0, sizeof err);
    start_session(l, &s, &err);
    pthread_mutex_lock(&l->lock);
    l->spare = s;
    l->spare_failed = s == NULL;
    l->spare_starting = 0;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* Start the next spare, unless one is there or on its way (under lock). */
static void spare_start_locked(local *l)
{
    if (!l->use_spare || l->spare || l->spare_starting || l->spare_failed || l->stopping)
        return;
    if (l->spare_joinable) {
        pthread_join(l->spare_thread, NULL);
        l->spare_joinable = 0;
    }
    if (pthread_create(&l->spare_thread, NULL, spare_main, l) == 0) {
        l->spare_starting = 1;
        l->spare_joinable = 1;
    }
}

/* Take the sessions that have ended and that no call holds out of the
 * list (under lock): a session that ended by itself (its idle timeout, its
 * lifetime, a lost interpreter) no longer counts against max_sessions.
 * They are reaped by the caller, without the lock. */
static lsession *unlink_ended_locked(local *l)
{
    lsession *ended = NULL;
    for (lsession **p = &l->sessions; *p;) {
        lsession *s = *p;
        if (s->dead && s->refs == 0) {
            *p = s->next;
            s->next = ended;
            ended = s;
            l->n_sessions--;
        } else {
            p = &s->next;
        }
    }
    return ended;
}

static void reap_all(local *l, lsession *list)
{
    while (list) {
        lsession *next = list->next;
        reap(l, list);
        list = next;
    }
}

static kiln_status session_open(void *ctx, const char *tenant, char *id, kiln_error *err)
{
    local *l = ctx;
    pthread_mutex_lock(&l->lock);
    lsession *ended = unlink_ended_locked(l);
    pthread_mutex_unlock(&l->lock);
    reap_all(l, ended);
    pthread_mutex_lock(&l->lock);
    if (l->n_sessions >= l->max_sessions) {
        pthread_mutex_unlock(&l->lock);
        return kiln_error_set(err, KILN_E_BUSY, "/session_id",
                              "%u sessions are open, as many as this server keeps: pass the "
                              "session_id of one of them",
                              l->max_sessions);
    }
    l->n_sessions++;
    /* A spare on its way is waited for: it is further along than a new one. */
    while (l->spare_starting)
        pthread_cond_wait(&l->cond, &l->lock);
    lsession *s = l->spare;
    if (s && s->dead) { /* it died waiting: start afresh */
        l->spare = NULL;
        pthread_mutex_unlock(&l->lock);
        reap(l, s);
        pthread_mutex_lock(&l->lock);
        s = NULL;
    }
    l->spare = NULL;
    spare_start_locked(l);
    pthread_mutex_unlock(&l->lock);

    kiln_status st = s ? KILN_E_OK : start_session(l, &s, err);
    pthread_mutex_lock(&l->lock);
    if (st != KILN_E_OK) {
        l->n_sessions--;
    } else {
        snprintf(s->tenant, sizeof s->tenant, "%s", tenant);
        s->next = l->sessions;
        l->sessions = s;
    }
    pthread_mutex_unlock(&l->lock);
    if (st == KILN_E_OK)
        snprintf(id, KILN_MCP_ID_MAX, "%s", s->id);
    return st;
}

static void session_close(void *ctx, const char *tenant, const char *id)
{
    local *l = ctx;
    pthread_mutex_lock(&l->lock);
    lsession *s = find_locked(l, tenant, id);
    if (s) {
        for (lsession **p = &l->sessions; *p; p = &(*p)->next)
            if (*p == s) {
                *p = s->next;
                break;
            }
        l->n_sessions--;
        /* Calls still using it end when its child does. */
        end_session_locked(l, s, "the session was closed");
    }
    pthread_mutex_unlock(&l->lock);
    if (!s)
        return;
    /* The waiters were woken above; wait for every call to let go. */
    pthread_mutex_lock(&l->lock);
    while (s->refs > 0)
        pthread_cond_wait(&l->cond, &l->lock);
    pthread_mutex_unlock(&l->lock);
    reap(l, s);
}

static kiln_status session_interrupt(void *ctx, const char *tenant, const char *id,
                                     kiln_error *err)
{
    static const char line[] = "{\"op\": \"interrupt\"}\n";
    local *l = ctx;
    lsession *s = get_session(l, tenant, id, err);
    if (!s)
        return err->code;
    /* Not waited for: the running cell's own record says it stopped. */
    pthread_mutex_lock(&s->write_lock);
    if (s->to_fd >= 0)
        kiln_write_all(s->to_fd, line, sizeof line - 1);
    pthread_mutex_unlock(&s->write_lock);
    put_session(l, s);
    return KILN_E_OK;
}

/* ---- files ---- */

static void sha256_hex(const void *data, size_t len, char out[65])
{
    struct sha256_ctx md;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_init(&md);
    sha256_update(&md, len, data);
    sha256_digest(&md, sizeof digest, digest);
    for (size_t i = 0; i < sizeof digest; i++)
        snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

/* Claim a name in the out directory no file has: name, then "stem-2.ext",
 * "stem-3.ext", ... An empty file holds it until the output replaces it.
 * *path is malloc'd. */
static kiln_status claim_name(local *l, const char *wanted, char **path, char **final,
                              kiln_error *err)
{
    const char *base = strrchr(wanted, '/') ? strrchr(wanted, '/') + 1 : wanted;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        base = "file";
    char name[NAME_MAX + 1];
    const char *dot = strrchr(base, '.');
    size_t stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    const char *ext = base + stem; /* "" or ".xlsx" */
    int shown = stem > 200 ? 200 : (int)stem;
    for (int n = 1; n < 10000; n++) {
        if (n == 1)
            snprintf(name, sizeof name, "%.*s%.50s", shown, base, ext);
        else
            snprintf(name, sizeof name, "%.*s-%d%.50s", shown, base, n, ext);
        int fd = openat(l->out_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            return kiln_error_set(err, KILN_E_WRITE, "", "%s/%s: %s", l->out_dir, name,
                                  strerror(errno));
        close(fd);
        size_t len = strlen(l->out_dir) + strlen(name) + 2;
        *path = malloc(len);
        *final = strdup(name);
        if (!*path || !*final) {
            free(*path);
            free(*final);
            unlinkat(l->out_fd, name, 0);
            return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
        }
        snprintf(*path, len, "%s/%s", l->out_dir, name);
        return KILN_E_OK;
    }
    return kiln_error_set(err, KILN_E_WRITE, "", "no free name for %s in %s", base, l->out_dir);
}

static json_t *register_file(local *l, const char *filename, const char *path,
                             const char *media_type, uint64_t bytes, const char *sha)
{
    char id[33];
    random_id(id);
    json_t *f = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s}", "id", id, "filename", filename,
                          "media_type", media_type, "bytes", (json_int_t)bytes, "sha256", sha,
                          "path", path);
    if (!f)
        return NULL;
    pthread_mutex_lock(&l->lock);
    if (json_array_size(l->files) >= FILES_MAX)
        json_array_remove(l->files, 0);
    json_array_append(l->files, f);
    pthread_mutex_unlock(&l->lock);
    return f;
}

/* Keep bytes a session made: into the out directory, registered. New. */
static json_t *keep_bytes(local *l, const char *name, const char *media_type, const void *data,
                          size_t len, kiln_error *err)
{
    char *path = NULL, *final = NULL;
    if (claim_name(l, name, &path, &final, err) != KILN_E_OK)
        return NULL;
    kiln_output out;
    uint64_t bytes = 0;
    kiln_status st = kiln_output_open(&out, path, l->max_file_bytes, err);
    if (st == KILN_E_OK && (st = kiln_output_write(&out, data, len, err)) == KILN_E_OK)
        st = kiln_output_commit(&out, &bytes, err);
    else if (st == KILN_E_OK)
        kiln_output_abort(&out);
    json_t *f = NULL;
    if (st == KILN_E_OK) {
        char sha[65];
        sha256_hex(data, len, sha);
        f = register_file(l, final, path, media_type, bytes, sha);
    } else {
        unlinkat(l->out_fd, final, 0);
    }
    free(path);
    free(final);
    return f;
}

/* Fetch each file the cell made and give its entry the file object; a
 * document's entry (by name) gets the same. */
static void keep_cell_files(local *l, lsession *s, json_t *record)
{
    json_t *files = json_object_get(record, "files");
    json_t *docs = json_object_get(record, "documents");
    size_t i, fetched = 0;
    json_t *entry;
    json_array_foreach(files, i, entry) {
        const char *name = json_string_value(json_object_get(entry, "name"));
        json_int_t bytes = json_integer_value(json_object_get(entry, "bytes"));
        if (!name || fetched >= CELL_FILES_MAX || (uint64_t)bytes > l->max_file_bytes)
            continue;
        fetched++;
        kiln_error err;
        memset(&err, 0, sizeof err);
        json_t *reply = NULL;
        json_t *req = json_pack("{s:s, s:s}", "op", "get", "name", name);
        if (!req || ask(l, s, req, NULL, NULL, &reply, &err) != KILN_E_OK ||
            !is_event(reply, "file")) {
            json_decref(req);
            json_decref(reply);
            continue;
        }
        json_decref(req);
        const json_t *b64 = json_object_get(reply, "content_base64");
        size_t n = json_string_length(b64), len = 0, bad = 0;
        unsigned char *data = malloc(KILN_BASE64_DECODED_MAX(n) + 1);
        if (data && kiln_base64_decode_into(json_string_value(b64), n, data, &len, &bad) == 0) {
            const char *media = json_string_value(json_object_get(entry, "media_type"));
            json_t *f = keep_bytes(l, name, media ? media : "application/octet-stream", data, len,
                                   &err);
            if (f) {
                json_object_set_new(entry, "file", f);
                size_t j;
                json_t *d;
                json_array_foreach(docs, j, d) {
                    const char *dn = json_string_value(json_object_get(d, "name"));
                    if (dn && strcmp(dn, name) == 0)
                        json_object_set(d, "file", f);
                }
            }
        }
        free(data);
        json_decref(reply);
    }
}

static kiln_status session_execute(void *ctx, const char *tenant, const char *id,
                                   const json_t *request, kiln_mcp_event_fn on_event, void *arg,
                                   json_t **record, kiln_error *err)
{
    local *l = ctx;
    *record = NULL;
    lsession *s = get_session(l, tenant, id, err);
    if (!s)
        return err->code;
    json_t *req = json_deep_copy(request);
    json_t *reply = NULL;
    kiln_status st = req ? KILN_E_OK : kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    if (st == KILN_E_OK) {
        json_object_set_new(req, "op", json_string("execute"));
        st = ask(l, s, req, on_event, arg, &reply, err);
    }
    json_decref(req);
    if (st == KILN_E_OK && !is_event(reply, "cell"))
        st = rejected(reply, err);
    if (st == KILN_E_OK) {
        keep_cell_files(l, s, reply);
        *record = reply;
        reply = NULL;
    }
    json_decref(reply);
    put_session(l, s);
    return st;
}

/* A simple request (files, put) and its reply of kind want. */
static kiln_status simple(local *l, const char *tenant, const char *id, json_t *req,
                          const char *want, json_t **reply, kiln_error *err)
{
    *reply = NULL;
    lsession *s = get_session(l, tenant, id, err);
    if (!s) {
        json_decref(req);
        return err->code;
    }
    kiln_status st = req ? ask(l, s, req, NULL, NULL, reply, err)
                         : kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    json_decref(req);
    if (st == KILN_E_OK && !is_event(*reply, want)) {
        st = rejected(*reply, err);
        json_decref(*reply);
        *reply = NULL;
    }
    put_session(l, s);
    return st;
}

static kiln_status session_files(void *ctx, const char *tenant, const char *id, json_t **files,
                                 kiln_error *err)
{
    json_t *reply = NULL;
    kiln_status st = simple(ctx, tenant, id, json_pack("{s:s}", "op", "files"), "files", &reply,
                            err);
    *files = st == KILN_E_OK ? json_incref(json_object_get(reply, "files")) : NULL;
    json_decref(reply);
    if (st == KILN_E_OK && !*files)
        *files = json_array();
    return st;
}

static kiln_status session_put(void *ctx, const char *tenant, const char *id, const char *name,
                               const void *data, size_t len, json_t **file, kiln_error *err)
{
    char *b64 = kiln_base64_encode(data, len, NULL);
    if (!b64)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    json_t *req = json_pack("{s:s, s:s, s:s}", "op", "put", "name", name, "content_base64", b64);
    free(b64);
    json_t *reply = NULL;
    kiln_status st = simple(ctx, tenant, id, req, "put", &reply, err);
    *file = st == KILN_E_OK ? json_incref(json_object_get(reply, "file")) : NULL;
    json_decref(reply);
    return st;
}

/* ---- renders ---- */

static kiln_status render(void *ctx, const char *tenant, const json_t *request, json_t **file,
                          json_t **warnings, json_t **errors, kiln_error *err)
{
    local *l = ctx;
    (void)tenant;
    *file = *warnings = *errors = NULL;
    kiln_format format;
    if (kiln_format_from_name(json_string_value(json_object_get(request, "format")), &format) !=
        0)
        return kiln_error_set(err, KILN_E_USAGE, "/format", "must be xlsx, docx, pptx or pdf");
    if (!kiln_writer_write_fn(format, err))
        return err->code;
    const kiln_writer *w = kiln_writer_for(format);

    kiln_parse_options popt;
    kiln_parse_options_init(&popt);
    /* A spec's images are read from the out directory: what the sessions
     * made, never from elsewhere on the host. */
    popt.base_dir = l->out_dir;
    kiln_errors errs;
    kiln_errors_init(&errs);
    kiln_doc *doc = NULL;
    if (kiln_doc_parse_json(json_object_get(request, "spec"), &popt, &doc, &errs) != KILN_E_OK) {
        *errors = kiln_errors_json(&errs);
        if (*errors)
            json_object_set_new(*errors, "dropped",
                                json_copy(json_object_get(*errors, "more_errors")));
        return kiln_error_set(err, KILN_E_INVALID_SPEC, "", "the spec is not valid");
    }

    char wanted[NAME_MAX + 1];
    const char *filename = json_string_value(json_object_get(request, "filename"));
    if (filename && *filename) {
        const char *base = strrchr(filename, '/') ? strrchr(filename, '/') + 1 : filename;
        const char *ext = strrchr(base, '.');
        if (ext && strcmp(ext, w->extension) == 0)
            snprintf(wanted, sizeof wanted, "%.200s", base);
        else
            snprintf(wanted, sizeof wanted, "%.200s%s", base, w->extension);
    } else {
        snprintf(wanted, sizeof wanted, "document%s", w->extension);
    }
    char *path = NULL, *final = NULL;
    kiln_status st = claim_name(l, wanted, &path, &final, err);
    kiln_render_result result;
    memset(&result, 0, sizeof result);
    if (st == KILN_E_OK) {
        kiln_render_options ropt = {.max_bytes = l->max_file_bytes};
        st = kiln_render(doc, format, path, &ropt, &result, err);
    }
    kiln_doc_free(doc);
    if (st == KILN_E_OK) {
        int fd = openat(l->out_fd, final, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        char sha[65] = "";
        if (fd >= 0) {
            struct sha256_ctx md;
            uint8_t digest[SHA256_DIGEST_SIZE], buf[1 << 16];
            ssize_t n;
            sha256_init(&md);
            while ((n = read(fd, buf, sizeof buf)) > 0)
                sha256_update(&md, (size_t)n, buf);
            sha256_digest(&md, sizeof digest, digest);
            for (size_t i = 0; i < sizeof digest; i++)
                snprintf(sha + 2 * i, 3, "%02x", digest[i]);
            close(fd);
        }
        *file = register_file(l, final, path, w->media_type, result.bytes, sha);
        *warnings = kiln_warnings_json(&result);
        if (!*file)
            st = kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    } else if (final) {
        unlinkat(l->out_fd, final, 0);
    }
    free(path);
    free(final);
    return st;
}

static kiln_status file_list(void *ctx, const char *tenant, json_t **files, kiln_error *err)
{
    local *l = ctx;
    (void)tenant;
    *files = json_array();
    if (!*files)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    pthread_mutex_lock(&l->lock);
    for (size_t i = json_array_size(l->files); i-- > 0;)
        json_array_append(*files, json_array_get(l->files, i));
    pthread_mutex_unlock(&l->lock);
    return KILN_E_OK;
}

static kiln_status file_read(void *ctx, const char *tenant, const char *id, json_t **file,
                             void **data, size_t *len, kiln_error *err)
{
    local *l = ctx;
    (void)tenant;
    *file = NULL;
    *data = NULL;
    *len = 0;
    json_t *f = NULL;
    pthread_mutex_lock(&l->lock);
    size_t i;
    json_t *e;
    json_array_foreach(l->files, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "id")), id) == 0) {
            f = json_incref(e);
            break;
        }
    }
    pthread_mutex_unlock(&l->lock);
    if (!f)
        return kiln_error_set(err, KILN_E_INPUT, "", "no file '%.64s'", id);
    const char *name = json_string_value(json_object_get(f, "filename"));
    int fd = openat(l->out_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    kiln_status rc = KILN_E_OK;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = kiln_error_set(err, KILN_E_INPUT, "", "%s/%s is gone from the out directory",
                            l->out_dir, name);
    else if ((uint64_t)st.st_size > l->max_file_bytes)
        rc = kiln_error_set(err, KILN_E_TOO_LARGE, "", "%s grew past the file ceiling", name);
    char *buf = rc == KILN_E_OK ? malloc((size_t)st.st_size + 1) : NULL;
    size_t got = 0;
    if (rc == KILN_E_OK && !buf)
        rc = kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    while (rc == KILN_E_OK && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (fd >= 0)
        close(fd);
    if (rc != KILN_E_OK) {
        free(buf);
        json_decref(f);
        return rc;
    }
    *file = f;
    *data = buf;
    *len = got;
    return KILN_E_OK;
}

/* ---- the backend ---- */

kiln_status kiln_mcp_local_new(const kiln_mcp_local_options *opt, kiln_mcp_backend **out,
                               kiln_error *err)
{
    *out = NULL;
    if (kiln_mkdir_p(opt->out_dir, 0755, 0755) != 0)
        return kiln_error_set(err, KILN_E_USAGE, "", "--out %s: %s", opt->out_dir,
                              strerror(errno));
    local *l = calloc(1, sizeof *l);
    if (!l)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    l->out_fd = -1;
    l->out_dir = realpath(opt->out_dir, NULL);
    l->exe = strdup(opt->kiln_exe);
    l->request = opt->session_request ? realpath(opt->session_request, NULL) : NULL;
    l->files = json_array();
    l->max_sessions = opt->max_sessions ? opt->max_sessions : KILN_MCP_LOCAL_SESSIONS;
    l->max_file_bytes = opt->max_file_bytes ? opt->max_file_bytes : KILN_DEFAULT_MAX_BYTES;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    kiln_status st = KILN_E_OK;
    if (!l->out_dir || (l->out_fd = open(l->out_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        st = kiln_error_set(err, KILN_E_USAGE, "", "--out %s: not a directory Kiln can use",
                            opt->out_dir);
    else if (opt->session_request && !l->request)
        st = kiln_error_set(err, KILN_E_USAGE, "", "--request %s: %s", opt->session_request,
                            strerror(errno));
    else if (!l->exe || !l->files)
        st = kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    if (st != KILN_E_OK) {
        kiln_mcp_local_free(&l->backend);
        return st;
    }
    l->backend = (kiln_mcp_backend){.ctx = l,
                                    .session_open = session_open,
                                    .session_execute = session_execute,
                                    .session_interrupt = session_interrupt,
                                    .session_files = session_files,
                                    .session_put = session_put,
                                    .session_close = session_close,
                                    .render = render,
                                    .file_list = file_list,
                                    .file_read = file_read};
    l->use_spare = opt->spare;
    pthread_mutex_lock(&l->lock);
    spare_start_locked(l);
    pthread_mutex_unlock(&l->lock);
    *out = &l->backend;
    return KILN_E_OK;
}

void kiln_mcp_local_free(kiln_mcp_backend *backend)
{
    if (!backend)
        return;
    local *l = (local *)backend;
    pthread_mutex_lock(&l->lock);
    l->stopping = 1;
    int joinable = l->spare_joinable;
    pthread_mutex_unlock(&l->lock);
    if (joinable)
        pthread_join(l->spare_thread, NULL);
    if (l->spare)
        reap(l, l->spare);
    for (;;) {
        pthread_mutex_lock(&l->lock);
        lsession *s = l->sessions;
        char id[33], tenant[128];
        if (s) {
            snprintf(id, sizeof id, "%s", s->id);
            snprintf(tenant, sizeof tenant, "%s", s->tenant);
        }
        pthread_mutex_unlock(&l->lock);
        if (!s)
            break;
        session_close(l, tenant, id);
    }
    if (l->out_fd >= 0)
        close(l->out_fd);
    json_decref(l->files);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->cond);
    free(l->out_dir);
    free(l->exe);
    free(l->request);
    free(l);
}
