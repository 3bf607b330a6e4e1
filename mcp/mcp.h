/*
 * mcp.h - Kiln's Model Context Protocol server (docs/mcp.md).
 *
 * JSON-RPC 2.0 messages come in, one at a time, through kiln_mcp_handle();
 * replies and the notifications that belong to a request go out through the
 * send callback of that call. What carries them is the front end's:
 * `kiln mcp` reads and writes lines on stdio (cli/mcp.c), `kiln serve`
 * answers POSTs on /mcp (service/mcp_http.c). This layer knows neither.
 *
 * It is a "dual-era" server (the 2026-07-28 revision's word): a client that
 * opens with `initialize` gets the 2025-06-18 or 2025-11-25 lifecycle on
 * its connection; a request whose _meta names a protocol version is served
 * on its own, statelessly, as the 2026-07-28 revision has it.
 *
 * The tools (docs/tools/mcp.json, built into the binary) run code in Kiln
 * sessions, render document specs and move files through a backend the
 * front end supplies: the sessions, the files and the renders are its own
 * (local `kiln session` children and a directory, mcp/local.c; the
 * service's sessions and store, service/mcp_backend.c).
 *
 * Ownership follows jansson's words: "new" references are the caller's to
 * json_decref, "borrowed" ones stay the owner's.
 */
#ifndef KILN_MCP_H
#define KILN_MCP_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

/* The revisions this server speaks, newest first (kiln_mcp_versions). */
#define KILN_MCP_MODERN_VERSION "2026-07-28"
#define KILN_MCP_LEGACY_LATEST "2025-11-25"

/* The JSON-RPC error codes this server answers with. */
#define KILN_MCP_PARSE_ERROR (-32700)
#define KILN_MCP_INVALID_REQUEST (-32600)
#define KILN_MCP_METHOD_NOT_FOUND (-32601)
#define KILN_MCP_INVALID_PARAMS (-32602)
#define KILN_MCP_INTERNAL_ERROR (-32603)
#define KILN_MCP_RESOURCE_NOT_FOUND_LEGACY (-32002)
#define KILN_MCP_HEADER_MISMATCH (-32020)
#define KILN_MCP_UNSUPPORTED_VERSION (-32022)

/* The longest id a backend gives a session or a file. */
#define KILN_MCP_ID_MAX 80

/* An event of a running cell (stdout, stderr, display, result, error:
 * docs/session.md "Events"), borrowed. */
typedef void (*kiln_mcp_event_fn)(void *arg, const json_t *event);

/*
 * What the tools act on. Every call names the tenant it acts for (the
 * connection's, kiln_mcp_conn_new); a backend never lets one tenant reach
 * another's session or file, and says so with KILN_E_GONE ("no such
 * session") or KILN_E_INPUT ("no such file") exactly as for an id that never
 * was. Every call may run on any thread, several at once.
 *
 * A file object is {"id", "filename", "media_type", "bytes", "sha256"} and
 * may have more members (the service's "created_at", "expires_at"; the
 * local backend's "path").
 */
typedef struct kiln_mcp_backend {
    void *ctx;
    /* A new session; its id (at most KILN_MCP_ID_MAX - 1 bytes) into id. */
    kiln_status (*session_open)(void *ctx, const char *tenant, char *id, kiln_error *err);
    /* Run a cell and wait for its end. request: {"code", "language",
     * "timeout"} (borrowed). The cell's events go to on_event as they come
     * (on any thread, never after this call has returned);
     * *record is its cell record (docs/session.md) with every entry of
     * "files" and "documents" that is a file given a "file": the file
     * object it was kept as. New. */
    kiln_status (*session_execute)(void *ctx, const char *tenant, const char *session_id,
                                   const json_t *request, kiln_mcp_event_fn on_event, void *arg,
                                   json_t **record, kiln_error *err);
    /* Interrupt the session's running cell (nothing when none runs). */
    kiln_status (*session_interrupt)(void *ctx, const char *tenant, const char *session_id,
                                     kiln_error *err);
    /* The files of the session's /mnt/data: [{"name", "bytes",
     * "media_type", "sha256"}]. New. */
    kiln_status (*session_files)(void *ctx, const char *tenant, const char *session_id,
                                 json_t **files, kiln_error *err);
    /* Put len bytes into /mnt/data as name; *file: {"name", "bytes",
     * "sha256", ...}, new. */
    kiln_status (*session_put)(void *ctx, const char *tenant, const char *session_id,
                               const char *name, const void *data, size_t len, json_t **file,
                               kiln_error *err);
    /* End the session (nothing when it has ended). */
    void (*session_close)(void *ctx, const char *tenant, const char *session_id);
    /* Render: request {"format", "spec", "filename"} (borrowed). On
     * success *file is the file object of the document, *warnings its
     * warnings (both new). A spec that is not valid: KILN_E_INVALID_SPEC
     * with *errors {"errors": [{"pointer", "code", "message"}], "dropped"}
     * (new). */
    kiln_status (*render)(void *ctx, const char *tenant, const json_t *request, json_t **file,
                          json_t **warnings, json_t **errors, kiln_error *err);
    /* The tenant's files, newest first: [file object]. New. */
    kiln_status (*file_list)(void *ctx, const char *tenant, json_t **files, kiln_error *err);
    /* A file's object and bytes (*data malloc'd, the caller frees). */
    kiln_status (*file_read)(void *ctx, const char *tenant, const char *id, json_t **file,
                             void **data, size_t *len, kiln_error *err);
} kiln_mcp_backend;

typedef struct kiln_mcp_options {
    const kiln_mcp_backend *backend; /* borrowed; outlives the server */
    /* load_file reads only below these directories (--allow-read). */
    const char *const *allow_read;
    size_t n_allow_read;
    const char *instructions; /* NULL: Kiln's own */
} kiln_mcp_options;

typedef struct kiln_mcp_server kiln_mcp_server;
typedef struct kiln_mcp_conn kiln_mcp_conn;

/* A server. Fails (KILN_E_USAGE) for an --allow-read directory that is
 * not one. *out is new: kiln_mcp_server_free. */
kiln_status kiln_mcp_server_new(const kiln_mcp_options *opt, kiln_mcp_server **out,
                                kiln_error *err);
/* After every connection is freed. */
void kiln_mcp_server_free(kiln_mcp_server *srv);

/* A connection: one stdio process, one Mcp-Session-Id, or one tenant's
 * stateless requests. tenant is copied. NULL when out of memory. */
kiln_mcp_conn *kiln_mcp_conn_new(kiln_mcp_server *srv, const char *tenant);
/* Closes the sessions the connection opened; no call may be running. */
void kiln_mcp_conn_free(kiln_mcp_conn *c);

/* Where a message goes out (borrowed): called once per message, while the
 * kiln_mcp_handle call it belongs to runs, on its thread or (a progress
 * notification) on the thread the backend delivers a cell's events on; so
 * it must be safe to call from two threads at once. */
typedef void (*kiln_mcp_send_fn)(void *arg, const json_t *message);

typedef enum kiln_mcp_kind {
    KILN_MCP_REQUEST,      /* method and id: answered */
    KILN_MCP_NOTIFICATION, /* method, no id */
    KILN_MCP_RESPONSE,     /* result or error: this server sends no requests, so ignored */
    KILN_MCP_INVALID       /* none of them: answered with -32600 */
} kiln_mcp_kind;
kiln_mcp_kind kiln_mcp_classify(const json_t *msg);

/*
 * Handle one message (borrowed). A request is answered through send, after
 * any notifications of its own (progress, log messages); a request that was
 * cancelled is not answered. A notification is acted on and not answered.
 * A tools/call blocks until its tool is done: the front end calls this on a
 * thread of its own for each request, and cancellation arrives on another
 * thread as a notifications/cancelled handled meanwhile.
 */
void kiln_mcp_handle(kiln_mcp_conn *c, const json_t *msg, kiln_mcp_send_fn send, void *arg);

/* The same request cancelled by its transport (an HTTP client that went
 * away): as notifications/cancelled for id (borrowed). */
void kiln_mcp_cancel(kiln_mcp_conn *c, const json_t *id);

/* The error response {"jsonrpc", "id": null, "error": {code, message}}
 * to a line that is not JSON (-32700) or to a message that is not one
 * (-32600). New. */
json_t *kiln_mcp_error_reply(const json_t *id, int code, const char *message, json_t *data);

/* The negotiated legacy version of a connection, or NULL before
 * `initialize` has been answered. */
const char *kiln_mcp_conn_version(kiln_mcp_conn *c);
/* 1 when this server speaks version (legacy or modern). */
int kiln_mcp_version_supported(const char *version);
/* The versions this server speaks, newest first: ["2026-07-28", ...]. New. */
json_t *kiln_mcp_versions(void);
/* The protocol version a request's _meta names, or NULL (legacy). */
const char *kiln_mcp_message_version(const json_t *msg);

#endif
