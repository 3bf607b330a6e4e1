/*
 * utf8.h - UTF-8 encoding, decoding and validation shared by the parser
 * (markdown entities, every string), the writers (text measured, broken into
 * lines, reshaped for right-to-left output) and the service (file names).
 */
#ifndef KILN_UTF8_H
#define KILN_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Write code point cp (at most U+10FFFF) as UTF-8 into out; returns 1-4,
 * the bytes written. */
size_t kiln_utf8_encode(uint32_t cp, char out[4]);

/* The next code point of s[0..len) at *pos, advancing *pos past it; 0 at
 * the end. Text from the parser is valid UTF-8, but a cut or malformed
 * sequence still advances and reads as U+FFFD. */
uint32_t kiln_utf8_next(const char *s, size_t len, size_t *pos);

/* 1 when s[0..len) is valid UTF-8 (strict: no overlong forms, surrogates or
 * code points past U+10FFFF). */
int kiln_utf8_valid(const char *s, size_t len);
/* The offset of the first byte of s[0..len) that does not begin a valid
 * sequence (as kiln_utf8_valid judges it), len when there is none. */
size_t kiln_utf8_invalid_at(const char *s, size_t len);
/* Cut the NUL-terminated s at its first byte that does not begin a valid
 * sequence: what a fixed buffer cut in the middle of a character (or held
 * bytes that were never UTF-8) becomes text a JSON string can hold. */
void kiln_utf8_cut(char *s);

#endif
