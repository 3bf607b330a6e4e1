/*
 * fuzz_selftest.c - a target that fails on purpose, for tests/check_fuzz_check.sh:
 * it proves that `make fuzz-check` fails, naming the input, when a kept input
 * crashes, leaks, hangs or trips UBSan. It is not one of fuzz/fuzz_*.c, so
 * `make fuzz` and `make fuzz-check` never run it themselves.
 *
 * Each failure is planted behind a 64-bit FNV-1a hash of the whole input, not
 * a comparison with the text: libFuzzer follows comparisons (memcmp, ==) into
 * the inputs that pass them, but cannot invert a hash, so in its second of
 * fuzzing the check's passing run never finds one of the planted inputs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t fnv1a(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(1099511628211);
    return h;
}

/* What tests/check_fuzz_check.sh writes into each planted file, without a newline. */
static int is(const uint8_t *data, size_t size, const char *what)
{
    char text[64];
    size_t n = (size_t)snprintf(text, sizeof text, "kiln fuzz-check self-test: %s", what);
    return fnv1a(data, size) == fnv1a(text, n);
}

static void *volatile leaked;
static volatile int sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (is(data, size, "crash")) {
        char *volatile p = malloc(4);
        p[4] = 1; /* heap-buffer-overflow */
        free(p);
    } else if (is(data, size, "leak")) {
        leaked = malloc(64);
        leaked = NULL; /* the only pointer to it gone */
    } else if (is(data, size, "hang")) {
        for (volatile int i = 0;; i++)
            i &= 1;
    } else if (is(data, size, "ubsan")) {
        volatile int big = INT32_MAX;
        sink = big + (int)size; /* signed overflow */
    }
    return 0;
}
