/* pointer.c - see pointer.h. */
#include "pointer.h"

#include <stdio.h>
#include <string.h>

#include "utf8.h"
#include "banned.h"

void kiln_ptr_escape(char *out, size_t cap, const char *segment)
{
    size_t n = 0;
    if (!cap)
        return;
    for (const char *s = segment; *s; s++) {
        const char *rep = NULL;
        if (*s == '~')
            rep = "~0";
        else if (*s == '/')
            rep = "~1";
        if (rep) {
            if (n + 2 >= cap)
                break;
            out[n++] = rep[0];
            out[n++] = rep[1];
        } else {
            if (n + 1 >= cap)
                break;
            out[n++] = *s;
        }
    }
    out[n] = '\0';
    /* Cut short, it may end inside a character. */
    kiln_utf8_cut(out);
}

size_t kiln_ptr_push(kiln_ptr *p, const char *segment)
{
    size_t saved = p->len;
    if (p->len + 1 < sizeof p->buf) {
        p->buf[p->len++] = '/';
        kiln_ptr_escape(p->buf + p->len, sizeof p->buf - p->len, segment);
        p->len += strlen(p->buf + p->len);
    }
    p->buf[p->len] = '\0';
    return saved;
}

size_t kiln_ptr_push_index(kiln_ptr *p, size_t index)
{
    char num[32];
    snprintf(num, sizeof num, "%zu", index);
    return kiln_ptr_push(p, num);
}

void kiln_ptr_pop(kiln_ptr *p, size_t saved_len)
{
    p->len = saved_len;
    p->buf[p->len] = '\0';
}
