/*
 * utf8.c - UTF-8 encoding (utf8.h).
 */
#include "utf8.h"

#include <string.h>
#include "banned.h"

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

/* Strict: no overlong forms, no surrogates, nothing past U+10FFFF (the
 * spec parser, the store's file names and the HTTP layer's all agree). */
size_t kiln_utf8_invalid_at(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned char c = u[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return i;
        }
        if (i + n >= len)
            return i;
        for (size_t k = 1; k <= n; k++) {
            if ((u[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (u[i + k] & 0x3F);
        }
        /* Overlong forms, surrogates and values past U+10FFFF. */
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += n + 1;
    }
    return len;
}

int kiln_utf8_valid(const char *s, size_t len)
{
    return kiln_utf8_invalid_at(s, len) == len;
}

void kiln_utf8_cut(char *s)
{
    s[kiln_utf8_invalid_at(s, strlen(s))] = '\0';
}
