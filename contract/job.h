/*
 * job.h - a job request: what to run and under which limits, as one JSON
 * document.
 *
 * The same document is the body of POST /v1/runs, the file `kiln run
 * --request FILE` reads, and what `kiln serve` hands the `kiln run` child
 * it starts for a run (on a descriptor: nothing of the job is re-printed as
 * flags). docs/run.md, "Job requests", describes every member:
 *
 *   {"code": "...", "language": "python"|"bash", "args": ["..."],
 *    "inputs": [...], "limits": {"wall_seconds": 5, ...}, "render": true}
 *
 * Inputs are the one member whose form depends on who reads it: the API
 * takes stored file ids ("inputs": ["<id>"]); a document for `kiln run`
 * names host files ("inputs": [{"path": "/data/a.csv", "name": "a.csv"}]).
 *
 * Ownership: a parsed kiln_job_request borrows the document's strings; it
 * lives as long as the document.
 */
#ifndef KILN_CONTRACT_JOB_H
#define KILN_CONTRACT_JOB_H

#include <jansson.h>
#include <stddef.h>

#include "../common/error.h"
#include "../exec/run.h"

/* The most program text a job takes (a file, standard input, -c or "code"). */
#define KILN_JOB_CODE_MAX (16u << 20)
/* The program's arguments: how many, the bytes of one (the kernel's limit
 * on one argv string is 128 KiB), the bytes of all together. */
#define KILN_JOB_ARGS_MAX 1024
#define KILN_JOB_ARG_BYTES ((128u << 10) - 1)
#define KILN_JOB_ARGS_BYTES (1u << 20)
/* Inputs of one job. */
#define KILN_JOB_INPUTS_MAX 64

typedef enum {
    KILN_JOB_INPUT_IDS,   /* "inputs": ["<file id>", ...] (the API) */
    KILN_JOB_INPUT_PATHS, /* "inputs": [{"path": ..., "name": ...}, ...] (kiln run) */
} kiln_job_input_form;

typedef struct kiln_job_request {
    kiln_run_language language;
    const char *code; /* borrowed */
    size_t code_len;
    const json_t *args;     /* borrowed array of strings; NULL = none */
    const json_t *inputs;   /* borrowed array in the form asked for; NULL = none */
    kiln_run_limits limits; /* every field set */
    int render;             /* render the specs `import kiln` saves (default 1) */
} kiln_job_request;

typedef struct kiln_job_parse_options {
    kiln_job_input_form inputs;
    /* The most each limit may be: NULL = the table's maximum. A limit
     * above it is limit_exceeded ("on this server"). */
    const kiln_run_limits *max;
    /* What a limit left out gets: NULL = the table's default. (The service
     * gives its maximum: an operator's --run-memory is what runs get.) */
    const kiln_run_limits *unset;
} kiln_job_parse_options;

/* Check doc against the contract and fill *out. Every error goes into
 * errs with its JSON Pointer (code invalid_run, or limit_exceeded with the
 * limit for a limit above max). KILN_E_OK, or the first error's code. */
kiln_status kiln_job_request_parse(const json_t *doc, const kiln_job_parse_options *opt,
                                   kiln_job_request *out, kiln_errors *errs);

/* The names the inputs get in /mnt/data, names[i] for /inputs/i (members[i]:
 * the member of the input it came from, NULL or "" for the input itself):
 * each must be one a file there can have (kiln_run_input_name_ok), and no
 * two alike. Errors (invalid_run) go into errs; 0, or -1. The service checks
 * the stored names of the files a request names with it; kiln_job_request_
 * parse, those of inputs in path form. */
int kiln_job_check_input_names(const char *const *names, const char *const *members, size_t n,
                               kiln_errors *errs);

/* The document of a request whose inputs are host paths: rq's code,
 * language, args, render and every limit, and inputs[i] = {path: paths[i],
 * name: names[i]}. A new reference; NULL when out of memory. */
json_t *kiln_job_request_json(const kiln_job_request *rq, const char *const *paths,
                              const char *const *names, size_t input_count);

/* The runner's options for rq (inputs in path form): its language, code,
 * args, limits, render step (contract/render_step.h, when rq->render) and
 * inputs, everything else of *opt left as it was. inputs and args are the
 * caller's arrays of json_array_size(rq->inputs) and
 * json_array_size(rq->args) + 1 entries; they and *opt borrow rq's strings. */
void kiln_job_run_options(const kiln_job_request *rq, kiln_run_options *opt,
                          kiln_run_input *inputs, const char **args);

/*
 * A session request: what a session runs under. The body of POST
 * /v1/sessions and the document `kiln session --request FILE` reads
 * (docs/session.md, "Session requests"):
 *
 *   {"language": "python"|"bash", "inputs": [...], "limits": {...},
 *    "render": true, "idle_timeout": SECONDS, "lifetime": SECONDS}
 *
 * language is the cells' default; inputs and limits are a job request's;
 * idle_timeout and lifetime are the session's (0 when not given: the
 * session's defaults). Borrows the document as kiln_job_request does.
 */
#define KILN_SESSION_SECONDS_MAX (30.0 * 86400)

typedef struct kiln_session_request {
    kiln_run_language language;
    const json_t *inputs;
    kiln_run_limits limits;
    int render;
    double idle_seconds, lifetime_seconds;
} kiln_session_request;

kiln_status kiln_session_request_parse(const json_t *doc, const kiln_job_parse_options *opt,
                                       kiln_session_request *out, kiln_errors *errs);

/* The document of a session request whose inputs are host paths (as
 * kiln_job_request_json). A new reference; NULL when out of memory. */
json_t *kiln_session_request_json(const kiln_session_request *rq, const char *const *paths,
                                  const char *const *names, size_t input_count);

#endif
