/*
 * utf8.h - UTF-8 encoding shared by the parser (markdown entities) and the
 * writers (text reshaped for right-to-left output).
 */
#ifndef KILN_UTF8_H
#define KILN_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Write code point cp (at most U+10FFFF) as UTF-8 into out; returns 1-4,
 * the bytes written. */
size_t kiln_utf8_encode(uint32_t cp, char out[4]);

#endif
