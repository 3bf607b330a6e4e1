/*
 * api.h - the pieces of `kiln serve` behind the HTTP layer (issue 7).
 *
 * service/server.c owns everything HTTP (libmicrohttpd, routing, bodies,
 * headers, the access log); the files below it never see a connection:
 *
 *   api.c      the JSON every endpoint shares: the error shape
 *              {error: {code, message, details}} and the file object.
 *   jobs.c     a bounded pool of worker threads with a bounded queue: every
 *              render and run goes through it, and a full queue is a 429.
 *   render_api.c  POST /v1/render: request JSON in, reply (status + JSON) out.
 *   runs_api.c    POST /v1/runs: the same, running `kiln run` as a child.
 *   metrics.c  counters and histograms, written in Prometheus text format.
 *
 * Ownership follows jansson's words: "new" references are the caller's to
 * json_decref, "stolen" ones are taken over, "borrowed" ones stay the
 * caller's.
 */
#ifndef KILN_SERVICE_API_H
#define KILN_SERVICE_API_H

#include <jansson.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "exec/run.h"
#include "service/store.h"

/* ---- the shared JSON (api.c) ---- */

/* {"error": {"code": code, "message": message, "details": details}}; details
 * is stolen and may be NULL (then {} is written). New reference. */
json_t *kiln_api_error(const char *code, const char *message, json_t *details);

/* The file object: {id, filename, bytes, sha256, media_type, created_at,
 * expires_at, source}, the times in RFC 3339 UTC ("2026-11-30T09:00:00Z"),
 * source "input", "output", "document" or null (store.h). New. */
json_t *kiln_api_file_json(const kiln_store_file *file);

/* RFC 3339 UTC of a Unix time into buf (at least 21 bytes). */
void kiln_api_time(int64_t t, char *buf, size_t cap);

/* 1 when s is a well-formed file id (KILN_STORE_ID_LEN lowercase hex). */
int kiln_api_valid_id(const char *s);

/* A reply from a handler that does not speak HTTP itself. */
typedef struct kiln_api_reply {
    int status;                 /* HTTP status */
    json_t *body;               /* new reference: the JSON body */
    char location[96];          /* "" or the Location header (/v1/files/ID) for a 201 */
    char log[KILN_MESSAGE_MAX]; /* "" or, for a 500, what went wrong: for the
                                   server's log, never sent to the client */
    int client_gone;            /* the client went away, so the job was stopped (or not
                                   begun): no body, nothing to send */
} kiln_api_reply;

/* Fill reply with an error (details stolen, may be NULL). */
void kiln_api_reply_error(kiln_api_reply *reply, int status, const char *code,
                          const char *message, json_t *details);

/* ---- the client of a job ----
 * A render or run is worked on while its client waits on a connection. The
 * connection's socket is only polled here, never read: the peer's end of
 * the stream (it closed, or shut its sending side: POLLRDHUP), a reset
 * (POLLHUP, POLLERR) mean nobody will read the reply, so a queued job is
 * not begun and a run is killed. */
#define KILN_API_CLIENT_GONE (POLLRDHUP | POLLHUP | POLLERR)
/* 1 when the client on socket fd is gone now (fd -1: no client to watch,
 * never gone). */
int kiln_api_client_gone(int fd);

/* ---- files in use (api.c) ----
 * A render or run holds its input files from the moment its request is
 * accepted until it ends; DELETE of such a file answers 409 (file_in_use)
 * rather than pull an input from under a queued job. Thread-safe. */
typedef struct kiln_inuse kiln_inuse;
kiln_status kiln_inuse_init(kiln_inuse **inuse, kiln_error *err);
void kiln_inuse_free(kiln_inuse *inuse);
/* Take (count > 0) each (tenant, id) once more; release gives them back. */
void kiln_inuse_take(kiln_inuse *inuse, const char *tenant, const char *const *ids, size_t n);
void kiln_inuse_release(kiln_inuse *inuse, const char *tenant, const char *const *ids, size_t n);
int kiln_inuse_busy(kiln_inuse *inuse, const char *tenant, const char *id);

/* ---- the job pool (jobs.c) ---- */
typedef struct kiln_jobs kiln_jobs;

/* workers threads, at most queue_max jobs waiting. *jobs is new. */
kiln_status kiln_jobs_init(kiln_jobs **jobs, unsigned workers, unsigned queue_max,
                           kiln_error *err);
/* Queue fn(arg) for a worker: 0, or -1 when the queue is full or the pool
 * is shutting down (the caller answers 429 / 503 and still owns arg). */
int kiln_jobs_submit(kiln_jobs *jobs, void (*fn)(void *arg), void *arg);
/* Take every waiting job whose gone(arg) is true out of the queue and run
 * dropped(arg) for it instead of its fn (outside the pool's lock; gone is
 * called under it, so it must not block). Returns how many. A job whose
 * requester left gives its place back at once, not when a worker meets it. */
unsigned kiln_jobs_drop_gone(kiln_jobs *jobs, int (*gone)(void *arg), void (*dropped)(void *arg));
/* Jobs running and waiting now (for /metrics and Retry-After). */
void kiln_jobs_counts(kiln_jobs *jobs, unsigned *running, unsigned *queued);
/* Stop taking jobs; jobs still queued run `cancel(arg)` instead of fn (the
 * caller answers 503 from it); wait for running ones. Then free. */
void kiln_jobs_shutdown(kiln_jobs *jobs, void (*cancel)(void *arg));

/* ---- what render and run need (render_api.c, runs_api.c) ---- */
typedef struct kiln_api_ctx {
    kiln_store *store;
    kiln_inuse *inuse;
    const char *work_dir;    /* scratch (DATA_DIR/work), server-owned, emptied at start */
    const char *kiln_exe;    /* the kiln executable, for `kiln run` children */
    uint64_t max_file_bytes; /* the output ceiling (30 MiB) */
    kiln_run_limits run_max; /* the most a run may ask for; also its defaults */
    atomic_int *stopping;    /* set on SIGTERM: runs in flight are killed after the grace */
} kiln_api_ctx;

/*
 * POST /v1/render. request (borrowed) is the parsed body:
 *   {"format": "xlsx"|"docx"|"pptx"|"pdf", "spec": {...},
 *    "inputs": ["<file id>", ...], "filename": "report.xlsx"}
 * format may be left out when filename ends in a known extension; filename
 * defaults to "document.<ext>". The spec names an input by its id as a
 * path ({"path": "<id>"}): the inputs are linked under their ids into a
 * private directory the spec is parsed against, so no client-supplied
 * name reaches the file system. Replies 201 + file object (+ "warnings"),
 * 422 invalid_spec with details {"errors": [{pointer, code, message}],
 * "dropped": n}, 404 for an unknown input id, 410 for an expired one,
 * 413 when the document passes the ceiling, 400 for a malformed request.
 */
void kiln_api_render(const kiln_api_ctx *ctx, const char *tenant, const json_t *request,
                     kiln_api_reply *reply);

/*
 * POST /v1/runs. request (borrowed); client_fd (or -1) the client's socket,
 * watched while the run goes: when the client goes away the run's process
 * group is killed and the reply says client_gone, nothing stored. The
 * request:
 *   {"code": "...", "language": "python"|"bash", "inputs": ["<file id>"],
 *    "args": ["..."], "render": true, "limits": {"wall_seconds": 10, ...}}
 * Runs `kiln run` as a child. Inputs appear in /mnt/data under their
 * stored filenames (the runner checks them as it does -i NAME). Replies 200
 * with the runner's result, "out_dir" removed and every entry of "files"
 * and "documents" given a "file": the file object of the file stored for
 * it (source output or document), or, for an input the run left unchanged
 * (same name, same SHA-256), the input's own, not stored again; 422 for a
 * limit above run_max (pointer /limits/NAME) or a malformed field; 503
 * (sandbox_unavailable) when the sandbox cannot be set up (not root).
 */
void kiln_api_run(const kiln_api_ctx *ctx, const char *tenant, const json_t *request,
                  int client_fd, kiln_api_reply *reply);

/* Kill every `kiln run` child still running (shutdown after the grace). */
void kiln_api_kill_runs(void);

/* ---- metrics (metrics.c) ---- */
typedef struct kiln_metrics kiln_metrics;
kiln_status kiln_metrics_init(kiln_metrics **m, kiln_error *err);
void kiln_metrics_free(kiln_metrics *m);
/* One request done: route is a template ("/v1/files/{id}/content"). */
void kiln_metrics_request(kiln_metrics *m, const char *method, const char *route, int status,
                          double seconds, uint64_t bytes_out);
/* One run done, by the result's status ("ok", "timeout", ...). */
void kiln_metrics_run(kiln_metrics *m, const char *outcome);
/* One render done: format and its result ("ok", "error", "client_abort"). */
void kiln_metrics_render(kiln_metrics *m, const char *format, const char *result);
/* One session cell done: its status ("ok", "timeout", ...) and the time
 * from its request to its record (files stored). */
void kiln_metrics_cell(kiln_metrics *m, const char *outcome, double seconds);
/* One message to /mcp: its JSON-RPC method (a bounded label: the known
 * ones, "other") and what came of it ("ok", "error", "notification",
 * "cancelled", or the transport's refusal: "header_mismatch", ...). */
void kiln_metrics_mcp(kiln_metrics *m, const char *method, const char *outcome);
/* One job of a batch finished: "ok" or "failed". */
void kiln_metrics_batch_job(kiln_metrics *m, const char *outcome);
/* One batch ended: its status ("completed", "failed", "cancelled"). */
void kiln_metrics_batch(kiln_metrics *m, const char *status);
/* The batch gauges, set before each exposition: batches queued and
 * running, and the jobs of those not finished yet. */
void kiln_metrics_batch_gauges(kiln_metrics *m, unsigned queued, unsigned running,
                               uint64_t jobs_left);
/* The exposition text (new, malloc'd, NUL-terminated): the counters and
 * histograms above plus the gauges passed in. */
char *kiln_metrics_text(kiln_metrics *m, uint64_t bytes_stored, unsigned jobs_running,
                        unsigned jobs_queued, unsigned sessions_open, unsigned sessions_pool,
                        unsigned mcp_sessions, size_t *len);

#endif
