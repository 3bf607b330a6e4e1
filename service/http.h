/*
 * http.h - what the HTTP layer's files share (not a public header).
 *
 *   server.c       the daemon, routing, auth, the access log, the sweep
 *                  thread, start and graceful stop.
 *   http_util.c    replies (JSON, errors, the common headers), HTTP dates,
 *                  media types, body buffers.
 *   files_api.c    POST/GET /v1/files, GET/DELETE /v1/files/{id}, links.
 *   download.c     GET/HEAD /v1/files/{id}/content.
 *   job_requests.c POST /v1/render and /v1/runs through the job pool.
 *   sessions.c     /v1/sessions: `kiln session` children, their zygote and pool.
 *   batches.c      /v1/batches: `kiln batch` children, their journals into the store.
 *   mcp_http.c     /mcp: the MCP server (mcp/) over Streamable HTTP; its
 *                  tools act through mcp_backend.c (mcp_api.h).
 *
 * A request's life: server.c makes a kiln_req on the access handler's
 * first call (route, auth, early refusals), the route's body callback eats
 * the upload as it arrives, and its finish callback queues the reply on
 * the last call. Every reply goes through http_queue so the status and
 * byte count reach the access log and the metrics.
 */
#ifndef KILN_SERVICE_HTTP_H
#define KILN_SERVICE_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "service/api.h"
#include "service/auth.h"
#include "service/server.h"
#include "service/store.h"

/* Room for the multipart framing around a file of the largest size. */
#define KILN_HTTP_MULTIPART_OVERHEAD (64u * 1024)
/* Bytes of a request body discarded after it passed its limit, so the 413
 * can still be sent; past this the connection is closed instead. */
#define KILN_HTTP_DISCARD_MAX (64ull << 20)
/* The post processor's buffer (multipart headers of one part must fit). */
#define KILN_HTTP_POST_BUFFER 65536
/* Per-connection memory libmicrohttpd reads a request's headers into. */
#define KILN_HTTP_CONNECTION_MEMORY (128u * 1024)

struct kiln_server {
    kiln_server_options opt;
    struct MHD_Daemon *daemon;
    int listen_fd;
    unsigned port;
    char host[256];
    kiln_store *store;
    kiln_auth *auth;
    unsigned char link_secret[KILN_AUTH_SECRET_BYTES];
    kiln_metrics *metrics;
    kiln_inuse *inuse;
    kiln_api_ctx api;
    char work_dir[4096];
    /* Read by the HTTP and job threads while the stop sets them: C11
     * atomics, so every thread sees the store (volatile promised none). */
    atomic_int stopping;        /* healthz 503; new jobs 503 */
    atomic_int listening;       /* the "listening" event is out: the log's first line, so
                                   the sessions' zygote (an event of its own) waits for it */
    atomic_int kill_runs;       /* kiln_api_ctx.stopping: the grace is over */
    atomic_int active_requests; /* made, not yet completed: the stop waits for them */
    /* The open connections and the thread that ends those past
     * --header-timeout / --request-timeout (server.c). */
    struct kiln_reaper *reaper;

    struct kiln_sessions *sessions; /* sessions.c; NULL when they are off */
    struct kiln_mcp_http *mcp;      /* mcp_http.c; NULL when /mcp is off */
    struct kiln_batches *batches;   /* batches.c */

    pthread_mutex_t jobs_lock; /* guards jobs: NULL once shutdown began */
    kiln_jobs *jobs;

    pthread_t sweeper;
    int sweeper_started;
    pthread_mutex_t sweep_lock;
    pthread_cond_t sweep_wake;
    int sweep_quit;
};

typedef enum {
    ROUTE_OTHER,
    ROUTE_FILES,             /* /v1/files */
    ROUTE_FILE,              /* /v1/files/{id} */
    ROUTE_CONTENT,           /* /v1/files/{id}/content */
    ROUTE_LINK,              /* /v1/files/{id}/link */
    ROUTE_RENDER,            /* /v1/render */
    ROUTE_RUNS,              /* /v1/runs */
    ROUTE_SESSIONS,          /* /v1/sessions */
    ROUTE_SESSION,           /* /v1/sessions/{id} */
    ROUTE_SESSION_CELLS,     /* /v1/sessions/{id}/cells */
    ROUTE_SESSION_INTERRUPT, /* /v1/sessions/{id}/interrupt */
    ROUTE_SESSION_FILES,     /* /v1/sessions/{id}/files */
    ROUTE_BATCHES,           /* /v1/batches */
    ROUTE_BATCH,             /* /v1/batches/{id} */
    ROUTE_BATCH_RESULTS,     /* /v1/batches/{id}/results */
    ROUTE_BATCH_CANCEL,      /* /v1/batches/{id}/cancel */
    ROUTE_HEALTHZ,
    ROUTE_METRICS,
    ROUTE_MCP, /* /mcp */
} kiln_route;

/* What the request is doing with its body. */
typedef enum {
    BODY_IGNORE,   /* consumed and dropped (GET with a body, ...) */
    BODY_BUFFER,   /* JSON: kept in buf up to limit */
    BODY_UPLOAD,   /* raw upload into the store */
    BODY_MULTIPART /* multipart upload through the post processor */
} kiln_body_mode;

typedef enum { JOB_NONE, JOB_WAITING, JOB_DONE } kiln_job_state;

typedef struct kiln_req {
    kiln_server *srv;
    struct MHD_Connection *conn;
    char request_id[33];
    char method[16];
    char path[512]; /* the URL path, query dropped, cut if longer */
    kiln_route route;
    char id[KILN_STORE_ID_LEN + 1];
    char tenant[KILN_AUTH_TENANT_MAX + 1]; /* "" until authenticated */
    struct timespec start;

    int begun;  /* begin() ran */
    int queued; /* a response has been queued */
    int status;
    uint64_t bytes_out;

    /* the body */
    kiln_body_mode body;
    uint64_t limit; /* the body's limit (413 past it) */
    uint64_t received;
    int too_large; /* passed the limit: discarding until the end */
    char *buf;     /* BODY_BUFFER */
    size_t len, cap;
    kiln_store_upload *upload; /* BODY_UPLOAD / MULTIPART, until committed */
    struct MHD_PostProcessor *pp;
    int part_seen;       /* the multipart "file" part began */
    uint64_t part_bytes; /* ... and its bytes so far */
    int bad_request;     /* a malformed multipart body or part (400) */
    char bad_message[KILN_MESSAGE_MAX];
    int part_skip;     /* a later "file" part: ignored */
    int upload_failed; /* a store error during the upload (500) */
    kiln_error upload_err;
    char filename[KILN_STORE_FILENAME_MAX + 1];
    char media_type[128];

    /* a render or run in the job pool */
    kiln_job_state job;
    kiln_api_reply reply;
    unsigned retry_after; /* seconds, for a 429 */
    int client_gone;      /* the client left while its job waited or ran: no reply,
                             logged as termination client_abort */

    /* /mcp */
    struct http_call *mcp; /* the message being served (mcp_http.c) */
    char mcp_method[48];   /* its JSON-RPC method, for the access log ("" none) */
} kiln_req;

/* ---- http_util.c ---- */

/* Queue a response: adds X-Request-Id, records status and bytes. The
 * response is destroyed here. MHD_YES / MHD_NO. */
enum MHD_Result http_queue(kiln_req *req, int status, struct MHD_Response *resp,
                           uint64_t body_bytes);
/* A JSON reply (body stolen); Content-Type: application/json. */
enum MHD_Result http_json(kiln_req *req, int status, json_t *body);
/* The error shape (details stolen, may be NULL). */
enum MHD_Result http_error(kiln_req *req, int status, const char *code, const char *message,
                           json_t *details);
/* 500 with a generic message; the detail goes to the log. */
enum MHD_Result http_internal(kiln_req *req, const char *detail);
/* 404 not_found, identical for every cause. */
enum MHD_Result http_not_found(kiln_req *req);
/* 410 for an expired file. */
enum MHD_Result http_gone(kiln_req *req, const kiln_store_file *file);
/* The reply to a store lookup that did not find a live file: 404 for
 * NOT_FOUND, 410 for GONE (file says when), else 500 with err's message. */
enum MHD_Result http_store_failure(kiln_req *req, kiln_store_result r,
                                   const kiln_store_file *file, const kiln_error *err);
/* The HTTP status of a contract error code (common/error.h's names, and
 * the service's own): the one table where a session's codes meet HTTP.
 * session_busy 409, session_gone 410, a usage, invalid or limit error 422,
 * unreadable_input 422, too_large 413, anything else 500. */
int http_contract_status(const char *code);
/* 413 with details.limit. */
enum MHD_Result http_too_large(kiln_req *req, uint64_t limit);
/* A JSON reply with a Location header (201s). */
enum MHD_Result http_json_location(kiln_req *req, int status, json_t *body, const char *location);

/* Log one event line: fields (stolen) gain "time" and "event". */
void http_event(kiln_server *srv, const char *event, json_t *fields);

/* IMF-fixdate of t into buf: 0, or -1 with buf "" when t is outside the
 * years 0..9999 (gmtime_r fails or the year has more than four digits) or
 * cap is under 30. */
int http_date(int64_t t, char *buf, size_t cap);
/* Parse an HTTP date (RFC 9110 5.6.7): IMF-fixdate, and the obsolete RFC 850
 * and asctime forms recipients must accept. Case-sensitive, fixed width, the
 * weekday must be the date's, every field in range (no 31 Jun, no leap
 * second :60), years 1970..9999. 0 and *t, or -1 (*t untouched). */
int http_parse_date(const char *s, int64_t *t);
/* Append data to req->buf (limit req->limit): 0, or -1 past it / no memory
 * (req->too_large set for the limit). */
int http_buffer_append(kiln_req *req, const char *data, size_t len);
/* A request header, or NULL. */
const char *http_header(kiln_req *req, const char *name);
/* A query argument, or NULL. */
const char *http_arg(kiln_req *req, const char *name);
/* The buffered body as JSON (a new reference in *out), or a reply queued
 * (400 invalid_json with line and column; 400 invalid_request when not an
 * object) and -1 with *r the handler's return. An empty body is {} when
 * empty_ok. */
int http_body_json(kiln_req *req, int empty_ok, json_t **out, enum MHD_Result *r);
/* http_body_json without the reply: 0 and an object in *out (a new
 * reference), HTTP_BODY_INVALID_JSON (*err says where),
 * HTTP_BODY_NOT_OBJECT, or HTTP_BODY_OVER_BUDGET (the JSON needs more
 * memory than its size allows, json_budget.h: a 413), *out NULL. */
enum { HTTP_BODY_INVALID_JSON = -1, HTTP_BODY_NOT_OBJECT = -2, HTTP_BODY_OVER_BUDGET = -3 };
int http_body_parse(const char *buf, size_t len, int empty_ok, json_t **out, json_error_t *err);
/* 1 when the request's Content-Type is type (parameters ignored). */
int http_content_type_is(kiln_req *req, const char *type);
/* The same on a header value (ct may be NULL: 0). */
int http_content_type_matches(const char *ct, const char *type);
/* Content-Length of the request: 1 and *len when present and valid. */
int http_content_length(kiln_req *req, uint64_t *len);
/* The same on a header value (cl may be NULL: 0). */
int http_parse_content_length(const char *cl, uint64_t *len);

/*
 * The parsers of request input below are pure (no connection, no store):
 * the routes call them, and so do tests/unit/test_http_parse.c and
 * fuzz/fuzz_http.c directly.
 */

/* ---- server.c: routing ---- */
/* The route of a URL path; the id segment (whatever it holds, "" when it
 * does not fit cap) into id_seg. */
kiln_route http_route_of(const char *url, char *id_seg, size_t cap);
/* The methods a route answers, for 405's Allow ("" for ROUTE_OTHER). */
const char *http_route_allow(kiln_route r);
/* 1 when method (exact, case-sensitive) is in the route's Allow list. */
int http_method_allowed(kiln_route r, const char *method);

/* ---- files_api.c: upload names and types, query integers ---- */
/* A media type given by the client into req->media_type, unless it says
 * nothing (application/octet-stream, the form default): then by the
 * extension of req->filename. */
void http_pick_media_type(kiln_req *req, const char *given);
/* An RFC 8187 attr-char (what filename* leaves unencoded). */
int http_is_attr_char(unsigned char c);
/* Percent-decode n bytes of src into dst (cap bytes, NUL-terminated);
 * -1 when a %XX is malformed, decodes to NUL, or dst is too small. */
int http_pct_decode(const char *src, size_t n, char *dst, size_t cap);
/* The file name of a Content-Disposition value (RFC 6266): filename*
 * (RFC 8187, UTF-8 only) when present, else filename. 0, or -1 when the
 * header is malformed, names no file, or the name does not fit cap. */
int http_disposition_filename(const char *h, char *out, size_t cap);
/* A non-negative decimal query value s (NULL: absent): 1 and *out when it
 * is all digits and <= max, 0 when absent, -1 otherwise. */
int http_query_int(const char *s, int64_t max, int64_t *out);
/* (files_api.c) A list route's ?limit= (1 to 1000, default 100) and ?offset= (0 or more,
 * default 0) into *limit and *offset: 0, or -1 with the 400 naming the
 * parameter queued in *reply. */
int http_list_page(kiln_req *req, int64_t *limit, int64_t *offset, enum MHD_Result *reply);

/* ---- download.c: the response's headers and the conditional ones ---- */
/* The worst case of http_disposition, for a KILN_STORE_FILENAME_MAX-byte
 * name: the prefix, one fallback character per byte, the closing quote, the
 * filename* prefix, %XX for every byte, and the NUL (1063 bytes today). */
#define KILN_HTTP_DISPOSITION_MAX                                         \
    (sizeof "attachment; filename=\"" - 1 + KILN_STORE_FILENAME_MAX + 1 + \
     sizeof "; filename*=UTF-8''" - 1 + 3 * KILN_STORE_FILENAME_MAX + 1)
/* attachment; filename="ascii"[; filename*=UTF-8''pct] for a stored name.
 * 0, or -1 with out "attachment" (when it fits) for a name longer than
 * KILN_STORE_FILENAME_MAX or a cap under what the name needs: never a
 * header cut short, which would name another file. */
int http_disposition(const char *name, char *out, size_t cap);
/* If-None-Match against our ETag ("sha"): 1 on a (weak) match or "*". */
int http_none_match(const char *header, const char *sha);
/* If-Range: 1 for our strong ETag exactly, or an HTTP date equal to
 * created_at (our Last-Modified). */
int http_if_range_holds(const char *header, const kiln_store_file *file);
typedef enum {
    HTTP_RANGE_NONE, /* no range we read: the whole file, 200 */
    HTTP_RANGE_ONE,  /* one satisfiable range: 206 */
    HTTP_RANGE_BAD   /* a range past the end: 416 */
} http_range_kind;
/* A Range header against a file of size bytes. Only a single bytes range
 * is served; several ranges, another unit or an invalid range-spec are
 * NONE (RFC 9110 14.2 lets a server ignore Range). ONE sets *first and
 * *last (first <= last < size); otherwise they are untouched. */
http_range_kind http_parse_range(const char *h, uint64_t size, uint64_t *first, uint64_t *last);

/* ---- files_api.c ---- */
/* First call: set up the body handling (or reply at once: 400, 413). */
enum MHD_Result files_upload_begin(kiln_req *req);
/* Body data for BODY_UPLOAD / BODY_MULTIPART. MHD_NO closes the connection. */
enum MHD_Result files_upload_data(kiln_req *req, const char *data, size_t size);
enum MHD_Result files_upload_finish(kiln_req *req);
enum MHD_Result files_list(kiln_req *req);
enum MHD_Result files_get(kiln_req *req);
enum MHD_Result files_delete(kiln_req *req);
enum MHD_Result files_link(kiln_req *req);
/* Drop an upload a connection left unfinished. */
void files_upload_cleanup(kiln_req *req);

/* ---- download.c ---- */
enum MHD_Result download_content(kiln_req *req);

/* ---- job_requests.c ---- */
/* Last call of POST /v1/render or /v1/runs: parse, submit, suspend; on the
 * call after the worker resumed the connection, queue its reply. */
enum MHD_Result jobs_request(kiln_req *req);
/* Answer, without running them, the queued renders and runs whose clients
 * have left (the reaper calls it as it goes round). */
void jobs_drop_gone(kiln_server *srv);
/* kiln_jobs_shutdown's cancel: queued jobs answer 503. */
void jobs_cancel(void *arg);

/* ---- sessions.c ---- */
/* Every /v1/sessions route, on its last call; a request that waits on a
 * session is suspended and, once answered, queued from req->reply. */
enum MHD_Result sessions_request(kiln_req *req);

/* ---- batches.c ---- */
/* Start the batch manager: batches a previous server left queued or
 * running are taken up again (their children resume from the journal). */
kiln_status batches_start(kiln_server *srv, kiln_error *err);
/* Stop the children (they resume at the next start), join the manager. */
void batches_stop(kiln_server *srv);
void batches_free(kiln_server *srv);
/* Every /v1/batches route, on its last call. */
enum MHD_Result batches_request(kiln_req *req);
/* Batches queued and running, and their jobs not yet finished (/metrics). */
void batches_counts(kiln_server *srv, unsigned *queued, unsigned *running, uint64_t *jobs_left);

/* ---- mcp_http.c ---- */
/* Start /mcp (nothing when it is off): the MCP server, its workers and the
 * watcher of their clients. A --mcp-allow-read that is no directory fails
 * (KILN_E_USAGE, pointer "/mcp-allow-read"). */
kiln_status mcp_http_start(kiln_server *srv, kiln_error *err);
/* The stop begins: new messages answer 503. */
void mcp_http_quiesce(kiln_server *srv);
/* After kiln_sessions_stop: queued requests answered, the workers and the
 * watcher joined. */
void mcp_http_stop(kiln_server *srv);
/* After the daemon stopped: every MCP session and connection freed. */
void mcp_http_free(kiln_server *srv);
/* The first call of a request to /mcp (authed: its bearer key is valid):
 * Origin, key, method, media types, the body's limit. */
enum MHD_Result mcp_http_begin(kiln_req *req, int authed);
/* Its last call, and the calls after a worker resumed it. */
enum MHD_Result mcp_http_request(kiln_req *req);
/* on_completed: the request lets go of its message. */
void mcp_http_completed(kiln_req *req);
/* MCP sessions open, for /metrics. */
void mcp_http_counts(kiln_server *srv, unsigned *sessions);

#endif
