/* xlsx_xstring.c - see xlsx_xstring.h. */
#include "xlsx_xstring.h"

#include <stdlib.h>
#include <string.h>
#include "../../common/banned.h"

static int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* "_xHHHH_" at p (with at least 7 bytes left)? */
static int xhhhh_at(const char *p)
{
    return p[0] == '_' && (p[1] == 'x' || p[1] == 'X') && is_hex((unsigned char)p[2]) &&
           is_hex((unsigned char)p[3]) && is_hex((unsigned char)p[4]) &&
           is_hex((unsigned char)p[5]) && p[6] == '_';
}

const char *xlsx_xstring(const char *s, size_t len, char **buf, size_t *cap)
{
    const char *u = memchr(s, '_', len);
    size_t hits = 0;
    for (const char *p = u; p && (size_t)(s + len - p) >= 7;
         p = memchr(p + 1, '_', (size_t)(s + len - p - 1)))
        hits += xhhhh_at(p);
    if (!hits)
        return s;
    size_t need = len + hits * 6 + 1;
    if (need > *cap) {
        char *n = realloc(*buf, need);
        if (!n)
            return NULL;
        *buf = n;
        *cap = need;
    }
    char *o = *buf;
    for (size_t i = 0; i < len; i++) {
        if (len - i >= 7 && xhhhh_at(s + i)) {
            memcpy(o, "_x005F", 6);
            o += 6;
        }
        *o++ = s[i];
    }
    *o = '\0';
    return *buf;
}
