/*
 * fuzz_spec.c - the spec parser on arbitrary bytes: kiln_doc_parse must
 * accept or reject every input without crashing, leaking or reading out of
 * bounds, and a rejection must say why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "artifacts/spec/spec.h"
#include "fuzz_common.h"
#include "../common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kiln_parse_options opt;
    fuzz_parse_options(&opt);

    static kiln_errors errs; /* large: keep it off the stack */
    kiln_errors_init(&errs);
    kiln_doc *doc = NULL;
    kiln_status st = kiln_doc_parse((const char *)data, size, &opt, &doc, &errs);
    if (st == KILN_E_OK) {
        if (!doc)
            abort();
        kiln_doc_free(doc);
    } else {
        /* a failure leaves no document and names at least one error */
        if (doc || errs.count == 0 || errs.items[0].code == KILN_E_OK)
            abort();
    }
    return 0;
}
