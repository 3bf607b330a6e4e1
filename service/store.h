/*
 * store.h - the service's files: bodies on disk, metadata in SQLite.
 *
 * The file API of `kiln serve` (issue 7) stands on this: every uploaded
 * input, produced file and rendered document is one stored file owned by
 * one tenant. What it promises:
 *
 *   - Nothing half-written is ever visible or left behind. A body is
 *     written to an unnamed temporary file in the content directory,
 *     fsynced, linked under its final name, the directory fsynced, and only
 *     then is the row committed (SQLite in WAL mode). A crash at any point
 *     leaves either the complete body with its row, or a body with no row
 *     (an orphan, removed by kiln_store_open's startup pass), never a row
 *     without a body.
 *   - No client-supplied name ever reaches the file system: a body's file
 *     name is its id, and ids are 128 random bits (getrandom) in hex.
 *   - Another tenant's file looks exactly like a missing one
 *     (KILN_STORE_NOT_FOUND), so ids cannot be probed across tenants.
 *   - Files expire (default 24 hours after creation). An expired file keeps
 *     its row, marked, so a request for it can say "gone" (410) rather than
 *     "not found"; kiln_store_sweep removes expired bodies.
 *
 * Thread safety: a kiln_store may be used from several threads at once
 * (the server's thread pool); each call takes what it needs.
 */
#ifndef KILN_SERVICE_STORE_H
#define KILN_SERVICE_STORE_H

#include <stdint.h>
#include <time.h>

#include "common/error.h"

#define KILN_STORE_ID_LEN 32 /* hex characters of an id */
#define KILN_STORE_DEFAULT_TTL (24 * 3600)
#define KILN_STORE_FILENAME_MAX 255 /* bytes of a client's file name (kept as metadata only) */
#define KILN_STORE_TENANT_MAX 64    /* bytes of a tenant name */

typedef struct kiln_store kiln_store;

/* How a stored file came to be: the file object's "source". */
typedef enum {
    KILN_STORE_SOURCE_UNKNOWN = 0, /* stored by a Kiln that did not record it (null) */
    KILN_STORE_SOURCE_INPUT,       /* "input": uploaded (POST /v1/files) */
    KILN_STORE_SOURCE_OUTPUT,      /* "output": a file a run wrote or changed */
    KILN_STORE_SOURCE_DOCUMENT,    /* "document": rendered, by POST /v1/render or a run */
} kiln_store_source;

/* "input", "output", "document"; NULL for KILN_STORE_SOURCE_UNKNOWN. */
const char *kiln_store_source_name(kiln_store_source source);

typedef struct kiln_store_file {
    char id[KILN_STORE_ID_LEN + 1];
    char tenant[KILN_STORE_TENANT_MAX + 1];
    char filename[KILN_STORE_FILENAME_MAX + 1]; /* UTF-8, as the client gave it */
    char media_type[128];
    char sha256[65]; /* lowercase hex */
    uint64_t bytes;
    int64_t created_at; /* Unix seconds */
    int64_t expires_at;
    int expired; /* the body is gone (410) */
    kiln_store_source source;
} kiln_store_file;

/* Outcomes a caller maps to HTTP: OK, NOT_FOUND (404, also for another
 * tenant's file), GONE (410), TOO_LARGE (413), and kiln_status errors. */
typedef enum {
    KILN_STORE_OK = 0,
    KILN_STORE_NOT_FOUND,
    KILN_STORE_GONE,
    KILN_STORE_TOO_LARGE,
    KILN_STORE_ERROR, /* err says what: I/O, database, out of memory */
} kiln_store_result;

typedef struct kiln_store_options {
    const char *dir;     /* holds kiln.db and content/; created if missing */
    int64_t ttl_seconds; /* 0 = KILN_STORE_DEFAULT_TTL */
    uint64_t max_bytes;  /* largest body; 0 = KILN_DEFAULT_MAX_BYTES (30 MiB) */
} kiln_store_options;

/* Open (creating) the store, and remove orphans: bodies without a row, and
 * temporary files a crash left. *store is new: kiln_store_close it. */
kiln_status kiln_store_open(kiln_store **store, const kiln_store_options *opt, kiln_error *err);
void kiln_store_close(kiln_store *store);

/* Is DIR's store open in a process (its kiln.lock held)? Looked up in
 * /proc/locks, so nothing is opened, created or locked: a message can name
 * the holder, and a front end can ask about a directory it did not open.
 * 1 (and *pid, 0 when the holder is in a PID namespace this process cannot
 * see), 0 when no process holds it (or DIR has no store), -1 when it
 * cannot tell (no /proc). */
int kiln_store_holder(const char *dir, long *pid);

/* What the last kiln_store_open's orphan pass removed, so the server can
 * log a crash's clean-up rather than do it silently. */
typedef struct kiln_store_recovery {
    uint64_t orphan_bodies; /* bodies with no live row */
    uint64_t temporaries;   /* ".tmp-" files a crash left */
    uint64_t lost_rows;     /* live rows whose body was missing (disk damage) */
} kiln_store_recovery;
void kiln_store_last_recovery(const kiln_store *store, kiln_store_recovery *out);

/* A body being written: kiln_store_begin, kiln_store_write as data arrives
 * (TOO_LARGE as soon as max_bytes would be passed, nothing kept), then
 * kiln_store_commit (which fills *file) or kiln_store_abort. */
typedef struct kiln_store_upload kiln_store_upload;
kiln_store_result kiln_store_begin(kiln_store *store, const char *tenant, const char *filename,
                                   const char *media_type, kiln_store_source source,
                                   kiln_store_upload **up, kiln_error *err);
kiln_store_result kiln_store_write(kiln_store_upload *up, const void *data, size_t len,
                                   kiln_error *err);
kiln_store_result kiln_store_commit(kiln_store_upload *up, kiln_store_file *file,
                                    kiln_error *err);
void kiln_store_abort(kiln_store_upload *up);

/* A body written by someone else, straight into the upload (a render
 * writing its document, through kiln_output_open_fd): the upload's
 * temporary file, empty, open for reading and writing. It stays the
 * upload's: write it, never close it, and do not mix in kiln_store_write.
 * kiln_store_commit_written then takes its size and SHA-256 from the file
 * itself (TOO_LARGE past max_bytes, checked before any of it is read, and
 * nothing kept) and commits it as kiln_store_commit does; or
 * kiln_store_abort drops it. Either frees up. */
int kiln_store_upload_fd(const kiln_store_upload *up);
kiln_store_result kiln_store_commit_written(kiln_store_upload *up, kiln_store_file *file,
                                            kiln_error *err);

/* Store a file that already exists on disk (a produced file, a rendered
 * document), copying it in through the same path. */
kiln_store_result kiln_store_put_path(kiln_store *store, const char *tenant, const char *path,
                                      const char *filename, const char *media_type,
                                      kiln_store_source source, kiln_store_file *file,
                                      kiln_error *err);

/* Metadata of a tenant's file: OK, NOT_FOUND or GONE (file still filled,
 * with expired set, for the 410's message). */
kiln_store_result kiln_store_get(kiln_store *store, const char *tenant, const char *id,
                                 kiln_store_file *file, kiln_error *err);

/* Open a tenant's body for reading (O_RDONLY, for sendfile / MHD's
 * file-descriptor responses): fills *file and returns the fd in *fd. */
kiln_store_result kiln_store_open_body(kiln_store *store, const char *tenant, const char *id,
                                       kiln_store_file *file, int *fd, kiln_error *err);

/* A tenant's files, newest first, at most `limit` (1..1000) after `offset`;
 * calls fn for each; returns the total count in *total. */
kiln_store_result kiln_store_list(kiln_store *store, const char *tenant, int64_t offset,
                                  int64_t limit,
                                  void (*fn)(const kiln_store_file *file, void *arg), void *arg,
                                  int64_t *total, kiln_error *err);

/* Delete a tenant's file (row and body): OK or NOT_FOUND. */
kiln_store_result kiln_store_delete(kiln_store *store, const char *tenant, const char *id,
                                    kiln_error *err);

/* Remove the bodies of files past their expiry (rows stay, marked expired,
 * for 410s; rows older than 7 days past expiry go too). now = time(NULL)
 * in production; tests pass their own clock. *removed counts bodies. */
kiln_store_result kiln_store_sweep(kiln_store *store, int64_t now, uint64_t *removed,
                                   kiln_error *err);

/* Bytes of all live bodies (for /metrics). */
uint64_t kiln_store_bytes(kiln_store *store);

/* ---- sessions (the service's, sessions.c) ----
 * A session's object (JSON text) by id and tenant, so a session outlives
 * the process that ran it as a record: after a restart it answers 410.
 * Another tenant's session is NOT_FOUND, as a file is. */

/* 128 random bits in hex, as a file id: 0, or -1. */
int kiln_store_new_id(char out[KILN_STORE_ID_LEN + 1]);
/* Insert or replace the session's object; ended marks a session that is
 * over (kiln_store_session_list's live_only leaves it out). */
kiln_store_result kiln_store_session_put(kiln_store *store, const char *tenant, const char *id,
                                         int64_t created_at, int ended, const char *object,
                                         kiln_error *err);
/* The object (malloc'd text in *object): OK or NOT_FOUND. */
kiln_store_result kiln_store_session_get(kiln_store *store, const char *tenant, const char *id,
                                         char **object, kiln_error *err);
/* fn for each session of tenant (NULL: every tenant's), newest first, at
 * most 1000; live_only: those not ended. The strings are borrowed for the
 * call. fn must not call the store. */
kiln_store_result kiln_store_session_list(kiln_store *store, const char *tenant, int live_only,
                                          void (*fn)(const char *id, const char *tenant,
                                                     const char *object, void *arg),
                                          void *arg, kiln_error *err);

/* ---- batches (the service's, batches.c) ----
 * A batch's object (JSON text), its status ("queued", "running",
 * "completed", "cancelled", "failed") and the `kiln batch` child last
 * started for it (pid and its start time in clock ticks, /proc's field 22:
 * a pid alone may have been reused), by id and tenant; and its results,
 * one journal line per finished job. Another tenant's batch is NOT_FOUND. */
typedef struct kiln_store_batch {
    char id[KILN_STORE_ID_LEN + 1];
    char tenant[KILN_STORE_TENANT_MAX + 1];
    int64_t created_at;
    char status[16];
    int64_t child_pid, child_start; /* 0: none */
    char *object;                   /* the caller's (put: borrowed; get: malloc'd) */
} kiln_store_batch;

/* Insert or replace the row (created_at and tenant are kept from the first). */
kiln_store_result kiln_store_batch_put(kiln_store *store, const kiln_store_batch *b,
                                       kiln_error *err);
/* The row of id (tenant NULL: whoever's): OK or NOT_FOUND; b->object is
 * malloc'd: kiln_store_batch_release. */
kiln_store_result kiln_store_batch_get(kiln_store *store, const char *tenant, const char *id,
                                       kiln_store_batch *b, kiln_error *err);
void kiln_store_batch_release(kiln_store_batch *b);
/* fn for each batch of tenant (NULL: every tenant's), at most limit after
 * offset: newest first; active_only: only "queued" and "running", oldest
 * first. *total (may be NULL) the count of all that match. b is borrowed
 * for the call; fn must not call the store. */
kiln_store_result kiln_store_batch_list(kiln_store *store, const char *tenant, int active_only,
                                        int64_t offset, int64_t limit,
                                        void (*fn)(const kiln_store_batch *b, void *arg),
                                        void *arg, int64_t *total, kiln_error *err);
/* 1 when the batch has a result for job_id, 0 when not, -1 on an error. */
int kiln_store_batch_result_has(kiln_store *store, const char *batch_id, const char *job_id);
/* In one transaction: the job's result line (unless it has one already:
 * *inserted 0, nothing changed) and b's status and object (b->object
 * borrowed), so the counts in the object never disagree with the rows. */
kiln_store_result kiln_store_batch_result_put(kiln_store *store, const kiln_store_batch *b,
                                              const char *job_id, const char *line, int *inserted,
                                              kiln_error *err);
/* fn for at most limit results of a batch with seq > after, in the order
 * they were put. line is borrowed for the call; fn must not call the store. */
kiln_store_result kiln_store_batch_results(kiln_store *store, const char *batch_id, int64_t after,
                                           int64_t limit,
                                           void (*fn)(int64_t seq, const char *line, void *arg),
                                           void *arg, kiln_error *err);

#endif
