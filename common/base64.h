/*
 * base64.h - RFC 4648 base64, both alphabets read, the standard one
 * written: an image's data: URI in a spec, a file's bytes in a session's
 * put and get.
 */
#ifndef KILN_BASE64_H
#define KILN_BASE64_H

#include <stddef.h>

/* The most bytes len characters of base64 can decode to. */
#define KILN_BASE64_DECODED_MAX(len) ((len) / 4 * 3 + 3)

/* Decode in[0..len) into buf (at least KILN_BASE64_DECODED_MAX(len) bytes),
 * skipping ASCII white space, taking '+' '/' and '-' '_' alike and padding
 * or none. 0 with *out_len; -1 a character that is not base64 (at
 * in[*bad_at]) or data after padding; -2 a truncated last group. */
int kiln_base64_decode_into(const char *in, size_t len, unsigned char *buf, size_t *out_len,
                            size_t *bad_at);

/* The standard alphabet, padded, NUL-terminated, malloc'ed; NULL when out
 * of memory. *out_len (may be NULL) is its length. */
char *kiln_base64_encode(const void *data, size_t len, size_t *out_len);

#endif
