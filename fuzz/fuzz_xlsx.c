/*
 * fuzz_xlsx.c - parse arbitrary bytes and, when they are a valid spec, render
 * them to .xlsx: the writer must cope with every document the parser accepts.
 * Output goes to a private temporary directory with a 1 MiB ceiling and is
 * removed after each input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifacts/render.h"
#include "artifacts/spec.h"
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char tmp_dir[] = "/tmp/kiln-fuzz-xlsx-XXXXXX";
static char out_path[sizeof tmp_dir + 16];

static void remove_tmp_dir(void)
{
    unlink(out_path);
    rmdir(tmp_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(out_path, sizeof out_path, "%s/out.xlsx", tmp_dir);
    atexit(remove_tmp_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kiln_parse_options opt;
    fuzz_parse_options(&opt);

    static kiln_errors errs;
    kiln_errors_init(&errs);
    kiln_doc *doc = NULL;
    if (kiln_doc_parse((const char *)data, size, &opt, &doc, &errs) != KILN_E_OK)
        return 0;

    kiln_render_options ropt;
    memset(&ropt, 0, sizeof ropt);
    ropt.max_bytes = 1u << 20;
    ropt.tmp_dir = tmp_dir;
    kiln_render_result result;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_status st = kiln_render(doc, KILN_FORMAT_XLSX, out_path, &ropt, &result, &err);
    if (st == KILN_E_OK) {
        if (result.bytes == 0 || result.bytes > ropt.max_bytes)
            abort();
    } else if (access(out_path, F_OK) == 0) {
        abort(); /* a failed render must leave nothing at the target */
    }
    unlink(out_path);
    kiln_doc_free(doc);
    return 0;
}
