/*
 * writers.c - the write function of each format, indexed by kiln_format.
 *
 * This table is the one symbol the kiln executable looks up in
 * kiln-writers.so (writers_dl.c); in the library archive that tests and
 * fuzzers link, writers_static.c reads it directly.
 */
#include "render.h"
#include "../common/banned.h"

const kiln_write_fn kiln_write_fns[KILN_FORMAT__COUNT] = {
    [KILN_FORMAT_XLSX] = kiln_xlsx_write,
    [KILN_FORMAT_DOCX] = kiln_docx_write,
    [KILN_FORMAT_PDF] = kiln_pdf_write,
    [KILN_FORMAT_PPTX] = kiln_pptx_write,
};
