/*
 * fuzz_frames.c - a session's event channel (exec/frames.c) on arbitrary
 * bytes, as user code in the sandbox may write them to fd 4.
 *
 * The first byte of the input chooses how the rest is cut into the pieces
 * the reader is fed (as reads from a pipe would cut it), the second the
 * cell number frames are checked against. For every line the reader hands
 * over:
 *   - it is at most the reader's maximum (a small one here, so that the
 *     skipping of over-long lines is reached), holds no newline, and lies
 *     within the bytes fed;
 *   - kiln_frame_parse never crashes; a frame it accepts has every member
 *     its kind needs, of the right type (a bundle of at most
 *     KILN_SESSION_BUNDLE_TYPES "type/sub" keys), and the cell asked for.
 * The lines handed over and the lines skipped account for every newline.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/line_reader.h"
#include "exec/exec_internal.h"
#include "exec/session.h"
#include "../common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_FRAME_MAX 512

typedef struct seen {
    uint64_t cell;
    size_t lines;
} seen;

static void check_frame(const kiln_frame *f, uint64_t cell)
{
    if (f->kind != KILN_FRAME_NONE &&
        (!json_is_object(f->root) ||
         (uint64_t)json_integer_value(json_object_get(f->root, "cell")) != cell))
        abort();
    switch (f->kind) {
    case KILN_FRAME_DISPLAY:
    case KILN_FRAME_RESULT: {
        if (!json_is_object(f->data) || json_object_size(f->data) == 0 ||
            json_object_size(f->data) > KILN_SESSION_BUNDLE_TYPES)
            abort();
        if (f->metadata && !json_is_object(f->metadata))
            abort();
        const char *mime;
        json_t *v;
        json_object_foreach(f->data, mime, v) {
            const char *slash = strchr(mime, '/');
            if (!slash || slash == mime || !slash[1] || strchr(slash + 1, '/'))
                abort();
        }
        break;
    }
    case KILN_FRAME_ERROR:
        if (!f->ename || !f->evalue || !json_is_array(f->traceback))
            abort();
        for (size_t i = 0; i < json_array_size(f->traceback); i++)
            if (!json_is_string(json_array_get(f->traceback, i)))
                abort();
        break;
    case KILN_FRAME_DONE:
        if (!f->status || (strcmp(f->status, "ok") && strcmp(f->status, "error") &&
                           strcmp(f->status, "interrupted")))
            abort();
        if (f->dropped_displays >= (1ull << 50) || f->dropped_bytes >= (1ull << 50))
            abort();
        break;
    case KILN_FRAME_RUNNING:
        break;
    case KILN_FRAME_NONE:
        if (f->root)
            abort();
        break;
    }
}

static void on_line(void *arg, const char *line, size_t len)
{
    seen *s = arg;
    if (len > FUZZ_FRAME_MAX || memchr(line, '\n', len))
        abort();
    s->lines++;
    kiln_frame f;
    kiln_frame_kind kind = kiln_frame_parse(line, len, s->cell, &f);
    if (kind != f.kind)
        abort();
    check_frame(&f, s->cell);
    kiln_frame_release(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t piece = 1 + data[0] % 97;
    seen s = {.cell = data[1] % 4};
    data += 2;
    size -= 2;
    kiln_line_reader r;
    kiln_line_reader_init(&r, FUZZ_FRAME_MAX);
    for (size_t off = 0; off < size; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        if (kiln_line_reader_feed(&r, (const char *)data + off, n, on_line, &s) < 0)
            abort();
        if (r.len > FUZZ_FRAME_MAX || r.cap > FUZZ_FRAME_MAX + 65536)
            abort();
    }
    size_t newlines = 0;
    for (size_t i = 0; i < size; i++)
        newlines += data[i] == '\n';
    /* Each newline ends a line handed over or one skipped; a line skipped
     * mid-way ends at a newline too, except the last, still open. */
    if (s.lines + r.oversized < newlines || s.lines > newlines)
        abort();
    kiln_line_reader_release(&r);
    return 0;
}
