/*
 * units.h - sizes as people write them on a command line or in a config
 * file ("30M"), shared by `kiln run`'s and `kiln serve`'s options.
 */
#ifndef KILN_UNITS_H
#define KILN_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* "30M" -> 31457280: a positive decimal count of bytes, optionally with K,
 * M or G (binary, either case) and then "B" or "iB". No sign, no spaces, no
 * zero, nothing that overflows 64 bits. 0, or -1 with *out untouched. */
int kiln_parse_size(const char *text, uint64_t *out);

/* A size as kiln_parse_size reads it, in its largest exact unit: "64M",
 * "3G", "1000". Into out[cap]. */
void kiln_format_size(uint64_t n, char *out, size_t cap);

/* "90", "1.5", "90s", "90m", "24h", "7d" -> seconds: a decimal number, no
 * sign, optionally one of s, m, h, d. 0, or -1 with *out untouched (the
 * caller holds it to its bounds). */
int kiln_parse_seconds(const char *text, double *out);

#endif
