/*
 * fuzz_pdf.c - parse arbitrary bytes and, when they are a valid spec, render
 * them to .pdf: the writer must cope with every document the parser accepts.
 * Output goes to a private temporary directory with a 1 MiB ceiling and is
 * removed after each input (fuzz_common.h).
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "../common/banned.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_render_init("pdf");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_render(data, size, KILN_FORMAT_PDF);
    return 0;
}
