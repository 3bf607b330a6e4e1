/*
 * run.h - run untrusted code in a sandbox and get one JSON result back.
 *
 * The public face of exec/: the CLI (`kiln run`), the batch runner and the
 * server call kiln_run_job() and nothing else here. Everything the job is allowed
 * to do is in a kiln_run_options; everything that happened comes back as one
 * JSON object (docs/run.md describes every member), built in result.c alone.
 *
 * kiln_run_job needs root (or CAP_SYS_ADMIN): it makes namespaces, mounts and
 * cgroups. It forks one supervisor process that does all of that, so the
 * caller's own process is never changed (no mounts, no namespaces, no
 * signal handlers); the result travels back over a pipe. A caller that
 * exists only to run one job can ask for the supervisor to be itself
 * (in_process).
 */
#ifndef KILN_EXEC_RUN_H
#define KILN_EXEC_RUN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "contract/limits.h"

typedef enum { KILN_LANG_PYTHON, KILN_LANG_BASH } kiln_run_language;

/* Host paths a job may be given read-only (kiln run --ro-bind), at most. */
#define KILN_RUN_RO_BINDS_MAX 16

/* Whether name can be an input's name under /mnt/data: one path component
 * (no '/', no NUL), not "." or "..", not the spec directory the runner reads
 * (.kiln), under 256 bytes. (Front ends check a request's names with it
 * before a job starts, to name the member at fault.) */
int kiln_run_input_name_ok(const char *name);
/* The name an input gets under /mnt/data: name, else host_path's last
 * component. */
const char *kiln_run_input_name(const char *host_path, const char *name);

/* One input file, copied into /mnt/data before the code starts. */
typedef struct kiln_run_input {
    const char *host_path; /* read by the runner (not by the job) */
    const char *name;      /* name under /mnt/data; NULL = host_path's last component */
} kiln_run_input;

/*
 * The render step: what the runner does with each spec a job saved
 * (/mnt/data/.kiln/OUT.spec.json). exec/ knows nothing of specs or
 * formats: it finds the saved specs, gives each a sandbox of its own and
 * calls these; Kiln's step (contract/render_step.h) renders documents.
 */
typedef struct kiln_run_render_step {
    /* In the runner's process, before the render sandbox is made: may OUT
     * (a file name under /mnt/data) be made, and is what that needs ready?
     * (What the step runs must be loaded now: the sandbox's root holds no
     * Kiln files to load it from.) Adds what it knows to entry (a new
     * result entry, e.g. its "format"); 0, or -1 with *error a new error
     * object (contract/errors.h's shape). */
    int (*prepare)(void *arg, const char *out_name, json_t *entry, json_t **error);
    /* In the render sandbox, after seccomp: make out_path from spec_path,
     * whose relative paths are beneath base_dir, at most max_bytes, scratch
     * files in tmp_dir. Returns the outcome's members ("ok", "errors",
     * "warnings", ...) as a new object, or NULL when out of memory. */
    json_t *(*render)(void *arg, const char *spec_path, const char *base_dir,
                      const char *out_path, uint64_t max_bytes, const char *tmp_dir);
    void *arg;
} kiln_run_render_step;

typedef struct kiln_run_options {
    kiln_run_language language;
    const char *code; /* the program text (not a path) */
    size_t code_len;
    const char *const *args; /* extra argv for the program, NULL-terminated; may be NULL */
    const kiln_run_input *inputs;
    size_t input_count;
    kiln_run_limits limits;
    const char *ro_binds[KILN_RUN_RO_BINDS_MAX]; /* host paths the job sees read-only at
                                  the same path (--ro-bind): absolute, canonical, a
                                  directory or regular file, not the sandbox's own
                                  (docs/run.md); kiln_run_add_ro_bind() appends */
    size_t ro_bind_count;               /* may pass the max: kiln_run_job refuses it then */
    const kiln_run_render_step *render; /* what to do with the specs `import kiln`
                                  saved (--render); NULL = leave them as files */
    const char *out_dir;                /* host directory the collected files and rendered
                                           documents are copied to; NULL = list them only */
    int in_process;                     /* supervise in the calling process instead of a forked
                                           one: it drops its supplementary groups and moves to a
                                           private mount namespace for good. For a process that
                                           runs one job and exits (the CLI): saves a fork and
                                           the result's trip over a pipe. */
} kiln_run_options;

/*
 * Run the job. Returns KILN_E_OK whenever the job ran, whatever the job did:
 * a timeout or a crash of the untrusted code is a result, not an error. Then
 * *result is a new reference (the caller json_decref()s it) whose "status"
 * says what happened. Any other status means the runner itself could not
 * work (bad options: USAGE; unreadable input: INPUT; out_dir not writable:
 * WRITE; no privileges or kernel support: INTERNAL), err says why, and
 * *result is NULL. A sandbox that could not be set up is reported in the
 * result as status "setup_failure" when the job had begun.
 */
kiln_status kiln_run_job(const kiln_run_options *opt, json_t **result, kiln_error *err);

/* Add a --ro-bind path (borrowed; it must outlive the run). Never fails:
 * kiln_run_job checks the paths, and their number. */
void kiln_run_add_ro_bind(kiln_run_options *opt, const char *path);

#endif
