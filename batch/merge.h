/*
 * merge.h - mail merge: a template spec with {{field}} placeholders and one
 * data row make one spec (docs/batch.md, "Mail merge").
 *
 * Every string value of the template is looked at (member names are not:
 * they are the spec's own words). In a string, {{name}} is replaced by the
 * row's field. Precisely, a placeholder is
 *
 *   "{{", any spaces or tabs, NAME, any spaces or tabs, "}}"
 *   NAME    = SEGMENT ( "." SEGMENT )*
 *   SEGMENT = one or more of A-Z a-z 0-9 _ - and any non-ASCII character
 *             (UTF-8), so {{Kunden-Nr}} and {{año}} work
 *
 * and every "{{" in a string must begin one: there is no escape, so a
 * template cannot hold a literal "{{". A lone "}}" is text.
 *
 * A NAME is looked up first as one member of the row ({{a.b}} is a CSV
 * column named "a.b" when the row has one), then segment by segment through
 * nested objects (JSON Lines rows nest: {{a.b}} is member b of the object in
 * field a); a segment that is a decimal index (0, 1, ... without a leading
 * zero) picks an element where the value is an array ({{items.0.name}}).
 *
 *   - A string that is exactly one placeholder (nothing before "{{" or after
 *     "}}") takes the field's typed value: a number stays a number,
 *     true/false stay booleans, null stays null, and an array or an object
 *     replaces the whole value (a table's rows, a chart's series from a row's
 *     line items), copied as the row has it. Where the value is a table or
 *     sheet cell (the pointer ends in .../rows/I/J) a string the spec takes as
 *     an ISO 8601 date (kiln_iso_to_serial) becomes {"date": ...}, and one
 *     with a time {"datetime": ...}, so it is a real date cell; anywhere else
 *     a date stays the string it is.
 *   - Elsewhere the placeholder is replaced by the value as text: a string as
 *     it is; an integer in decimal; any other number in its shortest exact
 *     form (a whole number below 1e21 without a fraction or exponent, else
 *     C's %g at the fewest digits that read back as the same double: 12,
 *     3.5, 0.1, 1e+21, 1.5e-07; -0 is 0); true/false; null as "". An array or
 *     object inside a longer string is an error.
 *   - A field the row does not have is an error (KILN_E_INVALID_SPEC) whose
 *     pointer is the template's member and whose message names the field and
 *     the data line ("data line 12 has no field 'customer_id'"; "the data
 *     row" when opt->line is 0); with KILN_MERGE_MISSING_EMPTY it is ""
 *     instead (and null where the string was exactly the placeholder).
 *   - "{{" with no closing "}}", or an empty or malformed name, is an error
 *     naming the template's member. Every error of the template is
 *     collected, several in one string too.
 *   - The template is walked to the spec's own depth limit
 *     (KILN_LIMIT_JSON_DEPTH containers, counted as the spec parser counts
 *     them), and a copied array or object may not take the result deeper: a
 *     KILN_E_LIMIT error naming the member.
 *   - What a merge adds is bounded: the text put into strings and the values
 *     copied from the row, each value counting 16 bytes plus a string's (or
 *     a member name's) bytes, at most KILN_MERGE_BYTES_MAX for one spec. A
 *     template that repeats a large field many times is a KILN_E_LIMIT error
 *     naming the member where it passed, not a huge spec.
 *
 * CSV rows hold strings; a field typed from CSV follows the spec's "auto"
 * CSV rule (docs/spec.md, "Column typing"): a plain decimal number of at most
 * 15 digits without a leading zero becomes a number, everything else stays
 * text. data_rows.h reads rows already typed that way (so a CSV "3.50" is
 * the number 3.5, and as text "3.5").
 *
 * Ownership: the template and the row are borrowed (a row that is not an
 * object has no fields); the result is new and shares no value with them.
 * opt may be NULL: missing fields are errors, the line unknown.
 */
#ifndef KILN_BATCH_MERGE_H
#define KILN_BATCH_MERGE_H

#include <jansson.h>
#include <stdint.h>

#include "../common/error.h"

/* The most bytes one merge adds (above): the spec's own size limit. */
#define KILN_MERGE_BYTES_MAX (64u << 20)

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
 * counted as dropped) or an out-of-memory error (KILN_E_NOMEM). errs is
 * appended to, not cleared. */
json_t *kiln_merge_spec(const json_t *tmpl, const json_t *row, const kiln_merge_options *opt,
                        kiln_errors *errs);

/* One string merged as text (the output file name: --name): a new
 * malloc'd string, or NULL with err set to the first error (its pointer is
 * what the caller gives as where, e.g. "--name"). Every placeholder is
 * text here, a whole-string one too; a name that is not UTF-8, and a result
 * holding a NUL byte, are errors. */
char *kiln_merge_text(const char *tmpl, const json_t *row, const kiln_merge_options *opt,
                      const char *where, kiln_error *err);

/* 1 when the template string holds "{{" (a placeholder, or the start of a
 * malformed one, which merging reports), else 0: a string without it merges
 * to itself. */
int kiln_merge_has_placeholder(const char *s);

#endif
