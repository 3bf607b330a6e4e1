/*
 * job.c - a job request checked against the contract, and written back
 * for a `kiln run` child (job.h).
 */
#include "job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "render_step.h"
#include "../common/pointer.h"
#include "../common/utf8.h"
#include "../common/banned.h"

/* parent + "/" + key, the key escaped (RFC 6901: ~0, ~1) and never cut in
 * the middle of a character: a client's member name, however long or odd,
 * makes a pointer every front end can print and put in JSON. */
static void member_pointer(char *out, size_t cap, const char *parent, const char *key)
{
    kiln_ptr p;
    snprintf(p.buf, sizeof p.buf, "%s", parent);
    p.len = strlen(p.buf);
    kiln_ptr_push(&p, key);
    snprintf(out, cap, "%s", p.buf);
    kiln_utf8_cut(out);
}

static void check_code(const json_t *doc, kiln_job_request *out, kiln_errors *errs)
{
    const json_t *code = json_object_get(doc, "code");
    if (!json_is_string(code))
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/code",
                         "code (the program text, a string) is required");
    else if (json_string_length(code) > KILN_JOB_CODE_MAX)
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/code", "code is longer than %u bytes",
                         KILN_JOB_CODE_MAX);
    else {
        out->code = json_string_value(code);
        out->code_len = json_string_length(code);
    }
}

/* A member that may be left out or given as null. */
static const json_t *optional(const json_t *doc, const char *key)
{
    const json_t *v = json_object_get(doc, key);
    return json_is_null(v) ? NULL : v;
}

static void check_language(const json_t *doc, kiln_job_request *out, kiln_errors *errs)
{
    const json_t *lang = optional(doc, "language");
    out->language = KILN_LANG_PYTHON;
    if (!lang)
        return;
    const char *l = json_string_value(lang);
    if (l && strcmp(l, "python") == 0)
        out->language = KILN_LANG_PYTHON;
    else if (l && strcmp(l, "bash") == 0)
        out->language = KILN_LANG_BASH;
    else
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/language",
                         "language must be python or bash");
}

static void check_render(const json_t *doc, kiln_job_request *out, kiln_errors *errs)
{
    const json_t *render = optional(doc, "render");
    out->render = 1; /* a job that saves a document wants the document */
    if (!render)
        return;
    if (json_is_boolean(render))
        out->render = json_is_true(render);
    else
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render", "render must be true or false");
}

static void check_args(const json_t *doc, kiln_job_request *out, kiln_errors *errs)
{
    const json_t *args = optional(doc, "args");
    if (!args)
        return;
    if (!json_is_array(args)) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/args", "args must be an array of strings");
        return;
    }
    if (json_array_size(args) > KILN_JOB_ARGS_MAX) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/args", "at most %d args may be given",
                         KILN_JOB_ARGS_MAX);
        return;
    }
    size_t total = 0, before = errs->count + errs->dropped;
    for (size_t i = 0; i < json_array_size(args); i++) {
        const json_t *a = json_array_get(args, i);
        char pointer[32];
        snprintf(pointer, sizeof pointer, "/args/%zu", i);
        if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer,
                             "each arg must be a string without NUL");
        else if (json_string_length(a) > KILN_JOB_ARG_BYTES)
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer, "an arg may be at most %u bytes",
                             KILN_JOB_ARG_BYTES);
        else
            total += json_string_length(a) + 1;
    }
    if (total > KILN_JOB_ARGS_BYTES)
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/args",
                         "the args may be at most %u bytes together", KILN_JOB_ARGS_BYTES);
    if (errs->count + errs->dropped == before)
        out->args = args;
}

/* One input in path form: {"path": non-empty string, "name": optional string}. */
static int check_input_path(const json_t *in, const char *pointer, kiln_errors *errs)
{
    char member[KILN_POINTER_MAX];
    if (!json_is_object(in)) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer,
                         "each input must be an object {\"path\": ..., \"name\": ...}");
        return -1;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)in, key, value) {
        member_pointer(member, sizeof member, pointer, key);
        int is_path = strcmp(key, "path") == 0;
        if (!is_path && strcmp(key, "name") != 0) {
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, member,
                             "unknown member (an input has \"path\" and \"name\")");
            return -1;
        }
        if (!json_is_string(value) || !json_string_length(value) ||
            strlen(json_string_value(value)) != json_string_length(value)) {
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, member,
                             "%s must be a non-empty string without NUL", key);
            return -1;
        }
    }
    if (!json_object_get(in, "path")) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer, "an input needs a \"path\"");
        return -1;
    }
    return 0;
}

int kiln_job_check_input_names(const char *const *names, const char *const *members, size_t n,
                               kiln_errors *errs)
{
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        const char *name = names[i], *member = members ? members[i] : "";
        char pointer[64];
        snprintf(pointer, sizeof pointer, "/inputs/%zu%s%s", i, member[0] ? "/" : "", member);
        if (!kiln_run_input_name_ok(name)) {
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer,
                             "\"%.255s\" cannot be a file's name in /mnt/data (one file name, "
                             "not '.', '..' or '.kiln', under 256 bytes)%s",
                             name,
                             strcmp(member, "path") == 0 ? ": give the input a \"name\"" : "");
            ok = 0;
            continue;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(names[j], name) == 0) {
                kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer,
                                 "\"%.255s\" is the name of /inputs/%zu too: two inputs cannot "
                                 "share a name in /mnt/data",
                                 name, j);
                ok = 0;
                break;
            }
        }
    }
    return ok ? 0 : -1;
}

/* The names inputs in path form get: "name", else the path's last
 * component. */
static int check_path_input_names(const json_t *inputs, kiln_errors *errs)
{
    size_t n = json_array_size(inputs);
    const char **names = calloc(n + 1, sizeof *names), **members = calloc(n + 1, sizeof *members);
    int rc = -1;
    if (!names || !members) {
        kiln_errors_addf(errs, KILN_E_NOMEM, "", "out of memory");
        goto release;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *in = json_array_get(inputs, i);
        const char *name = json_string_value(json_object_get(in, "name"));
        names[i] = kiln_run_input_name(json_string_value(json_object_get(in, "path")), name);
        members[i] = name ? "name" : "path";
    }
    rc = kiln_job_check_input_names(names, members, n, errs);
release:
    free(names);
    free(members);
    return rc;
}

static void check_inputs(const json_t *doc, kiln_job_input_form form, kiln_job_request *out,
                         kiln_errors *errs)
{
    const json_t *inputs = optional(doc, "inputs");
    const char *what = form == KILN_JOB_INPUT_IDS ? "file ids" : "files";
    if (!inputs)
        return;
    if (!json_is_array(inputs)) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/inputs", "inputs must be an array of %s",
                         what);
        return;
    }
    if (json_array_size(inputs) > KILN_JOB_INPUTS_MAX) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/inputs", "at most %d inputs may be given",
                         KILN_JOB_INPUTS_MAX);
        return;
    }
    int ok = 1;
    for (size_t i = 0; i < json_array_size(inputs); i++) {
        const json_t *in = json_array_get(inputs, i);
        char pointer[32];
        snprintf(pointer, sizeof pointer, "/inputs/%zu", i);
        if (form == KILN_JOB_INPUT_PATHS) {
            ok &= check_input_path(in, pointer, errs) == 0;
        } else if (!json_is_string(in)) {
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer,
                             "each input must be a file id (a string)");
            ok = 0;
        }
    }
    if (ok && form == KILN_JOB_INPUT_PATHS)
        ok = check_path_input_names(inputs, errs) == 0;
    if (ok)
        out->inputs = inputs;
}

static void check_limit(const kiln_limit_def *d, const json_t *value, const char *pointer,
                        const kiln_run_limits *max, kiln_run_limits *out, kiln_errors *errs)
{
    double v = json_number_value(value);
    char why[96];
    if (!json_is_number(value) || !(v > 0) || !isfinite(v)) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer, "%s must be a positive number",
                         d->member);
        return;
    }
    if (kiln_limit_check(d, v, why, sizeof why) != 0) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer, "%s %s", d->member, why);
        return;
    }
    if (max && v > kiln_limit_get(max, d)) {
        double most = kiln_limit_get(max, d);
        char shown[32];
        kiln_limit_format(d, most, shown, sizeof shown);
        kiln_error e;
        kiln_error_limit(&e, KILN_E_LIMIT, pointer, most, v,
                         "%s may be at most %s on this server", d->member, shown);
        kiln_errors_add(errs, &e);
        return;
    }
    kiln_limit_set(out, d, v);
}

static void check_limits(const json_t *doc, const kiln_job_parse_options *opt,
                         kiln_job_request *out, kiln_errors *errs)
{
    if (opt->unset) {
        out->limits = *opt->unset;
        kiln_job_limits_fill(&out->limits);
    } else {
        kiln_job_limits_default(&out->limits);
    }
    const json_t *limits = optional(doc, "limits");
    if (!limits)
        return;
    if (!json_is_object(limits)) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/limits", "limits must be an object");
        return;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)limits, key, value) {
        char pointer[KILN_POINTER_MAX];
        member_pointer(pointer, sizeof pointer, "/limits", key);
        const kiln_limit_def *d = kiln_limit_by_member(key);
        if (!d) {
            char names[512];
            size_t o = 0;
            for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT && o < sizeof names; i++)
                o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "",
                                      kiln_limit_defs[i].member);
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer, "unknown limit (%s)", names);
            continue;
        }
        check_limit(d, value, pointer, opt->max, &out->limits, errs);
    }
}

kiln_status kiln_job_request_parse(const json_t *doc, const kiln_job_parse_options *opt,
                                   kiln_job_request *out, kiln_errors *errs)
{
    static const char *const members[] = {"code",   "language", "args", "inputs",
                                          "limits", "render",   NULL};
    memset(out, 0, sizeof *out);
    kiln_errors_init(errs);
    if (!json_is_object(doc))
        return kiln_errors_addf(errs, KILN_E_INVALID_JOB, "", "a job request is a JSON object");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)doc, key, value) {
        size_t i = 0;
        while (members[i] && strcmp(members[i], key) != 0)
            i++;
        if (!members[i]) {
            char pointer[KILN_POINTER_MAX];
            member_pointer(pointer, sizeof pointer, "", key);
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer,
                             "unknown member (a job request has code, language, args, inputs, "
                             "limits and render)");
        }
    }
    check_code(doc, out, errs);
    check_language(doc, out, errs);
    check_render(doc, out, errs);
    check_args(doc, out, errs);
    check_inputs(doc, opt->inputs, out, errs);
    check_limits(doc, opt, out, errs);
    if (errs->count || errs->dropped)
        return errs->count ? errs->items[0].code : KILN_E_INVALID_JOB;
    return KILN_E_OK;
}

json_t *kiln_job_request_json(const kiln_job_request *rq, const char *const *paths,
                              const char *const *names, size_t input_count)
{
    json_t *inputs = json_array();
    for (size_t i = 0; inputs && i < input_count; i++) {
        json_t *in = names && names[i]
                         ? json_pack("{s:s, s:s}", "path", paths[i], "name", names[i])
                         : json_pack("{s:s}", "path", paths[i]);
        if (json_array_append_new(inputs, in) != 0) {
            json_decref(inputs);
            inputs = NULL;
        }
    }
    json_t *args = rq->args ? json_deep_copy(rq->args) : json_array();
    return json_pack("{s:s%, s:s, s:o, s:o, s:o, s:b}", "code", rq->code, rq->code_len,
                     "language", rq->language == KILN_LANG_BASH ? "bash" : "python", "args", args,
                     "inputs", inputs, "limits", kiln_job_limits_json(&rq->limits), "render",
                     rq->render);
}

/* idle_timeout and lifetime: seconds above 0, at most 30 days. */
static double check_session_seconds(const json_t *doc, const char *member, kiln_errors *errs)
{
    const json_t *v = optional(doc, member);
    if (!v)
        return 0;
    double d = json_number_value(v);
    char pointer[64];
    snprintf(pointer, sizeof pointer, "/%s", member);
    if (!json_is_number(v) || !(d > 0) || !isfinite(d) || d > KILN_SESSION_SECONDS_MAX) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer,
                         "%s must be a number of seconds above 0 and at most 30 days", member);
        return 0;
    }
    return d;
}

kiln_status kiln_session_request_parse(const json_t *doc, const kiln_job_parse_options *opt,
                                       kiln_session_request *out, kiln_errors *errs)
{
    static const char *const members[] = {"language",     "inputs",   "limits", "render",
                                          "idle_timeout", "lifetime", NULL};
    memset(out, 0, sizeof *out);
    kiln_errors_init(errs);
    if (!json_is_object(doc))
        return kiln_errors_addf(errs, KILN_E_INVALID_JOB, "",
                                "a session request is a JSON object");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)doc, key, value) {
        size_t i = 0;
        while (members[i] && strcmp(members[i], key) != 0)
            i++;
        if (!members[i]) {
            char pointer[KILN_POINTER_MAX];
            member_pointer(pointer, sizeof pointer, "", key);
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, pointer,
                             "unknown member (a session request has language, inputs, limits, "
                             "render, idle_timeout and lifetime)");
        }
    }
    /* The members a job request has are checked as a job request's. */
    kiln_job_request job;
    memset(&job, 0, sizeof job);
    check_language(doc, &job, errs);
    check_render(doc, &job, errs);
    check_inputs(doc, opt->inputs, &job, errs);
    check_limits(doc, opt, &job, errs);
    out->language = job.language;
    out->render = job.render;
    out->inputs = job.inputs;
    out->limits = job.limits;
    out->idle_seconds = check_session_seconds(doc, "idle_timeout", errs);
    out->lifetime_seconds = check_session_seconds(doc, "lifetime", errs);
    if (errs->count || errs->dropped)
        return errs->count ? errs->items[0].code : KILN_E_INVALID_JOB;
    return KILN_E_OK;
}

json_t *kiln_session_request_json(const kiln_session_request *rq, const char *const *paths,
                                  const char *const *names, size_t input_count)
{
    kiln_job_request job;
    memset(&job, 0, sizeof job);
    job.code = "";
    job.language = rq->language;
    job.limits = rq->limits;
    job.render = rq->render;
    json_t *doc = kiln_job_request_json(&job, paths, names, input_count);
    if (!doc)
        return NULL;
    json_object_del(doc, "code");
    json_object_del(doc, "args");
    if (rq->idle_seconds > 0)
        json_object_set_new(doc, "idle_timeout", json_real(rq->idle_seconds));
    if (rq->lifetime_seconds > 0)
        json_object_set_new(doc, "lifetime", json_real(rq->lifetime_seconds));
    return doc;
}

void kiln_job_run_options(const kiln_job_request *rq, kiln_run_options *opt,
                          kiln_run_input *inputs, const char **args)
{
    opt->language = rq->language;
    opt->code = rq->code;
    opt->code_len = rq->code_len;
    opt->render = rq->render ? &kiln_render_step : NULL;
    opt->limits = rq->limits;
    size_t argn = json_array_size(rq->args);
    for (size_t i = 0; i < argn; i++)
        args[i] = json_string_value(json_array_get(rq->args, i));
    args[argn] = NULL;
    opt->args = args;
    size_t n = json_array_size(rq->inputs);
    for (size_t i = 0; i < n; i++) {
        const json_t *in = json_array_get(rq->inputs, i);
        inputs[i].host_path = json_string_value(json_object_get(in, "path"));
        inputs[i].name = json_string_value(json_object_get(in, "name"));
    }
    opt->inputs = inputs;
    opt->input_count = n;
}
