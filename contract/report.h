/*
 * report.h - the one way a render's outcome becomes JSON: its result and
 * its warnings (errors and error lists: errors.h).
 *
 *   warning  {"code", "message", "count", "first"}
 *   render   {"format", "bytes", "warnings": [warning...]}
 *
 * A render's whole outcome, as `kiln render --json` prints it and a run's
 * render step records it, is the render object with "ok" and the error
 * list's members: {"ok", "format", "bytes", "warnings", "errors",
 * "more_errors"} (kiln_render_outcome_json).
 *
 * Every function returns a new reference, or NULL when out of memory.
 */
#ifndef KILN_CONTRACT_REPORT_H
#define KILN_CONTRACT_REPORT_H

#include <jansson.h>
#include <stdint.h>

#include "../common/error.h"
#include "errors.h"

struct kiln_render_result;

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
/* The whole outcome, in one shape either way: a render that succeeded (r;
 * errs and err NULL) or failed (r NULL; its errors in errs, or the one in
 * err). */
json_t *kiln_render_outcome_json(const struct kiln_render_result *r, const kiln_errors *errs,
                                 const kiln_error *err);

#endif
