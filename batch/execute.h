/*
 * execute.h - one batch job done in a worker process (pool.h): a document
 * rendered, or code run in the sandbox with what it saved rendered.
 *
 * The task is the runner's (runner.c builds it; nothing outside batch/ sees
 * it):
 *
 *   {"kind": "render", "format": "pdf", "spec": {...} | "spec_file": REL,
 *    "base_dir": ABS, "out_dir": ABS, "filename": NAME, "max_bytes": N}
 *   {"kind": "run", "id": ID, "request": {<job request, inputs as absolute
 *    host paths>}, "out_dir": ABS}
 *
 * The result is the journal entry's outcome:
 *
 *   {"status": "ok" | "failed", "files": [{"name", "bytes", "sha256",
 *    "mtime_ns", "inode"}], "errors": [...], "more_errors": N,
 *    "warnings": [...], "run": {...}}
 *
 * Every file it names is complete in its place when the result is sent: a
 * render's output is linked only once it is all written (common/output.h;
 * not fsynced: the runner syncs the file system for many at once before it
 * journals them); a run's files are written into a staging directory,
 * fsynced, and the directory renamed to OUT_DIR/ID whole.
 */
#ifndef KILN_BATCH_EXECUTE_H
#define KILN_BATCH_EXECUTE_H

#include <jansson.h>

/* What a journal line keeps of a run's stdout, and of its stderr: the start
 * (the run's result says how many bytes there were; "truncated" when cut). */
#define KILN_BATCH_STREAM_TEXT (16u << 10)

/* The staging area under the output directory (never a job's name: names
 * cannot start with '.'). */
#define KILN_BATCH_STAGING ".kiln-batch"

/* Do task; a new result (NULL only when out of memory). arg is unused
 * (kiln_pool_work_fn). */
json_t *kiln_batch_execute(const json_t *task, void *arg);

#endif
