/*
 * merge.h - mail merge: a template spec with {{field}} placeholders and one
 * data row make one spec (docs/batch.md, "Mail merge").
 *
 * Every string value of the template is looked at (member names are not:
 * they are the spec's own words). In a string, {{name}} (spaces inside the
 * braces allowed: {{ name }}) is replaced by the row's field; {{a.b}} reads
 * member b of the object in field a (JSON Lines rows nest; a CSV row is flat,
 * and "a.b" there is a column named "a.b" if the header has one).
 *
 *   - A string that is exactly one placeholder takes the field's typed value:
 *     a number stays a number, true/false stay booleans, null stays null, and
 *     an array or an object replaces the whole value (a table's rows, a
 *     chart's series from a row's line items). Where the value is a table or
 *     sheet cell (the pointer ends in .../rows/I/J) an ISO 8601 date string
 *     becomes {"date": ...} and a date-time {"datetime": ...}, so it is a real
 *     date cell.
 *   - Elsewhere the placeholder is replaced by the value as text: a string as
 *     it is, a number in its shortest exact form (12, 3.5, 1e+21), true/false,
 *     null as "". An array or object inside a longer string is an error.
 *   - A field the row does not have is an error (KILN_E_INVALID_SPEC) whose
 *     pointer is the template's member and whose message names the field and
 *     the data line; with KILN_MERGE_MISSING_EMPTY it is "" instead (and null
 *     where the string was exactly the placeholder).
 *   - "{{" with no closing "}}", or an empty or malformed name, is an error
 *     naming the template's member.
 *
 * CSV rows hold strings; a field typed from CSV follows the spec's "auto"
 * CSV rule (docs/spec.md, "Column typing"): a plain decimal number of at most
 * 15 digits without a leading zero becomes a number, everything else stays
 * text. data_rows.h reads rows already typed that way.
 *
 * Ownership: the template and the row are borrowed; the result is new.
 */
#ifndef KILN_BATCH_MERGE_H
#define KILN_BATCH_MERGE_H

#include <jansson.h>
#include <stdint.h>

#include "../common/error.h"

typedef enum {
    KILN_MERGE_MISSING_ERROR, /* a missing field is an error (the default) */
    KILN_MERGE_MISSING_EMPTY, /* ... is "" (null for a whole-string placeholder) */
} kiln_merge_missing;

typedef struct kiln_merge_options {
    kiln_merge_missing missing;
    uint64_t line; /* the data line the row came from (1-based), for messages */
} kiln_merge_options;

/* The spec for one row: a new tree, or NULL with every error in errs (each
 * with the template's pointer; at most KILN_ERRORS_MAX kept, the rest
 * counted as dropped) or an out-of-memory error. */
json_t *kiln_merge_spec(const json_t *tmpl, const json_t *row, const kiln_merge_options *opt,
                        kiln_errors *errs);

/* One string merged as text (the output file name: --name): a new
 * malloc'd string, or NULL with err set (its pointer is what the caller
 * gives as where, e.g. "--name"). */
char *kiln_merge_text(const char *tmpl, const json_t *row, const kiln_merge_options *opt,
                      const char *where, kiln_error *err);

/* 1 when the template string holds any placeholder, else 0. */
int kiln_merge_has_placeholder(const char *s);

#endif
