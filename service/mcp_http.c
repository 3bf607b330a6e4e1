/*
 * mcp_http.c - /mcp: the Model Context Protocol over the Streamable HTTP
 * transport (docs/mcp.md "HTTP", docs/serve.md "MCP").
 *
 * The protocol is mcp/'s (kiln_mcp_handle); this file carries it. Every
 * message is one POST. What decides how it is served:
 *
 *   - A request whose params._meta names a protocol version is the
 *     2026-07-28 revision's: stateless, its MCP-Protocol-Version, Mcp-Method
 *     and Mcp-Name headers checked against the body, served on one
 *     connection (kiln_mcp_conn) per tenant. Its JSON-RPC id is replaced by
 *     one of the server's while it is worked on (and put back in the reply):
 *     the clients of one tenant share that connection, and their ids would
 *     meet in its cancellation table.
 *   - Anything else is legacy (2025-06-18, 2025-11-25): `initialize` opens an
 *     MCP session, a kiln_mcp_conn of the tenant's named by the random
 *     Mcp-Session-Id of the reply, which every later request carries; DELETE
 *     ends it, and so does an idle timeout.
 *
 * A request that may block (tools/call, resources/read) never holds an HTTP
 * thread: its connection is suspended and a worker of this file's own pool
 * calls kiln_mcp_handle; whatever the handler sends comes back through
 * call_send. The reply is application/json unless a notification (progress,
 * a log message) comes before it: then the connection is answered with a
 * text/event-stream that carries the notifications and ends with the
 * response. Everything else is answered at once, on the HTTP thread.
 *
 * A client that goes away while its request is worked on cancels it (the
 * running cell is interrupted): a watcher thread polls the sockets of the
 * requests on workers for their peer's end, as a run's does
 * (kiln_api_client_gone), and calls kiln_mcp_cancel. The same thread ends
 * the MCP sessions idle past their timeout.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/base64.h"
#include "service/http.h"
#include "service/json_budget.h"
#include "service/mcp_api.h"
#include "../common/banned.h"

/* An Mcp-Session-Id: 128 random bits in hex, as a file id. */
#define SESSION_ID_LEN KILN_STORE_ID_LEN
/* Requests waiting for a worker beyond the busy ones; more is a 503. */
#define QUEUE_MAX 64
/* The longest method name kept for the metrics and the log. */
#define METHOD_MAX 48
/* JSON-RPC codes of the transport's own refusals (the SDKs' choices:
 * -32000 a request the transport refuses, -32001 an unknown session). */
#define CODE_TRANSPORT (-32000)
#define CODE_NO_SESSION (-32001)

typedef struct mcp_sess {
    struct mcp_sess *next;
    char id[SESSION_ID_LEN + 1];
    char tenant[KILN_AUTH_TENANT_MAX + 1];
    kiln_mcp_conn *conn;
    int refs;         /* the table's while listed, and one per request using it */
    double used_mono; /* the end of its last request (CLOCK_MONOTONIC) */
    int busy;         /* requests using it now */
} mcp_sess;

/* The stateless connection of a tenant's modern requests. */
typedef struct mcp_tenant {
    struct mcp_tenant *next;
    char tenant[KILN_AUTH_TENANT_MAX + 1];
    kiln_mcp_conn *conn;
} mcp_tenant;

typedef struct http_call http_call;

typedef struct kiln_mcp_http {
    kiln_server *srv;
    kiln_mcp_backend backend;
    kiln_mcp_server *mcp;
    pthread_mutex_t lock; /* sessions, tenants, calls and every call's watch fields */
    mcp_sess *sessions;
    mcp_tenant *tenants;
    http_call *calls; /* on workers, their clients watched */
    unsigned long long seq;
    kiln_jobs *pool;
    pthread_t watcher;
    int watcher_started;
    int quit;
    int wake_fd;
    atomic_int stopping;
    unsigned workers;
} kiln_mcp_http;

/*
 * One POST (or DELETE) to /mcp. Shared by the request (until it completes),
 * a worker (until its kiln_mcp_handle returns) and an event-stream
 * response (until libmicrohttpd frees it): freed when all let go.
 */
struct http_call {
    struct http_call *next; /* on h->calls while watched */
    kiln_mcp_http *h;
    pthread_mutex_t lock; /* everything below but the watch fields */
    int refs;
    struct MHD_Connection *mconn;
    int live;      /* the connection may be resumed (its request has not completed) */
    int suspended; /* suspended, for this call to resume */
    mcp_sess *sess;
    kiln_mcp_conn *conn;
    json_t *msg;       /* the message handled (its id the server's, for a modern one) */
    json_t *client_id; /* a modern request's own id, put back in its reply */
    int modern;
    char method[METHOD_MAX];
    /* watched (h->lock) */
    int watched;
    int fd;
    int cancelled; /* kiln_mcp_cancel was called for it */
    int gone;      /* ... because its client went away (nobody to answer) */
    /* the reply */
    int done;    /* the worker's kiln_mcp_handle returned */
    char *reply; /* the response message as text, until sent as JSON */
    size_t reply_len;
    int reply_code; /* its JSON-RPC error code, 0 for a result */
    int answered;   /* a response was sent (JSON or on the stream) */
    int stream;     /* answered as an event stream (a notification came first) */
    int stream_queued;
    char *buf; /* the stream's text not yet read */
    size_t len, off, cap;
    int ended; /* the stream is complete */
};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- replies ---- */

static int origin_allowed(const kiln_server *srv, const char *origin)
{
    if (!origin)
        return 1; /* not a browser's request: nothing to rebind */
    for (size_t i = 0; i < srv->opt.n_mcp_allow_origins; i++)
        if (strcmp(origin, srv->opt.mcp_allow_origins[i]) == 0)
            return 1;
    return 0;
}

/* A browser's request from an allowed Origin may read the reply (CORS):
 * the origin echoed, and the headers a client needs exposed. */
static void cors_headers(kiln_req *req, struct MHD_Response *resp)
{
    const char *origin = http_header(req, "Origin");
    if (!origin || !origin_allowed(req->srv, origin))
        return;
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                            "Mcp-Session-Id, WWW-Authenticate");
    MHD_add_response_header(resp, "Vary", "Origin");
}

/* A reply of this file's: text (MUST_FREE'd) with the common headers. */
static enum MHD_Result queue_text(kiln_req *req, int status, char *text, size_t len,
                                  const char *type, const char *session_id)
{
    struct MHD_Response *resp = text ? MHD_create_response_from_buffer(len, text,
                                                                       MHD_RESPMEM_MUST_FREE)
                                     : MHD_create_response_from_buffer(0, "",
                                                                       MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    if (type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (session_id)
        MHD_add_response_header(resp, "Mcp-Session-Id", session_id);
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"kiln\"");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "POST, DELETE");
    cors_headers(req, resp);
    return http_queue(req, status, resp, text ? len : 0);
}

/* A JSON-RPC error response (id borrowed, NULL: null; data stolen) as the
 * body of status: how the transport refuses, as the SDKs do. */
static enum MHD_Result reply_rpc_error(kiln_req *req, int status, const json_t *id, int code,
                                       const char *message, json_t *data)
{
    json_t *body = kiln_mcp_error_reply(id, code, message, data);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return MHD_NO;
    return queue_text(req, status, text, strlen(text), "application/json", NULL);
}

static enum MHD_Result reply_empty(kiln_req *req, int status)
{
    return queue_text(req, status, NULL, 0, NULL, NULL);
}

/* The HTTP status of a JSON reply. Legacy: 200 whatever it says (a
 * JSON-RPC error is a reply like any other). Modern: what
 * streamable-http.mdx asks for the errors it names. */
static int reply_status(int modern, int code)
{
    if (!modern || code == 0)
        return MHD_HTTP_OK;
    switch (code) {
    case KILN_MCP_METHOD_NOT_FOUND:
        return MHD_HTTP_NOT_FOUND;
    case KILN_MCP_UNSUPPORTED_VERSION:
    case KILN_MCP_HEADER_MISMATCH:
    case KILN_MCP_INVALID_REQUEST:
    case KILN_MCP_PARSE_ERROR:
        return MHD_HTTP_BAD_REQUEST;
    default:
        return MHD_HTTP_OK;
    }
}

/* ---- calls ---- */

static http_call *call_new(kiln_mcp_http *h, kiln_req *req)
{
    http_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    c->h = h;
    c->refs = 1; /* the request's */
    c->mconn = req->conn;
    c->live = 1;
    c->fd = -1;
    return c;
}

static void sess_unref(kiln_mcp_http *h, mcp_sess *s, int request);

static void call_unref(http_call *c)
{
    pthread_mutex_lock(&c->lock);
    int last = --c->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (!last)
        return;
    if (c->sess)
        sess_unref(c->h, c->sess, 1);
    json_decref(c->msg);
    json_decref(c->client_id);
    free(c->reply);
    free(c->buf);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Wake the connection when it waits for this call. Locked. */
static void call_wake(http_call *c)
{
    if (c->suspended && c->live) {
        c->suspended = 0;
        MHD_resume_connection(c->mconn);
    }
}

/* Append one message to the stream as an SSE event. Locked. */
static void stream_append(http_call *c, const char *text, size_t n)
{
    size_t need = n + sizeof "event: message\ndata: \n\n";
    if (c->off > 0 && c->off == c->len)
        c->off = c->len = 0;
    if (c->len + need > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + need)
            cap *= 2;
        char *grown = realloc(c->buf, cap);
        if (!grown)
            return; /* the message is lost; the stream goes on */
        c->buf = grown;
        c->cap = cap;
    }
    c->len += (size_t)snprintf(c->buf + c->len, c->cap - c->len, "event: message\ndata: %.*s\n\n",
                               (int)n, text);
}

/* kiln_mcp_send_fn: a message of the call's request, on the thread that
 * handles it. The response is kept as text for a JSON reply, or goes on
 * the stream once one is open; a notification opens the stream. */
static void call_send(void *arg, const json_t *message)
{
    http_call *c = arg;
    int is_response = json_object_get(message, "id") != NULL &&
                      (json_object_get(message, "result") || json_object_get(message, "error"));
    json_t *out = NULL;
    if (is_response && c->client_id) {
        /* The client's own id back, on a shallow copy (the message is
         * borrowed; its members are not copied). */
        out = json_copy((json_t *)message);
        if (out)
            json_object_set(out, "id", c->client_id);
    }
    char *text = json_dumps(out ? out : message, JSON_COMPACT);
    json_decref(out);
    if (!text)
        return;
    size_t n = strlen(text);
    int code = 0;
    if (is_response) {
        const json_t *e = json_object_get(message, "error");
        code = e ? (int)json_integer_value(json_object_get(e, "code")) : 0;
    }
    pthread_mutex_lock(&c->lock);
    if (!is_response && !c->stream && c->reply) {
        /* A notification after the response: nothing more is sent. */
    } else if (!c->stream && is_response) {
        free(c->reply);
        c->reply = text;
        c->reply_len = n;
        c->reply_code = code;
        c->answered = 1;
        text = NULL;
    } else {
        if (!c->stream) {
            c->stream = 1; /* the first notification: the reply is a stream */
            call_wake(c);
        }
        if (!c->ended) {
            stream_append(c, text, n);
            if (is_response) {
                c->ended = 1;
                c->reply_code = code;
                c->answered = 1;
            }
            call_wake(c);
        }
    }
    pthread_mutex_unlock(&c->lock);
    free(text);
}

/* libmicrohttpd's reader of a stream: what is there, or the end, or
 * nothing yet (then the connection is suspended until call_send wakes it,
 * under the same lock, so a message cannot slip in between). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    http_call *c = cls;
    ssize_t n = 0;
    pthread_mutex_lock(&c->lock);
    if (c->off < c->len) {
        size_t k = c->len - c->off < max ? c->len - c->off : max;
        memcpy(buf, c->buf + c->off, k);
        c->off += k;
        n = (ssize_t)k;
    } else if (c->ended || c->done) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        c->suspended = 1;
        MHD_suspend_connection(c->mconn);
    }
    pthread_mutex_unlock(&c->lock);
    return n;
}

static void stream_free(void *cls)
{
    call_unref(cls);
}

/* ---- the watch list ---- */

static void watch_wake(kiln_mcp_http *h)
{
    uint64_t one = 1;
    if (write(h->wake_fd, &one, sizeof one) < 0) {
        /* the counter is full: the watcher is awake already */
    }
}

/* Put c on the watch list with its client's socket. Locked (h). */
static void watch_add(kiln_mcp_http *h, http_call *c, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    c->fd = ci ? ci->connect_fd : -1;
    c->watched = 1;
    c->next = h->calls;
    h->calls = c;
    watch_wake(h);
}

static void watch_remove(kiln_mcp_http *h, http_call *c)
{
    pthread_mutex_lock(&h->lock);
    if (c->watched) {
        for (http_call **p = &h->calls; *p; p = &(*p)->next) {
            if (*p == c) {
                *p = c->next;
                break;
            }
        }
        c->watched = 0;
    }
    c->fd = -1;
    pthread_mutex_unlock(&h->lock);
}

/* ---- sessions ---- */

/* The tenant's live session id, with a request's reference (sess_unref), or NULL:
 * an unknown id and another tenant's look the same. */
static mcp_sess *sess_find(kiln_mcp_http *h, const char *id, const char *tenant)
{
    mcp_sess *found = NULL;
    pthread_mutex_lock(&h->lock);
    for (mcp_sess *s = h->sessions; s; s = s->next) {
        if (strcmp(s->id, id) == 0) {
            if (strcmp(s->tenant, tenant) == 0) {
                s->refs++;
                s->busy++;
                found = s;
            }
            break;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return found;
}

/* Drop a reference: a request's (request 1: it is no longer busy) or the
 * table's. The last one frees the session and closes its Kiln sessions. */
static void sess_unref(kiln_mcp_http *h, mcp_sess *s, int request)
{
    pthread_mutex_lock(&h->lock);
    if (request) {
        s->busy--;
        s->used_mono = mono_now();
    }
    int last = --s->refs == 0;
    pthread_mutex_unlock(&h->lock);
    if (!last)
        return;
    kiln_mcp_conn_free(s->conn);
    free(s);
}

/* Take s off the table and cancel what it has running. Locked (h); the
 * table's reference is the caller's to drop once unlocked. */
static void sess_unlist(kiln_mcp_http *h, mcp_sess *s)
{
    for (mcp_sess **p = &h->sessions; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    for (http_call *c = h->calls; c; c = c->next) {
        if (c->sess == s && !c->cancelled) {
            c->cancelled = 1;
            kiln_mcp_cancel(c->conn, json_object_get(c->msg, "id"));
        }
    }
}

static unsigned sess_count(const kiln_mcp_http *h, const char *tenant)
{
    unsigned n = 0;
    for (const mcp_sess *s = h->sessions; s; s = s->next)
        if (!tenant || strcmp(s->tenant, tenant) == 0)
            n++;
    return n;
}

/* The tenant's stateless connection, made on first use (NULL: out of
 * memory). */
static kiln_mcp_conn *tenant_conn(kiln_mcp_http *h, const char *tenant)
{
    kiln_mcp_conn *conn = NULL;
    pthread_mutex_lock(&h->lock);
    for (mcp_tenant *t = h->tenants; t; t = t->next)
        if (strcmp(t->tenant, tenant) == 0)
            conn = t->conn;
    if (!conn) {
        mcp_tenant *t = calloc(1, sizeof *t);
        conn = t ? kiln_mcp_conn_new(h->mcp, tenant) : NULL;
        if (conn) {
            snprintf(t->tenant, sizeof t->tenant, "%s", tenant);
            t->conn = conn;
            t->next = h->tenants;
            h->tenants = t;
        } else {
            free(t);
        }
    }
    pthread_mutex_unlock(&h->lock);
    return conn;
}

/* ---- the watcher ---- */

/* End the sessions idle past the timeout (no request in it for that
 * long, none running). */
static void expire_idle(kiln_mcp_http *h)
{
    double now = mono_now(), idle = (double)h->srv->opt.mcp_session_idle;
    mcp_sess *gone = NULL;
    pthread_mutex_lock(&h->lock);
    for (mcp_sess *s = h->sessions, *next; s; s = next) {
        next = s->next;
        if (s->busy == 0 && now - s->used_mono >= idle) {
            sess_unlist(h, s);
            s->next = gone;
            gone = s;
        }
    }
    pthread_mutex_unlock(&h->lock);
    while (gone) {
        mcp_sess *s = gone;
        gone = s->next;
        http_event(h->srv, "mcp_session_ended",
                   json_pack("{s:s, s:s, s:s}", "mcp_session", s->id, "tenant", s->tenant,
                             "reason", "idle_timeout"));
        sess_unref(h, s, 0);
    }
}

static void *watch_main(void *arg)
{
    kiln_mcp_http *h = arg;
    struct pollfd *fds = NULL;
    http_call **owner = NULL;
    size_t cap = 0;
    double next_sweep = mono_now() + 1;
    pthread_mutex_lock(&h->lock);
    while (!h->quit) {
        size_t count = 1;
        for (http_call *c = h->calls; c; c = c->next)
            count++;
        if (count > cap) {
            struct pollfd *f = realloc(fds, count * sizeof *f);
            http_call **o = realloc(owner, count * sizeof *o);
            if (f)
                fds = f;
            if (o)
                owner = o;
            if (!f || !o)
                break;
            cap = count;
        }
        size_t n = 0;
        fds[n] = (struct pollfd){.fd = h->wake_fd, .events = POLLIN};
        owner[n++] = NULL;
        for (http_call *c = h->calls; c; c = c->next) {
            if (c->fd < 0 || c->cancelled)
                continue;
            fds[n] = (struct pollfd){.fd = c->fd, .events = POLLRDHUP};
            owner[n++] = c;
        }
        pthread_mutex_unlock(&h->lock);
        int rc = poll(fds, n, 1000);
        if (rc > 0 && fds[0].revents) {
            uint64_t v;
            if (read(h->wake_fd, &v, sizeof v) < 0) {
                /* nothing to clear */
            }
        }
        pthread_mutex_lock(&h->lock);
        for (size_t i = 1; rc > 0 && i < n; i++) {
            if (!(fds[i].revents & KILN_API_CLIENT_GONE))
                continue;
            /* Still the same call, its socket still its own (a request
             * that completed has fd -1 before libmicrohttpd closes it). */
            http_call *c = h->calls;
            while (c && c != owner[i])
                c = c->next;
            if (!c || c->fd != fds[i].fd || c->cancelled)
                continue;
            c->cancelled = c->gone = 1;
            kiln_mcp_cancel(c->conn, json_object_get(c->msg, "id"));
        }
        if (mono_now() >= next_sweep) {
            pthread_mutex_unlock(&h->lock);
            expire_idle(h);
            pthread_mutex_lock(&h->lock);
            next_sweep = mono_now() + 1;
        }
    }
    pthread_mutex_unlock(&h->lock);
    free(fds);
    free(owner);
    return NULL;
}

static const char *method_label(const char *method);

/* ---- the worker ---- */

static void call_run(void *arg)
{
    http_call *c = arg;
    kiln_mcp_handle(c->conn, c->msg, call_send, c);
    watch_remove(c->h, c);
    pthread_mutex_lock(&c->lock);
    c->done = 1;
    if (c->stream)
        c->ended = 1;
    const char *outcome = !c->answered ? "cancelled" : c->reply_code ? "error" : "ok";
    call_wake(c);
    pthread_mutex_unlock(&c->lock);
    kiln_metrics_mcp(c->h->srv->metrics, method_label(c->method), outcome);
    call_unref(c);
}

/* Answer a call that no worker will run with an internal error saying
 * why, and drop the worker's reference it was queued with. */
static void call_refuse(http_call *c, const char *why)
{
    json_t *reply = kiln_mcp_error_reply(c->client_id ? c->client_id
                                                      : json_object_get(c->msg, "id"),
                                         KILN_MCP_INTERNAL_ERROR, why, NULL);
    watch_remove(c->h, c);
    pthread_mutex_lock(&c->lock);
    c->reply = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
    c->reply_len = c->reply ? strlen(c->reply) : 0;
    c->reply_code = KILN_MCP_INTERNAL_ERROR;
    c->done = 1;
    call_wake(c);
    pthread_mutex_unlock(&c->lock);
    json_decref(reply);
    call_unref(c);
}

/* kiln_jobs_shutdown's cancel: a request still queued at the stop. */
static void call_cancel(void *arg)
{
    call_refuse(arg, "The server is shutting down.");
}

/* ---- header checks ---- */

/* 1 when the Accept header lists type (a substring, as the SDKs test it). */
static int accepts(const char *accept, const char *type)
{
    return accept && strcasestr(accept, type) != NULL;
}

/* An Mcp-Name value as its text: itself, or the Base64 of the UTF-8 in
 * =?base64?...?= (streamable-http.mdx, "Value Encoding"). malloc'd, or
 * NULL when the encoding is broken. */
static char *header_value_decoded(const char *v)
{
    size_t n = strlen(v);
    const char *pre = "=?base64?", *suf = "?=";
    size_t lp = strlen(pre), ls = strlen(suf);
    if (n >= lp + ls && strncmp(v, pre, lp) == 0 && strcmp(v + n - ls, suf) == 0) {
        size_t len = n - lp - ls, out = 0, bad = 0;
        unsigned char *buf = malloc(KILN_BASE64_DECODED_MAX(len) + 1);
        if (!buf || kiln_base64_decode_into(v + lp, len, buf, &out, &bad) != 0 ||
            memchr(buf, '\0', out)) {
            free(buf);
            return NULL;
        }
        buf[out] = '\0';
        return (char *)buf;
    }
    return strdup(v);
}

/* The 2026-07-28 checks of a modern request's headers against its body:
 * NULL when they hold, else why not (for a 400 -32020). */
static const char *modern_headers_bad(kiln_req *req, const json_t *msg, const char *version,
                                      char *why, size_t cap)
{
    const char *pv = http_header(req, "MCP-Protocol-Version");
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (!pv) {
        snprintf(why, cap, "Header mismatch: the MCP-Protocol-Version header is required");
        return why;
    }
    if (strcmp(pv, version) != 0) {
        snprintf(why, cap,
                 "Header mismatch: MCP-Protocol-Version header value '%.40s' does not match "
                 "body value '%.40s'",
                 pv, version);
        return why;
    }
    const char *mm = http_header(req, "Mcp-Method");
    if (!mm) {
        snprintf(why, cap, "Header mismatch: the Mcp-Method header is required");
        return why;
    }
    if (!method || strcmp(mm, method) != 0) {
        snprintf(why, cap,
                 "Header mismatch: Mcp-Method header value '%.60s' does not match body value "
                 "'%.60s'",
                 mm, method ? method : "");
        return why;
    }
    const char *member = strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0
                             ? "name"
                         : strcmp(method, "resources/read") == 0 ? "uri"
                                                                 : NULL;
    if (!member)
        return NULL;
    const char *body_name = json_string_value(
        json_object_get(json_object_get(msg, "params"), member));
    const char *mn = http_header(req, "Mcp-Name");
    if (!mn) {
        snprintf(why, cap, "Header mismatch: the Mcp-Name header is required for %s", method);
        return why;
    }
    char *decoded = header_value_decoded(mn);
    int same = decoded && body_name && strcmp(decoded, body_name) == 0;
    free(decoded);
    if (!same) {
        snprintf(why, cap,
                 "Header mismatch: Mcp-Name header value '%.60s' does not match body value "
                 "'%.60s'",
                 mn, body_name ? body_name : "");
        return why;
    }
    return NULL;
}

/* ---- the metrics ---- */

static const char *method_label(const char *method)
{
    static const char *const known[] = {"initialize",
                                        "ping",
                                        "server/discover",
                                        "tools/list",
                                        "tools/call",
                                        "resources/list",
                                        "resources/templates/list",
                                        "resources/read",
                                        "logging/setLevel",
                                        "notifications/initialized",
                                        "notifications/cancelled"};
    for (size_t i = 0; method && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(method, known[i]) == 0)
            return known[i];
    return method && method[0] ? "other" : "none";
}

static void count(kiln_req *req, const char *method, const char *outcome)
{
    snprintf(req->mcp_method, sizeof req->mcp_method, "%s", method_label(method));
    kiln_metrics_mcp(req->srv->metrics, method_label(method), outcome);
}

/* ---- the HTTP side ---- */

enum MHD_Result mcp_http_begin(kiln_req *req, int authed)
{
    kiln_server *srv = req->srv;
    /* DNS rebinding: a page's script reaches a local server under a name
     * of its own; its Origin gives it away. Before the key: the answer is
     * the same whether it has one. */
    if (!origin_allowed(srv, http_header(req, "Origin")))
        return reply_rpc_error(req, MHD_HTTP_FORBIDDEN, NULL, CODE_TRANSPORT,
                               "Forbidden: this Origin is not allowed (kiln serve "
                               "--mcp-allow-origin)",
                               NULL);
    const char *origin = http_header(req, "Origin");
    if (strcmp(req->method, "OPTIONS") == 0 && origin &&
        http_header(req, "Access-Control-Request-Method")) {
        /* A browser's preflight, from an allowed Origin (checked above):
         * it carries no key, and asks only which requests may follow. */
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, "",
                                                                    MHD_RESPMEM_PERSISTENT);
        if (!resp)
            return MHD_NO;
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", "POST, DELETE");
        MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                "Authorization, Content-Type, Accept, Mcp-Session-Id, "
                                "MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID");
        MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        cors_headers(req, resp);
        return http_queue(req, MHD_HTTP_NO_CONTENT, resp, 0);
    }
    if (!authed)
        return reply_rpc_error(req, MHD_HTTP_UNAUTHORIZED, NULL, CODE_TRANSPORT,
                               "Unauthorized: a valid API key is required (Authorization: Bearer "
                               "KEY)",
                               NULL);
    int post = strcmp(req->method, "POST") == 0;
    if (!post && strcmp(req->method, "DELETE") != 0)
        return reply_rpc_error(req, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, CODE_TRANSPORT,
                               strcmp(req->method, "GET") == 0
                                   ? "Method not allowed: this server opens no stream of its "
                                     "own (GET); every message is a POST"
                                   : "Method not allowed: use POST (a message) or DELETE (end "
                                     "an MCP session)",
                               NULL);
    if (!post) {
        uint64_t clen = 0;
        if (http_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
            (http_content_length(req, &clen) && clen > 0))
            return reply_rpc_error(req, MHD_HTTP_CONTENT_TOO_LARGE, NULL, CODE_TRANSPORT,
                                   "This request takes no body.", NULL);
        return MHD_YES;
    }
    if (atomic_load(&srv->stopping) || atomic_load(&srv->mcp->stopping))
        return reply_rpc_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, CODE_TRANSPORT,
                               "The server is shutting down.", NULL);
    if (!http_content_type_is(req, "application/json"))
        return reply_rpc_error(req, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL, CODE_TRANSPORT,
                               "Unsupported Media Type: Content-Type must be application/json",
                               NULL);
    const char *accept = http_header(req, MHD_HTTP_HEADER_ACCEPT);
    if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream"))
        return reply_rpc_error(req, MHD_HTTP_NOT_ACCEPTABLE, NULL, CODE_TRANSPORT,
                               "Not Acceptable: Client must accept both application/json and "
                               "text/event-stream",
                               NULL);
    req->body = BODY_BUFFER;
    req->limit = srv->opt.max_request_bytes;
    uint64_t clen = 0;
    if (http_content_length(req, &clen) && clen > req->limit)
        return reply_rpc_error(req, MHD_HTTP_CONTENT_TOO_LARGE, NULL, CODE_TRANSPORT,
                               "The request body is larger than the limit (kiln serve "
                               "--max-request).",
                               json_pack("{s:I}", "limit", (json_int_t)req->limit));
    return MHD_YES;
}

/* DELETE: the session ends, its Kiln sessions closed. */
static enum MHD_Result end_session(kiln_req *req)
{
    kiln_mcp_http *h = req->srv->mcp;
    const char *sid = http_header(req, "Mcp-Session-Id");
    snprintf(req->mcp_method, sizeof req->mcp_method, "DELETE");
    if (!sid)
        return reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, NULL, CODE_TRANSPORT,
                               "Bad Request: Mcp-Session-Id header is required", NULL);
    mcp_sess *s = NULL;
    pthread_mutex_lock(&h->lock);
    for (mcp_sess *t = h->sessions; t; t = t->next)
        if (strcmp(t->id, sid) == 0 && strcmp(t->tenant, req->tenant) == 0)
            s = t;
    if (s)
        sess_unlist(h, s);
    pthread_mutex_unlock(&h->lock);
    kiln_metrics_mcp(req->srv->metrics, "DELETE", s ? "ok" : "no_session");
    if (!s)
        return reply_rpc_error(req, MHD_HTTP_NOT_FOUND, NULL, CODE_NO_SESSION,
                               "Session not found", NULL);
    http_event(req->srv, "mcp_session_ended",
               json_pack("{s:s, s:s, s:s}", "mcp_session", s->id, "tenant", s->tenant, "reason",
                         "deleted"));
    sess_unref(h, s, 0);
    return reply_empty(req, MHD_HTTP_NO_CONTENT);
}

/* The reply of a call whose worker has finished, or the stream it opened. */
static enum MHD_Result call_reply(kiln_req *req, http_call *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->stream && !c->stream_queued) {
        c->stream_queued = 1;
        c->refs++; /* the response's */
        pthread_mutex_unlock(&c->lock);
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                                                      stream_read, c,
                                                                      stream_free);
        if (!resp) {
            call_unref(c);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        cors_headers(req, resp);
        return http_queue(req, MHD_HTTP_OK, resp, 0);
    }
    if (!c->done) {
        /* Woken before there is anything: wait again. */
        c->suspended = 1;
        MHD_suspend_connection(req->conn);
        pthread_mutex_unlock(&c->lock);
        return MHD_YES;
    }
    char *text = c->reply;
    size_t len = c->reply_len;
    int code = c->reply_code, gone = 0;
    c->reply = NULL;
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_lock(&c->h->lock);
    gone = c->gone;
    pthread_mutex_unlock(&c->h->lock);
    if (!text && gone) {
        /* Its client left: close rather than answer. */
        req->client_gone = 1;
        return MHD_NO;
    }
    if (!text) {
        /* Cancelled by the client's notifications/cancelled (or its
         * session ended under it): a cancelled request is not answered,
         * so its reply is a stream that ends with nothing in it. */
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, "",
                                                                    MHD_RESPMEM_PERSISTENT);
        if (!resp)
            return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        cors_headers(req, resp);
        return http_queue(req, MHD_HTTP_OK, resp, 0);
    }
    return queue_text(req, reply_status(c->modern, code), text, len, "application/json", NULL);
}

/* kiln_mcp_send_fn of a request handled at once: keep the response. */
struct inline_reply {
    json_t *reply;
};

static void inline_send(void *arg, const json_t *message)
{
    struct inline_reply *r = arg;
    if (json_object_get(message, "id") &&
        (json_object_get(message, "result") || json_object_get(message, "error"))) {
        json_decref(r->reply);
        r->reply = json_copy((json_t *)message);
    }
}

/* kiln_mcp_send_fn of a notification: it is answered by nothing. */
static void drop_send(void *arg, const json_t *message)
{
    (void)arg;
    (void)message;
}

/* `initialize`: a new MCP session of the tenant, named in the reply. */
static enum MHD_Result open_session(kiln_req *req, const json_t *msg)
{
    kiln_mcp_http *h = req->srv->mcp;
    kiln_server *srv = req->srv;
    pthread_mutex_lock(&h->lock);
    unsigned have = sess_count(h, req->tenant);
    pthread_mutex_unlock(&h->lock);
    if (have >= srv->opt.mcp_sessions_per_tenant) {
        count(req, "initialize", "refused");
        char msg_text[160];
        snprintf(msg_text, sizeof msg_text,
                 "Too many MCP sessions: at most %u may be open per tenant (end one with DELETE "
                 "/mcp, or let one idle out)",
                 srv->opt.mcp_sessions_per_tenant);
        return reply_rpc_error(req, MHD_HTTP_TOO_MANY_REQUESTS, json_object_get(msg, "id"),
                               CODE_TRANSPORT, msg_text,
                               json_pack("{s:i}", "limit",
                                         (int)srv->opt.mcp_sessions_per_tenant));
    }
    mcp_sess *s = calloc(1, sizeof *s);
    if (s)
        s->conn = kiln_mcp_conn_new(h->mcp, req->tenant);
    if (!s || !s->conn || kiln_store_new_id(s->id) != 0) {
        if (s && s->conn)
            kiln_mcp_conn_free(s->conn);
        free(s);
        return http_internal(req, "cannot make an MCP session");
    }
    snprintf(s->tenant, sizeof s->tenant, "%s", req->tenant);
    struct inline_reply r = {NULL};
    kiln_mcp_handle(s->conn, msg, inline_send, &r);
    int ok = r.reply && json_object_get(r.reply, "result");
    char *text = r.reply ? json_dumps(r.reply, JSON_COMPACT) : NULL;
    json_decref(r.reply);
    count(req, "initialize", ok ? "ok" : "error");
    if (!ok) {
        kiln_mcp_conn_free(s->conn);
        free(s);
        if (!text)
            return http_internal(req, "initialize was not answered");
        return queue_text(req, MHD_HTTP_OK, text, strlen(text), "application/json", NULL);
    }
    /* Counted again as it is listed: another initialize may have come
     * meanwhile. */
    pthread_mutex_lock(&h->lock);
    int full = sess_count(h, req->tenant) >= srv->opt.mcp_sessions_per_tenant;
    if (!full) {
        s->refs = 1;
        s->used_mono = mono_now();
        s->next = h->sessions;
        h->sessions = s;
    }
    pthread_mutex_unlock(&h->lock);
    if (full) {
        kiln_mcp_conn_free(s->conn);
        free(s);
        free(text);
        return reply_rpc_error(req, MHD_HTTP_TOO_MANY_REQUESTS, json_object_get(msg, "id"),
                               CODE_TRANSPORT, "Too many MCP sessions of this tenant",
                               json_pack("{s:i}", "limit",
                                         (int)srv->opt.mcp_sessions_per_tenant));
    }
    http_event(srv, "mcp_session_opened",
               json_pack("{s:s, s:s, s:s}", "mcp_session", s->id, "tenant", s->tenant,
                         "protocol_version",
                         kiln_mcp_conn_version(s->conn) ? kiln_mcp_conn_version(s->conn) : ""));
    char sid[SESSION_ID_LEN + 1];
    snprintf(sid, sizeof sid, "%s", s->id);
    return queue_text(req, MHD_HTTP_OK, text, text ? strlen(text) : 0, "application/json", sid);
}

/* 1 for the methods that may block (a tool, a file read): a worker's. */
static int blocks(const char *method)
{
    return strcmp(method, "tools/call") == 0 || strcmp(method, "resources/read") == 0;
}

/* A request on conn: at once, or on a worker with the connection
 * suspended. The call (c) is the request's; sess (a reference) and msg
 * are given to it. */
static enum MHD_Result serve(kiln_req *req, http_call *c)
{
    kiln_mcp_http *h = req->srv->mcp;
    const char *method = json_string_value(json_object_get(c->msg, "method"));
    snprintf(c->method, sizeof c->method, "%s", method ? method : "");
    if (!blocks(c->method)) {
        struct inline_reply r = {NULL};
        kiln_mcp_handle(c->conn, c->msg, inline_send, &r);
        if (!r.reply) {
            count(req, c->method, "cancelled");
            return reply_rpc_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                                   KILN_MCP_INTERNAL_ERROR, "The request was not answered.",
                                   NULL);
        }
        if (c->client_id)
            json_object_set(r.reply, "id", c->client_id);
        const json_t *e = json_object_get(r.reply, "error");
        int code = e ? (int)json_integer_value(json_object_get(e, "code")) : 0;
        count(req, c->method, code ? "error" : "ok");
        char *text = json_dumps(r.reply, JSON_COMPACT);
        json_decref(r.reply);
        if (!text)
            return MHD_NO;
        return queue_text(req, reply_status(c->modern, code), text, strlen(text),
                          "application/json", NULL);
    }
    snprintf(req->mcp_method, sizeof req->mcp_method, "%s", method_label(c->method));
    /* Suspended before a worker can wake it; watched from now on. */
    pthread_mutex_lock(&c->lock);
    c->refs++; /* the worker's */
    c->suspended = 1;
    req->job = JOB_WAITING;
    MHD_suspend_connection(req->conn);
    pthread_mutex_unlock(&c->lock);
    /* The pool goes away under the lock at the stop (mcp_http_stop). */
    pthread_mutex_lock(&h->lock);
    watch_add(h, c, req->conn);
    int rc = h->pool && !atomic_load(&h->stopping) ? kiln_jobs_submit(h->pool, call_run, c) : -1;
    pthread_mutex_unlock(&h->lock);
    if (rc != 0) {
        /* The pool is full (or stopping): answered as a stop's queued
         * request is, with the reason (the worker's reference, never
         * taken, is dropped). */
        call_refuse(c, atomic_load(&h->stopping)
                           ? "The server is shutting down."
                           : "The server is busy: too many MCP requests are waiting; retry "
                             "shortly.");
    }
    return MHD_YES;
}

enum MHD_Result mcp_http_request(kiln_req *req)
{
    kiln_mcp_http *h = req->srv->mcp;
    if (req->mcp) {
        if (req->job == JOB_WAITING)
            req->job = JOB_DONE; /* resumed: the reply (or the stream) is there */
        return call_reply(req, req->mcp);
    }
    if (strcmp(req->method, "DELETE") == 0)
        return end_session(req);
    if (req->too_large)
        return reply_rpc_error(req, MHD_HTTP_CONTENT_TOO_LARGE, NULL, CODE_TRANSPORT,
                               "The request body is larger than the limit (kiln serve "
                               "--max-request).",
                               json_pack("{s:I}", "limit", (json_int_t)req->limit));
    if (req->upload_failed)
        return http_internal(req, "out of memory buffering the request body");

    json_error_t jerr;
    int over = 0;
    json_t *msg = kiln_json_budget_load(req->buf ? req->buf : "", req->len,
                                        JSON_REJECT_DUPLICATES, &jerr, &over);
    free(req->buf);
    req->buf = NULL;
    req->len = req->cap = 0;
    if (!msg) {
        count(req, "", "invalid");
        if (over)
            return reply_rpc_error(req, MHD_HTTP_CONTENT_TOO_LARGE, NULL, CODE_TRANSPORT,
                                   "The JSON needs more memory than its size allows.", NULL);
        char why[256];
        snprintf(why, sizeof why, "Parse error: %s (line %d, column %d)", jerr.text, jerr.line,
                 jerr.column);
        return reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, NULL, KILN_MCP_PARSE_ERROR, why, NULL);
    }
    if (json_is_array(msg)) {
        json_decref(msg);
        count(req, "", "invalid");
        return reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, NULL, KILN_MCP_INVALID_REQUEST,
                               "Invalid Request: a batch (a JSON array) is not accepted since "
                               "revision 2025-06-18: send one message per POST",
                               NULL);
    }
    kiln_mcp_kind kind = kiln_mcp_classify(msg);
    if (kind == KILN_MCP_INVALID) {
        json_decref(msg);
        count(req, "", "invalid");
        return reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, NULL, KILN_MCP_INVALID_REQUEST,
                               "Invalid Request: not a JSON-RPC 2.0 message", NULL);
    }
    const char *method = json_string_value(json_object_get(msg, "method"));
    const char *version = kiln_mcp_message_version(msg);
    const char *pv = http_header(req, "MCP-Protocol-Version");
    int initialize = kind == KILN_MCP_REQUEST && method && strcmp(method, "initialize") == 0;
    enum MHD_Result res;

    http_call *c = call_new(h, req);
    if (!c) {
        json_decref(msg);
        return http_internal(req, "out of memory");
    }
    c->msg = msg;
    req->mcp = c;

    if (version && !initialize) {
        /* The 2026-07-28 revision: no session, the headers mirror the body. */
        char why[300];
        if (modern_headers_bad(req, msg, version, why, sizeof why)) {
            count(req, method, "header_mismatch");
            return reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, json_object_get(msg, "id"),
                                   KILN_MCP_HEADER_MISMATCH, why, NULL);
        }
        /* A modern request without the capabilities its _meta must carry
         * is malformed: -32602 with a 400 (2026-07-28 basic/index.mdx,
         * "Per-request protocol fields"); the core answers the same on
         * stdio. server/discover may leave them out. */
        const json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
        if (kind == KILN_MCP_REQUEST && kiln_mcp_version_supported(version) &&
            strcmp(method, "server/discover") != 0 &&
            !json_is_object(
                json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"))) {
            count(req, method, "invalid");
            return reply_rpc_error(
                req, MHD_HTTP_BAD_REQUEST, json_object_get(msg, "id"), KILN_MCP_INVALID_PARAMS,
                "_meta needs io.modelcontextprotocol/clientCapabilities (an object)", NULL);
        }
        c->modern = 1;
        c->conn = tenant_conn(h, req->tenant);
        if (!c->conn)
            return http_internal(req, "out of memory");
        if (kind != KILN_MCP_REQUEST) {
            kiln_mcp_handle(c->conn, msg, drop_send, NULL);
            count(req, method, "notification");
            return reply_empty(req, MHD_HTTP_ACCEPTED);
        }
        /* The server's own id for it while it is worked on. */
        pthread_mutex_lock(&h->lock);
        unsigned long long n = ++h->seq;
        pthread_mutex_unlock(&h->lock);
        c->client_id = json_incref(json_object_get(msg, "id"));
        json_t *copy = json_copy(msg);
        if (!copy)
            return http_internal(req, "out of memory");
        json_object_set_new(copy, "id", json_sprintf("kiln-http-%llu", n));
        json_decref(c->msg);
        c->msg = copy;
        return serve(req, c);
    }

    /* Legacy. A version header the server does not speak is a 400 (the
     * 2025-11-25 transport); one naming the modern revision needs its
     * _meta. */
    if (pv && strcmp(pv, KILN_MCP_MODERN_VERSION) == 0 && !initialize) {
        if (kind != KILN_MCP_REQUEST && !http_header(req, "Mcp-Session-Id")) {
            /* A notification of the modern revision: nothing to act on. */
            count(req, method, "notification");
            return reply_empty(req, MHD_HTTP_ACCEPTED);
        }
        count(req, method, "invalid");
        return reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, json_object_get(msg, "id"),
                               KILN_MCP_INVALID_PARAMS,
                               "Invalid params: MCP-Protocol-Version " KILN_MCP_MODERN_VERSION
                               " needs params._meta[\"io.modelcontextprotocol/protocolVersion\"]",
                               NULL);
    }
    if (pv && !kiln_mcp_version_supported(pv)) {
        count(req, method, "unsupported_version");
        char why[200];
        snprintf(why, sizeof why, "Bad Request: Unsupported protocol version: %.40s", pv);
        return reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, json_object_get(msg, "id"),
                               CODE_TRANSPORT, why,
                               json_pack("{s:o, s:s}", "supported", kiln_mcp_versions(),
                                         "requested", pv));
    }
    if (initialize)
        return open_session(req, msg);
    const char *sid = http_header(req, "Mcp-Session-Id");
    if (!sid) {
        count(req, method, "no_session");
        return reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, json_object_get(msg, "id"),
                               CODE_TRANSPORT,
                               "Bad Request: Mcp-Session-Id header is required (send initialize "
                               "first, or name the protocol version in params._meta)",
                               NULL);
    }
    c->sess = sess_find(h, sid, req->tenant);
    if (!c->sess) {
        count(req, method, "no_session");
        return reply_rpc_error(req, MHD_HTTP_NOT_FOUND, json_object_get(msg, "id"),
                               CODE_NO_SESSION, "Session not found", NULL);
    }
    c->conn = c->sess->conn;
    /* The session's revision is the one its initialize settled on: a
     * request naming another in its header is refused, not served under
     * rules it did not ask for (2025-11-25 transports.mdx). */
    const char *negotiated = kiln_mcp_conn_version(c->conn);
    if (pv && negotiated && strcmp(pv, negotiated) != 0) {
        count(req, method, "unsupported_version");
        char why[200];
        snprintf(why, sizeof why,
                 "Bad Request: MCP-Protocol-Version %.40s is not this session's (%s)", pv,
                 negotiated);
        return reply_rpc_error(req, MHD_HTTP_BAD_REQUEST, json_object_get(msg, "id"),
                               CODE_TRANSPORT, why, NULL);
    }
    if (kind != KILN_MCP_REQUEST) {
        /* A notification (cancellation, initialized) or a response: acted
         * on now; none of them waits. */
        kiln_mcp_handle(c->conn, msg, drop_send, NULL);
        count(req, method ? method : "response", "notification");
        return reply_empty(req, MHD_HTTP_ACCEPTED);
    }
    res = serve(req, c);
    return res;
}

void mcp_http_completed(kiln_req *req)
{
    http_call *c = req->mcp;
    if (!c)
        return;
    req->mcp = NULL;
    /* Nothing may resume the connection now, nor poll its socket, which
     * libmicrohttpd closes after this. */
    pthread_mutex_lock(&c->lock);
    c->live = 0;
    c->suspended = 0;
    int unanswered = !c->ended && !c->done && c->stream;
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_lock(&c->h->lock);
    c->fd = -1;
    /* A stream cut before its response (the client went away while it
     * was read): its request is cancelled, as one whose socket the
     * watcher saw close. */
    if (unanswered && c->watched && !c->cancelled) {
        c->cancelled = c->gone = 1;
        kiln_mcp_cancel(c->conn, json_object_get(c->msg, "id"));
    }
    pthread_mutex_unlock(&c->h->lock);
    call_unref(c);
}

/* ---- start and stop ---- */

kiln_status mcp_http_start(kiln_server *srv, kiln_error *err)
{
    if (!srv->opt.mcp_enabled)
        return KILN_E_OK;
    kiln_mcp_http *h = calloc(1, sizeof *h);
    if (!h)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    h->srv = srv;
    h->wake_fd = -1;
    pthread_mutex_init(&h->lock, NULL);
    srv->mcp = h;
    kiln_mcp_service_backend(srv, &h->backend);
    kiln_mcp_options mo = {.backend = &h->backend,
                           .allow_read = srv->opt.mcp_allow_read,
                           .n_allow_read = srv->opt.n_mcp_allow_read};
    kiln_status st = kiln_mcp_server_new(&mo, &h->mcp, err);
    if (st != KILN_E_OK) {
        if (err && st == KILN_E_USAGE)
            snprintf(err->pointer, sizeof err->pointer, "/mcp-allow-read");
        return st;
    }
    h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (h->wake_fd < 0)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot set up /mcp: %s",
                              strerror(errno));
    /* A worker per session the server may have open (each blocks for the
     * length of a cell), and a few for renders and file reads. Idle
     * workers cost a stack's address space, not memory. */
    h->workers = (srv->opt.sessions_enabled ? srv->opt.max_sessions : 0) + 4;
    if (h->workers > 256)
        h->workers = 256;
    if ((st = kiln_jobs_init(&h->pool, h->workers, QUEUE_MAX, err)) != KILN_E_OK)
        return st;
    if (pthread_create(&h->watcher, NULL, watch_main, h) != 0)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start the /mcp watcher");
    h->watcher_started = 1;
    return KILN_E_OK;
}

void mcp_http_quiesce(kiln_server *srv)
{
    if (srv->mcp)
        atomic_store(&srv->mcp->stopping, 1);
}

void mcp_http_stop(kiln_server *srv)
{
    kiln_mcp_http *h = srv->mcp;
    if (!h)
        return;
    atomic_store(&h->stopping, 1);
    /* The sessions have stopped (kiln_server_stop), so no worker waits on
     * a cell any more: queued requests answer 500, running ones end. */
    pthread_mutex_lock(&h->lock);
    kiln_jobs *pool = h->pool;
    h->pool = NULL;
    pthread_mutex_unlock(&h->lock);
    if (pool)
        kiln_jobs_shutdown(pool, call_cancel);
    if (h->watcher_started) {
        pthread_mutex_lock(&h->lock);
        h->quit = 1;
        watch_wake(h);
        pthread_mutex_unlock(&h->lock);
        pthread_join(h->watcher, NULL);
        h->watcher_started = 0;
    }
}

void mcp_http_free(kiln_server *srv)
{
    kiln_mcp_http *h = srv->mcp;
    if (!h)
        return;
    mcp_http_stop(srv);
    /* Every request has completed (the daemon has stopped): the table's
     * references are the last. */
    while (h->sessions) {
        mcp_sess *s = h->sessions;
        h->sessions = s->next;
        kiln_mcp_conn_free(s->conn);
        free(s);
    }
    while (h->tenants) {
        mcp_tenant *t = h->tenants;
        h->tenants = t->next;
        kiln_mcp_conn_free(t->conn);
        free(t);
    }
    kiln_mcp_server_free(h->mcp);
    if (h->wake_fd >= 0)
        close(h->wake_fd);
    pthread_mutex_destroy(&h->lock);
    free(h);
    srv->mcp = NULL;
}

void mcp_http_counts(kiln_server *srv, unsigned *sessions)
{
    *sessions = 0;
    kiln_mcp_http *h = srv->mcp;
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    *sessions = sess_count(h, NULL);
    pthread_mutex_unlock(&h->lock);
}
