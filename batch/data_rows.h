/*
 * data_rows.h - the rows of a mail merge's --data file, one at a time:
 * CSV (RFC 4180, UTF-8, comma separated, a header record naming the
 * fields) or JSON Lines (one object per line; blank lines skipped).
 *
 * Each row is a JSON object. A CSV row's fields are typed by the spec's
 * "auto" rule (merge.h); an empty CSV field is "" (a present, empty field).
 * A CSV record with more fields than the header is an error; with fewer, the
 * missing ones are absent (so {{field}} for them is "missing"). Duplicate or
 * empty header names are an error.
 *
 * Memory is bounded by one record: KILN_DATA_ROW_BYTES per line/record
 * (a longer one is an error naming its line), KILN_DATA_FIELDS_MAX fields.
 * A file that is not UTF-8, a JSON Lines line that is not an object, and a
 * CSV quote left open are errors naming the line (KILN_E_INPUT, the
 * pointer empty, the message "FILE:LINE: ...").
 */
#ifndef KILN_BATCH_DATA_ROWS_H
#define KILN_BATCH_DATA_ROWS_H

#include <jansson.h>
#include <stdint.h>

#include "../common/error.h"

#define KILN_DATA_ROW_BYTES (16u << 20)
#define KILN_DATA_FIELDS_MAX 4096

typedef enum { KILN_DATA_CSV, KILN_DATA_JSONL } kiln_data_format;

typedef struct kiln_data_rows kiln_data_rows;

/* Open path; the format from its extension (.csv, .jsonl / .ndjson), else
 * err. fd >= 0: read that descriptor instead (path then only names it in
 * messages and gives the format); it is not closed by kiln_data_rows_free. */
kiln_status kiln_data_rows_open(const char *path, int fd, kiln_data_rows **out, kiln_error *err);

/* The next row: 1 with *row a new reference and *line the 1-based line it
 * started on; 0 at the end; -1 with err set. */
int kiln_data_rows_next(kiln_data_rows *r, json_t **row, uint64_t *line, kiln_error *err);

void kiln_data_rows_free(kiln_data_rows *r);

#endif
