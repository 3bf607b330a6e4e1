/*
 * streams.c - a job's stdout or stderr, kept up to a cap while every byte is
 * counted (exec_internal.h).
 *
 * The keep buffer is allocated once at its maximum size, curl style: feeding
 * never allocates, so a job writing a gigabyte costs the supervisor nothing
 * but the count. The text is repaired into valid UTF-8 only when the result
 * is built, because the cap can cut a character anywhere.
 */
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

kiln_status kiln_stream_init(kiln_stream *s, size_t keep_max, kiln_error *err)
{
    memset(s, 0, sizeof *s);
    if (keep_max == 0)
        return KILN_E_OK; /* count only: nothing kept, nothing allocated */
    s->buf = malloc(keep_max);
    if (!s->buf)
        return kiln_error_set(err, KILN_E_NOMEM, NULL,
                              "out of memory for a %zu-byte stream buffer", keep_max);
    s->keep_max = keep_max;
    return KILN_E_OK;
}

void kiln_stream_feed(kiln_stream *s, const char *data, size_t len)
{
    size_t room = s->keep_max - s->kept;
    size_t take = len < room ? len : room;
    if (take > 0) {
        memcpy(s->buf + s->kept, data, take);
        s->kept += take;
    }
    s->total += len;
}

enum { SEQ_VALID, SEQ_INVALID, SEQ_INCOMPLETE };

/*
 * Length of the UTF-8 sequence at s[0..n), and whether it is well formed
 * (Unicode table 3-7: no overlong forms, no surrogates, nothing past
 * U+10FFFF). An ill-formed sequence consumes its maximal subpart, so each
 * becomes exactly one U+FFFD, as Unicode recommends; INCOMPLETE means the
 * input ended inside an otherwise well-formed sequence.
 */
static size_t utf8_seq(const unsigned char *s, size_t n, int *kind)
{
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c < 0x80) {
        *kind = SEQ_VALID;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF)
        need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        *kind = SEQ_INVALID;
        return 1;
    }
    for (size_t k = 1; k <= need; k++) {
        if (k >= n) {
            *kind = SEQ_INCOMPLETE;
            return n;
        }
        unsigned char b = s[k];
        unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            *kind = SEQ_INVALID;
            return k;
        }
    }
    *kind = SEQ_VALID;
    return need + 1;
}

/* The bytes in[0..n) as valid UTF-8, each ill-formed sequence a U+FFFD.
 * A sequence the end cuts short stops the text when `stop_short` (the cap
 * cut a character, or its rest is still to come); *used says how far the
 * text went. NULL when out of memory; else malloc'ed, *len bytes. */
static char *repair_utf8(const unsigned char *in, size_t n, int stop_short, size_t *used,
                         size_t *len)
{
    static const char replacement[3] = {(char)0xEF, (char)0xBF, (char)0xBD}; /* U+FFFD */
    /* Each ill-formed byte becomes at most three bytes. */
    char *text = malloc(n * 3 + 1);
    if (!text)
        return NULL;
    size_t out = 0, i = 0;
    while (i < n) {
        int kind;
        size_t k = utf8_seq(in + i, n - i, &kind);
        if (kind == SEQ_VALID) {
            memcpy(text + out, in + i, k);
            out += k;
        } else if (kind == SEQ_INCOMPLETE && stop_short) {
            break;
        } else {
            memcpy(text + out, replacement, sizeof replacement);
            out += sizeof replacement;
        }
        i += k;
    }
    *used = i;
    *len = out;
    return text;
}

json_t *kiln_stream_json(const kiln_stream *s)
{
    int truncated = s->total > (uint64_t)s->kept;
    size_t used, len;
    /* A character the cap cut in two is dropped. */
    char *text = repair_utf8((const unsigned char *)s->buf, s->kept, truncated, &used, &len);
    if (!text)
        return NULL;
    /* jansson (>= 2.7) keeps NUL bytes in a json_stringn string and dumps them
     * as \u0000, so a job's NULs survive as U+0000. */
    json_t *obj = json_pack("{s:s%,s:I,s:b}", "text", text, len, "bytes", (json_int_t)s->total,
                            "truncated", truncated);
    free(text);
    return obj;
}

json_t *kiln_stream_take_chunk(const kiln_stream *s, size_t *emitted, int final)
{
    if (*emitted >= s->kept)
        return NULL;
    size_t used, len;
    /* Until the end, a character split between two reads waits for its
     * rest; at the end (or at the cap) it is what it is. */
    int stop_short = !final || s->total > (uint64_t)s->kept;
    char *text = repair_utf8((const unsigned char *)s->buf + *emitted, s->kept - *emitted,
                             stop_short, &used, &len);
    if (!text || used == 0) {
        free(text);
        return NULL;
    }
    json_t *str = json_stringn(text, len);
    free(text);
    if (str)
        *emitted += used;
    return str;
}

void kiln_stream_release(kiln_stream *s)
{
    free(s->buf);
    memset(s, 0, sizeof *s);
}
