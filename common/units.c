/*
 * units.c - sizes with K/M/G suffixes (units.h).
 */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
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
