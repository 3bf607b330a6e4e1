/*
 * sessions.c - /v1/sessions: live interpreters behind the HTTP API
 * (docs/serve.md, "Sessions"; the messages: docs/session.md).
 *
 * The service is a front end that translates: each session is one
 *
 *   kiln session --request /proc/self/fd/3 --zygote SOCKET
 *
 * child, spawned as a run's `kiln run` child is (kiln_api_spawn: the
 * checked request in a sealed memfd on descriptor 3, inputs as inherited
 * descriptors 4.., a process group of its own, the filtered environment),
 * with pipes on its stdin (requests) and stdout (events). Nothing of the
 * contract is re-implemented here: cells, interrupts, files and their caps
 * are the child's; this file turns HTTP requests into request lines and
 * event lines into HTTP replies.
 *
 * One manager thread polls every child's pipes (and a shared zygote's, an
 * eventfd that wakes it) and reads events with a bounded line reader. An
 * HTTP request that needs an answer from a child suspends its connection
 * and leaves a waiter, matched by the request's id; the manager fills the
 * waiter's reply and resumes the connection. A cell asked for as
 * Server-Sent Events gets a streamed response instead, fed by the manager.
 * No HTTP thread ever blocks on a child.
 *
 * Warm start: the server starts one `kiln zygote SOCKET` (a root-only
 * directory under /run or /tmp; restarted when it dies) and keeps a pool of
 * sessions already past "ready", with the default limits and no inputs.
 * POST /v1/sessions with those limits takes one (its inputs then go in with
 * put requests) and the pool refills behind it. Idle timeout and lifetime
 * are the service's to enforce (a pooled session's clock starts when it is
 * taken), so every child is started with the longest ones as a backstop.
 *
 * Sessions are kept in the store's sessions table (their object), so after
 * a restart they answer 410 with reason server_restart; their files are
 * stored files and stay.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/fdio.h"
#include "contract/errors.h"
#include "contract/job.h"
#include "contract/session.h"
#include "service/api_internal.h"
#include "service/http.h"
#include "service/sessions.h"
#include "../common/banned.h"

/* The longest event line a child may write: a `file` reply carries a file
 * of up to --max-file-bytes (30 MiB) in base64, a cell record up to its
 * display caps (docs/session.md, "Limits"). A longer line is skipped. */
#define EVENT_LINE_MAX (96u << 20)
/* What a child's stderr is kept of, for the message of a lost session. */
#define ERR_TAIL 1024
/* Cells that may wait behind the running one (the contract's). */
#define CELLS_OPEN_MAX (1 + KILN_SESSION_QUEUE_MAX)
/* A dead zygote is started again after this long. */
#define ZYGOTE_RESTART_SECONDS 1.0

typedef enum { W_CREATE, W_CELL, W_GET, W_INTERRUPT, W_FILES, W_PUT, W_CLOSE } wait_kind;

/* The body of a streamed cell: the manager appends, libmicrohttpd reads.
 * Shared by the two: freed when both let go. */
typedef struct sse_stream {
    pthread_mutex_t lock;
    int refs;
    struct MHD_Connection *conn;
    char *buf;
    size_t len, off, cap;
    int ended;     /* the cell is over: end of stream once drained */
    int suspended; /* the reader found nothing and suspended the connection */
} sse_stream;

typedef struct waiter {
    struct waiter *next;
    wait_kind kind;
    json_int_t rid;          /* the id of the request line it waits on (0: ready) */
    kiln_req *req;           /* suspended, answered through req->reply; NULL for SSE */
    sse_stream *sse;         /* W_CELL as events */
    struct waiter *parent;   /* W_GET of a cell, W_PUT of a create */
    json_t *record;          /* W_CELL: the cell record while its files are fetched */
    json_t *entry;           /* W_GET: the record's files[] entry (borrowed) */
    size_t pending;          /* W_CELL: gets outstanding; W_CREATE: puts outstanding */
    int failed;              /* W_CREATE: a put failed (reply already sent) */
    struct sync_reply *sync; /* a caller of the internal API waiting (instead of req) */
    struct timespec start;
} waiter;

typedef struct svc_session {
    struct svc_session *next;
    char id[KILN_STORE_ID_LEN + 1];
    char tenant[KILN_AUTH_TENANT_MAX + 1]; /* "" while pooled */
    kiln_api_spawned sp;
    /* The child's end is watched on a pidfd, not on its stdout's end: the
     * sandbox's init inherits the pipes, and outlives a supervisor killed
     * with SIGKILL. */
    int pidfd;
    int ready;  /* its "ready" came */
    int pooled; /* in the pool, nobody's yet */
    kiln_run_limits limits;
    kiln_run_language language;
    double idle_seconds, lifetime_seconds;
    int64_t created_at;               /* Unix seconds, when a tenant got it */
    double created_mono, active_mono; /* CLOCK_MONOTONIC: taken, last cell ended */
    int cells;                        /* ended */
    int cells_open;                   /* sent, not ended */
    json_t *ended;                    /* {reason, message, at} once over */
    char status[16];                  /* "ready", "busy", or how it ended */
    char *out;                        /* request lines not yet written */
    size_t out_len, out_off;
    char *in; /* the event line being read */
    size_t in_len, in_cap;
    int in_skip;
    char err_tail[ERR_TAIL];
    size_t err_len;
    waiter *waiters;
} svc_session;

struct kiln_sessions {
    kiln_server *srv;
    pthread_mutex_t lock;
    pthread_t thread;
    int started, quit;
    int wake_fd;
    svc_session *list;
    json_int_t next_rid;
    kiln_run_limits pool_limits;
    /* the zygote */
    kiln_api_spawned zygote;
    int zygote_up;
    double zygote_restart_at;
    double zygote_backoff; /* seconds before the next start after a death; doubles */
    double zygote_started_mono;
    int unavailable; /* not root: no sandbox, so no zygote and no sessions (503) */
    /* A pooled session that died before it was ready delays the refill
     * (doubling, to 30 s) rather than spin on a failing start. */
    double pool_retry_at, pool_backoff;
    char zygote_dir[PATH_MAX];
    char zygote_socket[PATH_MAX + 16];
    int stopped; /* kiln_sessions_stop ran: the internal API refuses */
};

/*
 * A caller of the internal API (sessions.h) waits on one of these, on its
 * own stack, instead of a suspended connection. The manager fills it under
 * its lock and signals; a cell's events are queued here, not delivered,
 * so the caller's callback never runs under the manager's lock (it may
 * take locks of its own that are held around calls into this file).
 */
struct sync_reply {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int status;     /* the HTTP status /v1/sessions would answer */
    json_t *body;   /* ... and its body */
    json_t *events; /* a cell's events not yet taken by the caller */
};

/* ---- time ---- */

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_t *utc_json(int64_t t)
{
    char buf[32];
    kiln_api_time(t, buf, sizeof buf);
    return json_string(buf);
}

/* ---- streams ---- */

static sse_stream *sse_new(struct MHD_Connection *conn)
{
    sse_stream *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    pthread_mutex_init(&st->lock, NULL);
    st->refs = 2; /* the waiter's and the response's */
    st->conn = conn;
    return st;
}

static void sse_unref(sse_stream *st)
{
    pthread_mutex_lock(&st->lock);
    int last = --st->refs == 0;
    pthread_mutex_unlock(&st->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&st->lock);
    free(st->buf);
    free(st);
}

/* Append one event (event: NAME / data: JSON) or, with ev NULL, end the
 * stream; wake the connection when its reader is waiting. */
static void sse_push(sse_stream *st, const char *name, const json_t *ev)
{
    char *data = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    pthread_mutex_lock(&st->lock);
    if (data) {
        size_t need = strlen(name) + strlen(data) + 20;
        if (st->len + need > st->cap) {
            size_t cap = st->cap ? st->cap : 4096;
            while (cap < st->len + need)
                cap *= 2;
            char *grown = realloc(st->buf, cap);
            if (grown) {
                st->buf = grown;
                st->cap = cap;
            }
        }
        if (st->len + need <= st->cap)
            st->len += (size_t)snprintf(st->buf + st->len, st->cap - st->len,
                                        "event: %s\ndata: %s\n\n", name, data);
    } else {
        st->ended = 1;
    }
    if (st->suspended) {
        st->suspended = 0;
        MHD_resume_connection(st->conn);
    }
    pthread_mutex_unlock(&st->lock);
    free(data);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    sse_stream *st = cls;
    ssize_t n = 0;
    pthread_mutex_lock(&st->lock);
    if (st->off < st->len) {
        size_t k = st->len - st->off < max ? st->len - st->off : max;
        memcpy(buf, st->buf + st->off, k);
        st->off += k;
        if (st->off == st->len)
            st->off = st->len = 0;
        n = (ssize_t)k;
    } else if (st->ended) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        /* Nothing yet: the manager resumes the connection with the next
         * event (under this lock, so it cannot come in between). */
        st->suspended = 1;
        MHD_suspend_connection(st->conn);
    }
    pthread_mutex_unlock(&st->lock);
    return n;
}

static void sse_free(void *cls)
{
    sse_unref(cls);
}

/* ---- waiters ---- */

static waiter *waiter_add(svc_session *s, wait_kind kind, json_int_t rid, kiln_req *req)
{
    waiter *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->kind = kind;
    w->rid = rid;
    w->req = req;
    clock_gettime(CLOCK_MONOTONIC, &w->start);
    w->next = s->waiters;
    s->waiters = w;
    return w;
}

static void waiter_unlink(svc_session *s, waiter *w)
{
    for (waiter **p = &s->waiters; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            return;
        }
    }
}

static void sync_complete(struct sync_reply *sy, int status, json_t *body);

static void waiter_free(waiter *w)
{
    /* A caller still waiting is never left so: the session ended under it. */
    if (w->sync)
        sync_complete(w->sync, 410, kiln_api_error("session_gone", "The session ended.", NULL));
    if (w->sse) {
        sse_push(w->sse, NULL, NULL);
        sse_unref(w->sse);
    }
    json_decref(w->record);
    free(w);
}

/* Answer the suspended request (body stolen) and wake it. */
static void reply_req(kiln_req *req, int status, json_t *body)
{
    if (!req) {
        json_decref(body);
        return;
    }
    json_decref(req->reply.body);
    req->reply.status = status;
    req->reply.body = body ? body : json_object();
    req->job = JOB_DONE;
    MHD_resume_connection(req->conn);
}

/* Fill a waiting caller's reply (body stolen) and wake it. */
static void sync_complete(struct sync_reply *sy, int status, json_t *body)
{
    pthread_mutex_lock(&sy->lock);
    if (!sy->done) {
        sy->done = 1;
        sy->status = status;
        sy->body = body ? body : json_object();
        body = NULL;
    }
    pthread_cond_signal(&sy->cond);
    pthread_mutex_unlock(&sy->lock);
    json_decref(body);
}

/* A copy of a cell's event (borrowed) for the waiting caller. */
static void sync_event(struct sync_reply *sy, const json_t *ev)
{
    json_t *copy = json_deep_copy(ev);
    json_object_del(copy, "id");
    pthread_mutex_lock(&sy->lock);
    if (!sy->events)
        sy->events = json_array();
    json_array_append_new(sy->events, copy);
    pthread_cond_signal(&sy->cond);
    pthread_mutex_unlock(&sy->lock);
}

/* Answer whoever waits on w: its suspended request or its caller. After
 * this the waiter answers nobody (body stolen). */
static void reply_to(waiter *w, int status, json_t *body)
{
    if (w->sync) {
        sync_complete(w->sync, status, body);
        w->sync = NULL;
    } else {
        reply_req(w->req, status, body);
    }
    w->req = NULL;
}

/* The contract's error code as an HTTP status: the one place the
 * session's codes meet HTTP (http_contract_status). */
static void reply_errors(waiter *w, const json_t *ev)
{
    const json_t *errors = json_object_get(ev, "errors");
    const json_t *first = json_array_get(errors, 0);
    const char *code = json_string_value(json_object_get(first, "code"));
    const char *message = json_string_value(json_object_get(first, "message"));
    int status = http_contract_status(code);
    /* The reply's code is the API's (the contract's codes are in
     * details.errors); a session's own two are both. */
    const char *api_code = status == 409   ? "session_busy"
                           : status == 410 ? "session_gone"
                           : status == 413 ? "too_large"
                           : status == 404 ? "not_found"
                           : status == 422 ? "invalid_request"
                                           : "internal";
    json_t *more = json_object_get(ev, "more_errors");
    json_t *details = json_pack("{s:O, s:I}", "errors", errors ? errors : json_array(),
                                "more_errors",
                                json_is_integer(more) ? json_integer_value(more) : 0);
    if (json_object_get(ev, "session"))
        json_object_set(details, "session", json_object_get(ev, "session"));
    reply_to(w, status,
             kiln_api_error(api_code, message ? message : "The session refused the request.",
                            details));
}

/* 422 for one member at fault, in the shape of every 422 (details.errors
 * with its JSON Pointer, more_errors). */
static enum MHD_Result reply_invalid(kiln_req *req, const char *code, const char *pointer,
                                     const char *why)
{
    char msg[KILN_MESSAGE_MAX];
    snprintf(msg, sizeof msg, "%s %s.", pointer[0] ? pointer : "The request", why);
    return http_error(req, 422, code, msg,
                      json_pack("{s:[{s:s, s:s, s:s}], s:i}", "errors", "code", code, "pointer",
                                pointer, "message", why, "more_errors", 0));
}

/* 410 for a session that is over: when and why. */
static json_t *gone_body(const char *id, const json_t *ended)
{
    const char *reason = json_string_value(json_object_get(ended, "reason"));
    const char *at = json_string_value(json_object_get(ended, "at"));
    char msg[256];
    snprintf(msg, sizeof msg, "Session %s ended at %s (%s).", id, at ? at : "?",
             reason ? reason : "unknown");
    return kiln_api_error("session_gone", msg, json_pack("{s:O}", "session", ended));
}

/* ---- the session object ---- */

static const char *language_name(kiln_run_language l)
{
    return l == KILN_LANG_BASH ? "bash" : "python";
}

static json_t *session_json(const svc_session *s)
{
    json_t *limits = kiln_job_limits_json(&s->limits);
    int64_t expires = s->created_at + (int64_t)s->lifetime_seconds;
    double idle_left = s->idle_seconds - (mono_now() - s->active_mono);
    int64_t idle_at = (int64_t)time(NULL) + (int64_t)(idle_left > 0 ? idle_left : 0);
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:f, s:f, s:o, s:i, s:O}", "id", s->id,
                          "status", s->status, "language", language_name(s->language),
                          "created_at", utc_json(s->created_at), "expires_at", utc_json(expires),
                          "idle_timeout", s->idle_seconds, "lifetime", s->lifetime_seconds,
                          "limits", limits ? limits : json_object(), "cells", s->cells, "ended",
                          s->ended ? s->ended : json_null());
    if (o && !s->ended) {
        json_object_set_new(o, "idle_expires_at",
                            utc_json(idle_at < expires ? idle_at : expires));
        json_object_set_new(o, "cells_waiting",
                            json_integer(s->cells_open > 1 ? s->cells_open - 1 : 0));
    }
    return o;
}

static void session_save(kiln_sessions *m, svc_session *s)
{
    if (!s->tenant[0])
        return;
    json_t *o = session_json(s);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    kiln_error err;
    memset(&err, 0, sizeof err);
    if (!text || kiln_store_session_put(m->srv->store, s->tenant, s->id, s->created_at,
                                        s->ended != NULL, text, &err) != KILN_STORE_OK)
        http_event(m->srv, "session_save_failed",
                   json_pack("{s:s, s:s}", "session", s->id, "message",
                             text ? err.message : "out of memory"));
    free(text);
}

/* ---- writing to a child ---- */

static void wake(kiln_sessions *m)
{
    uint64_t one = 1;
    if (write(m->wake_fd, &one, sizeof one) < 0) {
        /* the counter is full: the manager is awake already */
    }
}

/* Queue a request line (req stolen) for the manager to write. */
static int send_line(kiln_sessions *m, svc_session *s, json_t *req)
{
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!text || s->sp.in_fd < 0) {
        free(text);
        return -1;
    }
    size_t n = strlen(text);
    if (s->out_off > 0) {
        memmove(s->out, s->out + s->out_off, s->out_len - s->out_off);
        s->out_len -= s->out_off;
        s->out_off = 0;
    }
    char *grown = realloc(s->out, s->out_len + n + 1);
    if (!grown) {
        free(text);
        return -1;
    }
    s->out = grown;
    memcpy(s->out + s->out_len, text, n);
    s->out[s->out_len + n] = '\n';
    s->out_len += n + 1;
    free(text);
    wake(m);
    return 0;
}

static void flush_out(svc_session *s)
{
    while (s->sp.in_fd >= 0 && s->out_off < s->out_len) {
        ssize_t w = write(s->sp.in_fd, s->out + s->out_off, s->out_len - s->out_off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            return;
        if (w <= 0) {
            /* The child is gone: its stdout's end says so. */
            close(s->sp.in_fd);
            s->sp.in_fd = -1;
            break;
        }
        s->out_off += (size_t)w;
    }
    if (s->out_off == s->out_len || s->sp.in_fd < 0) {
        free(s->out);
        s->out = NULL;
        s->out_len = s->out_off = 0;
    }
}

/* ---- ending ---- */

static const char *status_of_reason(const char *reason)
{
    if (!reason)
        return "lost";
    if (strcmp(reason, "idle_timeout") == 0 || strcmp(reason, "lifetime") == 0)
        return "expired";
    if (strcmp(reason, "closed") == 0)
        return "closed";
    return "lost";
}

/* Every waiter of s answered 410 (but a close, which the end answers). */
static void fail_waiters(svc_session *s)
{
    waiter *w = s->waiters;
    s->waiters = NULL;
    while (w) {
        waiter *next = w->next;
        if (w->kind == W_CLOSE) {
            reply_to(w, 204, NULL);
        } else if (w->sse) {
            json_t *ev = json_pack("{s:s, s:O}", "event", "lost", "session", s->ended);
            sse_push(w->sse, "lost", ev);
            json_decref(ev);
        } else if (w->kind != W_GET) {
            reply_to(w, 410, gone_body(s->id, s->ended));
        }
        waiter_free(w);
        w = next;
    }
}

/* Record why s ended (the first reason stands) and stop taking requests. */
static void mark_ended(kiln_sessions *m, svc_session *s, const char *reason, const char *message,
                       const json_t *given)
{
    if (s->ended)
        return;
    s->ended = given ? json_deep_copy(given)
                     : json_pack("{s:s, s:s, s:o}", "reason", reason, "message", message, "at",
                                 utc_json((int64_t)time(NULL)));
    snprintf(s->status, sizeof s->status, "%s",
             status_of_reason(json_string_value(json_object_get(s->ended, "reason"))));
    session_save(m, s);
    http_event(m->srv, "session_ended",
               json_pack("{s:s, s:s, s:O}", "session", s->id, "tenant", s->tenant, "ended",
                         s->ended));
}

/* End s from the service's side: a close request, then the child's end. */
static void end_session(kiln_sessions *m, svc_session *s, const char *reason, const char *message)
{
    mark_ended(m, s, reason, message, NULL);
    send_line(m, s, json_pack("{s:s}", "op", "close"));
    fail_waiters(s);
}

/* The child's stdout ended: reap it, answer everyone, free s. */
static void session_dead(kiln_sessions *m, svc_session *s)
{
    if (s->sp.in_fd >= 0)
        close(s->sp.in_fd);
    close(s->sp.out_fd);
    close(s->sp.err_fd);
    if (s->pidfd >= 0)
        close(s->pidfd);
    s->sp.in_fd = s->sp.out_fd = s->sp.err_fd = s->pidfd = -1;
    /* The group too: nothing the child started outlives it. Its pid is
     * not reaped yet, so it names no other process. */
    kill(-s->sp.pid, SIGKILL);
    int status = 0;
    while (waitpid(s->sp.pid, &status, 0) < 0 && errno == EINTR)
        ;
    /* A create whose session never became ready: it could not start. */
    for (waiter **p = &s->waiters; *p;) {
        waiter *w = *p;
        if (w->kind == W_CREATE && !s->ready) {
            *p = w->next;
            reply_to(w, 503,
                     kiln_api_error("session_unavailable", "The session could not be started.",
                                    NULL));
            waiter_free(w);
        } else {
            p = &w->next;
        }
    }
    if (!s->ended && s->tenant[0]) {
        char msg[ERR_TAIL + 128];
        size_t end = s->err_len;
        while (end > 0 && s->err_tail[end - 1] == '\n')
            end--;
        const char *last = s->err_tail;
        for (size_t i = 0; i < end; i++)
            if (s->err_tail[i] == '\n')
                last = s->err_tail + i + 1;
        if (WIFSIGNALED(status))
            snprintf(msg, sizeof msg,
                     "The session's supervisor (kiln session) was killed by "
                     "signal %d.",
                     WTERMSIG(status));
        else
            snprintf(msg, sizeof msg,
                     "The session's supervisor (kiln session) exited with "
                     "status %d: %.*s",
                     WEXITSTATUS(status), (int)(end - (size_t)(last - s->err_tail)), last);
        mark_ended(m, s, "session_lost", msg, NULL);
    }
    if (s->ended)
        fail_waiters(s);
    if (s->pooled && !s->ready) {
        m->pool_backoff = m->pool_backoff > 0 ? m->pool_backoff * 2 : 1.0;
        if (m->pool_backoff > 30)
            m->pool_backoff = 30;
        m->pool_retry_at = mono_now() + m->pool_backoff;
    }
    while (s->waiters) {
        waiter *w = s->waiters;
        s->waiters = w->next;
        waiter_free(w);
    }
    for (svc_session **p = &m->list; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    json_decref(s->ended);
    free(s->out);
    free(s->in);
    free(s);
}

/* ---- spawning ---- */

/* The document for `kiln session --request`: rq as checked (limits,
 * language, render), inputs as descriptors 4.., and the longest idle
 * timeout and lifetime (the service keeps the real ones). */
static int session_memfd(kiln_session_request *rq, const kiln_api_input *inputs, size_t n)
{
    kiln_api_input_refs refs;
    if (kiln_api_input_refs_make(inputs, n, &refs) != 0)
        return -1;
    rq->idle_seconds = KILN_SESSION_SECONDS_MAX;
    rq->lifetime_seconds = KILN_SESSION_SECONDS_MAX;
    int fd = kiln_api_doc_memfd("kiln-session-request",
                                kiln_session_request_json(rq, refs.path_ptrs, refs.names, n));
    kiln_api_input_refs_free(&refs);
    return fd;
}

/* A new child on the list (not ready yet). NULL with reply set. */
static svc_session *spawn_session(kiln_sessions *m, kiln_session_request *rq,
                                  const kiln_api_input *inputs, size_t n, kiln_api_reply *reply)
{
    svc_session *s = calloc(1, sizeof *s);
    int fd = s ? session_memfd(rq, inputs, n) : -1;
    int *fds = calloc(n + 1, sizeof *fds);
    if (!s || fd < 0 || !fds) {
        kiln_api_reply_internal(reply, "cannot hand the session its request: %s",
                                strerror(errno));
        goto fail;
    }
    fds[0] = fd;
    for (size_t i = 0; i < n; i++)
        fds[1 + i] = inputs[i].fd;
    /* While the shared zygote starts (the server's first second or two,
     * or after it died), a session starts a private one: slower, never
     * refused. */
    char *argv[] = {
        (char *)m->srv->api.kiln_exe,     "session",        "--request", "/proc/self/fd/3",
        m->zygote_up ? "--zygote" : NULL, m->zygote_socket, NULL};
    if (kiln_api_spawn(&m->srv->api, argv, fds, n + 1, 1, &s->sp, reply) != 0)
        goto fail;
    fcntl(s->sp.in_fd, F_SETFL, O_NONBLOCK);
    fcntl(s->sp.out_fd, F_SETFL, O_NONBLOCK);
    fcntl(s->sp.err_fd, F_SETFL, O_NONBLOCK);
    s->pidfd = (int)syscall(SYS_pidfd_open, s->sp.pid, 0);
    close(fd);
    free(fds);
    s->limits = rq->limits;
    s->language = rq->language;
    snprintf(s->status, sizeof s->status, "starting");
    s->next = m->list;
    m->list = s;
    return s;
fail:
    if (fd >= 0)
        close(fd);
    free(fds);
    free(s);
    return NULL;
}

static void spawn_pooled(kiln_sessions *m)
{
    kiln_session_request rq = {.language = KILN_LANG_PYTHON,
                               .limits = m->pool_limits,
                               .render = 1};
    kiln_api_reply reply;
    memset(&reply, 0, sizeof reply);
    svc_session *s = spawn_session(m, &rq, NULL, 0, &reply);
    if (s)
        s->pooled = 1;
    else
        http_event(m->srv, "session_pool_failed",
                   json_pack("{s:s}", "message", reply.log[0] ? reply.log : "cannot spawn"));
    json_decref(reply.body);
}

/* ---- the zygote ---- */

static void zygote_start(kiln_sessions *m)
{
    char *argv[] = {(char *)m->srv->api.kiln_exe, "zygote", m->zygote_socket, NULL};
    kiln_api_reply reply;
    memset(&reply, 0, sizeof reply);
    unlink(m->zygote_socket);
    if (kiln_api_spawn(&m->srv->api, argv, NULL, 0, 0, &m->zygote, &reply) != 0) {
        http_event(m->srv, "zygote_failed",
                   json_pack("{s:s}", "message", reply.log[0] ? reply.log : "cannot spawn"));
        m->zygote_restart_at = mono_now() + ZYGOTE_RESTART_SECONDS;
        m->zygote.pid = 0;
    } else {
        fcntl(m->zygote.out_fd, F_SETFL, O_NONBLOCK);
        fcntl(m->zygote.err_fd, F_SETFL, O_NONBLOCK);
        m->zygote_up = 0;
        m->zygote_started_mono = mono_now();
        http_event(m->srv, "zygote_started",
                   json_pack("{s:i, s:s}", "pid", (int)m->zygote.pid, "socket",
                             m->zygote_socket));
    }
    json_decref(reply.body);
}

static void zygote_reap(kiln_sessions *m, int restart)
{
    if (m->zygote.pid <= 0)
        return;
    close(m->zygote.out_fd);
    close(m->zygote.err_fd);
    kill(-m->zygote.pid, SIGKILL);
    int status = 0;
    while (waitpid(m->zygote.pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (restart)
        http_event(m->srv, "zygote_exited",
                   json_pack("{s:i, s:i}", "pid", (int)m->zygote.pid, "status",
                             WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status)));
    m->zygote.pid = 0;
    m->zygote_up = 0;
    /* One that died soon after its start is failing, not unlucky: wait
     * longer each time (to a minute) rather than spin. */
    double now = mono_now();
    if (now - m->zygote_started_mono > 60 || m->zygote_backoff <= 0)
        m->zygote_backoff = ZYGOTE_RESTART_SECONDS;
    else if (m->zygote_backoff < 60)
        m->zygote_backoff *= 2;
    m->zygote_restart_at = now + m->zygote_backoff;
}

/* ---- reading events ---- */

static int pool_count(const kiln_sessions *m, int ready_only)
{
    int n = 0;
    for (const svc_session *s = m->list; s; s = s->next)
        if (s->pooled && !s->ended && (!ready_only || s->ready))
            n++;
    return n;
}

static waiter *waiter_find(svc_session *s, json_int_t rid)
{
    for (waiter *w = s->waiters; w; w = w->next)
        if (w->rid == rid)
            return w;
    return NULL;
}

static const char *metric_outcome(const char *status)
{
    static const char *const known[] = {"ok",           "error",        "interrupted", "timeout",
                                        "memory_limit", "output_limit", "session_lost"};
    for (size_t i = 0; status && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(status, known[i]) == 0)
            return known[i];
    return "other";
}

/* The cell's record is complete (its files stored): the reply, or the
 * stream's last event. */
static void finish_cell(kiln_sessions *m, svc_session *s, waiter *w)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double seconds = (double)(now.tv_sec - w->start.tv_sec) +
                     (double)(now.tv_nsec - w->start.tv_nsec) / 1e9;
    kiln_metrics_cell(m->srv->metrics,
                      metric_outcome(json_string_value(json_object_get(w->record, "status"))),
                      seconds);
    if (w->sse) {
        json_object_set_new(w->record, "event", json_string("cell"));
        sse_push(w->sse, "cell", w->record);
    } else {
        json_object_del(w->record, "event");
        reply_to(w, 200, json_incref(w->record));
    }
    waiter_unlink(s, w);
    waiter_free(w);
}

/* A file a cell made, from a `file` reply, into the store. */
static void store_cell_file(kiln_sessions *m, svc_session *s, waiter *g, const json_t *ev)
{
    json_t *entry = g->entry;
    const char *b64 = json_string_value(json_object_get(ev, "content_base64"));
    const char *name = json_string_value(json_object_get(entry, "name"));
    const char *media = json_string_value(json_object_get(entry, "media_type"));
    const char *source = json_string_value(json_object_get(entry, "source"));
    size_t len = b64 ? strlen(b64) : 0, got = 0, bad = 0;
    unsigned char *data = malloc(KILN_BASE64_DECODED_MAX(len) + 1);
    kiln_error err;
    memset(&err, 0, sizeof err);
    const char *why = NULL;
    if (!data || !b64 || kiln_base64_decode_into(b64, len, data, &got, &bad) != 0) {
        why = "the session's reply could not be decoded";
    } else {
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        kiln_store_upload *up = NULL;
        kiln_store_file file;
        kiln_store_source src = source && strcmp(source, "document") == 0
                                    ? KILN_STORE_SOURCE_DOCUMENT
                                    : KILN_STORE_SOURCE_OUTPUT;
        kiln_store_result r = kiln_store_begin(m->srv->store, s->tenant, base,
                                               media ? media : "application/octet-stream", src,
                                               &up, &err);
        if (r == KILN_STORE_OK && (r = kiln_store_write(up, data, got, &err)) == KILN_STORE_OK)
            r = kiln_store_commit(up, &file, &err);
        else if (up)
            kiln_store_abort(up);
        if (r == KILN_STORE_OK)
            json_object_set_new(entry, "file", kiln_api_file_json(&file));
        else
            why = err.message[0] ? err.message : "the store refused it";
    }
    if (why) {
        json_object_set_new(entry, "file", json_null());
        json_object_set_new(entry, "file_error", json_string(why));
    }
    free(data);
}

/* The cell's record came: fetch its files (a get each), then finish. */
static void cell_ended(kiln_sessions *m, svc_session *s, waiter *w, const json_t *ev)
{
    s->cells_open--;
    s->cells++;
    s->active_mono = mono_now();
    json_decref(w->record);
    w->record = json_deep_copy(ev);
    json_object_del(w->record, "id");
    json_t *files = json_object_get(w->record, "files");
    size_t i;
    json_t *entry;
    json_array_foreach(files, i, entry) {
        const char *name = json_string_value(json_object_get(entry, "name"));
        json_int_t rid = ++m->next_rid;
        waiter *g = name ? waiter_add(s, W_GET, rid, NULL) : NULL;
        if (!g ||
            send_line(m, s, json_pack("{s:s, s:I, s:s}", "op", "get", "id", rid, "name", name)) !=
                0) {
            if (g) {
                waiter_unlink(s, g);
                waiter_free(g);
            }
            json_object_set_new(entry, "file", json_null());
            json_object_set_new(entry, "file_error", json_string("not fetched"));
            continue;
        }
        g->parent = w;
        g->entry = entry;
        w->pending++;
    }
    if (!s->ended)
        snprintf(s->status, sizeof s->status, "%s", s->cells_open ? "busy" : "ready");
    /* The reply first: the record's commit (an fsync) need not delay it. */
    if (w->pending == 0)
        finish_cell(m, s, w);
    session_save(m, s);
}

static void created(kiln_sessions *m, svc_session *s, waiter *w)
{
    (void)m;
    json_t *o = session_json(s);
    if (w->req && o) {
        snprintf(w->req->reply.location, sizeof w->req->reply.location, "/v1/sessions/%s", s->id);
    }
    reply_to(w, 201, o);
    waiter_unlink(s, w);
    waiter_free(w);
}

static void handle_event(kiln_sessions *m, svc_session *s, json_t *ev)
{
    const char *name = json_string_value(json_object_get(ev, "event"));
    if (!name)
        return;
    if (strcmp(name, "ready") == 0) {
        s->ready = 1;
        if (s->pooled)
            m->pool_backoff = 0;
        if (!s->pooled)
            snprintf(s->status, sizeof s->status, "ready");
        waiter *w = waiter_find(s, 0);
        if (w && w->kind == W_CREATE && w->pending == 0)
            created(m, s, w);
        return;
    }
    if (strcmp(name, "failed") == 0) {
        waiter *w = waiter_find(s, 0);
        const json_t *first = json_array_get(json_object_get(ev, "errors"), 0);
        const char *code = json_string_value(json_object_get(first, "code"));
        const char *why = json_string_value(json_object_get(first, "message"));
        if (w && w->kind == W_CREATE && http_contract_status(code) == 500) {
            /* The sandbox or the zygote failed: the server's trouble. */
            http_event(m->srv, "session_failed",
                       json_pack("{s:s, s:s}", "session", s->id, "message", why ? why : "?"));
            reply_to(w, 503,
                     kiln_api_error("session_unavailable", "The session could not be started.",
                                    json_pack("{s:s}", "reason", why ? why : "unknown")));
            waiter_unlink(s, w);
            waiter_free(w);
        } else if (w && w->kind == W_CREATE) {
            reply_errors(w, ev);
            waiter_unlink(s, w);
            waiter_free(w);
        }
        return;
    }
    if (strcmp(name, "lost") == 0) {
        /* Its requests are over: the child writes what it still has (the
         * running cell's record) and exits at the end of its input, and
         * session_dead answers whatever still waits. */
        mark_ended(m, s, NULL, NULL, json_object_get(ev, "session"));
        if (s->sp.in_fd >= 0) {
            close(s->sp.in_fd);
            s->sp.in_fd = -1;
        }
        /* A stream of a running cell carries it, as kiln session printed it. */
        for (waiter *w = s->waiters; w; w = w->next) {
            if (w->kind == W_CELL && w->sse)
                sse_push(w->sse, name, ev);
            else if (w->kind == W_CELL && w->sync)
                sync_event(w->sync, ev);
        }
        return;
    }
    json_t *idv = json_object_get(ev, "id");
    waiter *w = json_is_integer(idv) ? waiter_find(s, json_integer_value(idv)) : NULL;
    if (!w)
        return;
    switch (w->kind) {
    case W_CELL:
        if (strcmp(name, "cell") == 0) {
            /* A caller hears the cell has ended before its files are kept
             * (an MCP request stops counting as running it: mcp.h). */
            if (w->sync)
                sync_event(w->sync, ev);
            cell_ended(m, s, w, ev);
        } else if (strcmp(name, "rejected") == 0) {
            s->cells_open--;
            if (w->sse) {
                json_t *copy = json_deep_copy(ev);
                json_object_del(copy, "id");
                sse_push(w->sse, name, copy);
                json_decref(copy);
            } else {
                reply_errors(w, ev);
            }
            waiter_unlink(s, w);
            waiter_free(w);
        } else if (w->sse) {
            json_t *copy = json_deep_copy(ev);
            json_object_del(copy, "id");
            sse_push(w->sse, name, copy);
            json_decref(copy);
        } else if (w->sync) {
            sync_event(w->sync, ev);
        }
        break;
    case W_GET: {
        waiter *parent = w->parent;
        if (strcmp(name, "file") == 0) {
            store_cell_file(m, s, w, ev);
        } else {
            const char *msg = json_string_value(
                json_object_get(json_array_get(json_object_get(ev, "errors"), 0), "message"));
            json_object_set_new(w->entry, "file", json_null());
            json_object_set_new(w->entry, "file_error", json_string(msg ? msg : "refused"));
        }
        waiter_unlink(s, w);
        waiter_free(w);
        if (parent && --parent->pending == 0)
            finish_cell(m, s, parent);
        break;
    }
    case W_INTERRUPT:
        reply_to(w, 200,
                 json_pack("{s:b}", "interrupted",
                           json_is_true(json_object_get(ev, "interrupted"))));
        waiter_unlink(s, w);
        waiter_free(w);
        break;
    case W_FILES:
        if (strcmp(name, "files") == 0)
            reply_to(w, 200, json_pack("{s:O}", "files", json_object_get(ev, "files")));
        else
            reply_errors(w, ev);
        waiter_unlink(s, w);
        waiter_free(w);
        break;
    case W_PUT: {
        waiter *parent = w->parent;
        int ok = strcmp(name, "put") == 0;
        /* A put of its own is answered first, then let go of. */
        if (!parent && ok)
            reply_to(w, 201, json_pack("{s:O}", "file", json_object_get(ev, "file")));
        else if (!parent)
            reply_errors(w, ev);
        waiter_unlink(s, w);
        waiter_free(w);
        if (parent) {
            if (!ok && !parent->failed) {
                parent->failed = 1;
                reply_errors(parent, ev);
            }
            if (--parent->pending == 0) {
                if (parent->failed) {
                    waiter_unlink(s, parent);
                    waiter_free(parent);
                    end_session(m, s, "closed", "Its inputs could not be put in place.");
                } else if (s->ready) {
                    created(m, s, parent);
                }
            }
        }
        break;
    }
    case W_CLOSE:
    case W_CREATE:
        break;
    }
}

/* What a child's stdout holds now, line by line. 0, or -1 at its end. */
static int read_events(kiln_sessions *m, svc_session *s)
{
    for (;;) {
        if (s->in_cap - s->in_len < 65536) {
            size_t cap = s->in_cap ? s->in_cap * 2 : 1 << 16;
            char *grown = realloc(s->in, cap);
            if (!grown)
                return -1;
            s->in = grown;
            s->in_cap = cap;
        }
        ssize_t n = read(s->sp.out_fd, s->in + s->in_len, s->in_cap - s->in_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            return -1;
        size_t scan = s->in_len, from = 0;
        s->in_len += (size_t)n;
        char *nl;
        while ((nl = memchr(s->in + scan, '\n', s->in_len - scan)) != NULL) {
            size_t end = (size_t)(nl - s->in);
            if (!s->in_skip) {
                json_t *ev = json_loadb(s->in + from, end - from, 0, NULL);
                if (json_is_object(ev))
                    handle_event(m, s, ev);
                json_decref(ev);
            }
            s->in_skip = 0;
            from = scan = end + 1;
        }
        memmove(s->in, s->in + from, s->in_len - from);
        s->in_len -= from;
        if (s->in_len > EVENT_LINE_MAX) {
            s->in_skip = 1;
            s->in_len = 0;
        }
        /* A buffer grown for one long line goes back to its first size. */
        if (s->in_len == 0 && s->in_cap > (4u << 20)) {
            free(s->in);
            s->in = NULL;
            s->in_cap = 0;
        }
    }
}

static void read_stderr(int fd, char *tail, size_t *tail_len)
{
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        if (!tail)
            continue;
        size_t k = (size_t)n > ERR_TAIL ? ERR_TAIL : (size_t)n;
        const char *src = buf + (size_t)n - k;
        if (*tail_len + k > ERR_TAIL) {
            size_t drop = *tail_len + k - ERR_TAIL;
            memmove(tail, tail + drop, *tail_len - drop);
            *tail_len -= drop;
        }
        memcpy(tail + *tail_len, src, k);
        *tail_len += k;
    }
}

/* ---- the manager's loop ---- */

/* Idle timeouts and lifetimes: the next deadline (seconds from now, at
 * most one) after ending those that passed. */
static double check_clocks(kiln_sessions *m)
{
    double now = mono_now(), next = 1.0;
    for (svc_session *s = m->list; s; s = s->next) {
        if (s->pooled || s->ended || !s->tenant[0])
            continue;
        double life_left = s->lifetime_seconds - (now - s->created_mono);
        double idle_left = s->cells_open ? 1e9 : s->idle_seconds - (now - s->active_mono);
        if (life_left <= 0) {
            end_session(m, s, "lifetime", "The session reached its lifetime.");
            continue;
        }
        if (idle_left <= 0) {
            end_session(m, s, "idle_timeout", "No cell ran for the session's idle timeout.");
            continue;
        }
        if (life_left < next)
            next = life_left;
        if (idle_left < next)
            next = idle_left;
    }
    return next;
}

static void *manager_main(void *arg)
{
    kiln_sessions *m = arg;
    struct pollfd *fds = NULL;
    svc_session **owner = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&m->lock);
    while (!m->quit) {
        double now = mono_now();
        if (m->zygote.pid <= 0 && now >= m->zygote_restart_at && atomic_load(&m->srv->listening))
            zygote_start(m);
        if (m->zygote.pid > 0 && !m->zygote_up)
            m->zygote_up = access(m->zygote_socket, F_OK) == 0;
        if (m->zygote_up && now >= m->pool_retry_at) {
            unsigned target = m->srv->opt.session_pool;
            for (int n = pool_count(m, 0); n < (int)target; n++)
                spawn_pooled(m);
        }
        double next = check_clocks(m);
        size_t count = 3;
        for (svc_session *s = m->list; s; s = s->next)
            count += 4;
        if (count > cap) {
            struct pollfd *f = realloc(fds, count * sizeof *f);
            svc_session **o = realloc(owner, count * sizeof *o);
            if (f)
                fds = f;
            if (o)
                owner = o;
            if (!f || !o)
                break;
            cap = count;
        }
        size_t n = 0;
        fds[n] = (struct pollfd){.fd = m->wake_fd, .events = POLLIN};
        owner[n++] = NULL;
        if (m->zygote.pid > 0) {
            fds[n] = (struct pollfd){.fd = m->zygote.out_fd, .events = POLLIN};
            owner[n++] = NULL;
            fds[n] = (struct pollfd){.fd = m->zygote.err_fd, .events = POLLIN};
            owner[n++] = NULL;
        }
        for (svc_session *s = m->list; s; s = s->next) {
            flush_out(s);
            fds[n] = (struct pollfd){.fd = s->sp.out_fd, .events = POLLIN};
            owner[n++] = s;
            fds[n] = (struct pollfd){.fd = s->sp.err_fd, .events = POLLIN};
            owner[n++] = s;
            /* Its input only while a request line waits (poll skips -1). */
            fds[n] = (struct pollfd){.fd = s->out_len > s->out_off ? s->sp.in_fd : -1,
                                     .events = POLLOUT};
            owner[n++] = s;
            fds[n] = (struct pollfd){.fd = s->pidfd, .events = POLLIN};
            owner[n++] = s;
        }
        int timeout = (int)(next * 1000) + 1;
        if (m->zygote.pid <= 0 || !m->zygote_up)
            timeout = 50;
        pthread_mutex_unlock(&m->lock);
        int rc = poll(fds, n, timeout);
        pthread_mutex_lock(&m->lock);
        if (rc < 0 && errno != EINTR)
            break;
        if (rc <= 0)
            continue;
        if (fds[0].revents) {
            uint64_t v;
            if (read(m->wake_fd, &v, sizeof v) < 0) {
                /* nothing to clear */
            }
        }
        size_t i = 1;
        if (m->zygote.pid > 0 && i + 1 < n && fds[i].fd == m->zygote.out_fd) {
            char sink[4096];
            int dead = 0;
            if (fds[i].revents) {
                ssize_t r = read(m->zygote.out_fd, sink, sizeof sink);
                dead = r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR);
            }
            if (fds[i + 1].revents)
                read_stderr(m->zygote.err_fd, NULL, NULL);
            if (dead)
                zygote_reap(m, 1);
            i += 2;
        }
        /* A session the loop ends is freed: walk a snapshot by pointer. */
        for (; i + 3 < n; i += 4) {
            svc_session *s = owner[i];
            int alive = 0;
            for (svc_session *t = m->list; t; t = t->next)
                alive |= t == s;
            if (!alive)
                continue;
            if (fds[i + 1].revents)
                read_stderr(s->sp.err_fd, s->err_tail, &s->err_len);
            if (fds[i + 2].revents)
                flush_out(s);
            if (fds[i].revents && read_events(m, s) < 0) {
                session_dead(m, s);
            } else if (fds[i + 3].revents) {
                /* It exited: what it wrote before is read first. */
                read_events(m, s);
                session_dead(m, s);
            }
        }
    }
    pthread_mutex_unlock(&m->lock);
    free(fds);
    free(owner);
    return NULL;
}

/* ---- start and stop ---- */

static void mark_restart(const char *id, const char *tenant, const char *object, void *arg)
{
    json_t *list = arg;
    json_t *o = json_loads(object, 0, NULL);
    if (!o)
        return;
    json_object_set_new(o, "_tenant", json_string(tenant));
    json_object_set_new(o, "_id", json_string(id));
    json_array_append_new(list, o);
}

/* The sessions a previous server left live are lost now (410
 * server_restart); their files stay in the store. */
static void end_previous(kiln_sessions *m)
{
    json_t *list = json_array();
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_session_list(m->srv->store, NULL, 1, mark_restart, list, &err);
    size_t i;
    json_t *o;
    int64_t now = (int64_t)time(NULL);
    json_array_foreach(list, i, o) {
        char id[KILN_STORE_ID_LEN + 1], tenant[KILN_AUTH_TENANT_MAX + 1];
        snprintf(id, sizeof id, "%s", json_string_value(json_object_get(o, "_id")));
        snprintf(tenant, sizeof tenant, "%s", json_string_value(json_object_get(o, "_tenant")));
        json_object_del(o, "_id");
        json_object_del(o, "_tenant");
        json_object_set_new(o, "status", json_string("lost"));
        json_object_del(o, "idle_expires_at");
        json_object_del(o, "cells_waiting");
        json_object_set_new(o, "ended",
                            json_pack("{s:s, s:s, s:o}", "reason", "server_restart", "message",
                                      "The server restarted: the session's interpreter is gone "
                                      "(its files are kept).",
                                      "at", utc_json(now)));
        char *text = json_dumps(o, JSON_COMPACT);
        if (text)
            kiln_store_session_put(m->srv->store, tenant, id, 0, 1, text, &err);
        free(text);
    }
    if (json_array_size(list))
        http_event(m->srv, "sessions_lost",
                   json_pack("{s:i, s:s}", "count", (int)json_array_size(list), "reason",
                             "server_restart"));
    json_decref(list);
}

/* A root-only directory for the zygote's socket: a private runtime
 * directory (/run, else /tmp), short enough for a socket's path. */
static int make_zygote_dir(kiln_sessions *m)
{
    static const char *const bases[] = {"/run", "/tmp"};
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        snprintf(m->zygote_dir, sizeof m->zygote_dir, "%s/kiln-zygote-XXXXXX", bases[i]);
        if (mkdtemp(m->zygote_dir)) {
            chmod(m->zygote_dir, 0700);
            snprintf(m->zygote_socket, sizeof m->zygote_socket, "%s/socket", m->zygote_dir);
            return 0;
        }
    }
    m->zygote_dir[0] = '\0';
    return -1;
}

kiln_status kiln_sessions_start(kiln_server *srv, kiln_error *err)
{
    if (!srv->opt.sessions_enabled)
        return KILN_E_OK;
    kiln_sessions *m = calloc(1, sizeof *m);
    if (!m)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    m->srv = srv;
    pthread_mutex_init(&m->lock, NULL);
    m->pool_limits = srv->api.run_max;
    kiln_job_limits_fill(&m->pool_limits);
    m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m->wake_fd < 0 || make_zygote_dir(m) != 0) {
        kiln_status st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot set up sessions: %s",
                                        strerror(errno));
        if (m->wake_fd >= 0)
            close(m->wake_fd);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return st;
    }
    srv->sessions = m;
    end_previous(m);
    /* A sandbox needs root (as a run's does): without it no zygote is
     * started, and a session route says why (503 sandbox_unavailable). */
    if (geteuid() != 0) {
        m->unavailable = 1;
        http_event(srv, "sessions_unavailable",
                   json_pack("{s:s}", "message", "sessions need root (namespaces, cgroups)"));
        return KILN_E_OK;
    }
    if (pthread_create(&m->thread, NULL, manager_main, m) != 0)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start the sessions thread");
    m->started = 1;
    return KILN_E_OK;
}

void kiln_sessions_stop(kiln_server *srv)
{
    kiln_sessions *m = srv->sessions;
    if (!m || m->stopped)
        return;
    pthread_mutex_lock(&m->lock);
    m->quit = 1;
    m->stopped = 1;
    wake(m);
    pthread_mutex_unlock(&m->lock);
    if (m->started)
        pthread_join(m->thread, NULL);
    /* Every child ends; a live session's record says the server stopped. */
    pthread_mutex_lock(&m->lock);
    for (svc_session *s = m->list; s; s = s->next) {
        if (s->sp.pid > 0)
            kill(-s->sp.pid, SIGKILL);
        if (s->tenant[0])
            mark_ended(m, s, "server_restart",
                       "The server stopped: the session's interpreter is gone (its files are "
                       "kept).",
                       NULL);
    }
    while (m->list)
        session_dead(m, m->list);
    zygote_reap(m, 0);
    pthread_mutex_unlock(&m->lock);
    if (m->zygote_dir[0]) {
        unlink(m->zygote_socket);
        rmdir(m->zygote_dir);
        m->zygote_dir[0] = '\0';
    }
}

void kiln_sessions_free(kiln_server *srv)
{
    kiln_sessions *m = srv->sessions;
    if (!m)
        return;
    kiln_sessions_stop(srv);
    close(m->wake_fd);
    pthread_mutex_destroy(&m->lock);
    free(m);
    srv->sessions = NULL;
}

void kiln_sessions_wake(kiln_server *srv)
{
    if (srv->sessions)
        wake(srv->sessions);
}

void kiln_sessions_counts(kiln_server *srv, unsigned *open, unsigned *pool)
{
    *open = *pool = 0;
    kiln_sessions *m = srv->sessions;
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    for (svc_session *s = m->list; s; s = s->next) {
        if (s->ended)
            continue;
        if (s->pooled)
            *pool += s->ready;
        else
            (*open)++;
    }
    pthread_mutex_unlock(&m->lock);
}

/* ---- the HTTP side ---- */

/* The tenant's live session id; NULL when there is none (then *gone_reply
 * set: 404, or 410 from the record of one that ended). Locked. */
static svc_session *find_session(kiln_sessions *m, kiln_req *req, int *status, json_t **body)
{
    for (svc_session *s = m->list; s; s = s->next) {
        if (strcmp(s->id, req->id) != 0 || s->pooled)
            continue;
        if (strcmp(s->tenant, req->tenant) != 0)
            break;
        if (s->ended) {
            *status = 410;
            *body = gone_body(s->id, s->ended);
            return NULL;
        }
        return s;
    }
    char *text = NULL;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_result r = kiln_store_session_get(m->srv->store, req->tenant, req->id, &text,
                                                 &err);
    json_t *o = r == KILN_STORE_OK ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (o && json_is_object(json_object_get(o, "ended"))) {
        *status = 410;
        *body = gone_body(req->id, json_object_get(o, "ended"));
    } else {
        *status = 404;
        *body = kiln_api_error("not_found", "No such resource.", NULL);
    }
    json_decref(o);
    return NULL;
}

static int tenant_count(const kiln_sessions *m, const char *tenant)
{
    int n = 0;
    for (const svc_session *s = m->list; s; s = s->next)
        if (!s->pooled && !s->ended && (!tenant || strcmp(s->tenant, tenant) == 0))
            n++;
    return n;
}

static enum MHD_Result suspend_for_reply(kiln_req *req)
{
    req->job = JOB_WAITING;
    MHD_suspend_connection(req->conn);
    return MHD_YES;
}

/* Read a stored body whole (at most the server's largest file): malloc'd,
 * or NULL. */
static char *read_body(int fd, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0)
        return NULL;
    char *data = malloc((size_t)st.st_size + 1);
    if (!data)
        return NULL;
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = pread(fd, data + got, (size_t)st.st_size - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got != (size_t)st.st_size) {
        free(data);
        return NULL;
    }
    *len = got;
    return data;
}

/* A put request for a stored body as name. New, or NULL. */
static json_t *put_request(json_int_t rid, const char *name, int fd)
{
    size_t len = 0, b64_len = 0;
    char *data = read_body(fd, &len);
    char *b64 = data ? kiln_base64_encode(data, len, &b64_len) : NULL;
    free(data);
    if (!b64)
        return NULL;
    json_t *req = json_pack("{s:s, s:I, s:s, s:s%}", "op", "put", "id", rid, "name", name,
                            "content_base64", b64, b64_len);
    free(b64);
    return req;
}

/* Locked. 1 when tenant may not open one more session (*limit the cap it
 * met, *server_full whether the server's), else 0. */
static int over_cap(const kiln_sessions *m, const char *tenant, unsigned *limit, int *server_full)
{
    const kiln_server *srv = m->srv;
    *server_full = tenant_count(m, NULL) >= (int)srv->opt.max_sessions;
    if (*server_full) {
        *limit = srv->opt.max_sessions;
        return 1;
    }
    *limit = srv->opt.max_sessions_per_tenant;
    return tenant_count(m, tenant) >= (int)srv->opt.max_sessions_per_tenant;
}

/* Locked. A session for tenant as rq asks: a pooled one when rq asks what
 * the pool's have (its inputs are then the caller's to put), else a new
 * child given the inputs. On the list, the tenant's, saved and logged; or
 * NULL with reply set. *pooled says which it was. */
static svc_session *take_session(kiln_sessions *m, const char *tenant, kiln_session_request *rq,
                                 double idle, double life, const kiln_api_input *inputs,
                                 size_t n_in, int *pooled, kiln_api_reply *reply)
{
    svc_session *s = NULL;
    *pooled = 0;
    if (memcmp(&rq->limits, &m->pool_limits, sizeof rq->limits) == 0 && rq->render) {
        for (svc_session *t = m->list; t; t = t->next) {
            if (t->pooled && t->ready && !t->ended) {
                s = t;
                *pooled = 1;
                break;
            }
        }
    }
    if (!s)
        s = spawn_session(m, rq, inputs, n_in, reply);
    if (!s)
        return NULL;
    s->pooled = 0;
    s->language = rq->language;
    s->idle_seconds = idle;
    s->lifetime_seconds = life;
    snprintf(s->tenant, sizeof s->tenant, "%s", tenant);
    if (kiln_store_new_id(s->id) != 0)
        snprintf(s->id, sizeof s->id, "%032x", (unsigned)rand());
    s->created_at = (int64_t)time(NULL);
    s->created_mono = s->active_mono = mono_now();
    if (s->ready)
        snprintf(s->status, sizeof s->status, "ready");
    session_save(m, s);
    http_event(m->srv, "session_created",
               json_pack("{s:s, s:s, s:b, s:i}", "session", s->id, "tenant", s->tenant, "pooled",
                         *pooled, "pid", (int)s->sp.pid));
    return s;
}

static enum MHD_Result session_create(kiln_req *req, json_t *body)
{
    kiln_server *srv = req->srv;
    kiln_sessions *m = srv->sessions;
    kiln_api_reply reply;
    memset(&reply, 0, sizeof reply);
    kiln_run_limits max = m->pool_limits;
    kiln_job_parse_options po = {.inputs = KILN_JOB_INPUT_IDS, .max = &max, .unset = &max};
    kiln_session_request rq;
    kiln_errors *errs = malloc(sizeof *errs);
    if (!errs)
        return http_internal(req, "out of memory");
    kiln_errors_init(errs);
    kiln_status pst = kiln_session_request_parse(body, &po, &rq, errs);
    double life_max = (double)srv->opt.session_lifetime;
    if (pst == KILN_E_OK && rq.lifetime_seconds > life_max) {
        kiln_error e;
        kiln_error_limit(&e, KILN_E_LIMIT, "/lifetime", life_max, rq.lifetime_seconds,
                         "at most %gs on this server", life_max);
        kiln_errors_add(errs, &e);
        pst = KILN_E_LIMIT;
    }
    if (pst != KILN_E_OK) {
        size_t n = errs->count + errs->dropped;
        char msg[96];
        snprintf(msg, sizeof msg, "The session request has %zu error%s.", n, n == 1 ? "" : "s");
        json_t *details = kiln_errors_json(errs);
        free(errs);
        return http_error(req, 422, "invalid_session", msg, details);
    }
    free(errs);
    double idle = rq.idle_seconds > 0 ? rq.idle_seconds : (double)srv->opt.session_idle;
    double life = rq.lifetime_seconds > 0 ? rq.lifetime_seconds : life_max;

    size_t n_in = json_array_size(rq.inputs);
    kiln_api_input *inputs = NULL;
    if (kiln_api_inputs_open(&srv->api, req->tenant, rq.inputs, &inputs, &reply) != 0)
        return http_json(req, reply.status, reply.body);
    kiln_errors names_errs;
    kiln_errors_init(&names_errs);
    const char **names = calloc(n_in + 1, sizeof *names);
    for (size_t i = 0; names && i < n_in; i++)
        names[i] = inputs[i].file.filename;
    if (!names || kiln_job_check_input_names(names, NULL, n_in, &names_errs) != 0) {
        free(names);
        kiln_api_inputs_close(inputs, n_in);
        return http_error(req, 422, "invalid_session", "An input's name cannot be used.",
                          kiln_errors_json(&names_errs));
    }
    free(names);

    enum MHD_Result res = MHD_YES;
    pthread_mutex_lock(&m->lock);
    unsigned limit = 0;
    int server_full = 0;
    if (over_cap(m, req->tenant, &limit, &server_full)) {
        pthread_mutex_unlock(&m->lock);
        kiln_api_inputs_close(inputs, n_in);
        char msg[128];
        snprintf(msg, sizeof msg, "At most %u sessions may be open %s.", limit,
                 server_full ? "on this server" : "per tenant");
        req->retry_after = 1;
        return http_error(req, 429, "too_many_sessions", msg,
                          json_pack("{s:i}", "limit", (int)limit));
    }
    int pooled = 0;
    svc_session *s = take_session(m, req->tenant, &rq, idle, life, inputs, n_in, &pooled, &reply);
    if (!s) {
        pthread_mutex_unlock(&m->lock);
        kiln_api_inputs_close(inputs, n_in);
        if (reply.log[0])
            http_event(srv, "error",
                       json_pack("{s:s, s:s}", "request_id", req->request_id, "message",
                                 reply.log));
        return http_json(req, reply.status ? reply.status : 500, reply.body);
    }
    waiter *w = NULL;
    if (!s->ready || (pooled && n_in)) {
        w = waiter_add(s, W_CREATE, 0, req);
        if (!w) {
            end_session(m, s, "closed", "out of memory");
            pthread_mutex_unlock(&m->lock);
            kiln_api_inputs_close(inputs, n_in);
            return http_internal(req, "out of memory");
        }
    }
    for (size_t i = 0; pooled && w && i < n_in; i++) {
        json_int_t rid = ++m->next_rid;
        json_t *put = put_request(rid, inputs[i].file.filename, inputs[i].fd);
        waiter *p = put ? waiter_add(s, W_PUT, rid, NULL) : NULL;
        if (!p || send_line(m, s, put) != 0) {
            if (!p)
                json_decref(put);
            w->failed = 1;
            w->req = NULL;
            waiter_unlink(s, w);
            waiter_free(w);
            w = NULL;
            end_session(m, s, "closed", "Its inputs could not be put in place.");
            pthread_mutex_unlock(&m->lock);
            kiln_api_inputs_close(inputs, n_in);
            return http_internal(req, "cannot put an input into the session");
        }
        p->parent = w;
        w->pending++;
    }
    if (w) {
        res = suspend_for_reply(req);
    } else {
        json_t *o = session_json(s);
        char loc[96];
        snprintf(loc, sizeof loc, "/v1/sessions/%s", s->id);
        res = http_json_location(req, 201, o, loc);
    }
    wake(m);
    pthread_mutex_unlock(&m->lock);
    kiln_api_inputs_close(inputs, n_in);
    return res;
}

struct list_ctx {
    json_t *items;
};

static void list_one(const char *id, const char *tenant, const char *object, void *arg)
{
    (void)id;
    (void)tenant;
    struct list_ctx *c = arg;
    json_t *o = json_loads(object, 0, NULL);
    if (o)
        json_array_append_new(c->items, o);
}

static enum MHD_Result session_list(kiln_req *req)
{
    kiln_sessions *m = req->srv->sessions;
    struct list_ctx c = {.items = json_array()};
    kiln_error err;
    memset(&err, 0, sizeof err);
    if (kiln_store_session_list(req->srv->store, req->tenant, 0, list_one, &c, &err) !=
        KILN_STORE_OK) {
        json_decref(c.items);
        return http_internal(req, err.message);
    }
    /* The live ones as they are now (status, idle clock), not as last saved. */
    pthread_mutex_lock(&m->lock);
    size_t i;
    json_t *o;
    json_array_foreach(c.items, i, o) {
        const char *id = json_string_value(json_object_get(o, "id"));
        for (svc_session *s = m->list; id && s; s = s->next)
            if (!s->pooled && strcmp(s->id, id) == 0 && strcmp(s->tenant, req->tenant) == 0) {
                /* The replaced object (which id points into) is freed here. */
                json_array_set_new(c.items, i, session_json(s));
                break;
            }
    }
    pthread_mutex_unlock(&m->lock);
    return http_json(req, 200, json_pack("{s:o}", "sessions", c.items));
}

/* POST .../cells: the cell's request line, and a waiter for its record
 * (or its events, as a stream). */
static enum MHD_Result session_cell(kiln_req *req, svc_session *s, json_t *body)
{
    kiln_sessions *m = req->srv->sessions;
    json_t *code = json_object_get(body, "code");
    const char *bad = NULL, *pointer = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        if (strcmp(key, "code") != 0 && strcmp(key, "language") != 0 &&
            strcmp(key, "timeout") != 0) {
            bad = "is not a member of a cell request";
            pointer = key;
            break;
        }
    }
    if (!bad && !json_is_string(code)) {
        bad = "must be a string (the cell's code)";
        pointer = "code";
    }
    if (bad) {
        char ptr[300];
        snprintf(ptr, sizeof ptr, "/%s", pointer);
        pthread_mutex_unlock(&m->lock);
        return reply_invalid(req, "invalid_cell", ptr, bad);
    }
    if (s->cells_open >= CELLS_OPEN_MAX) {
        pthread_mutex_unlock(&m->lock);
        char msg[128];
        snprintf(msg, sizeof msg, "A cell is running and %d are waiting.",
                 KILN_SESSION_QUEUE_MAX);
        return http_error(req, http_contract_status("session_busy"), "session_busy", msg,
                          json_pack("{s:i}", "limit", KILN_SESSION_QUEUE_MAX));
    }
    json_int_t rid = ++m->next_rid;
    json_t *line = json_deep_copy(body);
    json_object_set_new(line, "op", json_string("execute"));
    json_object_set_new(line, "id", json_integer(rid));
    if (!json_object_get(line, "language"))
        json_object_set_new(line, "language", json_string(language_name(s->language)));
    const char *accept = http_header(req, MHD_HTTP_HEADER_ACCEPT);
    int as_events = accept && strstr(accept, "text/event-stream") != NULL;
    waiter *w = waiter_add(s, W_CELL, rid, as_events ? NULL : req);
    sse_stream *st = w && as_events ? sse_new(req->conn) : NULL;
    if (!w || (as_events && !st) || send_line(m, s, line) != 0) {
        if (w) {
            waiter_unlink(s, w);
            waiter_free(w);
        }
        free(st);
        pthread_mutex_unlock(&m->lock);
        return http_internal(req, "cannot send the cell to the session");
    }
    s->cells_open++;
    snprintf(s->status, sizeof s->status, "busy");
    if (!as_events) {
        /* Suspended before the manager, which takes the lock, can answer. */
        enum MHD_Result r = suspend_for_reply(req);
        pthread_mutex_unlock(&m->lock);
        return r;
    }
    w->sse = st;
    pthread_mutex_unlock(&m->lock);
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                                                  sse_read, st, sse_free);
    if (!resp) {
        sse_unref(st);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return http_queue(req, 200, resp, 0);
}

/* POST .../files: a stored file into /mnt/data. */
static enum MHD_Result session_put(kiln_req *req, svc_session *s, json_t *body)
{
    kiln_sessions *m = req->srv->sessions;
    const char *file_id = json_string_value(json_object_get(body, "file_id"));
    json_t *namev = json_object_get(body, "name");
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        if (strcmp(key, "file_id") != 0 && strcmp(key, "name") != 0) {
            pthread_mutex_unlock(&m->lock);
            char ptr[300];
            snprintf(ptr, sizeof ptr, "/%s", key);
            return reply_invalid(req, "invalid_request", ptr,
                                 "is not a member of a files request");
        }
    }
    if (!file_id || (namev && !json_is_string(namev))) {
        pthread_mutex_unlock(&m->lock);
        return reply_invalid(req, "invalid_request", !file_id ? "/file_id" : "/name",
                             !file_id ? "must be a stored file's id" : "must be a string");
    }
    kiln_store_file file;
    int fd = -1;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_result found = kiln_api_valid_id(file_id)
                                  ? kiln_store_open_body(req->srv->store, req->tenant, file_id,
                                                         &file, &fd, &err)
                                  : KILN_STORE_NOT_FOUND;
    if (found != KILN_STORE_OK) {
        pthread_mutex_unlock(&m->lock);
        return http_store_failure(req, found, &file, &err);
    }
    const char *name = namev ? json_string_value(namev) : file.filename;
    if (!kiln_run_input_name_ok(name)) {
        close(fd);
        pthread_mutex_unlock(&m->lock);
        return reply_invalid(req, "invalid_request", namev ? "/name" : "/file_id",
                             "cannot be a file's name in /mnt/data (one path component, no "
                             "control characters)");
    }
    json_int_t rid = ++m->next_rid;
    json_t *put = put_request(rid, name, fd);
    close(fd);
    waiter *w = put ? waiter_add(s, W_PUT, rid, req) : NULL;
    if (!w || send_line(m, s, put) != 0) {
        if (w) {
            waiter_unlink(s, w);
            waiter_free(w);
        } else {
            json_decref(put);
        }
        pthread_mutex_unlock(&m->lock);
        return http_internal(req, "cannot put the file into the session");
    }
    enum MHD_Result r = suspend_for_reply(req);
    pthread_mutex_unlock(&m->lock);
    return r;
}

/* A request of op for s answered by one event (interrupt, files, close). */
static enum MHD_Result session_simple(kiln_req *req, svc_session *s, wait_kind kind,
                                      const char *op)
{
    kiln_sessions *m = req->srv->sessions;
    json_int_t rid = ++m->next_rid;
    waiter *w = waiter_add(s, kind, rid, req);
    if (!w || send_line(m, s, json_pack("{s:s, s:I}", "op", op, "id", rid)) != 0) {
        if (w) {
            waiter_unlink(s, w);
            waiter_free(w);
        }
        pthread_mutex_unlock(&m->lock);
        return http_internal(req, "cannot reach the session");
    }
    enum MHD_Result r = suspend_for_reply(req);
    pthread_mutex_unlock(&m->lock);
    return r;
}

/* DELETE: the session ends now (its record stays: 410 "closed"); the
 * child is told to close and goes in the background. */
static enum MHD_Result session_delete(kiln_req *req, svc_session *s)
{
    kiln_sessions *m = req->srv->sessions;
    end_session(m, s, "closed", "The session was deleted.");
    pthread_mutex_unlock(&m->lock);
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    return http_queue(req, 204, resp, 0);
}

enum MHD_Result sessions_request(kiln_req *req)
{
    kiln_server *srv = req->srv;
    if (req->job == JOB_DONE) {
        kiln_api_reply *r = &req->reply;
        json_t *body = r->body;
        r->body = NULL;
        if (r->status == 204) {
            json_decref(body);
            struct MHD_Response *resp = MHD_create_response_from_buffer(0, "",
                                                                        MHD_RESPMEM_PERSISTENT);
            return http_queue(req, 204, resp, 0);
        }
        return http_json_location(req, r->status, body, r->location);
    }
    if (req->job == JOB_WAITING)
        return MHD_YES;
    kiln_sessions *m = srv->sessions;
    if (!m)
        return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "sessions_disabled",
                          "Sessions are turned off on this server (kiln serve --sessions off).",
                          NULL);
    if (m->unavailable)
        return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "sandbox_unavailable",
                          "The sandbox for sessions cannot be set up on this server.",
                          json_pack("{s:s}", "reason", "kiln serve is not running as root"));
    if (m->stopped)
        return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "The server is shutting down.", NULL);
    int post = strcmp(req->method, "POST") == 0;
    int del = strcmp(req->method, "DELETE") == 0;
    json_t *body = NULL;
    enum MHD_Result res = MHD_NO;
    if (post &&
        http_body_json(req, req->route == ROUTE_SESSION_INTERRUPT || req->route == ROUTE_SESSIONS,
                       &body, &res) != 0)
        return res;
    if (req->route == ROUTE_SESSIONS) {
        res = post ? session_create(req, body) : session_list(req);
        json_decref(body);
        return res;
    }
    pthread_mutex_lock(&m->lock);
    int status = 0;
    json_t *err_body = NULL;
    svc_session *s = find_session(m, req, &status, &err_body);
    if (!s) {
        pthread_mutex_unlock(&m->lock);
        json_decref(body);
        return http_json(req, status, err_body);
    }
    switch (req->route) {
    case ROUTE_SESSION:
        if (del) {
            res = session_delete(req, s);
        } else {
            json_t *o = session_json(s);
            pthread_mutex_unlock(&m->lock);
            res = http_json(req, 200, o);
        }
        break;
    case ROUTE_SESSION_CELLS:
        res = session_cell(req, s, body);
        break;
    case ROUTE_SESSION_INTERRUPT:
        res = session_simple(req, s, W_INTERRUPT, "interrupt");
        break;
    case ROUTE_SESSION_FILES:
        res = post ? session_put(req, s, body) : session_simple(req, s, W_FILES, "files");
        break;
    default:
        pthread_mutex_unlock(&m->lock);
        res = http_not_found(req);
        break;
    }
    json_decref(body);
    return res;
}

/* ---- the internal API (sessions.h) ----
 * The same sessions as /v1/sessions for a caller that is not an HTTP
 * request (the MCP backend, mcp_backend.c): it leaves a waiter that names
 * a sync_reply instead of a suspended connection, and blocks on it. The
 * replies are those /v1/sessions would send; sync_status turns them into
 * the status and message the caller reports. */

static void sync_init(struct sync_reply *sy)
{
    memset(sy, 0, sizeof *sy);
    pthread_mutex_init(&sy->lock, NULL);
    pthread_cond_init(&sy->cond, NULL);
}

static void sync_destroy(struct sync_reply *sy)
{
    json_decref(sy->body);
    json_decref(sy->events);
    pthread_cond_destroy(&sy->cond);
    pthread_mutex_destroy(&sy->lock);
}

/* Wait for the reply, handing the events queued before it to on_event (may
 * be NULL) outside every lock, in order. */
static void sync_wait(struct sync_reply *sy, kiln_sessions_event_fn on_event, void *arg)
{
    pthread_mutex_lock(&sy->lock);
    for (;;) {
        while (!sy->done && json_array_size(sy->events) == 0)
            pthread_cond_wait(&sy->cond, &sy->lock);
        if (json_array_size(sy->events) == 0)
            break; /* done, and every event delivered */
        json_t *batch = sy->events;
        sy->events = NULL;
        pthread_mutex_unlock(&sy->lock);
        size_t i;
        json_t *ev;
        json_array_foreach(batch, i, ev) {
            if (on_event)
                on_event(arg, ev);
        }
        json_decref(batch);
        pthread_mutex_lock(&sy->lock);
    }
    pthread_mutex_unlock(&sy->lock);
}

/* A reply of /v1/sessions as a status: KILN_E_OK for a 2xx, else the error
 * its code stands for, with its message. */
static kiln_status sync_status(int status, const json_t *body, kiln_error *err)
{
    if (status >= 200 && status < 300)
        return KILN_E_OK;
    const char *msg = json_string_value(
        json_object_get(json_object_get(body, "error"), "message"));
    if (!msg)
        msg = "The session failed to answer.";
    kiln_status code = status == 404 || status == 410 ? KILN_E_GONE
                       : status == 409                ? KILN_E_BUSY
                       : status == 413                ? KILN_E_TOO_LARGE
                       : status == 422                ? KILN_E_USAGE
                       : status == 429                ? KILN_E_LIMIT
                                                      : KILN_E_INTERNAL;
    /* A refusal of the session's contract names the member at fault
     * (details.errors, reply_errors): the caller says it as the contract
     * did, pointer and all. */
    const json_t *first = json_array_get(
        json_object_get(json_object_get(json_object_get(body, "error"), "details"), "errors"), 0);
    const char *pointer = json_string_value(json_object_get(first, "pointer"));
    return kiln_error_set(err, code, pointer, "%s", msg);
}

/* Locked: 0 when the internal API may go on, else the status with err
 * set (sessions off, no sandbox, the server stopping). */
static kiln_status api_ready(const kiln_sessions *m, kiln_error *err)
{
    if (!m)
        return kiln_error_set(
            err, KILN_E_INTERNAL, NULL,
            "Sessions are turned off on this server (kiln serve --sessions off).");
    if (m->unavailable)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                              "The sandbox for sessions cannot be set up on this server (kiln "
                              "serve is not running as root).");
    if (m->stopped)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "The server is shutting down.");
    return KILN_E_OK;
}

/* Locked: the tenant's live session id, or NULL with err set (no such
 * session: another tenant's is one; or how it ended). */
static svc_session *api_find(kiln_sessions *m, const char *tenant, const char *id,
                             kiln_error *err)
{
    for (svc_session *s = m->list; id && s; s = s->next) {
        if (s->pooled || strcmp(s->id, id) != 0)
            continue;
        if (strcmp(s->tenant, tenant) != 0)
            break;
        if (s->ended) {
            const char *reason = json_string_value(json_object_get(s->ended, "reason"));
            kiln_error_set(err, KILN_E_GONE, NULL, "Session %s has ended (%s).", id,
                           reason ? reason : "unknown");
            return NULL;
        }
        return s;
    }
    kiln_error_set(err, KILN_E_GONE, NULL, "No such session: %s.", id ? id : "");
    return NULL;
}

kiln_status kiln_sessions_open(kiln_server *srv, const char *tenant,
                               char id[KILN_STORE_ID_LEN + 1], kiln_error *err)
{
    kiln_sessions *m = srv->sessions;
    kiln_api_reply reply;
    memset(&reply, 0, sizeof reply);
    /* The defaults a POST /v1/sessions {} gets: the pool's. */
    kiln_run_limits max = m ? m->pool_limits : srv->api.run_max;
    kiln_job_parse_options po = {.inputs = KILN_JOB_INPUT_IDS, .max = &max, .unset = &max};
    kiln_session_request rq;
    kiln_errors *errs = malloc(sizeof *errs);
    json_t *empty = json_object();
    if (!errs || !empty) {
        free(errs);
        json_decref(empty);
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    }
    kiln_errors_init(errs);
    kiln_status pst = kiln_session_request_parse(empty, &po, &rq, errs);
    json_decref(empty);
    if (pst != KILN_E_OK) {
        kiln_status st = kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                        "The default session request is refused: %s",
                                        errs->count ? errs->items[0].message : "?");
        free(errs);
        return st;
    }
    free(errs);
    rq.inputs = NULL; /* borrowed from the document, which is gone: it had none */
    if (m)
        pthread_mutex_lock(&m->lock);
    kiln_status st = api_ready(m, err);
    if (st != KILN_E_OK) {
        if (m)
            pthread_mutex_unlock(&m->lock);
        return st;
    }
    unsigned limit = 0;
    int server_full = 0;
    if (over_cap(m, tenant, &limit, &server_full)) {
        pthread_mutex_unlock(&m->lock);
        return kiln_error_set(err, KILN_E_LIMIT, NULL, "At most %u sessions may be open %s.",
                              limit, server_full ? "on this server" : "per tenant");
    }
    int pooled = 0;
    svc_session *s = take_session(m, tenant, &rq, (double)srv->opt.session_idle,
                                  (double)srv->opt.session_lifetime, NULL, 0, &pooled, &reply);
    if (!s) {
        pthread_mutex_unlock(&m->lock);
        if (reply.log[0])
            http_event(srv, "error", json_pack("{s:s}", "message", reply.log));
        st = sync_status(reply.status ? reply.status : 500, reply.body, err);
        json_decref(reply.body);
        return st != KILN_E_OK ? st : KILN_E_INTERNAL;
    }
    snprintf(id, KILN_STORE_ID_LEN + 1, "%s", s->id);
    if (s->ready) {
        pthread_mutex_unlock(&m->lock);
        return KILN_E_OK;
    }
    struct sync_reply sy;
    sync_init(&sy);
    waiter *w = waiter_add(s, W_CREATE, 0, NULL);
    if (!w) {
        end_session(m, s, "closed", "out of memory");
        pthread_mutex_unlock(&m->lock);
        sync_destroy(&sy);
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    }
    w->sync = &sy;
    wake(m);
    pthread_mutex_unlock(&m->lock);
    sync_wait(&sy, NULL, NULL);
    st = sync_status(sy.status, sy.body, err);
    sync_destroy(&sy);
    return st;
}

kiln_status kiln_sessions_execute(kiln_server *srv, const char *tenant, const char *id,
                                  const json_t *request, kiln_sessions_event_fn on_event,
                                  void *arg, json_t **record, kiln_error *err)
{
    kiln_sessions *m = srv->sessions;
    *record = NULL;
    const json_t *code = json_object_get(request, "code");
    if (!json_is_string(code))
        return kiln_error_set(err, KILN_E_USAGE, "/code", "The cell's code must be a string.");
    if (m)
        pthread_mutex_lock(&m->lock);
    kiln_status st = api_ready(m, err);
    svc_session *s = st == KILN_E_OK ? api_find(m, tenant, id, err) : NULL;
    if (!s) {
        if (m)
            pthread_mutex_unlock(&m->lock);
        return st != KILN_E_OK ? st : err->code;
    }
    if (s->cells_open >= CELLS_OPEN_MAX) {
        pthread_mutex_unlock(&m->lock);
        return kiln_error_set(err, KILN_E_BUSY, NULL, "A cell is running and %d are waiting.",
                              KILN_SESSION_QUEUE_MAX);
    }
    json_int_t rid = ++m->next_rid;
    json_t *line = json_pack("{s:s, s:I, s:O}", "op", "execute", "id", rid, "code", code);
    const json_t *language = json_object_get(request, "language");
    const json_t *timeout = json_object_get(request, "timeout");
    if (line)
        json_object_set_new(line, "language",
                            json_is_string(language) ? json_incref((json_t *)language)
                                                     : json_string(language_name(s->language)));
    if (line && timeout && !json_is_null(timeout))
        json_object_set(line, "timeout", (json_t *)timeout);
    struct sync_reply sy;
    sync_init(&sy);
    waiter *w = waiter_add(s, W_CELL, rid, NULL);
    if (!w || send_line(m, s, line) != 0) {
        if (w) {
            waiter_unlink(s, w);
            waiter_free(w);
        }
        pthread_mutex_unlock(&m->lock);
        sync_destroy(&sy);
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "Cannot send the cell to the session.");
    }
    w->sync = &sy;
    s->cells_open++;
    snprintf(s->status, sizeof s->status, "busy");
    pthread_mutex_unlock(&m->lock);
    sync_wait(&sy, on_event, arg);
    st = sync_status(sy.status, sy.body, err);
    if (st == KILN_E_OK) {
        *record = sy.body;
        sy.body = NULL;
    }
    sync_destroy(&sy);
    return st;
}

kiln_status kiln_sessions_interrupt(kiln_server *srv, const char *tenant, const char *id,
                                    kiln_error *err)
{
    kiln_sessions *m = srv->sessions;
    if (m)
        pthread_mutex_lock(&m->lock);
    kiln_status st = api_ready(m, err);
    svc_session *s = st == KILN_E_OK ? api_find(m, tenant, id, err) : NULL;
    if (!s) {
        if (m)
            pthread_mutex_unlock(&m->lock);
        return st != KILN_E_OK ? st : err->code;
    }
    /* Sent, not waited for: a cancellation arrives on an HTTP thread, which
     * must not wait on a child; the interrupted cell's record says the rest.
     * The waiter answers nobody. */
    json_int_t rid = ++m->next_rid;
    waiter *w = waiter_add(s, W_INTERRUPT, rid, NULL);
    if (!w || send_line(m, s, json_pack("{s:s, s:I}", "op", "interrupt", "id", rid)) != 0) {
        if (w) {
            waiter_unlink(s, w);
            waiter_free(w);
        }
        pthread_mutex_unlock(&m->lock);
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "Cannot reach the session.");
    }
    pthread_mutex_unlock(&m->lock);
    return KILN_E_OK;
}

/* Send line (stolen; its "id" is set here) to the tenant's session id and
 * wait for the one reply it gets: *body, new. The caller makes the line
 * before the manager's lock is taken (a put's base64 is large). */
static kiln_status api_request(kiln_server *srv, const char *tenant, const char *id,
                               wait_kind kind, json_t *line, json_t **body, kiln_error *err)
{
    kiln_sessions *m = srv->sessions;
    *body = NULL;
    if (!line)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    if (m)
        pthread_mutex_lock(&m->lock);
    kiln_status st = api_ready(m, err);
    svc_session *s = st == KILN_E_OK ? api_find(m, tenant, id, err) : NULL;
    if (!s) {
        if (m)
            pthread_mutex_unlock(&m->lock);
        json_decref(line);
        return st != KILN_E_OK ? st : err->code;
    }
    json_int_t rid = ++m->next_rid;
    json_object_set_new(line, "id", json_integer(rid));
    struct sync_reply sy;
    sync_init(&sy);
    waiter *w = waiter_add(s, kind, rid, NULL);
    if (!w || send_line(m, s, line) != 0) {
        if (w) {
            waiter_unlink(s, w);
            waiter_free(w);
        } else {
            json_decref(line);
        }
        pthread_mutex_unlock(&m->lock);
        sync_destroy(&sy);
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "Cannot reach the session.");
    }
    w->sync = &sy;
    pthread_mutex_unlock(&m->lock);
    sync_wait(&sy, NULL, NULL);
    st = sync_status(sy.status, sy.body, err);
    if (st == KILN_E_OK) {
        *body = sy.body;
        sy.body = NULL;
    }
    sync_destroy(&sy);
    return st;
}

kiln_status kiln_sessions_files(kiln_server *srv, const char *tenant, const char *id,
                                json_t **files, kiln_error *err)
{
    json_t *body = NULL;
    kiln_status st = api_request(srv, tenant, id, W_FILES, json_pack("{s:s}", "op", "files"),
                                 &body, err);
    *files = NULL;
    if (st == KILN_E_OK) {
        json_t *list = json_object_get(body, "files");
        *files = json_is_array(list) ? json_incref(list) : json_array();
    }
    json_decref(body);
    return st;
}

kiln_status kiln_sessions_put(kiln_server *srv, const char *tenant, const char *id,
                              const char *name, const void *data, size_t len, json_t **file,
                              kiln_error *err)
{
    *file = NULL;
    if (!name || !kiln_run_input_name_ok(name))
        return kiln_error_set(err, KILN_E_USAGE, "/name",
                              "The name cannot be a file's name in /mnt/data (one path "
                              "component, no control characters).");
    size_t b64_len = 0;
    char *b64 = kiln_base64_encode(data, len, &b64_len);
    json_t *line = b64 ? json_pack("{s:s, s:s, s:s%}", "op", "put", "name", name,
                                   "content_base64", b64, b64_len)
                       : NULL;
    free(b64);
    json_t *body = NULL;
    kiln_status st = api_request(srv, tenant, id, W_PUT, line, &body, err);
    if (st == KILN_E_OK) {
        json_t *f = json_object_get(body, "file");
        *file = json_is_object(f) ? json_incref(f) : json_object();
    }
    json_decref(body);
    return st;
}

void kiln_sessions_close(kiln_server *srv, const char *tenant, const char *id)
{
    kiln_sessions *m = srv->sessions;
    if (!m)
        return;
    kiln_error err;
    pthread_mutex_lock(&m->lock);
    svc_session *s = api_ready(m, &err) == KILN_E_OK ? api_find(m, tenant, id, &err) : NULL;
    if (s)
        end_session(m, s, "closed", "The session was closed by its MCP connection.");
    pthread_mutex_unlock(&m->lock);
}
