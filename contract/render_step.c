/*
 * render_step.c - a saved spec made into a document, for the runner
 * (render_step.h).
 */
#include "render_step.h"

#include <string.h>

#include "report.h"
#include "../artifacts/render.h"
#include "../common/banned.h"

static int prepare(void *arg, const char *out_name, json_t *entry, json_t **error)
{
    (void)arg;
    kiln_format format;
    kiln_error err;
    memset(&err, 0, sizeof err);
    if (kiln_format_from_path(out_name, &format) != 0) {
        kiln_error_set(&err, KILN_E_USAGE, "",
                       "the output name must end in .xlsx, .docx, .pdf or .pptx");
        *error = kiln_error_json(&err);
        return -1;
    }
    json_object_set_new(entry, "format", json_string(kiln_writer_for(format)->name));
    /* Loaded now: the render sandbox's root holds no Kiln files. */
    if (!kiln_writer_write_fn(format, &err)) {
        *error = kiln_error_json(&err);
        return -1;
    }
    return 0;
}

static json_t *render(void *arg, const char *spec_path, const char *base_dir,
                      const char *out_path, uint64_t max_bytes, const char *tmp_dir)
{
    (void)arg;
    kiln_parse_options popt;
    kiln_parse_options_init(&popt);
    popt.base_dir = base_dir;
    kiln_errors errs;
    kiln_errors_init(&errs);
    kiln_doc *doc = NULL;
    kiln_format format;
    if (kiln_format_from_path(out_path, &format) != 0)
        kiln_errors_addf(&errs, KILN_E_USAGE, "", "the output name has no document format");
    else if (kiln_doc_load(spec_path, &popt, &doc, &errs) == KILN_E_OK) {
        kiln_render_options ropt = {.max_bytes = max_bytes, .tmp_dir = tmp_dir};
        kiln_render_result rr;
        kiln_error err;
        memset(&rr, 0, sizeof rr);
        memset(&err, 0, sizeof err);
        kiln_status st = kiln_render(doc, format, out_path, &ropt, &rr, &err);
        kiln_doc_free(doc);
        if (st == KILN_E_OK)
            return kiln_render_outcome_json(&rr, NULL, NULL);
        kiln_errors_add(&errs, &err);
    }
    return kiln_render_outcome_json(NULL, &errs, NULL);
}

const kiln_run_render_step kiln_render_step = {prepare, render, NULL};
