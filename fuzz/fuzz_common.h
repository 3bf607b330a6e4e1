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

#include <stdlib.h>

#include "artifacts/spec.h"

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

#endif
