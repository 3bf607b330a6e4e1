/*
 * fuzz_merge.c - the mail merge (batch/merge.c) and its data rows
 * (batch/data_rows.c) on arbitrary bytes.
 *
 * The input is a template and a row, cut at the first NUL byte (no NUL: all
 * template, the row {}), each read by jansson when it can be:
 *   - kiln_merge_spec, in both missing-field modes, never crashes, returns a
 *     tree exactly when it reports no error, each error with a message and a
 *     pointer that is empty or starts with '/'; a tree it returns can be
 *     written as JSON (every string it made is UTF-8); a template with no
 *     "{{" in any string merges to itself (or is too deep);
 *   - kiln_merge_text on the template's bytes: a string exactly when no
 *     error, and the text itself when it holds no "{{".
 * Then the whole input is a --data file, through a memfd, as CSV and as
 * JSON Lines: every row an object, the lines strictly increasing, every
 * error "NAME:LINE: ..." of the data codes, the reading ending; the first
 * rows are merged into the template too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "batch/data_rows.h"
#include "batch/merge.h"
#include "../common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The rows of each data file merged into the template (the rest only read). */
#define MERGED_ROWS 4

static kiln_errors errs;

static int has_open(const json_t *v)
{
    if (json_is_string(v))
        return memmem(json_string_value(v), json_string_length(v), "{{", 2) != NULL;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (has_open(json_array_get(v, i)))
                return 1;
        return 0;
    }
    const char *key;
    json_t *child;
    json_object_foreach((json_t *)v, key, child) {
        if (has_open(child))
            return 1;
    }
    return 0;
}

static void check_merge(const json_t *tmpl, const json_t *row, kiln_merge_missing missing)
{
    kiln_merge_options opt = {missing, 7};
    kiln_errors_init(&errs);
    json_t *out = kiln_merge_spec(tmpl, row, &opt, &errs);
    if ((out != NULL) != (errs.count == 0 && errs.dropped == 0))
        abort();
    int limit = 0;
    for (size_t i = 0; i < errs.count; i++) {
        const kiln_error *e = &errs.items[i];
        if (!e->message[0] || (e->pointer[0] && e->pointer[0] != '/'))
            abort();
        if (e->code != KILN_E_INVALID_SPEC && e->code != KILN_E_LIMIT && e->code != KILN_E_NOMEM)
            abort();
        /* (A malformed placeholder's message may quote any text.) */
        if (missing == KILN_MERGE_MISSING_EMPTY &&
            strncmp(e->message, "data line 7 has no field", 24) == 0)
            abort();
        limit |= e->code == KILN_E_LIMIT;
    }
    if (!has_open(tmpl) && !(out ? json_equal(out, tmpl) : limit))
        abort();
    if (out) {
        char *text = json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!text)
            abort();
        free(text);
    }
    json_decref(out);
}

static void check_text(const char *tmpl, const json_t *row)
{
    kiln_merge_options opt = {KILN_MERGE_MISSING_ERROR, 1};
    kiln_error err;
    memset(&err, 0, sizeof err);
    char *out = kiln_merge_text(tmpl, row, &opt, "--name", &err);
    if (!out && (!err.message[0] || err.code == KILN_E_OK))
        abort();
    if (!out && err.code != KILN_E_NOMEM && strcmp(err.pointer, "--name") != 0)
        abort();
    if (!kiln_merge_has_placeholder(tmpl) && (!out || strcmp(out, tmpl) != 0))
        abort();
    free(out);
}

static void check_rows(const uint8_t *data, size_t size, const char *name, const json_t *tmpl)
{
    int fd = memfd_create("fuzz_merge", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0)
        abort();
    kiln_data_rows *r;
    kiln_error err;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s:", name);
    if (kiln_data_rows_open(name, fd, &r, &err) != KILN_E_OK) {
        if (err.code != KILN_E_INPUT && err.code != KILN_E_LIMIT && err.code != KILN_E_NOMEM)
            abort();
        if (err.code != KILN_E_NOMEM && strncmp(err.message, prefix, strlen(prefix)) != 0)
            abort();
        close(fd);
        return;
    }
    uint64_t last = 0;
    size_t calls = 0, merged = 0;
    for (;;) {
        json_t *row;
        uint64_t line;
        int rc = kiln_data_rows_next(r, &row, &line, &err);
        /* Each call but the last reads at least one byte. */
        if (++calls > size + 2)
            abort();
        if (rc == 0)
            break;
        if (line <= last)
            abort();
        last = line;
        if (rc < 0) {
            if (row || (err.code != KILN_E_INPUT && err.code != KILN_E_LIMIT &&
                        err.code != KILN_E_NOMEM))
                abort();
            if (err.code != KILN_E_NOMEM && strncmp(err.message, prefix, strlen(prefix)) != 0)
                abort();
            continue;
        }
        if (!json_is_object(row))
            abort();
        if (tmpl && merged++ < MERGED_ROWS)
            check_merge(tmpl, row, KILN_MERGE_MISSING_ERROR);
        json_decref(row);
    }
    kiln_data_rows_free(r);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t tlen = nul ? (size_t)(nul - data) : size;
    json_t *tmpl = json_loadb((const char *)data, tlen, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    json_t *row = nul ? json_loadb((const char *)nul + 1, size - tlen - 1,
                                   JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)
                      : json_object();
    if (row) {
        if (tmpl) {
            check_merge(tmpl, row, KILN_MERGE_MISSING_ERROR);
            check_merge(tmpl, row, KILN_MERGE_MISSING_EMPTY);
        }
        char *text = malloc(tlen + 1);
        if (!text)
            abort();
        memcpy(text, data, tlen);
        text[tlen] = '\0';
        check_text(text, row);
        free(text);
    }
    check_rows(data, size, "fuzz.csv", tmpl);
    check_rows(data, size, "fuzz.jsonl", tmpl);
    json_decref(tmpl);
    json_decref(row);
    return 0;
}
