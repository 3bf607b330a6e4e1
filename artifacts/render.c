/*
 * render.c - the format table and the one render entry point (render.h).
 *
 * Adding a format is adding a row here and its write function in
 * writers.c; the front ends pick it up by name and extension without
 * changes.
 */
#include "render.h"

#include <string.h>
#include <strings.h>
#include "../common/banned.h"

static const kiln_writer writers[KILN_FORMAT__COUNT] = {
    {KILN_FORMAT_XLSX, "xlsx", ".xlsx",
     "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {KILN_FORMAT_DOCX, "docx", ".docx",
     "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    {KILN_FORMAT_PDF, "pdf", ".pdf", "application/pdf"},
    {KILN_FORMAT_PPTX, "pptx", ".pptx",
     "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
};

const kiln_writer *kiln_writer_for(kiln_format format)
{
    if ((unsigned)format >= KILN_FORMAT__COUNT)
        return NULL;
    return &writers[format];
}

int kiln_format_from_name(const char *name, kiln_format *out)
{
    if (name[0] == '.')
        name++;
    for (int i = 0; i < KILN_FORMAT__COUNT; i++) {
        if (strcasecmp(writers[i].name, name) == 0) {
            *out = writers[i].format;
            return 0;
        }
    }
    return -1;
}

int kiln_format_from_path(const char *path, kiln_format *out)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    if (!dot)
        return -1;
    return kiln_format_from_name(dot, out);
}

kiln_status kiln_render_to_output(const kiln_doc *doc, kiln_format format, kiln_output *out,
                                  const kiln_render_options *opt, kiln_render_result *result,
                                  kiln_error *err)
{
    static const kiln_render_options defaults = {.max_bytes = 0};
    kiln_error load_err;
    kiln_status st;
    if (!opt)
        opt = &defaults;
    kiln_write_fn write_fn = kiln_writer_write_fn(format, err ? err : &load_err);
    if (!write_fn) {
        st = (err ? err : &load_err)->code;
        goto fail_abort;
    }
    kiln_render_result report;
    memset(&report, 0, sizeof report);
    st = write_fn(doc, out, opt, &report, err);
    if (st != KILN_E_OK)
        goto fail_abort;
    if (result) {
        *result = report;
        result->format = format;
        result->bytes = kiln_output_size(out);
    }
    return KILN_E_OK;

fail_abort:
    kiln_output_abort(out);
    return st;
}

kiln_status kiln_render(const kiln_doc *doc, kiln_format format, const char *out_path,
                        const kiln_render_options *opt, kiln_render_result *result,
                        kiln_error *err)
{
    kiln_output out;
    uint64_t bytes = 0;
    if (!kiln_writer_for(format))
        return kiln_error_set(err, KILN_E_USAGE, NULL, "unknown output format");
    kiln_status st = kiln_output_open(&out, out_path, opt ? opt->max_bytes : 0, err);
    if (st != KILN_E_OK)
        return st;
    out.defer_sync = opt ? opt->defer_sync : 0;
    kiln_render_result report;
    st = kiln_render_to_output(doc, format, &out, opt, &report, err);
    if (st != KILN_E_OK)
        return st; /* the output is aborted */
    st = kiln_output_commit(&out, &bytes, err);
    if (st != KILN_E_OK)
        return st; /* commit cleans up after itself */
    if (result) {
        *result = report;
        result->bytes = bytes;
    }
    return KILN_E_OK;
}
