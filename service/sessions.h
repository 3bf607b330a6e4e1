/*
 * sessions.h - /v1/sessions (sessions.c): live interpreters, each a
 * `kiln session` child, a pool of ready ones and the shared zygote they
 * fork from. docs/serve.md, "Sessions".
 */
#ifndef KILN_SERVICE_SESSIONS_H
#define KILN_SERVICE_SESSIONS_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"
#include "service/store.h"

struct kiln_server;
typedef struct kiln_sessions kiln_sessions;

/* Start the zygote, the pool and the manager thread (nothing when the
 * server's sessions are off); sessions a previous server left are marked
 * lost (server_restart). */
kiln_status kiln_sessions_start(struct kiln_server *srv, kiln_error *err);
/* Answer every waiting request and caller, end every child and the
 * zygote; from now on every call below refuses. Once. */
void kiln_sessions_stop(struct kiln_server *srv);
/* Stop (when not yet) and free: after every caller below has returned. */
void kiln_sessions_free(struct kiln_server *srv);
/* Wake the manager: the server has said it is listening, and the zygote
 * (whose start is an event of the log) may start now. */
void kiln_sessions_wake(struct kiln_server *srv);
/* Sessions open (a tenant's) and ready in the pool, for /metrics. */
void kiln_sessions_counts(struct kiln_server *srv, unsigned *open, unsigned *pool);

/*
 * The internal API: the same sessions as /v1/sessions, for a caller in the
 * server that is not an HTTP request (the MCP backend, mcp_backend.c).
 * Each call blocks its thread until the session has answered (never call
 * one on an HTTP thread but kiln_sessions_interrupt and kiln_sessions_close,
 * which do not wait). Every call names the tenant it acts for; another
 * tenant's session is KILN_E_GONE exactly as an unknown id is. Sessions
 * off, no sandbox or a stopping server: KILN_E_INTERNAL, err says which.
 */

/* A cell's event (docs/session.md "Events", without "id"), borrowed. */
typedef void (*kiln_sessions_event_fn)(void *arg, const json_t *event);

/* A new session of tenant with the defaults POST /v1/sessions {} gets
 * (from the pool when one is ready), ready for cells: its id. Counts
 * against --max-sessions and --max-sessions-per-tenant (KILN_E_LIMIT). */
kiln_status kiln_sessions_open(struct kiln_server *srv, const char *tenant,
                               char id[KILN_STORE_ID_LEN + 1], kiln_error *err);
/* Run a cell, request {"code", "language", "timeout"} (borrowed; language
 * absent: the session's), until its record: the events go to on_event (may
 * be NULL) as they come, on this thread; *record is the record as POST
 * .../cells answers it (files[] entries with the stored "file"). New.
 * KILN_E_BUSY when 16 cells wait already; KILN_E_USAGE for a cell the
 * session refuses. */
kiln_status kiln_sessions_execute(struct kiln_server *srv, const char *tenant, const char *id,
                                  const json_t *request, kiln_sessions_event_fn on_event,
                                  void *arg, json_t **record, kiln_error *err);
/* Interrupt the running cell (sent, not waited for). */
kiln_status kiln_sessions_interrupt(struct kiln_server *srv, const char *tenant, const char *id,
                                    kiln_error *err);
/* The files of /mnt/data: [{name, bytes, media_type, sha256}]. New. */
kiln_status kiln_sessions_files(struct kiln_server *srv, const char *tenant, const char *id,
                                json_t **files, kiln_error *err);
/* len bytes into /mnt/data as name: *file {name, bytes, media_type,
 * sha256}, new. KILN_E_USAGE for a name no file there can have. */
kiln_status kiln_sessions_put(struct kiln_server *srv, const char *tenant, const char *id,
                              const char *name, const void *data, size_t len, json_t **file,
                              kiln_error *err);
/* End the session now (nothing when it is not the tenant's or has ended). */
void kiln_sessions_close(struct kiln_server *srv, const char *tenant, const char *id);

#endif
