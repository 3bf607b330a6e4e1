/*
 * pdf_bidi.c - right-to-left text (Hebrew, Arabic) through GNU FriBidi.
 *
 * libharu draws glyphs left to right in the order it is given them, one per
 * character, with no shaping. So before a paragraph holding right-to-left
 * characters is broken into lines, FriBidi resolves the Unicode
 * Bidirectional Algorithm's embedding levels for it, joins Arabic letters
 * and replaces them with their contextual presentation forms (isolated,
 * initial, medial, final: the forms DejaVu Sans carries), and mirrors
 * brackets in right-to-left runs. Lines are then broken in logical order,
 * and each line is reordered for display when it is drawn (pdf_text.c),
 * which is the order UAX #9 prescribes.
 *
 * Text without right-to-left characters is left alone and costs one scan.
 */
#include "pdf_internal.h"

#include "../../common/utf8.h"

#include <fribidi.h>
#include <stdlib.h>
#include <string.h>
#include "../../common/banned.h"

static int is_rtl_char(uint32_t cp)
{
    return (cp >= 0x0590 && cp <= 0x08FF) || (cp >= 0xFB1D && cp <= 0xFDFF) ||
           (cp >= 0xFE70 && cp <= 0xFEFF) || (cp >= 0x200E && cp <= 0x200F) ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t pdf_utf8_reverse(const char *s, size_t len, char *out)
{
    size_t end = len, at = 0;
    /* walk back over whole characters, copying each one forwards */
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && ((unsigned char)s[start] & 0xC0) == 0x80)
            start--;
        memcpy(out + at, s + start, end - start);
        at += end - start;
        end = start;
    }
    return at;
}

kiln_status pdf_bidi_prepare(pdf_ctx *ctx, const kiln_text *in, pdf_bidi_text *out)
{
    size_t total = 0, n = 0, pos;
    int any_rtl = 0;
    FriBidiChar *chars = NULL;
    FriBidiCharType *types = NULL;
    FriBidiBracketType *brackets = NULL;
    FriBidiLevel *levels = NULL;
    FriBidiArabicProp *arabic = NULL;
    FriBidiParType base = FRIBIDI_PAR_ON;
    kiln_status st = KILN_E_OK;

    memset(out, 0, sizeof *out);
    out->text = *in;
    for (size_t r = 0; r < in->run_count && !any_rtl; r++) {
        pos = 0;
        while (pos < in->runs[r].len && !any_rtl)
            any_rtl = is_rtl_char(kiln_utf8_next(in->runs[r].text, in->runs[r].len, &pos));
    }
    if (!any_rtl)
        return KILN_E_OK;

    for (size_t r = 0; r < in->run_count; r++)
        total += in->runs[r].len; /* characters <= bytes */
    if (total == 0 || total > (size_t)INT32_MAX / 8)
        return KILN_E_OK;
    chars = malloc(total * sizeof *chars);
    types = malloc(total * sizeof *types);
    brackets = malloc(total * sizeof *brackets);
    levels = malloc(total * sizeof *levels);
    arabic = malloc(total * sizeof *arabic);
    kiln_run *runs = kiln_arena_calloc(ctx->arena, in->run_count, sizeof *runs);
    const uint8_t **run_levels = kiln_arena_calloc(ctx->arena, in->run_count, sizeof *run_levels);
    if (!chars || !types || !brackets || !levels || !arabic || !runs || !run_levels) {
        st = kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory laying out text");
        goto release;
    }
    for (size_t r = 0; r < in->run_count; r++) {
        pos = 0;
        while (pos < in->runs[r].len)
            chars[n++] = kiln_utf8_next(in->runs[r].text, in->runs[r].len, &pos);
    }
    fribidi_get_bidi_types(chars, (FriBidiStrIndex)n, types);
    fribidi_get_bracket_types(chars, (FriBidiStrIndex)n, types, brackets);
    if (!fribidi_get_par_embedding_levels_ex(types, brackets, (FriBidiStrIndex)n, &base,
                                             levels)) {
        st = kiln_error_set(ctx->err, KILN_E_NOMEM, NULL,
                            "out of memory resolving text direction");
        goto release;
    }
    fribidi_get_joining_types(chars, (FriBidiStrIndex)n, arabic);
    fribidi_join_arabic(types, (FriBidiStrIndex)n, levels, arabic);
    fribidi_shape(FRIBIDI_FLAGS_ARABIC | FRIBIDI_FLAG_SHAPE_MIRRORING, levels, (FriBidiStrIndex)n,
                  arabic, chars);

    /* back to UTF-8 runs, with each byte's level beside it */
    n = 0;
    for (size_t r = 0; r < in->run_count; r++) {
        size_t count = 0, at = 0;
        char *text;
        uint8_t *lv;
        pos = 0;
        while (pos < in->runs[r].len) {
            kiln_utf8_next(in->runs[r].text, in->runs[r].len, &pos);
            count++;
        }
        text = kiln_arena_alloc(ctx->arena, count * 4 + 1);
        lv = kiln_arena_alloc(ctx->arena, count * 4 + 1);
        if (!text || !lv) {
            st = kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory laying out text");
            goto release;
        }
        for (size_t k = 0; k < count; k++, n++) {
            size_t w = kiln_utf8_encode(chars[n], text + at);
            memset(lv + at, levels[n], w);
            at += w;
        }
        runs[r] = in->runs[r];
        runs[r].text = text;
        runs[r].len = at;
        run_levels[r] = lv;
    }
    out->text.runs = runs;
    out->levels = run_levels;
    out->rtl = FRIBIDI_IS_RTL(base) ? 1 : 0;

release:
    free(chars);
    free(types);
    free(brackets);
    free(levels);
    free(arabic);
    return st;
}
