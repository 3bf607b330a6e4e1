/*
 * sources.h - where a batch's jobs come from (runner.h's kiln_batch_source):
 *
 *   - a jobs file, JSON Lines, one job per line (contract/batch.h); blank
 *     lines skipped; relative paths in it (spec_file, a run's inputs)
 *     resolve beneath the file's directory as --base-dir's do (never
 *     escaping it, never through a link);
 *   - a mail merge: a template spec and a data file (CSV or JSON Lines), one
 *     document per data row (merge.h), named by a --name template.
 *
 * Each is read twice: once by kiln_batch_*_check, which reads every job or
 * row, reports every error at once (each message starting with where it is:
 * "line 12: ...", "data line 12: ..."), counts the jobs and checks that no
 * two write the same name; then by the source the runner pulls from, which
 * reads them again one at a time (memory stays that of one job, whatever the
 * batch's size). A file that changes between the two is read as it is then.
 *
 * What a job's input hash covers: for a jobs file, the job's line (as
 * canonical JSON: members sorted, no spaces) and the bytes of the files it
 * names (spec_file, a run's inputs); for a merge, the template's bytes, the
 * format, the --name template, the --missing mode and the row.
 */
#ifndef KILN_BATCH_SOURCES_H
#define KILN_BATCH_SOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "merge.h"
#include "runner.h"
#include "../artifacts/render.h"
#include "../common/error.h"

/* The longest line of a jobs file: a spec at the spec limit, or a run's
 * code at its limit, escaped, with room for the rest. */
#define KILN_BATCH_LINE_BYTES (72u << 20)
/* The most jobs one batch holds. */
#define KILN_BATCH_JOBS_MAX 10000000u

typedef struct kiln_batch_jobs_file {
    const char *path;     /* the JSONL ("-" is not accepted: it is read twice) */
    const char *base_dir; /* absolute: where its relative paths resolve */
    const char *out_dir;  /* absolute */
    uint64_t max_bytes;   /* each document's ceiling (0 = the default) */
} kiln_batch_jobs_file;

typedef struct kiln_batch_merge {
    const char *template_path;
    const char *data_path;
    const char *base_dir; /* absolute: the template's relative paths resolve here */
    const char *out_dir;  /* absolute */
    kiln_format format;
    const char *name; /* the --name template; it must end in the format's extension */
    kiln_merge_missing missing;
    uint64_t max_bytes;
} kiln_batch_merge;

/* Check every job of the file; *count gets how many. KILN_E_OK, or the first
 * error's code with every error in errs (KILN_E_INPUT: the file cannot be
 * read; KILN_E_INVALID_JOB: a line is not a job). validate_specs: also parse
 * every render's spec (inline or spec_file) as the writers will. */
kiln_status kiln_batch_jobs_check(const kiln_batch_jobs_file *f, int validate_specs,
                                  size_t *count, kiln_errors *errs);
/* The source over the file: *src's arg is new; kiln_batch_source_free
 * releases it. */
kiln_status kiln_batch_jobs_source(const kiln_batch_jobs_file *f, kiln_batch_source *src,
                                   kiln_error *err);

/* The same for a mail merge: check reads every row and merges its file name
 * (errors: a data file that cannot be read or parsed, a name that is not one
 * or is not unique); validate_specs also merges every row's spec and
 * validates it (every merge and spec error, each naming its data line). */
kiln_status kiln_batch_merge_check(const kiln_batch_merge *m, int validate_specs, size_t *count,
                                   kiln_errors *errs);
kiln_status kiln_batch_merge_source(const kiln_batch_merge *m, kiln_batch_source *src,
                                    kiln_error *err);

void kiln_batch_source_free(kiln_batch_source *src);

#endif
