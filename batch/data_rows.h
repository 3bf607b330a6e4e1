/*
 * data_rows.h - the rows of a mail merge's --data file, one at a time:
 * CSV (RFC 4180, UTF-8, comma separated, a header record naming the
 * fields) or JSON Lines (one object per line; blank lines skipped).
 *
 * Each row is a JSON object. A CSV row's fields are typed by the spec's
 * "auto" rule (merge.h): -?DIGITS(.DIGITS)? of at most 15 digits, without a
 * leading zero in the whole part, is a number (an integer when it has no
 * fraction), anything else a string; an empty CSV field is "" (a present,
 * empty field). A CSV record with more fields than the header is an error;
 * with fewer, the missing ones are absent (so {{field}} for them is
 * "missing"). Duplicate or empty header names are an error, and so is a
 * file with no header record at all. A field may be quoted ("a, b"), a quote
 * inside one written twice (""); a line break inside quotes is kept (CR LF
 * read as LF); records end with CR LF, LF or CR; blank lines (outside
 * quotes) are skipped; a UTF-8 byte order mark at the start is skipped in
 * either format.
 *
 * Lines are counted as the file has them: a line break inside a quoted
 * field advances the count, and a row's line is where its record started.
 *
 * Memory is bounded by one record: KILN_DATA_ROW_BYTES per line/record
 * (counted as the file's bytes, line end aside; a longer one is an error
 * naming its line), KILN_DATA_FIELDS_MAX fields: both KILN_E_LIMIT. A file
 * that is not UTF-8, a NUL byte, a JSON Lines line that is not JSON or not
 * an object, a stray quote in a CSV field, a CSV record with more fields
 * than the header and a CSV quote left open are errors naming the line
 * (KILN_E_INPUT, the pointer empty, the message "FILE:LINE: ...").
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

/* Open path; the format from its extension (.csv, .jsonl / .ndjson, in
 * any case), else err (KILN_E_USAGE). fd >= 0: read that descriptor
 * instead (path then only names it in messages and gives the format); it
 * is not closed by kiln_data_rows_free. A CSV file's header is read here,
 * so its errors come from here. */
kiln_status kiln_data_rows_open(const char *path, int fd, kiln_data_rows **out, kiln_error *err);

/* The next row: 1 with *row a new reference and *line the 1-based line it
 * started on; 0 at the end; -1 with err set (and *line the error's record).
 * After an error in one record the next call goes on with the record after
 * it, so a caller may report the row and continue; after one that ends the
 * file (a read error, a quote open at the end) the next call returns 0. */
int kiln_data_rows_next(kiln_data_rows *r, json_t **row, uint64_t *line, kiln_error *err);

/* The format open chose. */
kiln_data_format kiln_data_rows_format(const kiln_data_rows *r);

void kiln_data_rows_free(kiln_data_rows *r);

#endif
