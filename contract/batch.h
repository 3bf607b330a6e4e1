/*
 * batch.h - one job of a batch: a line of `kiln batch JOBS.jsonl`, an item
 * of POST /v1/batches {"jobs": [...]} (docs/batch.md, "Jobs"):
 *
 *   {"id": "inv-1", "render": {"format": "pdf", "spec": {...} | "spec_file": "path",
 *                              "filename": "inv-1.pdf"}}
 *   {"id": "report", "run": {<a job request: code, language, inputs, limits, ...>}}
 *
 * The id names the job in the results journal and, for a run, the directory
 * its files go to; a render's file is filename (default: the id and the
 * format's extension). Every name is one path component that a file in any
 * output directory may have (kiln_batch_name_ok): the batch writes nothing
 * outside its output directory.
 *
 * Errors name the member by its JSON Pointer inside the job (/render/format,
 * /run/limits/wall_seconds), code invalid_run: the caller adds where the job
 * came from (the JSONL line, the request's /jobs/N).
 *
 * Ownership: a parsed job borrows the document's strings and values; it lives
 * as long as the document.
 */
#ifndef KILN_CONTRACT_BATCH_H
#define KILN_CONTRACT_BATCH_H

#include <jansson.h>

#include "../artifacts/render.h"
#include "../common/error.h"
#include "job.h"

/* The longest job id, and the longest output file name (a file system's
 * NAME_MAX less room for the writer's temporary names). */
#define KILN_BATCH_ID_MAX 128
#define KILN_BATCH_NAME_MAX 200

typedef enum { KILN_BATCH_RENDER, KILN_BATCH_RUN } kiln_batch_kind;

typedef struct kiln_batch_job {
    const char *id;
    kiln_batch_kind kind;
    /* render */
    kiln_format format;
    const json_t *spec;    /* NULL when spec_file names the spec */
    const char *spec_file; /* a path under the batch's base directory */
    char filename[KILN_BATCH_NAME_MAX + 1];
    /* run: the request (inputs in the form the options ask for) */
    const json_t *run_doc;
    kiln_job_request run;
} kiln_batch_job;

typedef struct kiln_batch_job_options {
    kiln_job_input_form inputs; /* a run's inputs: host paths (kiln batch) or file ids */
    const kiln_run_limits *max; /* as kiln_job_parse_options */
    const kiln_run_limits *unset;
} kiln_batch_job_options;

/* Check doc against the contract and fill *out. Every error goes into errs
 * with its pointer. KILN_E_OK, or the first error's code. */
kiln_status kiln_batch_job_parse(const json_t *doc, const kiln_batch_job_options *opt,
                                 kiln_batch_job *out, kiln_errors *errs);

/* 1 when name may name a job or a file the batch writes: 1 to max bytes of
 * UTF-8, no '/', no control character, not "." or "..", not starting with
 * '.' (the batch's own files, results.jsonl and .kiln-batch/, are never
 * shadowed, and nothing is hidden). max: KILN_BATCH_ID_MAX or _NAME_MAX. */
int kiln_batch_name_ok(const char *name, size_t max);

#endif
