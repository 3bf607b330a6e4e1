/*
 * utf8.c - UTF-8 encoding (utf8.h).
 */
#include "utf8.h"

size_t kiln_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

uint32_t kiln_utf8_next(const char *str, size_t len, size_t *pos)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = *pos;
    uint32_t cp;
    int extra;

    if (i >= len)
        return 0;
    if (s[i] < 0x80) {
        *pos = i + 1;
        return s[i];
    }
    if ((s[i] & 0xE0) == 0xC0) {
        cp = s[i] & 0x1F;
        extra = 1;
    } else if ((s[i] & 0xF0) == 0xE0) {
        cp = s[i] & 0x0F;
        extra = 2;
    } else if ((s[i] & 0xF8) == 0xF0) {
        cp = s[i] & 0x07;
        extra = 3;
    } else {
        *pos = i + 1;
        return 0xFFFD;
    }
    if (i + (size_t)extra >= len) { /* truncated: skip what there is of it */
        size_t k = i + 1;
        while (k < len && (s[k] & 0xC0) == 0x80)
            k++;
        *pos = k;
        return 0xFFFD;
    }
    for (int k = 1; k <= extra; k++) {
        if ((s[i + (size_t)k] & 0xC0) != 0x80) {
            *pos = i + (size_t)k;
            return 0xFFFD;
        }
        cp = (cp << 6) | (s[i + (size_t)k] & 0x3F);
    }
    *pos = i + (size_t)extra + 1;
    return cp;
}
