/*
 * fuzz_job.c - job requests (contract/job.c), the body of POST /v1/runs
 * and of `kiln run --request`, on arbitrary bytes.
 *
 * For every input jansson parses:
 *   - kiln_job_request_parse, in both input forms (file ids, host paths),
 *     never crashes, and says OK exactly when it reports no error; each
 *     error has a pointer and a message;
 *   - an accepted request, written back for a `kiln run` child
 *     (kiln_job_request_json, inputs as paths), parses again as the same
 *     job: code, language, args, render and every limit.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "contract/job.h"
#include "contract/limits.h"
#include "../common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_errors(kiln_status st, const kiln_errors *errs)
{
    if ((st == KILN_E_OK) != (errs->count == 0 && errs->dropped == 0))
        abort();
    for (size_t i = 0; i < errs->count; i++)
        if (!errs->items[i].message[0] ||
            (errs->items[i].pointer[0] && errs->items[i].pointer[0] != '/'))
            abort();
}

/* The same job, written back and read again as kiln run reads it: file ids
 * become the descriptors the service hands its child, as runs_api.c does,
 * each with a name of its own (the service has checked the stored names
 * with kiln_job_check_input_names by then). */
static void round_trip(const kiln_job_request *rq)
{
    size_t n = json_array_size(rq->inputs);
    const char **paths = calloc(n + 1, sizeof *paths);
    const char **names = calloc(n + 1, sizeof *names);
    char(*own)[32] = calloc(n + 1, sizeof *own);
    if (!paths || !names || !own)
        abort();
    for (size_t i = 0; i < n; i++) {
        const json_t *in = json_array_get(rq->inputs, i);
        paths[i] = json_is_string(in) ? "/proc/self/fd/4"
                                      : json_string_value(json_object_get(in, "path"));
        snprintf(own[i], sizeof own[i], "input-%zu", i);
        names[i] = json_is_string(in) ? own[i] : json_string_value(json_object_get(in, "name"));
    }
    json_t *doc = kiln_job_request_json(rq, paths, names, n);
    if (!doc)
        abort();
    kiln_job_parse_options opt = {.inputs = KILN_JOB_INPUT_PATHS};
    kiln_job_request back;
    kiln_errors *errs = malloc(sizeof *errs);
    if (!errs || kiln_job_request_parse(doc, &opt, &back, errs) != KILN_E_OK)
        abort();
    if (back.code_len != rq->code_len || memcmp(back.code, rq->code, rq->code_len) != 0 ||
        back.language != rq->language || back.render != rq->render ||
        memcmp(&back.limits, &rq->limits, sizeof rq->limits) != 0 ||
        json_array_size(back.args) != json_array_size(rq->args) ||
        json_array_size(back.inputs) != n)
        abort();
    for (size_t i = 0; i < json_array_size(rq->args); i++)
        if (!json_equal(json_array_get(back.args, i), json_array_get(rq->args, i)))
            abort();
    free(errs);
    json_decref(doc);
    free(paths);
    free(names);
    free(own);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!doc)
        return 0;
    kiln_run_limits max;
    kiln_job_limits_default(&max);
    kiln_errors *errs = malloc(sizeof *errs);
    if (!errs)
        abort();
    for (int form = 0; form < 2; form++) {
        kiln_job_parse_options opt = {
            .inputs = form ? KILN_JOB_INPUT_PATHS : KILN_JOB_INPUT_IDS,
            .max = form ? NULL : &max,
            .unset = form ? NULL : &max,
        };
        kiln_job_request rq;
        kiln_status st = kiln_job_request_parse(doc, &opt, &rq, errs);
        check_errors(st, errs);
        if (st == KILN_E_OK)
            round_trip(&rq);
    }
    free(errs);
    json_decref(doc);
    return 0;
}
