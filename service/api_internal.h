/*
 * api_internal.h - what render_api.c and runs_api.c share (api.c defines
 * it), and the file-name rule files_api.c applies to uploads too. Not part
 * of the contract with the HTTP layer (api.h).
 */
#ifndef KILN_SERVICE_API_INTERNAL_H
#define KILN_SERVICE_API_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "service/api.h"
#include "service/store.h"
#include "contract/job.h"

/* The most inputs one render or run may name is the job contract's
 * (contract/job.h): each is an open file descriptor while the job runs,
 * and a child's inherited one for a run. */
#define KILN_API_MAX_INPUTS KILN_JOB_INPUTS_MAX

/* One input of a job: its id, its stored metadata and its body, open. */
typedef struct kiln_api_input {
    char id[KILN_STORE_ID_LEN + 1];
    kiln_store_file file;
    int fd;
} kiln_api_input;

/*
 * Open the bodies of the ids in `ids` (borrowed; an array of strings the
 * caller has checked) for tenant. pointer_base is the JSON Pointer of the
 * array ("/inputs"). On success *inputs (n entries, calloc'd) is the
 * caller's to kiln_api_inputs_close. On failure reply holds the 404 / 410
 * (naming the input's pointer) or 500, and -1 is returned.
 */
int kiln_api_inputs_open(const kiln_api_ctx *ctx, const char *tenant, const json_t *ids,
                         kiln_api_input **inputs, kiln_api_reply *reply);
void kiln_api_inputs_close(kiln_api_input *inputs, size_t n);

/* ids[] of inputs for kiln_inuse_take/release: a calloc'd array of
 * borrowed pointers into inputs (free() it), or NULL when n is 0 or out of
 * memory. */
const char **kiln_api_input_ids(const kiln_api_input *inputs, size_t n);

/* A 500: the client gets a generic message; reply->log says what happened
 * (for the server's log, never sent). */
void kiln_api_reply_internal(kiln_api_reply *reply, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A private scratch directory ctx->work_dir/PREFIX-XXXXXX (mode 0700):
 * path (PATH_MAX bytes) filled; 0 / -1 with errno. */
int kiln_api_scratch_make(const kiln_api_ctx *ctx, const char *prefix, char *path, size_t cap);

/* Remove path and everything below it, never following a symlink. */
void kiln_api_rmtree(const char *path);

/*
 * The service's one rule for a file name, wherever a client gives one (an
 * upload's ?filename=, its Content-Disposition, a multipart part's
 * filename, a render's "filename"): 1 to 255 bytes of UTF-8, no NUL, no
 * control characters (U+0000 to U+001F, U+007F), no '/', not "." or "..".
 * s is len bytes (a NUL inside counts against it). NULL when the name is
 * fine, else why not, as the end of a sentence ("contains '/'") for the
 * caller to put after its own subject ("The file name ..."). ':' is allowed:
 * only a run refuses it as an input (runs_api.c says why).
 */
const char *kiln_api_check_filename(const char *s, size_t len);

/* A name a runner's result gives (a run's, a batch journal's) is relative to
 * its output directory and stays below it: no leading '/', no empty, "." or
 * ".." component, no trailing '/'. (The runners list only names they
 * collected that way; this keeps a surprise from reaching the store.) 1 / 0. */
int kiln_api_name_beneath(const char *name);

/* ---- children (runs_api.c) ----
 * Every `kiln run` and `kiln session` child is the kiln executable with a
 * filtered environment, in a process group of its own, its descriptors
 * 3.. the ones given (a request in a sealed memfd, inputs). */
typedef struct kiln_api_child {
    struct kiln_api_child *next;
    pid_t pid;
} kiln_api_child;

typedef struct kiln_api_spawned {
    kiln_api_child *entry; /* NULL, or put on the runs' list (kiln_api_kill_runs) */
    pid_t pid;
    int in_fd;  /* its stdin's write end, when asked for (else -1: /dev/null) */
    int out_fd; /* its stdout's and stderr's read ends */
    int err_fd;
    int refused; /* not started: the server is shutting down (reply 503) */
} kiln_api_spawned;

/* Start ctx->kiln_exe with argv: 0, or -1 with reply set. */
int kiln_api_spawn(const kiln_api_ctx *ctx, char *const argv[], const int *fds, size_t nfds,
                   int with_stdin, kiln_api_spawned *sp, kiln_api_reply *reply);

/* text in a sealed memfd named name (offset 0, close-on-exec): the fd, or
 * -1 with errno. kiln_api_doc_memfd: doc (stolen; NULL = out of memory)
 * as compact JSON, the same way. */
int kiln_api_sealed_memfd(const char *name, const char *text);
int kiln_api_doc_memfd(const char *name, json_t *doc);

/* How a child's request document names its inputs: paths[i]
 * "/proc/self/fd/<4+i>" (the descriptor it inherits) and names[i] the
 * stored filename (borrowed from inputs). 0, or -1 with errno. */
typedef struct kiln_api_input_refs {
    char (*paths)[32];
    const char **path_ptrs;
    const char **names;
} kiln_api_input_refs;
int kiln_api_input_refs_make(const kiln_api_input *inputs, size_t n, kiln_api_input_refs *r);
void kiln_api_input_refs_free(kiln_api_input_refs *r);

#endif
