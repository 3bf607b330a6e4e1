/*
 * fuzz_json_text.c - the spec's text checker and walkers (artifacts/spec/json_text.c)
 * against jansson on arbitrary bytes.
 *
 * The parser trusts kiln_json_check to say "JSON" exactly when jansson would
 * (it then builds pieces of the text with jansson), and trusts the walkers to
 * find the pieces. So, for every input:
 *   - kiln_json_check accepts it if and only if jansson parses it (with the
 *     parser's flags, duplicate members aside: a piece's own load refuses
 *     those);
 *   - on accepted text, each element of an array (and each member of an
 *     object) the walkers find is, loaded alone, equal to the element jansson
 *     built for the whole text, and there are as many;
 *   - a refusal's offset lies within the text;
 *   - text with a raw NUL byte is refused (where jansson may not be).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "artifacts/spec/spec_internal.h"
#include "../common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The walkers against jansson's own tree of the same value, recursively. */
static void compare(const char *s, size_t len, kiln_span span, const json_t *want, int depth)
{
    if (depth > 64)
        return;
    kiln_json_syntax e;
    json_t *got = kiln_json_load_span(s, span, &e);
    if (!got || !json_equal(got, want))
        abort();
    json_decref(got);
    if (!json_is_array(want) && !json_is_object(want))
        return;
    if (kiln_json_count(s, len, span) !=
        (json_is_array(want) ? json_array_size(want) : json_object_size(want)))
        abort();
    kiln_json_iter it;
    kiln_json_iter_init(&it, s, len, span);
    if (json_is_array(want)) {
        kiln_span el;
        for (size_t i = 0; kiln_json_next_element(&it, &el); i++)
            compare(s, len, el, json_array_get(want, i), depth + 1);
        return;
    }
    kiln_span key, value;
    while (kiln_json_next_member(&it, &key, &value)) {
        json_t *name = kiln_json_load_span(s, key, &e);
        if (!json_is_string(name))
            abort();
        const json_t *member = json_object_getn(want, json_string_value(name),
                                                json_string_length(name));
        if (!member ||
            !kiln_json_key_is(s, key, json_string_value(name), json_string_length(name)))
            abort();
        compare(s, len, value, member, depth + 1);
        json_decref(name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    kiln_json_syntax e;
    int ok = kiln_json_check(s, size, &e) == 0;
    /* A raw NUL byte is never JSON (RFC 8259): not whitespace, not a token,
     * a control character inside a string. jansson 2.14 skips one that
     * follows a number (its stream takes the NUL for the end of its pushback
     * buffer: "[1\0]" loads as [1]); Kiln refuses it. */
    if (memchr(data, 0, size)) {
        if (ok)
            abort();
        return 0;
    }
    json_error_t je;
    json_t *any = json_loadb(s, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    /* jansson's nesting ceiling is the checker's too; past it both refuse. */
    if (ok != (any != NULL))
        abort();
    json_decref(any);
    if (!ok && e.offset > size)
        abort();
    /* Duplicate members are refused by each piece's load, not the check:
     * the walk is compared on text without them. */
    json_t *tree = json_loadb(s, size, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
                              &je);
    if (tree) {
        size_t at = kiln_json_skip_ws(s, size, 0);
        kiln_span whole = {(uint32_t)at, (uint32_t)(kiln_json_value_end(s, size, at) - at)};
        compare(s, size, whole, tree, 0);
        json_decref(tree);
    }
    return 0;
}
