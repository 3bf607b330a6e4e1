/*
 * fuzz_common.h - what the fuzz targets share: small limits, so one input
 * cannot spend the whole run on a legitimately huge document, and the base
 * directory relative paths (CSV, images) resolve against.
 *
 * The base directory is samples/ (override with $KILN_FUZZ_BASE_DIR). The
 * parser only ever reads there; nothing is written into it.
 */
#ifndef KILN_FUZZ_COMMON_H
#define KILN_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifacts/render.h"
#include "artifacts/spec/spec.h"

static inline void fuzz_parse_options(kiln_parse_options *opt)
{
    kiln_parse_options_init(opt);
    const char *base = getenv("KILN_FUZZ_BASE_DIR");
    opt->base_dir = base && *base ? base : "samples";
    opt->scan_data_files = 0;
    opt->limits.spec_bytes = 1u << 20;
    opt->limits.json_depth = 32;
    opt->limits.sheets = 8;
    opt->limits.rows = 2000;
    opt->limits.columns = 64;
    opt->limits.cell_chars = 2048;
    opt->limits.string_bytes = 4u << 20;
    opt->limits.images = 4;
    opt->limits.image_bytes = 512u << 10;
    opt->limits.images_bytes = 1u << 20;
    opt->limits.list_depth = 9;
}

/*
 * The render targets (fuzz_xlsx, fuzz_docx): parse the input and, when it is
 * a valid spec, render it into out_path under a 1 MiB ceiling. Every
 * document the parser accepts must render or fail cleanly: a success stays
 * within the ceiling, a failure leaves nothing at the target.
 */
/* The render targets' private directory and output file, made once by
 * fuzz_render_init and removed at exit. */
static char fuzz_tmp_dir[64];
static char fuzz_out_path[96];

static inline void fuzz_render_cleanup(void)
{
    unlink(fuzz_out_path);
    rmdir(fuzz_tmp_dir);
}

static inline void fuzz_render_init(const char *extension)
{
    snprintf(fuzz_tmp_dir, sizeof fuzz_tmp_dir, "/tmp/kiln-fuzz-%s-XXXXXX", extension);
    if (!mkdtemp(fuzz_tmp_dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(fuzz_out_path, sizeof fuzz_out_path, "%s/out.%s", fuzz_tmp_dir, extension);
    atexit(fuzz_render_cleanup);
}

static inline void fuzz_render(const uint8_t *data, size_t size, kiln_format format)
{
    const char *out_path = fuzz_out_path, *tmp_dir = fuzz_tmp_dir;
    kiln_parse_options opt;
    fuzz_parse_options(&opt);

    static kiln_errors errs;
    kiln_errors_init(&errs);
    kiln_doc *doc = NULL;
    if (kiln_doc_parse((const char *)data, size, &opt, &doc, &errs) != KILN_E_OK)
        return;

    kiln_render_options ropt;
    memset(&ropt, 0, sizeof ropt);
    ropt.max_bytes = 1u << 20;
    ropt.tmp_dir = tmp_dir;
    kiln_render_result result;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_status st = kiln_render(doc, format, out_path, &ropt, &result, &err);
    if (st == KILN_E_OK) {
        if (result.bytes == 0 || result.bytes > ropt.max_bytes)
            abort();
    } else if (access(out_path, F_OK) == 0) {
        abort(); /* a failed render must leave nothing at the target */
    }
    unlink(out_path);
    kiln_doc_free(doc);
}

#endif
