/*
 * line_reader.c - bounded lines from a byte stream (line_reader.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/line_reader.h"
#include "common/banned.h"

/* Read from the pipe in pieces of this size. */
#define READ_CHUNK 65536

void kiln_line_reader_init(kiln_line_reader *r, size_t max)
{
    memset(r, 0, sizeof *r);
    r->max = max;
}

void kiln_line_reader_release(kiln_line_reader *r)
{
    free(r->buf);
    memset(r, 0, sizeof *r);
}

/* Room for `more` bytes after what is held, the buffer never past max +
 * one chunk. 0, or -1 when out of memory. */
static int reserve(kiln_line_reader *r, size_t more)
{
    size_t need = r->len + more;
    if (need <= r->cap)
        return 0;
    size_t cap = r->cap ? r->cap : READ_CHUNK;
    while (cap < need)
        cap *= 2;
    if (cap > r->max + READ_CHUNK)
        cap = r->max + READ_CHUNK;
    if (cap < need)
        return -1; /* feed() never asks for more than max + a chunk */
    char *grown = realloc(r->buf, cap);
    if (!grown)
        return -1;
    r->buf = grown;
    r->cap = cap;
    return 0;
}

int kiln_line_reader_feed(kiln_line_reader *r, const char *data, size_t len, kiln_line_fn line,
                          void *arg)
{
    while (len > 0) {
        size_t take = len < READ_CHUNK ? len : READ_CHUNK;
        if (r->skipping) {
            /* Inside a line that is over the cap: drop to its newline. */
            const char *nl = memchr(data, '\n', take);
            if (!nl) {
                data += take;
                len -= take;
                continue;
            }
            r->skipping = 0;
            take = (size_t)(nl - data) + 1;
            data += take;
            len -= take;
            continue;
        }
        if (reserve(r, take) < 0)
            return -1;
        memcpy(r->buf + r->len, data, take);
        size_t scan = r->len, from = 0;
        r->len += take;
        data += take;
        len -= take;
        for (;;) {
            char *nl = memchr(r->buf + scan, '\n', r->len - scan);
            if (!nl)
                break;
            size_t end = (size_t)(nl - r->buf);
            if (end - from <= r->max)
                line(arg, r->buf + from, end - from);
            else
                r->oversized++;
            from = scan = end + 1;
        }
        memmove(r->buf, r->buf + from, r->len - from);
        r->len -= from;
        if (r->len > r->max) {
            r->oversized++;
            r->skipping = 1;
            r->len = 0;
        }
    }
    return 0;
}
