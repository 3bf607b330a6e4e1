/*
 * errors.h - the one way an error, or a list of them, becomes JSON.
 *
 * `kiln render|validate --json`, `kiln run` (its render step's entries),
 * `kiln serve`'s replies and every front end to come build these objects
 * here and nowhere else, so a client sees one shape whichever door it came
 * through (docs/cli.md, "JSON output"):
 *
 *   error    {"code", "pointer"?, "message", "limit"?, "actual"?}
 *            pointer: always for a spec's or a job request's errors (""
 *            = the whole document), else when the error names a member;
 *            limit and actual: for limit_exceeded and too_large, numbers
 *            (whole but for seconds).
 *   errors   {"errors": [error...], "more_errors": N}  (N found past the list's cap)
 *
 * The bottom of the contract: it needs nothing but common/, so the sandbox
 * (exec/) reports its own errors through it too. Every function returns a
 * new reference, or NULL when out of memory.
 */
#ifndef KILN_CONTRACT_ERRORS_H
#define KILN_CONTRACT_ERRORS_H

#include <jansson.h>

#include "../common/error.h"

/* Whether an error is shown with a pointer (see above). */
int kiln_error_has_pointer(const kiln_error *e);

json_t *kiln_error_json(const kiln_error *e);
/* The members "errors" and "more_errors" of errs, as one object a caller
 * may add members to. */
json_t *kiln_errors_json(const kiln_errors *errs);
/* The same for one error, or none (err NULL). */
json_t *kiln_error_list_json(const kiln_error *err);

#endif
