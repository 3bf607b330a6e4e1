/*
 * test_spec_tree.h - kiln_doc_parse_json held to kiln_doc_parse (spec.h:
 * the same errors, the same model, the tree untouched). test_parse.c runs
 * every spec it parses through test_same_as_tree; test_parse_json.c runs the
 * samples. Include after <cmocka.h> and test_util.h.
 *
 * The models are compared by what the writers make of them: each document
 * is rendered to the formats its content takes (xlsx for sheets, docx for
 * blocks, pptx for slides) with the same creation time, and the packages
 * must have the same parts with the same bytes.
 */
#ifndef KILN_TEST_SPEC_TREE_H
#define KILN_TEST_SPEC_TREE_H

#include <jansson.h>
#include <zip.h>

#include "artifacts/render.h"
#include "artifacts/spec/spec.h"

/* A member of the zip at path, malloc'd; *size its bytes. */
static inline unsigned char *test_zip_member(zip_t *za, zip_uint64_t i, zip_uint64_t *size)
{
    zip_stat_t st;
    assert_int_equal(zip_stat_index(za, i, 0, &st), 0);
    unsigned char *buf = malloc(st.size ? st.size : 1);
    assert_non_null(buf);
    zip_file_t *f = zip_fopen_index(za, i, 0);
    assert_non_null(f);
    assert_int_equal(zip_fread(f, buf, st.size), (zip_int64_t)st.size);
    zip_fclose(f);
    *size = st.size;
    return buf;
}

/* The packages at a and b: the same parts, in the same order, byte for byte. */
static inline void test_same_package(const char *a, const char *b)
{
    int e;
    zip_t *za = zip_open(a, ZIP_RDONLY, &e), *zb = zip_open(b, ZIP_RDONLY, &e);
    assert_non_null(za);
    assert_non_null(zb);
    zip_int64_t n = zip_get_num_entries(za, 0);
    assert_int_equal(n, zip_get_num_entries(zb, 0));
    for (zip_int64_t i = 0; i < n; i++) {
        assert_string_equal(zip_get_name(za, (zip_uint64_t)i, 0),
                            zip_get_name(zb, (zip_uint64_t)i, 0));
        zip_uint64_t na, nb;
        unsigned char *pa = test_zip_member(za, (zip_uint64_t)i, &na);
        unsigned char *pb = test_zip_member(zb, (zip_uint64_t)i, &nb);
        if (na != nb || memcmp(pa, pb, na) != 0)
            fprintf(stderr, "%s: part %s differs\n", a, zip_get_name(za, (zip_uint64_t)i, 0));
        assert_true(na == nb && memcmp(pa, pb, na) == 0);
        free(pa);
        free(pb);
    }
    zip_close(za);
    zip_close(zb);
}

/* Render a (text) and b (tree) into dir in format f and compare the two. */
static inline void test_same_render(kiln_doc *a, kiln_doc *b, kiln_format f, const char *dir)
{
    char pa[512], pb[512];
    const char *ext = kiln_writer_for(f)->extension;
    snprintf(pa, sizeof pa, "%s/from-text%s", dir, ext);
    snprintf(pb, sizeof pb, "%s/from-tree%s", dir, ext);
    kiln_render_options ro = {.max_bytes = 0, .tmp_dir = dir};
    kiln_error ea, eb;
    memset(&ea, 0, sizeof ea);
    memset(&eb, 0, sizeof eb);
    kiln_status sa = kiln_render(a, f, pa, &ro, NULL, &ea);
    kiln_status sb = kiln_render(b, f, pb, &ro, NULL, &eb);
    assert_int_equal(sa, sb);
    if (sa != KILN_E_OK) {
        /* A document the writer refuses: refused the same way. */
        assert_string_equal(ea.pointer, eb.pointer);
        assert_string_equal(ea.message, eb.message);
        return;
    }
    test_same_package(pa, pb);
    unlink(pa);
    unlink(pb);
}

/* The documents a (from the text) and b (from the tree) are the same model. */
static inline void test_same_doc(kiln_doc *a, kiln_doc *b, const char *dir)
{
    assert_int_equal(a->sheet_count, b->sheet_count);
    assert_int_equal(a->block_count, b->block_count);
    assert_int_equal(a->slide_count, b->slide_count);
    /* The same creation time, so that the packages can be the same. */
    a->metadata.has_created = b->metadata.has_created = 1;
    a->metadata.created = b->metadata.created = 1767225600; /* 2026-01-01 */
    if (a->sheet_count)
        test_same_render(a, b, KILN_FORMAT_XLSX, dir);
    if (a->block_count)
        test_same_render(a, b, KILN_FORMAT_DOCX, dir);
    if (a->slide_count)
        test_same_render(a, b, KILN_FORMAT_PPTX, dir);
}

/*
 * kiln_doc_parse of json[0..len) and kiln_doc_parse_json of jansson's tree
 * of the same text give the same status, errors and model, and the tree is
 * left as it was. Texts jansson refuses (syntax, duplicate members) have no
 * tree and are skipped; so are sizes past the spec_bytes limit, which counts
 * the text in one case and the tree's compact text in the other (spec.h;
 * test_parse_json.c checks that one). dir: where the documents are rendered
 * to be compared; NULL, or a spec past TEST_TREE_RENDER_MAX bytes, to compare
 * only their counts. Specs past TEST_TREE_MAX bytes are left to the tests
 * that time them.
 */
#define TEST_TREE_RENDER_MAX (64u << 10)
#define TEST_TREE_MAX (1u << 20)
static inline void test_same_as_tree(const char *json, size_t len, const kiln_parse_options *opt,
                                     const char *dir)
{
    if (len > TEST_TREE_MAX)
        return;
    if (len > TEST_TREE_RENDER_MAX)
        dir = NULL;
    json_t *tree = json_loadb(json, len,
                              JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
    if (!tree)
        return;
    char *before = json_dumps(tree, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(before);
    uint64_t max = opt ? opt->limits.spec_bytes : KILN_LIMIT_SPEC_BYTES;
    if (len > max || strlen(before) > max) {
        free(before);
        json_decref(tree);
        return;
    }
    static kiln_errors xerrs, yerrs;
    kiln_doc *xdoc = (kiln_doc *)1, *ydoc = (kiln_doc *)1;
    kiln_status xrc = kiln_doc_parse(json, len, opt, &xdoc, &xerrs);
    kiln_status yrc = kiln_doc_parse_json(tree, opt, &ydoc, &yerrs);
    int same = xrc == yrc && xerrs.count == yerrs.count && xerrs.dropped == yerrs.dropped;
    for (size_t i = 0; same && i < xerrs.count; i++) {
        const kiln_error *x = &xerrs.items[i], *y = &yerrs.items[i];
        same = x->code == y->code && strcmp(x->pointer, y->pointer) == 0 &&
               strcmp(x->message, y->message) == 0 && x->limit == y->limit &&
               x->actual == y->actual;
    }
    if (!same) {
        fprintf(stderr, "kiln_doc_parse_json differs for %.300s\nfrom the text:\n", json);
        test_dump_errors(&xerrs);
        fprintf(stderr, "from the tree:\n");
        test_dump_errors(&yerrs);
    }
    assert_true(same);
    assert_true((xdoc == NULL) == (ydoc == NULL));
    if (xdoc && dir) {
        test_same_doc(xdoc, ydoc, dir);
    } else if (xdoc) {
        assert_int_equal(xdoc->sheet_count, ydoc->sheet_count);
        assert_int_equal(xdoc->block_count, ydoc->block_count);
        assert_int_equal(xdoc->slide_count, ydoc->slide_count);
    }
    kiln_doc_free(xdoc);
    kiln_doc_free(ydoc);
    /* The spec is borrowed: the scan's line breaks and the holes were the
     * pieces' own. */
    char *after = json_dumps(tree, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(after);
    assert_string_equal(before, after);
    free(before);
    free(after);
    json_decref(tree);
}

#endif
