/*
 * session.h - a long-lived sandboxed interpreter whose variables and files
 * survive between cells (docs/session.md).
 *
 * A session is one sandbox with the containment of `kiln run` (its own
 * user, PID, mount, network, IPC, UTS and cgroup namespaces and cgroup, its
 * own /mnt/data and /tmp, the seccomp allow-list, no network) holding one
 * Python interpreter forked from a warm zygote (zygote.c). Cells run one at
 * a time; each streams events as they happen and ends with one record.
 *
 * The API is event-driven so that one loop can read requests while a cell
 * runs (an interrupt must reach a running cell): the caller polls the
 * descriptors kiln_session_pollfds gives, with kiln_session_timeout_ms as
 * its timeout, and calls kiln_session_dispatch after each poll; events come
 * back through the caller's emit function as JSON objects (borrowed: the
 * callee copies or serializes what it keeps). Nothing here prints.
 *
 * kiln_session_open changes the calling process for good (a private mount
 * namespace, no supplementary groups): call it in a process that exists for
 * the session, as `kiln session` does. It needs root.
 */
#ifndef KILN_EXEC_SESSION_H
#define KILN_EXEC_SESSION_H

#include <jansson.h>
#include <poll.h>
#include <stddef.h>

#include "common/error.h"
#include "contract/limits.h"
#include "exec/run.h"

typedef struct kiln_session kiln_session;

/* Each cell's caps on what the interpreter reports (docs/session.md
 * "Limits"): display and result outputs (figures included) and their bytes,
 * the rows of a DataFrame's table schema, the longest event frame (a line
 * longer is skipped, counted), the MIME types in one bundle. */
#define KILN_SESSION_DISPLAY_ITEMS 200
#define KILN_SESSION_DISPLAY_BYTES (32u << 20)
#define KILN_SESSION_TABLE_ROWS 1000
#define KILN_SESSION_FRAME_BYTES (KILN_SESSION_DISPLAY_BYTES + (64u << 10))
#define KILN_SESSION_BUNDLE_TYPES 16
/* Execute requests that may wait while a cell runs. */
#define KILN_SESSION_QUEUE_MAX 16

typedef struct kiln_session_options {
    /* The session's memory, processes, disk (/mnt/data, /tmp), open files
     * and largest file are the sandbox's for its whole life; wall_seconds
     * and cpu_seconds are each cell's; the stream limits each cell's
     * stdout and stderr; the output limits what a `get` returns and what a
     * cell's files may be. 0 = the default. */
    kiln_run_limits limits;
    kiln_run_language language;   /* a cell's when its request does not say */
    double idle_seconds;          /* no cell for this long ends the session; 0 = 20 minutes */
    double lifetime_seconds;      /* the session ends this long after it began; 0 = 12 hours */
    const kiln_run_input *inputs; /* copied into /mnt/data before the first cell */
    size_t input_count;
    const kiln_run_render_step *render; /* what to do with the specs `import kiln` saved;
                                           NULL = leave them */
    const char *zygote_socket;          /* a server's shared zygote; NULL = start a private one */
} kiln_session_options;

/* Caller's callback for each event. The event is borrowed. */
typedef void (*kiln_session_emit)(void *arg, json_t *event);

/* Build the sandbox and start the interpreter in it. KILN_E_OK with *out a
 * new session, else the error (USAGE bad options, INPUT an unreadable
 * input, INTERNAL no privilege or kernel support, the zygote failed). */
kiln_status kiln_session_open(const kiln_session_options *opt, kiln_session **out,
                              kiln_error *err);

/* The session's description: {"limits", "idle_seconds", "lifetime_seconds",
 * "python", "started_at", ...}. New reference. */
json_t *kiln_session_info(const kiln_session *s);

/* Start a cell and emit its "started" event, or, while one runs, queue it
 * (a "queued" event; it starts when those before it have ended).
 * language NULL: the session's. KILN_E_BUSY when KILN_SESSION_QUEUE_MAX
 * are waiting already, KILN_E_GONE
 * when the session has ended, KILN_E_LIMIT a timeout over wall_seconds. timeout 0 =
 * limits.wall_seconds. id (borrowed, may be NULL) is echoed in the cell's
 * events. */
kiln_status kiln_session_execute(kiln_session *s, const char *code, size_t len,
                                 const kiln_run_language *language, double timeout, json_t *id,
                                 kiln_session_emit emit, void *arg, kiln_error *err);

/* Interrupt the running cell (KeyboardInterrupt; the session survives).
 * 1 when a cell was running, 0 when none was. */
int kiln_session_interrupt(kiln_session *s);

/* Descriptors to poll (at most cap; 8 is always enough) and the poll
 * timeout in milliseconds (-1: none). */
size_t kiln_session_pollfds(kiln_session *s, struct pollfd *fds, size_t cap);
int kiln_session_timeout_ms(const kiln_session *s);
/* Handle what the poll found (fds as kiln_session_pollfds filled them, with
 * revents) and any timer that has passed, emitting events. */
void kiln_session_dispatch(kiln_session *s, const struct pollfd *fds, size_t n,
                           kiln_session_emit emit, void *arg);

/* 1 while a cell runs or waits. */
int kiln_session_busy(const kiln_session *s);
/* NULL while the session lives; else why it ended, as the object a "lost"
 * event carried ({"reason", "message", "at"}; borrowed). */
const json_t *kiln_session_ended(const kiln_session *s);

/* The files in /mnt/data: [{"name","bytes","media_type","sha256"}]. New
 * reference, or NULL with err. */
json_t *kiln_session_files(kiln_session *s, kiln_error *err);
/* What the last listing (kiln_session_files, or a cell's end) left out at the
 * output caps: {"refused": [{"name", "reason"}], "refused_more": N}, as kiln
 * run's result lists them. Borrowed; NULL before any listing. */
const json_t *kiln_session_refused(const kiln_session *s);
/* Put data into /mnt/data/name (replacing a file of that name; never
 * following a link); the file's entry on success (new reference). */
json_t *kiln_session_put(kiln_session *s, const char *name, const void *data, size_t len,
                         kiln_error *err);
/* Read /mnt/data/name (a regular file, at most limits.output_file_bytes):
 * *data malloc'ed. */
kiln_status kiln_session_get(kiln_session *s, const char *name, char **data, size_t *len,
                             kiln_error *err);

/* A server's shared zygote (`kiln zygote SOCKET`, which kiln serve starts):
 * kiln_zygote_listen binds and listens at path (mode 0600, replacing a
 * stale socket) and returns the descriptor, or -1 with err; kiln_zygote_main
 * (exec_internal.h) then serves it. Needs root; the zygote drops it. */
int kiln_zygote_listen(const char *path, kiln_error *err);
int kiln_zygote_run(int listen_fd);

/* End the interpreter and the sandbox, remove the cgroup and the job
 * directory, free s. Safe on NULL. */
void kiln_session_close(kiln_session *s);

#endif
