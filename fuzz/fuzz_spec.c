/*
 * fuzz_spec.c - the spec parser on arbitrary bytes: kiln_doc_parse must
 * accept or reject every input without crashing, leaking or reading out of
 * bounds, and a rejection must say why. When jansson takes the input as
 * JSON, kiln_doc_parse_json of its tree must give the same outcome: the
 * same status and the same errors (spec.h), the tree left as it was.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

    /* A raw NUL byte: Kiln refuses the text (json_text.c), jansson may take
     * what comes before it; the two are not the same document. */
    if (memchr(data, '\0', size))
        return 0;
    json_t *tree = json_loadb((const char *)data, size,
                              JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
    if (!tree)
        return 0;
    /* spec_bytes counts the text in one case, the compact text in the other. */
    char *before = json_dumps(tree, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!before || size > opt.limits.spec_bytes || strlen(before) > opt.limits.spec_bytes)
        goto free_tree;
    static kiln_errors terrs;
    kiln_doc *tdoc = NULL;
    kiln_status tst = kiln_doc_parse_json(tree, &opt, &tdoc, &terrs);
    if (tst != st || (tst == KILN_E_OK) != (tdoc != NULL) || terrs.count != errs.count ||
        terrs.dropped != errs.dropped)
        abort();
    for (size_t i = 0; i < errs.count; i++) {
        const kiln_error *a = &errs.items[i], *b = &terrs.items[i];
        if (a->code != b->code || strcmp(a->pointer, b->pointer) != 0 ||
            strcmp(a->message, b->message) != 0 || a->limit != b->limit || a->actual != b->actual)
            abort();
    }
    kiln_doc_free(tdoc);
    char *after = json_dumps(tree, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!after || strcmp(before, after) != 0)
        abort();
    free(after);
free_tree:
    free(before);
    json_decref(tree);
    return 0;
}
