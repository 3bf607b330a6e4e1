/*
 * server.c - the daemon: start, routing, authentication, the access log,
 * the expiry sweep and the graceful stop.
 *
 * libmicrohttpd calls on_request several times per request: first with
 * the headers only (begin: route, method, auth, and every refusal that
 * needs no body, such as a Content-Length over the limit), then once per
 * piece of body (body_data), then once more with no data (finish: the
 * reply). on_completed ends every request: access log line, metrics,
 * cleanup. Renders and runs suspend their connection while a job-pool
 * worker does the work (job_requests.c), so no HTTP thread ever waits for
 * one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "service/http.h"
#include "service/json_budget.h"
#include "service/sessions.h"
#include "../common/banned.h"

/* A JSON body over this leaves glibc's heap holding its parse tree's pages
 * once freed (in arenas that never shrink on their own): on_completed gives
 * them back with malloc_trim. Below it the trim would cost more than it
 * returns. */
#define TRIM_AFTER_BODY_BYTES (1u << 20)

void kiln_server_options_init(kiln_server_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->host = "127.0.0.1";
    opt->port = KILN_SERVER_DEFAULT_PORT;
    opt->data_dir = "kiln-data";
    /* Here rather than in apply_defaults, where 0 would mean "default":
     * for these 0 is a setting of its own ("no limit", "nothing waits"). */
    opt->max_connections_per_ip = KILN_SERVER_DEFAULT_MAX_PER_IP;
    opt->queue_max = KILN_SERVER_DEFAULT_QUEUE;
    opt->sessions_enabled = 1;
    opt->session_pool = KILN_SERVER_DEFAULT_SESSION_POOL;
    opt->mcp_enabled = 1;
}

static unsigned cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* ---- routing ---- */

static const char *route_name(kiln_route r)
{
    switch (r) {
    case ROUTE_FILES:
        return "/v1/files";
    case ROUTE_FILE:
        return "/v1/files/{id}";
    case ROUTE_CONTENT:
        return "/v1/files/{id}/content";
    case ROUTE_LINK:
        return "/v1/files/{id}/link";
    case ROUTE_RENDER:
        return "/v1/render";
    case ROUTE_RUNS:
        return "/v1/runs";
    case ROUTE_SESSIONS:
        return "/v1/sessions";
    case ROUTE_SESSION:
        return "/v1/sessions/{id}";
    case ROUTE_SESSION_CELLS:
        return "/v1/sessions/{id}/cells";
    case ROUTE_SESSION_INTERRUPT:
        return "/v1/sessions/{id}/interrupt";
    case ROUTE_SESSION_FILES:
        return "/v1/sessions/{id}/files";
    case ROUTE_BATCHES:
        return "/v1/batches";
    case ROUTE_BATCH:
        return "/v1/batches/{id}";
    case ROUTE_BATCH_RESULTS:
        return "/v1/batches/{id}/results";
    case ROUTE_BATCH_CANCEL:
        return "/v1/batches/{id}/cancel";
    case ROUTE_HEALTHZ:
        return "/healthz";
    case ROUTE_METRICS:
        return "/metrics";
    case ROUTE_MCP:
        return "/mcp";
    default:
        return "other";
    }
}

const char *http_route_allow(kiln_route r)
{
    switch (r) {
    case ROUTE_FILES:
        return "GET, HEAD, POST";
    case ROUTE_FILE:
        return "GET, HEAD, DELETE";
    case ROUTE_CONTENT:
        return "GET, HEAD";
    case ROUTE_LINK:
        return "POST";
    case ROUTE_RENDER:
        return "POST";
    case ROUTE_RUNS:
        return "POST";
    case ROUTE_SESSIONS:
        return "GET, POST";
    case ROUTE_SESSION:
        return "GET, DELETE";
    case ROUTE_SESSION_CELLS:
    case ROUTE_SESSION_INTERRUPT:
        return "POST";
    case ROUTE_SESSION_FILES:
        return "GET, POST";
    case ROUTE_BATCHES:
        return "GET, POST";
    case ROUTE_BATCH:
    case ROUTE_BATCH_RESULTS:
        return "GET";
    case ROUTE_BATCH_CANCEL:
        return "POST";
    case ROUTE_HEALTHZ:
        return "GET, HEAD";
    case ROUTE_METRICS:
        return "GET, HEAD";
    case ROUTE_MCP:
        return "POST, DELETE";
    default:
        return "";
    }
}

/* Item by item through the Allow list rather than strstr: an empty method
 * matched everywhere, and the search never moved on from it. */
int http_method_allowed(kiln_route r, const char *method)
{
    size_t n = strlen(method);
    if (n == 0)
        return 0;
    for (const char *p = http_route_allow(r); *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, method, n) == 0)
            return 1;
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return 0;
}

kiln_route http_route_of(const char *url, char *id_seg, size_t cap)
{
    if (cap > 0)
        id_seg[0] = '\0';
    if (strcmp(url, "/healthz") == 0)
        return ROUTE_HEALTHZ;
    if (strcmp(url, "/metrics") == 0)
        return ROUTE_METRICS;
    if (strcmp(url, "/mcp") == 0)
        return ROUTE_MCP;
    if (strcmp(url, "/v1/render") == 0)
        return ROUTE_RENDER;
    if (strcmp(url, "/v1/runs") == 0)
        return ROUTE_RUNS;
    if (strcmp(url, "/v1/files") == 0)
        return ROUTE_FILES;
    if (strcmp(url, "/v1/sessions") == 0)
        return ROUTE_SESSIONS;
    if (strcmp(url, "/v1/batches") == 0)
        return ROUTE_BATCHES;
    static const struct {
        const char *prefix, *rest;
        kiln_route route;
    } below[] = {
        {"/v1/files/", "", ROUTE_FILE},
        {"/v1/files/", "/content", ROUTE_CONTENT},
        {"/v1/files/", "/link", ROUTE_LINK},
        {"/v1/sessions/", "", ROUTE_SESSION},
        {"/v1/sessions/", "/cells", ROUTE_SESSION_CELLS},
        {"/v1/sessions/", "/interrupt", ROUTE_SESSION_INTERRUPT},
        {"/v1/sessions/", "/files", ROUTE_SESSION_FILES},
        {"/v1/batches/", "", ROUTE_BATCH},
        {"/v1/batches/", "/results", ROUTE_BATCH_RESULTS},
        {"/v1/batches/", "/cancel", ROUTE_BATCH_CANCEL},
    };
    /* PREFIX{id}REST: the id segment is whatever lies between. */
    for (size_t i = 0; i < sizeof below / sizeof below[0]; i++) {
        size_t plen = strlen(below[i].prefix);
        if (strncmp(url, below[i].prefix, plen) != 0)
            continue;
        const char *seg = url + plen, *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        if (n == 0)
            return ROUTE_OTHER;
        if (strcmp(slash ? slash : "", below[i].rest) != 0)
            continue;
        if (n < cap) {
            memcpy(id_seg, seg, n);
            id_seg[n] = '\0';
        }
        return below[i].route;
    }
    return ROUTE_OTHER;
}

/* ---- authentication ---- */

/* A signed link's query: the tenant it names becomes the request's. */
static enum MHD_Result auth_link(kiln_req *req, const char *sig)
{
    kiln_server *srv = req->srv;
    const char *tenant = http_arg(req, "tenant"), *exp = http_arg(req, "expires");
    char *end = NULL;
    long long expires = exp ? strtoll(exp, &end, 10) : 0;
    int expired = 0;
    if (!tenant || !tenant[0] || strlen(tenant) > KILN_AUTH_TENANT_MAX || !exp || !*exp || *end ||
        strlen(sig) != KILN_AUTH_SIG_HEX ||
        kiln_auth_verify_link(srv->link_secret, tenant, req->id, (int64_t)expires, sig,
                              (int64_t)time(NULL), &expired) != 0) {
        if (expired) {
            char when[32], msg[96];
            kiln_api_time((int64_t)expires, when, sizeof when);
            snprintf(msg, sizeof msg, "The link expired at %s.", when);
            return http_error(req, MHD_HTTP_FORBIDDEN, "link_expired", msg,
                              json_pack("{s:s}", "expired_at", when));
        }
        return http_error(req, MHD_HTTP_FORBIDDEN, "invalid_signature",
                          "The link's signature is not valid.", NULL);
    }
    snprintf(req->tenant, sizeof req->tenant, "%s", tenant);
    return MHD_YES;
}

/* Authorization: Bearer KEY. 0, or -1 when missing or unknown. */
static int auth_bearer(kiln_req *req)
{
    const char *h = http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h)
        return -1;
    while (*h == ' ')
        h++;
    if (strncasecmp(h, "Bearer ", 7) != 0)
        return -1;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    if (n == 0)
        return -1;
    return kiln_auth_check(req->srv->auth, h, n, req->tenant);
}

static void client_address(struct MHD_Connection *conn, char *buf, size_t cap)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    buf[0] = '\0';
    if (!ci || !ci->client_addr)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)cap);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)cap);
}

/* ---- connection deadlines ---- */

/*
 * libmicrohttpd's connection timeout is an idle timer that every byte
 * resets, so a client sending a header byte now and then holds its
 * connection forever (slowloris), and enough of them hold every one. So
 * each connection also has a deadline for the phase it is in:
 *
 *   CONN_HEADERS  the request line and headers must be in header_timeout
 *                 seconds after the accept, or after the previous response
 *                 on a kept-alive connection;
 *   CONN_BODY     the body must be in request_timeout seconds after the
 *                 headers;
 *   CONN_BUSY     none: the request is in, the server is working on it or
 *                 sending the reply (a slow reader is the idle timer's).
 *
 * The reaper thread shutdown()s a socket past its deadline rather than
 * closing it: libmicrohttpd owns the descriptor, sees the end of the stream
 * and closes the connection through its usual path (on_completed, the
 * per-address count). The descriptor is safe to use because libmicrohttpd
 * reports NOTIFY_CLOSED (on_connection unlinks under the lock) before it
 * closes it, so the reaper never shuts down a number reused by another file.
 */
typedef enum { CONN_HEADERS, CONN_BODY, CONN_BUSY } conn_phase;

struct kiln_conn {
    struct kiln_conn *prev, *next;
    int fd;
    conn_phase phase;
    struct timespec deadline; /* CLOCK_MONOTONIC, for HEADERS and BODY */
    const char *reaped;       /* the termination the reaper's close is logged with */
    unsigned requests;        /* completed on this connection */
    char remote[64];
};

struct kiln_reaper {
    pthread_mutex_t lock; /* the list, every kiln_conn's fields but fd, quit */
    pthread_cond_t wake;  /* on CLOCK_MONOTONIC, like the deadlines */
    struct kiln_conn *head;
    pthread_t thread;
    int started;
    int quit;
};

static int ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Enter phase; the caller holds the lock. */
static void conn_enter(kiln_server *srv, struct kiln_conn *c, conn_phase phase)
{
    c->phase = phase;
    if (phase == CONN_BUSY)
        return;
    clock_gettime(CLOCK_MONOTONIC, &c->deadline);
    c->deadline.tv_sec += phase == CONN_HEADERS ? srv->opt.header_timeout
                                                : srv->opt.request_timeout;
}

static struct kiln_conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void conn_phase_set(kiln_server *srv, struct MHD_Connection *conn, conn_phase phase)
{
    struct kiln_conn *c = conn_of(conn);
    if (!c)
        return;
    pthread_mutex_lock(&srv->reaper->lock);
    conn_enter(srv, c, phase);
    pthread_mutex_unlock(&srv->reaper->lock);
}

/* MHD_OPTION_NOTIFY_CONNECTION: track every connection from its accept. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    kiln_server *srv = cls;
    struct kiln_reaper *r = srv->reaper;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        /* Untracked (no memory): the connection still has the idle timer. */
        struct kiln_conn *c = ci ? calloc(1, sizeof *c) : NULL;
        if (!c)
            return;
        c->fd = ci->connect_fd;
        client_address(conn, c->remote, sizeof c->remote);
        pthread_mutex_lock(&r->lock);
        conn_enter(srv, c, CONN_HEADERS);
        c->next = r->head;
        if (r->head)
            r->head->prev = c;
        r->head = c;
        pthread_mutex_unlock(&r->lock);
        *socket_context = c;
        return;
    }
    struct kiln_conn *c = *socket_context;
    if (!c)
        return;
    *socket_context = NULL;
    pthread_mutex_lock(&r->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        r->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    const char *reaped = c->reaped;
    pthread_mutex_unlock(&r->lock);
    /* A close in the body phase was logged by on_completed, with its
     * request; one waiting for its first headers has no request line to
     * log, so it gets an event; an idle kept-alive one is not news. */
    if (reaped && strcmp(reaped, "keepalive_idle") != 0)
        http_event(srv, "connection_closed",
                   json_pack("{s:s, s:s, s:i, s:i}", "termination", reaped, "remote", c->remote,
                             "requests", (int)c->requests, "limit_seconds",
                             (int)srv->opt.header_timeout));
    free(c);
}

static void *reaper_main(void *arg)
{
    kiln_server *srv = arg;
    struct kiln_reaper *r = srv->reaper;
    pthread_mutex_lock(&r->lock);
    while (!r->quit) {
        struct timespec now, next;
        clock_gettime(CLOCK_MONOTONIC, &now);
        /* A connection made after this pass has a deadline a whole second
         * (the least timeout) away at least: a second's sleep misses none. */
        next = now;
        next.tv_sec += 1;
        for (struct kiln_conn *c = r->head; c; c = c->next) {
            if (c->phase == CONN_BUSY || c->reaped)
                continue;
            if (!ts_before(&now, &c->deadline)) {
                /* Waiting for the headers after a finished request is a
                 * kept-alive connection gone idle: ordinary, closed quietly. */
                c->reaped = c->phase != CONN_HEADERS ? "request_timeout"
                            : c->requests            ? "keepalive_idle"
                                                     : "header_timeout";
                shutdown(c->fd, SHUT_RDWR);
            } else if (ts_before(&c->deadline, &next)) {
                next = c->deadline;
            }
        }
        /* Queued jobs whose clients left give their places back; looked at
         * four times a second while any waits (outside the reaper's lock:
         * answering a request may take it). */
        unsigned queued = 0;
        pthread_mutex_unlock(&r->lock);
        pthread_mutex_lock(&srv->jobs_lock); /* the stop takes the pool away under it */
        if (srv->jobs)
            kiln_jobs_counts(srv->jobs, NULL, &queued);
        if (queued)
            jobs_drop_gone(srv);
        pthread_mutex_unlock(&srv->jobs_lock);
        pthread_mutex_lock(&r->lock);
        if (queued) {
            struct timespec soon = now;
            soon.tv_nsec += 250000000L;
            if (soon.tv_nsec >= 1000000000L) {
                soon.tv_sec++;
                soon.tv_nsec -= 1000000000L;
            }
            if (ts_before(&soon, &next))
                next = soon;
        }
        if (!r->quit)
            pthread_cond_timedwait(&r->wake, &r->lock, &next);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static kiln_status reaper_start(kiln_server *srv, kiln_error *err)
{
    struct kiln_reaper *r = calloc(1, sizeof *r);
    if (!r)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&r->lock, NULL);
    srv->reaper = r;
    if (pthread_create(&r->thread, NULL, reaper_main, srv) != 0)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start the reaper thread");
    r->started = 1;
    return KILN_E_OK;
}

/* After the daemon stopped: every connection has been reported closed. */
static void reaper_free(kiln_server *srv)
{
    struct kiln_reaper *r = srv->reaper;
    if (!r)
        return;
    if (r->started) {
        pthread_mutex_lock(&r->lock);
        r->quit = 1;
        pthread_cond_signal(&r->wake);
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->thread, NULL);
    }
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->wake);
    free(r);
    srv->reaper = NULL;
}

/* ---- the request's life ---- */

static kiln_req *req_new(kiln_server *srv, struct MHD_Connection *conn, const char *url,
                         const char *method)
{
    kiln_req *req = calloc(1, sizeof *req);
    if (!req)
        return NULL;
    req->srv = srv;
    req->conn = conn;
    clock_gettime(CLOCK_MONOTONIC, &req->start);
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        memset(rnd, 0, sizeof rnd);
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(req->request_id + 2 * i, 3, "%02x", rnd[i]);
    snprintf(req->method, sizeof req->method, "%s", method);
    snprintf(req->path, sizeof req->path, "%s", url);
    atomic_fetch_add(&srv->active_requests, 1);
    return req;
}

static enum MHD_Result reply_healthz(kiln_req *req)
{
    if (atomic_load(&req->srv->stopping))
        return http_json(req, MHD_HTTP_SERVICE_UNAVAILABLE,
                         json_pack("{s:s}", "status", "stopping"));
    return http_json(req, MHD_HTTP_OK, json_pack("{s:s}", "status", "ok"));
}

static enum MHD_Result reply_metrics(kiln_req *req)
{
    kiln_server *srv = req->srv;
    unsigned running = 0, queued = 0;
    pthread_mutex_lock(&srv->jobs_lock);
    if (srv->jobs)
        kiln_jobs_counts(srv->jobs, &running, &queued);
    pthread_mutex_unlock(&srv->jobs_lock);
    unsigned open = 0, pool = 0, mcp_sessions = 0;
    kiln_sessions_counts(srv, &open, &pool);
    mcp_http_counts(srv, &mcp_sessions);
    unsigned b_queued = 0, b_running = 0;
    uint64_t b_left = 0;
    batches_counts(srv, &b_queued, &b_running, &b_left);
    kiln_metrics_batch_gauges(srv->metrics, b_queued, b_running, b_left);
    size_t len = 0;
    char *text = kiln_metrics_text(srv->metrics, kiln_store_bytes(srv->store), running, queued,
                                   open, pool, mcp_sessions, &len);
    if (!text)
        return http_internal(req, "cannot build the metrics text: out of memory");
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return http_queue(req, MHD_HTTP_OK, resp, len);
}

/* A body follows the headers: chunked, or a Content-Length above 0. */
static int request_has_body(kiln_req *req)
{
    uint64_t clen = 0;
    return http_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL ||
           (http_content_length(req, &clen) && clen > 0);
}

/* The first call: only the headers are known. Refuse what can be refused
 * now; set up what the body needs. */
static enum MHD_Result begin(kiln_req *req)
{
    kiln_server *srv = req->srv;
    char seg[64];
    req->route = http_route_of(req->path, seg, sizeof seg);
    if (req->route == ROUTE_OTHER || (req->route == ROUTE_MCP && !srv->mcp))
        return http_not_found(req);
    /* /mcp answers in JSON-RPC's shapes, its refusals too (mcp_http.c). */
    if (req->route == ROUTE_MCP)
        return mcp_http_begin(req, auth_bearer(req) == 0);
    if (!http_method_allowed(req->route, req->method)) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s is not allowed here; use %s.", req->method,
                 http_route_allow(req->route));
        size_t len = 0;
        json_t *body = kiln_api_error("method_not_allowed", msg, NULL);
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        if (!text)
            return MHD_NO;
        len = strlen(text);
        struct MHD_Response *resp = MHD_create_response_from_buffer(len, text,
                                                                    MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(text);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, http_route_allow(req->route));
        return http_queue(req, MHD_HTTP_METHOD_NOT_ALLOWED, resp, len);
    }
    /* Only the POSTs take a body. Any other is refused now, on the first
     * call, so libmicrohttpd reads none of it: reading and dropping it
     * would let one client stream without limit into a GET. */
    if (strcmp(req->method, "POST") != 0 && request_has_body(req))
        return http_error(req, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
                          "This request takes no body.", json_pack("{s:i}", "limit", 0));
    if (req->route == ROUTE_HEALTHZ || req->route == ROUTE_METRICS)
        return MHD_YES;

    int session_route = req->route >= ROUTE_SESSIONS && req->route <= ROUTE_SESSION_FILES;
    int batch_route = req->route >= ROUTE_BATCHES && req->route <= ROUTE_BATCH_CANCEL;
    int has_id = req->route == ROUTE_FILE || req->route == ROUTE_CONTENT ||
                 req->route == ROUTE_LINK || (session_route && req->route != ROUTE_SESSIONS) ||
                 (batch_route && req->route != ROUTE_BATCHES);
    int id_ok = has_id && kiln_api_valid_id(seg);
    /* A valid id is exactly KILN_STORE_ID_LEN characters; the precision
     * only tells the compiler so. */
    if (id_ok)
        snprintf(req->id, sizeof req->id, "%.*s", (int)(sizeof req->id - 1), seg);

    /* A signed link is its own authority, for the one file it names. */
    const char *sig = req->route == ROUTE_CONTENT ? http_arg(req, "signature") : NULL;
    if (sig) {
        if (!id_ok)
            return http_error(req, MHD_HTTP_FORBIDDEN, "invalid_signature",
                              "The link's signature is not valid.", NULL);
        enum MHD_Result r = auth_link(req, sig);
        if (req->queued || r != MHD_YES)
            return r;
    } else if (auth_bearer(req) != 0) {
        return http_error(req, MHD_HTTP_UNAUTHORIZED, "unauthorized",
                          "A valid API key is required (Authorization: Bearer KEY).", NULL);
    }
    if (has_id && !id_ok)
        return http_not_found(req);

    uint64_t clen = 0;
    switch (req->route) {
    case ROUTE_FILES:
        if (strcmp(req->method, "POST") == 0)
            return files_upload_begin(req);
        break;
    case ROUTE_SESSIONS:
    case ROUTE_SESSION:
    case ROUTE_SESSION_CELLS:
    case ROUTE_SESSION_INTERRUPT:
    case ROUTE_SESSION_FILES:
    case ROUTE_BATCHES:
    case ROUTE_BATCH_CANCEL:
        if (strcmp(req->method, "POST") != 0)
            break;
        if (atomic_load(&srv->stopping))
            return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                              "The server is shutting down.", NULL);
        if (request_has_body(req) && !http_content_type_is(req, "application/json"))
            return http_error(req, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                              "The body must be JSON (Content-Type: application/json).", NULL);
        req->body = BODY_BUFFER;
        req->limit = srv->opt.max_request_bytes;
        if (http_content_length(req, &clen) && clen > req->limit)
            return http_too_large(req, req->limit);
        break;
    case ROUTE_RENDER:
    case ROUTE_RUNS:
        if (atomic_load(&srv->stopping))
            return http_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                              "The server is shutting down.", NULL);
        if (!http_content_type_is(req, "application/json"))
            return http_error(req, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                              "The body must be JSON (Content-Type: application/json).", NULL);
        /* fall through */
    case ROUTE_LINK:
        req->body = BODY_BUFFER;
        req->limit = srv->opt.max_request_bytes;
        if (http_content_length(req, &clen) && clen > req->limit)
            return http_too_large(req, req->limit);
        break;
    default:
        break;
    }
    return MHD_YES;
}

static enum MHD_Result body_data(kiln_req *req, const char *data, size_t size)
{
    switch (req->body) {
    case BODY_UPLOAD:
    case BODY_MULTIPART:
        return files_upload_data(req, data, size);
    case BODY_BUFFER:
        req->received += size;
        if (req->too_large)
            return req->received - req->limit > KILN_HTTP_DISCARD_MAX ? MHD_NO : MHD_YES;
        if (http_buffer_append(req, data, size) != 0 && !req->too_large)
            req->upload_failed = 1;
        return MHD_YES;
    default:
        /* A body where none is taken was refused before it was read
         * (begin): data here means it came anyway, so close. */
        return MHD_NO;
    }
}

static enum MHD_Result finish(kiln_req *req)
{
    if (req->route == ROUTE_MCP)
        return mcp_http_request(req);
    if ((req->job == JOB_WAITING || req->job == JOB_DONE) && req->route >= ROUTE_SESSIONS &&
        req->route <= ROUTE_SESSION_FILES)
        return sessions_request(req);
    if (req->job == JOB_WAITING || req->job == JOB_DONE)
        return jobs_request(req);
    if (req->body == BODY_UPLOAD || req->body == BODY_MULTIPART)
        return files_upload_finish(req);
    if (req->too_large)
        return http_too_large(req, req->limit);
    if (req->upload_failed)
        return http_internal(req, "out of memory buffering the request body");
    int get = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
    switch (req->route) {
    case ROUTE_HEALTHZ:
        return reply_healthz(req);
    case ROUTE_METRICS:
        return reply_metrics(req);
    case ROUTE_FILES:
        return files_list(req); /* GET and HEAD */
    case ROUTE_FILE:
        return get ? files_get(req) : files_delete(req);
    case ROUTE_CONTENT:
        return download_content(req);
    case ROUTE_LINK:
        return files_link(req);
    case ROUTE_RENDER:
    case ROUTE_RUNS:
        return jobs_request(req);
    case ROUTE_SESSIONS:
    case ROUTE_SESSION:
    case ROUTE_SESSION_CELLS:
    case ROUTE_SESSION_INTERRUPT:
    case ROUTE_SESSION_FILES:
        return sessions_request(req);
    case ROUTE_BATCHES:
    case ROUTE_BATCH:
    case ROUTE_BATCH_RESULTS:
    case ROUTE_BATCH_CANCEL:
        return batches_request(req);
    default:
        return http_not_found(req);
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)version;
    kiln_req *req = *con_cls;
    if (!req) {
        req = req_new(cls, conn, url, method);
        if (!req)
            return MHD_NO;
        *con_cls = req;
        /* The headers are in: the body's deadline starts. */
        conn_phase_set(req->srv, conn, CONN_BODY);
        /* A request without a body is looked at on the last call, so a
         * refusal keeps the connection alive; one with a body now, so a
         * refusal (401, 413, ...) comes before the body is read. */
        if (!request_has_body(req))
            return MHD_YES;
        req->begun = 1;
        return begin(req);
    }
    if (*upload_size == 0)
        conn_phase_set(req->srv, conn, CONN_BUSY); /* the last call: all of it is in */
    if (req->queued) {
        /* An early reply to a request whose body no route takes: close
         * rather than read whatever comes. */
        if (*upload_size && strcmp(req->method, "POST") != 0)
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        return body_data(req, upload_data, n);
    }
    if (!req->begun) {
        req->begun = 1;
        enum MHD_Result r = begin(req);
        if (req->queued || r != MHD_YES)
            return r;
    }
    return finish(req);
}

static const char *termination_name(enum MHD_RequestTerminationCode toe)
{
    switch (toe) {
    case MHD_REQUEST_TERMINATED_COMPLETED_OK:
        return NULL;
    case MHD_REQUEST_TERMINATED_WITH_ERROR:
        return "error";
    case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED:
        return "timeout";
    case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN:
        return "shutdown";
    case MHD_REQUEST_TERMINATED_READ_ERROR:
        return "read_error";
    case MHD_REQUEST_TERMINATED_CLIENT_ABORT:
        return "client_abort";
    default:
        return "other";
    }
}

/* The end of every request: the access log line, the metrics, cleanup. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    kiln_server *srv = cls;
    kiln_req *req = *con_cls;
    if (!req)
        return;
    *con_cls = NULL;
    /* A close the reaper made is logged as what it was, not as the read
     * error it looks like; otherwise the next request's headers are due. */
    const char *reaped = NULL;
    struct kiln_conn *c = conn_of(conn);
    if (c) {
        pthread_mutex_lock(&srv->reaper->lock);
        reaped = c->reaped;
        c->reaped = NULL;
        c->requests++;
        conn_enter(srv, c, reaped ? CONN_BUSY : CONN_HEADERS);
        pthread_mutex_unlock(&srv->reaper->lock);
    }
    files_upload_cleanup(req);
    mcp_http_completed(req);
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - req->start.tv_sec) +
                     (double)(end.tv_nsec - req->start.tv_nsec) / 1e9;
    if (req->queued)
        kiln_metrics_request(srv->metrics, req->method, route_name(req->route), req->status,
                             seconds, req->bytes_out);
    if (srv->opt.log) {
        char now[32], remote[64];
        kiln_api_time((int64_t)time(NULL), now, sizeof now);
        client_address(conn, remote, sizeof remote);
        json_t *line = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:f, s:o}", "time",
                                 now, "request_id", req->request_id, "remote", remote, "method",
                                 req->method, "route", route_name(req->route), "path", req->path,
                                 "status", req->queued ? req->status : 0, "bytes",
                                 (json_int_t)req->bytes_out, "duration_ms",
                                 (double)(long long)(seconds * 1e6) / 1e3, "tenant",
                                 req->tenant[0] ? json_string(req->tenant) : json_null());
        const char *why = req->client_gone ? "client_abort"
                          : toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && reaped
                              ? reaped
                              : termination_name(toe);
        if (line && why)
            json_object_set_new(line, "termination", json_string(why));
        if (line && req->mcp_method[0])
            json_object_set_new(line, "mcp_method", json_string(req->mcp_method));
        char *text = line ? json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
        json_decref(line);
        if (text)
            srv->opt.log(srv->opt.log_arg, text);
        free(text);
    }
    int trim = req->body == BODY_BUFFER && req->received > TRIM_AFTER_BODY_BYTES;
    free(req->buf);
    json_decref(req->reply.body);
    free(req);
    if (trim)
        malloc_trim(0);
    atomic_fetch_sub(&srv->active_requests, 1);
}

/* libmicrohttpd's own messages become events (the library never prints). */
static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    http_event(cls, "httpd", json_pack("{s:s}", "message", msg));
}

/* ---- the expiry sweep ---- */

static void *sweeper(void *arg)
{
    kiln_server *srv = arg;
    pthread_mutex_lock(&srv->sweep_lock);
    while (!srv->sweep_quit) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += srv->opt.sweep_seconds;
        while (!srv->sweep_quit &&
               pthread_cond_timedwait(&srv->sweep_wake, &srv->sweep_lock, &until) != ETIMEDOUT)
            ;
        if (srv->sweep_quit)
            break;
        pthread_mutex_unlock(&srv->sweep_lock);
        uint64_t removed = 0;
        kiln_error err;
        memset(&err, 0, sizeof err);
        if (kiln_store_sweep(srv->store, (int64_t)time(NULL), &removed, &err) != KILN_STORE_OK)
            http_event(srv, "sweep_failed", json_pack("{s:s}", "message", err.message));
        else if (removed)
            http_event(srv, "sweep", json_pack("{s:I}", "removed", (json_int_t)removed));
        pthread_mutex_lock(&srv->sweep_lock);
    }
    pthread_mutex_unlock(&srv->sweep_lock);
    return NULL;
}

/* ---- start and stop ---- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    if (ftw->level > 0)
        remove(path);
    return 0;
}

/* The listening socket, made here so port 0 can be read back and the
 * socket is close-on-exec (runs are child processes). */
static kiln_status open_listener(kiln_server *srv, kiln_error *err)
{
    char port[16];
    snprintf(port, sizeof port, "%u", srv->opt.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    const char *host = srv->opt.host && srv->opt.host[0] ? srv->opt.host : NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0)
        return kiln_error_set(err, KILN_E_USAGE, "/listen",
                              "cannot resolve the listen address %s: %s", host ? host : "*",
                              gai_strerror(rc));
    int fd = -1, saved = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int on = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (ai->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 511) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0 && saved == EADDRINUSE)
        return kiln_error_set(err, KILN_E_USAGE, "/listen",
                              "cannot listen on %s:%u: the address is in use by another process",
                              host ? host : "*", srv->opt.port);
    if (fd < 0)
        return kiln_error_set(err, KILN_E_USAGE, "/listen", "cannot listen on %s:%u: %s",
                              host ? host : "*", srv->opt.port, strerror(saved));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        getnameinfo((struct sockaddr *)&ss, sl, srv->host, sizeof srv->host, NULL, 0,
                    NI_NUMERICHOST);
        srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    }
    srv->listen_fd = fd;
    return KILN_E_OK;
}

static void apply_defaults(kiln_server_options *o)
{
    unsigned cpus = cpu_count();
    if (!o->threads)
        o->threads = cpus < 2 ? 2 : cpus;
    if (!o->max_jobs)
        o->max_jobs = cpus;
    if (!o->max_upload_bytes)
        o->max_upload_bytes = KILN_SERVER_DEFAULT_MAX_UPLOAD;
    if (!o->max_request_bytes)
        o->max_request_bytes = KILN_SERVER_DEFAULT_MAX_REQUEST;
    if (!o->max_file_bytes)
        o->max_file_bytes = 30ull << 20;
    if (!o->ttl_seconds)
        o->ttl_seconds = KILN_STORE_DEFAULT_TTL;
    if (!o->sweep_seconds)
        o->sweep_seconds = KILN_SERVER_DEFAULT_SWEEP;
    if (!o->connection_timeout)
        o->connection_timeout = KILN_SERVER_DEFAULT_CONN_TIMEOUT;
    if (!o->header_timeout)
        o->header_timeout = KILN_SERVER_DEFAULT_HEADER_TIMEOUT;
    if (!o->request_timeout)
        o->request_timeout = KILN_SERVER_DEFAULT_REQUEST_TIMEOUT;
    if (!o->shutdown_grace)
        o->shutdown_grace = KILN_SERVER_DEFAULT_GRACE;
    if (!o->max_connections)
        o->max_connections = KILN_SERVER_DEFAULT_MAX_CONNECTIONS;
    if (!o->data_dir)
        o->data_dir = "kiln-data";
    if (!o->max_sessions)
        o->max_sessions = KILN_SERVER_DEFAULT_MAX_SESSIONS;
    if (!o->max_sessions_per_tenant)
        o->max_sessions_per_tenant = KILN_SERVER_DEFAULT_MAX_SESSIONS_PER_TENANT;
    if (!o->session_idle)
        o->session_idle = KILN_SERVER_DEFAULT_SESSION_IDLE;
    if (!o->session_lifetime)
        o->session_lifetime = KILN_SERVER_DEFAULT_SESSION_LIFETIME;
    if (!o->mcp_sessions_per_tenant)
        o->mcp_sessions_per_tenant = KILN_SERVER_DEFAULT_MCP_SESSIONS_PER_TENANT;
    if (!o->mcp_session_idle)
        o->mcp_session_idle = KILN_SERVER_DEFAULT_MCP_SESSION_IDLE;
    if (!o->batch_workers)
        o->batch_workers = cpus / 2 ? cpus / 2 : 1;
    if (o->batch_workers > 256) /* kiln batch's -j at most */
        o->batch_workers = 256;
    if (!o->batches_running)
        o->batches_running = KILN_SERVER_DEFAULT_BATCHES_RUNNING;
    if (!o->batches_per_tenant)
        o->batches_per_tenant = KILN_SERVER_DEFAULT_BATCHES_PER_TENANT;
    if (!o->batch_max_jobs)
        o->batch_max_jobs = KILN_SERVER_DEFAULT_BATCH_MAX_JOBS;
    if (!o->batch_job_timeout)
        o->batch_job_timeout = KILN_SERVER_DEFAULT_BATCH_JOB_TIMEOUT;
}

static void server_free(kiln_server *srv)
{
    if (srv->sweeper_started) {
        pthread_mutex_lock(&srv->sweep_lock);
        srv->sweep_quit = 1;
        pthread_cond_signal(&srv->sweep_wake);
        pthread_mutex_unlock(&srv->sweep_lock);
        pthread_join(srv->sweeper, NULL);
    }
    mcp_http_free(srv);
    batches_free(srv);
    kiln_sessions_free(srv);
    reaper_free(srv);
    if (srv->jobs)
        kiln_jobs_shutdown(srv->jobs, jobs_cancel);
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    kiln_metrics_free(srv->metrics);
    kiln_inuse_free(srv->inuse);
    kiln_auth_free(srv->auth);
    kiln_store_close(srv->store);
    pthread_mutex_destroy(&srv->jobs_lock);
    pthread_mutex_destroy(&srv->sweep_lock);
    pthread_cond_destroy(&srv->sweep_wake);
    free(srv);
}

kiln_status kiln_server_start(kiln_server **out, const kiln_server_options *opt, kiln_error *err)
{
    *out = NULL;
    kiln_json_budget_install(); /* request JSON is parsed within a budget from now on */
    kiln_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    srv->opt = *opt;
    apply_defaults(&srv->opt);
    srv->listen_fd = -1;
    pthread_mutex_init(&srv->jobs_lock, NULL);
    pthread_mutex_init(&srv->sweep_lock, NULL);
    pthread_cond_init(&srv->sweep_wake, NULL);
    kiln_status st;

    /* The address first: a server that cannot listen never touches its
     * data directory. Then the directory, whose lock (the store's) is
     * taken before anything in it is written: a second server on it stops
     * there, having changed nothing of the first's. */
    if ((st = open_listener(srv, err)) != KILN_E_OK)
        goto free_server;
    if (mkdir(srv->opt.data_dir, 0700) < 0 && errno != EEXIST) {
        st = kiln_error_set(err, KILN_E_WRITE, "/data-dir",
                            "cannot create the data directory %s: %s", srv->opt.data_dir,
                            strerror(errno));
        goto free_server;
    }
    kiln_store_options sopt = {.dir = srv->opt.data_dir,
                               .ttl_seconds = srv->opt.ttl_seconds,
                               .max_bytes = srv->opt.max_upload_bytes > srv->opt.max_file_bytes
                                                ? srv->opt.max_upload_bytes
                                                : srv->opt.max_file_bytes};
    if ((st = kiln_store_open(&srv->store, &sopt, err)) != KILN_E_OK) {
        if (err)
            snprintf(err->pointer, sizeof err->pointer, "/data-dir");
        goto free_server;
    }
    if (srv->opt.prepare && (st = srv->opt.prepare(srv->opt.prepare_arg, srv->opt.data_dir,
                                                   &srv->opt.keys_file, err)) != KILN_E_OK)
        goto free_server;
    if ((st = kiln_auth_load(&srv->auth, srv->opt.keys_file, srv->opt.env_keys, err)) !=
        KILN_E_OK)
        goto free_server;
    if (kiln_auth_key_count(srv->auth) == 0) {
        st = kiln_error_set(err, KILN_E_USAGE, NULL,
                            "no API keys: give a keys file or KILN_API_KEYS");
        goto free_server;
    }
    if ((st = kiln_auth_link_secret(srv->opt.data_dir, srv->link_secret, err)) != KILN_E_OK)
        goto free_server;
    if ((st = kiln_metrics_init(&srv->metrics, err)) != KILN_E_OK)
        goto free_server;
    if ((st = kiln_inuse_init(&srv->inuse, err)) != KILN_E_OK)
        goto free_server;

    /* Scratch space for renders and runs: whatever a crash left goes. */
    snprintf(srv->work_dir, sizeof srv->work_dir, "%s/work", srv->opt.data_dir);
    if (mkdir(srv->work_dir, 0700) < 0 && errno != EEXIST) {
        st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create %s: %s", srv->work_dir,
                            strerror(errno));
        goto free_server;
    }
    nftw(srv->work_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);

    srv->api.store = srv->store;
    srv->api.inuse = srv->inuse;
    srv->api.work_dir = srv->work_dir;
    srv->api.kiln_exe = srv->opt.kiln_exe;
    srv->api.max_file_bytes = srv->opt.max_file_bytes;
    srv->api.run_max = srv->opt.run_max;
    srv->api.stopping = &srv->kill_runs;

    if ((st = kiln_jobs_init(&srv->jobs, srv->opt.max_jobs, srv->opt.queue_max, err)) !=
        KILN_E_OK)
        goto free_server;
    if (pthread_create(&srv->sweeper, NULL, sweeper, srv) != 0) {
        st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start the sweep thread");
        goto free_server;
    }
    srv->sweeper_started = 1;
    if ((st = reaper_start(srv, err)) != KILN_E_OK)
        goto free_server;
    if ((st = kiln_sessions_start(srv, err)) != KILN_E_OK)
        goto free_server;
    if ((st = mcp_http_start(srv, err)) != KILN_E_OK)
        goto free_server;
    if ((st = batches_start(srv, err)) != KILN_E_OK)
        goto free_server;

    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int v6 = getsockname(srv->listen_fd, (struct sockaddr *)&ss, &sl) == 0 &&
             ss.ss_family == AF_INET6;
    /* poll, not epoll: libmicrohttpd 0.9.75's epoll loop misses a client's
     * clean close (FIN) in the middle of a body, so the connection, its
     * upload's temporary file and its slot under --max-connections stayed
     * until the idle timeout (30 s); poll sees the end of the stream at
     * once. Each pool thread polls only its own connections. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
    srv->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
        MHD_OPTION_LISTEN_SOCKET, srv->listen_fd, MHD_OPTION_THREAD_POOL_SIZE, srv->opt.threads,
        MHD_OPTION_CONNECTION_TIMEOUT, srv->opt.connection_timeout, MHD_OPTION_CONNECTION_LIMIT,
        srv->opt.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        srv->opt.max_connections_per_ip, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)KILN_HTTP_CONNECTION_MEMORY, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
    if (!srv->daemon) {
        st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot start the HTTP daemon");
        goto free_server;
    }

    http_event(srv, "listening",
               json_pack("{s:s, s:i, s:s, s:i, s:i, s:i}", "address", srv->host, "port",
                         (int)srv->port, "data_dir", srv->opt.data_dir, "threads",
                         (int)srv->opt.threads, "max_jobs", (int)srv->opt.max_jobs, "queue",
                         (int)srv->opt.queue_max));
    atomic_store(&srv->listening, 1);
    kiln_sessions_wake(srv);
    /* What the store's start removed after a crash, said once. */
    kiln_store_recovery rec;
    kiln_store_last_recovery(srv->store, &rec);
    if (rec.orphan_bodies || rec.temporaries || rec.lost_rows)
        http_event(srv, "recovered",
                   json_pack("{s:I, s:I, s:I}", "orphan_bodies", (json_int_t)rec.orphan_bodies,
                             "temporaries", (json_int_t)rec.temporaries, "lost_rows",
                             (json_int_t)rec.lost_rows));
    *out = srv;
    return KILN_E_OK;

free_server:
    server_free(srv);
    return st;
}

unsigned kiln_server_port(const kiln_server *srv)
{
    return srv->port;
}

/* kiln_jobs_shutdown on a thread of its own, so the stop can give up
 * waiting for it after the grace. */
struct drain {
    kiln_jobs *jobs;
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    int done;
};

static void *drain_jobs(void *arg)
{
    struct drain *d = arg;
    kiln_jobs_shutdown(d->jobs, jobs_cancel);
    pthread_mutex_lock(&d->lock);
    d->done = 1;
    pthread_cond_signal(&d->done_cond);
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

void kiln_server_stop(kiln_server *srv)
{
    if (!srv)
        return;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += srv->opt.shutdown_grace;
    atomic_store(&srv->stopping, 1);
    http_event(srv, "stopping",
               json_pack("{s:i}", "grace_seconds", (int)srv->opt.shutdown_grace));

    /* No new connections; the ones open keep being served. */
    MHD_socket lfd = MHD_quiesce_daemon(srv->daemon);
    if (lfd != MHD_INVALID_SOCKET && lfd == srv->listen_fd) {
        close(lfd);
        srv->listen_fd = -1;
    }

    /* Queued jobs answer 503 at once; running ones get the grace. */
    struct drain d = {.done = 0};
    pthread_mutex_lock(&srv->jobs_lock);
    d.jobs = srv->jobs;
    srv->jobs = NULL;
    pthread_mutex_unlock(&srv->jobs_lock);
    if (d.jobs) {
        pthread_mutex_init(&d.lock, NULL);
        pthread_cond_init(&d.done_cond, NULL);
        pthread_t t;
        if (pthread_create(&t, NULL, drain_jobs, &d) == 0) {
            pthread_mutex_lock(&d.lock);
            while (!d.done &&
                   pthread_cond_timedwait(&d.done_cond, &d.lock, &deadline) != ETIMEDOUT)
                ;
            int finished = d.done;
            pthread_mutex_unlock(&d.lock);
            if (!finished) {
                atomic_store(&srv->kill_runs, 1);
                http_event(srv, "killing_runs", NULL);
                kiln_api_kill_runs();
            }
            pthread_join(t, NULL);
        } else {
            atomic_store(&srv->kill_runs, 1);
            kiln_api_kill_runs();
            kiln_jobs_shutdown(d.jobs, jobs_cancel);
        }
        pthread_mutex_destroy(&d.lock);
        pthread_cond_destroy(&d.done_cond);
    }

    /* Sessions end: their waiting requests are answered (503/410), their
     * streams closed, every child and the zygote killed; then the MCP
     * requests waiting on them end, and the workers are joined. */
    mcp_http_quiesce(srv);
    batches_stop(srv);
    kiln_sessions_stop(srv);
    mcp_http_stop(srv);

    /* Requests still in flight (a download, the replies just resumed)
     * finish until the deadline, and for a second at least. */
    struct timespec now, floor_until;
    clock_gettime(CLOCK_REALTIME, &floor_until);
    floor_until.tv_sec += 1;
    for (;;) {
        clock_gettime(CLOCK_REALTIME, &now);
        int past_deadline = now.tv_sec > deadline.tv_sec ||
                            (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec);
        int past_floor = now.tv_sec > floor_until.tv_sec;
        if (atomic_load(&srv->active_requests) == 0 || (past_deadline && past_floor))
            break;
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    http_event(srv, "stopped", NULL);
    server_free(srv);
}
