/*
 * fuzz_docx.c - parse arbitrary bytes and, when they are a valid spec, render
 * them to .docx: the writer must cope with every document the parser accepts.
 * Output goes to a private temporary directory with a 1 MiB ceiling and is
 * removed after each input (fuzz_common.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *tmp_dir;
static char out_path[96];

static void remove_tmp_dir(void)
{
    unlink(out_path);
    rmdir(tmp_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tmp_dir = fuzz_render_dir("docx");
    snprintf(out_path, sizeof out_path, "%s/out.docx", tmp_dir);
    atexit(remove_tmp_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_render(data, size, KILN_FORMAT_DOCX, out_path, tmp_dir);
    return 0;
}
