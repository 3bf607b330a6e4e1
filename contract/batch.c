/*
 * batch.c - a batch job checked against the contract (batch.h).
 */
#include "batch.h"

#include <stdio.h>
#include <string.h>

#include "../common/pointer.h"
#include "../common/utf8.h"
#include "../common/banned.h"

int kiln_batch_name_ok(const char *name, size_t max)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > max || name[0] == '.' || !kiln_utf8_valid(name, n))
        return 0;
    /* The journal's own name is never a job's file. */
    if (strcmp(name, "results.jsonl") == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '/' || c < 0x20 || c == 0x7f)
            return 0;
    }
    return 1;
}

/* Members of an object other than the ones allowed: each is an error. */
static void unknown_members(const json_t *obj, const char *at, const char *const *allowed,
                            kiln_errors *errs)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        int known = 0;
        for (const char *const *a = allowed; *a; a++)
            known |= strcmp(*a, key) == 0;
        if (known)
            continue;
        kiln_ptr p;
        snprintf(p.buf, sizeof p.buf, "%s", at);
        p.len = strlen(p.buf);
        kiln_ptr_push(&p, key);
        kiln_utf8_cut(p.buf);
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, p.buf, "unknown member '%.100s'", key);
    }
}

static void check_id(const json_t *doc, kiln_batch_job *out, kiln_errors *errs)
{
    const json_t *id = json_object_get(doc, "id");
    out->id = json_string_value(id);
    if (!id)
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "",
                         "id (the job's name, a string) is required");
    else if (!out->id || !kiln_batch_name_ok(out->id, KILN_BATCH_ID_MAX))
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/id",
                         "id must be a string of 1 to %d bytes of UTF-8 without '/' or control "
                         "characters, not starting with '.' and not \"results.jsonl\"",
                         KILN_BATCH_ID_MAX);
}

static void check_render(const json_t *render, kiln_batch_job *out, kiln_errors *errs)
{
    static const char *const allowed[] = {"format", "spec", "spec_file", "filename", NULL};
    if (!json_is_object(render)) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render",
                         "render must be an object: {format, spec or spec_file, filename}");
        return;
    }
    unknown_members(render, "/render", allowed, errs);
    const json_t *format = json_object_get(render, "format");
    const json_t *filename = json_object_get(render, "filename");
    const char *name = json_string_value(filename);
    int have_format = 0;
    if (format) {
        if (!json_is_string(format) ||
            kiln_format_from_name(json_string_value(format), &out->format) != 0)
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render/format",
                             "format must be xlsx, docx, pdf or pptx");
        else
            have_format = 1;
    }
    if (filename && (!name || !kiln_batch_name_ok(name, KILN_BATCH_NAME_MAX))) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render/filename",
                         "filename must be a file name of 1 to %d bytes of UTF-8 without '/' or "
                         "control characters, not starting with '.'",
                         KILN_BATCH_NAME_MAX);
        name = NULL;
    }
    if (name) {
        kiln_format by_name;
        if (kiln_format_from_path(name, &by_name) != 0)
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render/filename",
                             "filename must end in .xlsx, .docx, .pdf or .pptx");
        else if (have_format && by_name != out->format)
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render/filename",
                             "filename '%.100s' does not end in %s, the extension of format %s",
                             name, kiln_writer_for(out->format)->extension,
                             kiln_writer_for(out->format)->name);
        else if (!have_format) {
            out->format = by_name;
            have_format = 1;
        }
        snprintf(out->filename, sizeof out->filename, "%s", name);
    } else if (!filename && !format) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render",
                         "render needs a format (xlsx, docx, pdf, pptx) or a filename that "
                         "ends in one");
    } else if (have_format && out->id) {
        const char *ext = kiln_writer_for(out->format)->extension;
        if (strlen(out->id) + strlen(ext) > KILN_BATCH_NAME_MAX)
            kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render",
                             "the id is too long to name the file: give a filename");
        else if (snprintf(out->filename, sizeof out->filename, "%s%s", out->id, ext) >=
                 (int)sizeof out->filename)
            out->filename[0] = '\0'; /* cannot be: the length was checked */
    }
    const json_t *spec = json_object_get(render, "spec");
    const json_t *spec_file = json_object_get(render, "spec_file");
    if (spec && spec_file)
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render",
                         "give the spec inline (spec) or as a file (spec_file), not both");
    else if (spec && !json_is_object(spec))
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render/spec",
                         "spec must be an object (a Kiln document spec)");
    else if (spec_file && (!json_is_string(spec_file) || json_string_length(spec_file) == 0))
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render/spec_file",
                         "spec_file must be a path relative to the batch's directory");
    else if (!spec && !spec_file)
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "/render",
                         "render needs the spec (spec) or the path of one (spec_file)");
    out->spec = spec;
    out->spec_file = json_string_value(spec_file);
}

/* The run request's errors, moved under /run. */
static void check_run(const json_t *run, const kiln_batch_job_options *opt, kiln_batch_job *out,
                      kiln_errors *errs)
{
    kiln_errors inner;
    kiln_errors_init(&inner);
    kiln_job_parse_options popt = {.inputs = opt->inputs, .max = opt->max, .unset = opt->unset};
    out->run_doc = run;
    if (kiln_job_request_parse(run, &popt, &out->run, &inner) == KILN_E_OK)
        return;
    for (size_t i = 0; i < inner.count; i++) {
        kiln_error e = inner.items[i];
        char moved[KILN_POINTER_MAX];
        int n = snprintf(moved, sizeof moved, "/run%s", e.pointer);
        if (n >= (int)sizeof moved)
            kiln_utf8_cut(moved);
        snprintf(e.pointer, sizeof e.pointer, "%s", moved);
        kiln_errors_add(errs, &e);
    }
    errs->dropped += inner.dropped;
}

kiln_status kiln_batch_job_parse(const json_t *doc, const kiln_batch_job_options *opt,
                                 kiln_batch_job *out, kiln_errors *errs)
{
    static const char *const allowed[] = {"id", "render", "run", NULL};
    size_t before = errs->count + errs->dropped;
    memset(out, 0, sizeof *out);
    if (!json_is_object(doc)) {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "",
                         "a job is a JSON object: {\"id\": ..., \"render\": {...}} or "
                         "{\"id\": ..., \"run\": {...}}");
        return KILN_E_INVALID_JOB;
    }
    check_id(doc, out, errs);
    unknown_members(doc, "", allowed, errs);
    const json_t *render = json_object_get(doc, "render");
    const json_t *run = json_object_get(doc, "run");
    if (render && run)
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "", "a job is a render or a run, not both");
    else if (render) {
        out->kind = KILN_BATCH_RENDER;
        check_render(render, out, errs);
    } else if (run) {
        out->kind = KILN_BATCH_RUN;
        check_run(run, opt, out, errs);
    } else {
        kiln_errors_addf(errs, KILN_E_INVALID_JOB, "",
                         "a job needs render (a document to make) or run (code to run)");
    }
    if (errs->count + errs->dropped == before)
        return KILN_E_OK;
    return errs->count ? errs->items[errs->count > before ? before : 0].code : KILN_E_INVALID_JOB;
}
