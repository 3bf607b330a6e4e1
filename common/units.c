/*
 * units.c - sizes with K/M/G suffixes and seconds with s/m/h/d (units.h).
 */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "banned.h"

int kiln_parse_size(const char *text, uint64_t *out)
{
    /* strtoull would skip leading spaces and take a sign: "- 1" or "+5"
     * are not sizes anyone means. */
    if (!isdigit((unsigned char)text[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno || end == text)
        return -1;
    unsigned shift = 0;
    if (*end) {
        switch (*end) {
        case 'k':
        case 'K':
            shift = 10;
            break;
        case 'm':
        case 'M':
            shift = 20;
            break;
        case 'g':
        case 'G':
            shift = 30;
            break;
        default:
            return -1;
        }
        end++;
        if (strcasecmp(end, "") != 0 && strcasecmp(end, "B") != 0 && strcasecmp(end, "iB") != 0)
            return -1;
    }
    if (n == 0 || n > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)n << shift;
    return 0;
}

void kiln_format_size(uint64_t n, char *out, size_t cap)
{
    static const char units[] = "GMK";
    for (int i = 0; i < 3; i++) {
        unsigned shift = 30 - 10 * (unsigned)i;
        if (n >= (1ull << shift) && n % (1ull << shift) == 0) {
            snprintf(out, cap, "%llu%c", (unsigned long long)(n >> shift), units[i]);
            return;
        }
    }
    snprintf(out, cap, "%llu", (unsigned long long)n);
}

int kiln_parse_seconds(const char *text, double *out)
{
    char *end;
    /* strtod would take a sign, spaces, "inf" and hexadecimal: none is a
     * number of seconds anyone writes. */
    if (((text[0] < '0' || text[0] > '9') && text[0] != '.') || strpbrk(text, "xXpP"))
        return -1;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text)
        return -1;
    double mul = 1;
    if (*end) {
        switch (*end) {
        case 's':
            mul = 1;
            break;
        case 'm':
            mul = 60;
            break;
        case 'h':
            mul = 3600;
            break;
        case 'd':
            mul = 86400;
            break;
        default:
            return -1;
        }
        if (end[1])
            return -1;
    }
    *out = v * mul;
    return 0;
}
