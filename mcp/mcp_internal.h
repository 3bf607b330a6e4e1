/*
 * mcp_internal.h - what the files of mcp/ share. By layer, bottom first:
 *
 *   protocol.c   JSON-RPC shapes, the revisions, the error replies
 *   allow_read.c load_file's reads, only below the operator's directories
 *   call.c       a connection's state and what a request's handler asks of
 *                it: its session, cancellation, progress, log messages
 *   tools.c      tools/list and tools/call (the four tools)
 *   resources.c  resources/list, resources/templates/list, resources/read
 *   server.c     the server, the lifecycle and the dispatch of each message
 *   local.c      the backend of `kiln mcp`: `kiln session` children and a
 *                directory of files (mcp/local.h)
 */
#ifndef KILN_MCP_INTERNAL_H
#define KILN_MCP_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "mcp/mcp.h"

/* ---- protocol.c ---- */

/* {"jsonrpc": "2.0", "id": id, "result": result (stolen)}. New. */
json_t *mcp_result_reply(const json_t *id, json_t *result);
/* A notification {"jsonrpc", "method", "params": params (stolen)}. New. */
json_t *mcp_notification(const char *method, json_t *params);
/* 1 when version is one of the legacy revisions served on `initialize`. */
int mcp_legacy_supported(const char *version);

/* The syslog levels of notifications/message, 0 (debug) to 7 (emergency);
 * -1 for a name that is none of them. */
int mcp_log_level(const char *name);
const char *mcp_log_level_name(int level);

/* ---- allow_read.c ---- */

typedef struct mcp_allow {
    char *path; /* the directory, resolved (realpath) */
    int fd;     /* an O_PATH descriptor of it */
} mcp_allow;

/* Resolve and open each directory; KILN_E_USAGE naming one that is not. */
kiln_status mcp_allow_open(const char *const *dirs, size_t n, mcp_allow **out, kiln_error *err);
void mcp_allow_close(mcp_allow *a, size_t n);
/* Read the regular file at path (absolute, or relative to the first
 * directory) when it lies below one of the directories, resolving every
 * component beneath it (openat2 RESOLVE_BENEATH: no "..", no absolute link,
 * no link out of it). At most max bytes. *data is malloc'd. */
kiln_status mcp_allow_read(const mcp_allow *a, size_t n, const char *path, uint64_t max,
                           void **data, size_t *len, kiln_error *err);

/* ---- call.c: the server, a connection, and what a method handler sees
 * of its request ---- */

struct kiln_mcp_server {
    kiln_mcp_backend backend;
    json_t *tools; /* docs/tools/mcp.json's "tools" */
    mcp_allow *allow;
    size_t n_allow;
    char *instructions;
};

/* A request being worked on, for cancellation. */
typedef struct mcp_inflight {
    struct mcp_inflight *next;
    json_t *id;
    char session_id[KILN_MCP_ID_MAX]; /* the session whose cell it runs, or "" */
    int cancelled;
} mcp_inflight;

/* Ids cancelled before their request was seen (the race the spec asks
 * servers to tolerate), the last few kept. */
#define MCP_EARLY_CANCELS 32
/* Sessions one connection keeps to close when it ends (its own, and
 * the ones that replaced it when it ended). */
#define MCP_CONN_SESSIONS_MAX 64

struct kiln_mcp_conn {
    kiln_mcp_server *srv;
    char tenant[128];
    pthread_mutex_t lock;             /* everything below */
    pthread_mutex_t open_lock;        /* held while the connection's own session opens */
    char version[16];                 /* the negotiated legacy revision, "" before initialize */
    int initialized;                  /* notifications/initialized came */
    int log_level;                    /* logging/setLevel's, 8 (none) until then */
    char session_id[KILN_MCP_ID_MAX]; /* the connection's own session, or "" */
    char *opened[MCP_CONN_SESSIONS_MAX];
    size_t n_opened;
    mcp_inflight *inflight;
    json_t *early_cancels; /* array of ids */
};

/* Register and unregister a request (NULL when out of memory, or when it
 * was cancelled before it came: then it is not answered). */
mcp_inflight *mcp_inflight_begin(kiln_mcp_conn *c, const json_t *id);
void mcp_inflight_end(kiln_mcp_conn *c, mcp_inflight *f);

typedef struct mcp_call {
    kiln_mcp_conn *conn;
    const kiln_mcp_backend *backend;
    const char *tenant;
    const json_t *id;             /* the request's id (borrowed) */
    const json_t *params;         /* its params, an object (borrowed) */
    const json_t *progress_token; /* params._meta.progressToken, or NULL */
    int modern;                   /* served under 2026-07-28 */
    int log_level;                /* the least level sent as notifications/message; 8: none */
    json_int_t progress;          /* the last progress sent */
    kiln_mcp_send_fn send;
    void *send_arg;
    mcp_inflight *inflight;
    char cell_session[KILN_MCP_ID_MAX]; /* the session its cell was sent to, or "" */
} mcp_call;

/* The outcome of a handler: a result, or a JSON-RPC error. */
typedef struct mcp_outcome {
    json_t *result; /* new; NULL for an error */
    int code;       /* the JSON-RPC error code when result is NULL */
    char message[KILN_MESSAGE_MAX];
    json_t *data; /* new or NULL: the error's data */
} mcp_outcome;

void mcp_outcome_error(mcp_outcome *o, int code, json_t *data, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The session a tool acts on: requested (a session_id argument, or NULL)
 * as it is; else the connection's own (legacy), opened on first use, or a
 * new one (modern: the result returns its id). *fresh is 1 when it was
 * opened now. */
kiln_status mcp_call_session(mcp_call *call, const char *requested, char *sid, int *fresh,
                             kiln_error *err);
/* The connection's own session has ended: the next call opens another. */
void mcp_call_session_gone(mcp_call *call, const char *sid);
/* The request's cell is running in sid ("": no longer): a cancellation
 * interrupts it. Returns 1 when the request was cancelled before (the
 * caller interrupts the cell itself: exactly one of the two does). */
int mcp_call_running(mcp_call *call, const char *sid);
/* 1 once the request has been cancelled (its reply is not sent). */
int mcp_call_cancelled(mcp_call *call);
/* notifications/progress, when the request asked for it. */
void mcp_call_progress(mcp_call *call, const char *message);
/* notifications/message at level, when the request's level lets it
 * through. data is stolen. */
void mcp_call_log(mcp_call *call, int level, json_t *data);

/* ---- the methods (tools.c, resources.c) ---- */
void mcp_tools_list(mcp_call *call, mcp_outcome *o);
void mcp_tools_call(mcp_call *call, mcp_outcome *o);
void mcp_resources_list(mcp_call *call, mcp_outcome *o);
void mcp_resources_templates(mcp_call *call, mcp_outcome *o);
void mcp_resources_read(mcp_call *call, mcp_outcome *o);

#endif
