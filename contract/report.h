/*
 * report.h - the one way an outcome becomes JSON: errors, error lists,
 * render results and their warnings.
 *
 * `kiln render|validate --json`, `kiln run`'s render step, `kiln serve`'s
 * replies and every front end to come build these objects here and
 * nowhere else, so a client sees one shape whichever door it came
 * through (docs/cli.md, "JSON output"):
 *
 *   error    {"code", "pointer"?, "message", "limit"?, "actual"?}
 *            pointer: always for a spec's errors ("" = the whole spec), else
 *            when the error names a member; limit and actual: for
 *            limit_exceeded and too_large.
 *   errors   {"errors": [error...], "more_errors": N}  (N found past the list's cap)
 *   warning  {"code", "message", "count", "first"}
 *   render   {"format", "bytes", "warnings": [warning...]}
 *
 * Every function returns a new reference, or NULL when out of memory.
 */
#ifndef KILN_CONTRACT_REPORT_H
#define KILN_CONTRACT_REPORT_H

#include <jansson.h>
#include <stdint.h>

#include "../common/error.h"

struct kiln_render_result;

/* Whether an error is shown with a pointer (see above). */
int kiln_error_has_pointer(const kiln_error *e);

json_t *kiln_error_json(const kiln_error *e);
/* The members "errors" and "more_errors" of errs, as one object a caller
 * may add members to. */
json_t *kiln_errors_json(const kiln_errors *errs);

/* What a render reports besides success. */
typedef struct kiln_warning {
    const char *code;  /* "missing_glyphs", "overflow_slides" */
    char message[256]; /* one sentence, as the CLI prints it after "kiln: warning: " */
    uint64_t count;    /* characters / slides */
    uint64_t first;    /* the first code point / 1-based slide number */
} kiln_warning;

#define KILN_WARNINGS_MAX 2
/* The warnings of a render, into out; returns how many. */
size_t kiln_render_warnings(const struct kiln_render_result *r,
                            kiln_warning out[KILN_WARNINGS_MAX]);

json_t *kiln_warnings_json(const struct kiln_render_result *r);
json_t *kiln_render_result_json(const struct kiln_render_result *r);

#endif
