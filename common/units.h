/*
 * units.h - sizes as people write them on a command line or in a config
 * file ("30M"), shared by `kiln run`'s and `kiln serve`'s options.
 */
#ifndef KILN_UNITS_H
#define KILN_UNITS_H

#include <stdint.h>

/* "30M" -> 31457280: a positive decimal count of bytes, optionally with K,
 * M or G (binary, either case) and then "B" or "iB". No sign, no spaces, no
 * zero, nothing that overflows 64 bits. 0, or -1 with *out untouched. */
int kiln_parse_size(const char *text, uint64_t *out);

#endif
