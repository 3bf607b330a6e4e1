/*
 * sessions.h - /v1/sessions (sessions.c): live interpreters, each a
 * `kiln session` child, a pool of ready ones and the shared zygote they
 * fork from. docs/serve.md, "Sessions".
 */
#ifndef KILN_SERVICE_SESSIONS_H
#define KILN_SERVICE_SESSIONS_H

#include "common/error.h"

struct kiln_server;
typedef struct kiln_sessions kiln_sessions;

/* Start the zygote, the pool and the manager thread (nothing when the
 * server's sessions are off); sessions a previous server left are marked
 * lost (server_restart). */
kiln_status kiln_sessions_start(struct kiln_server *srv, kiln_error *err);
/* Answer every waiting request, end every child and the zygote, free. */
void kiln_sessions_stop(struct kiln_server *srv);
/* Sessions open (a tenant's) and ready in the pool, for /metrics. */
void kiln_sessions_counts(struct kiln_server *srv, unsigned *open, unsigned *pool);

#endif
