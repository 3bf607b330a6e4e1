/*
 * cli.c - what the `kiln` commands share (cli.h).
 */
#include <stdio.h>

#include "cli/cli.h"
#include "contract/limits.h"
#include "../common/banned.h"

/* The placeholder a limit's flag takes in --help. */
static const char *limit_placeholder(const kiln_limit_def *d)
{
    switch (d->kind) {
    case KILN_LIMIT_SECONDS:
        return "SECONDS";
    case KILN_LIMIT_BYTES:
        return "SIZE";
    case KILN_LIMIT_COUNT:
        break;
    }
    return "N";
}

size_t kiln_cli_limit_help(char *text, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT && o < cap; i++) {
        const kiln_limit_def *d = &kiln_limit_defs[i];
        char flag[48], def[32];
        snprintf(flag, sizeof flag, "--%s %s", d->flag, limit_placeholder(d));
        kiln_limit_format(d, d->def, def, sizeof def);
        o += (size_t)snprintf(text + o, cap - o, "      %-22s %s (%s)\n", flag, d->meaning, def);
    }
    return o < cap ? o : cap;
}
