/*
 * frames.c - a session's event channel, read as untrusted input
 * (exec_internal.h).
 *
 * The interpreter writes one JSON object per line on its fd 4, and so can
 * the user's code: every byte here may be hostile. The lines are read with
 * common/line_reader.h, which keeps at most `max` bytes of a line; a longer
 * line is skipped to its newline and counted, never parsed. A line becomes
 * a frame only if it is a JSON object of a kind the runtime sends,
 * of the running cell, with every member it needs of the right type; a
 * bundle has at most KILN_SESSION_BUNDLE_TYPES MIME types, each "type/sub",
 * whose values are strings (any JSON value for a JSON type). Anything else
 * is nothing, and the session goes on as if it had not been written.
 */
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "exec/session.h"
#include "../common/banned.h"

/* ---- frames ----------------------------------------------------------- */

/* A MIME bundle: an object of MIME type -> string (any JSON value for a
 * JSON type). */
static int bundle_ok(const json_t *data)
{
    if (!json_is_object(data) || json_object_size(data) == 0 ||
        json_object_size(data) > KILN_SESSION_BUNDLE_TYPES)
        return 0;
    const char *mime;
    json_t *v;
    json_object_foreach((json_t *)data, mime, v) {
        size_t n = strlen(mime);
        const char *slash = strchr(mime, '/');
        int json_type = strcmp(mime, "application/json") == 0 ||
                        (n > 5 && strcmp(mime + n - 5, "+json") == 0);
        if (n < 3 || n > 127 || !slash || slash == mime || !slash[1] || strchr(slash + 1, '/'))
            return 0;
        for (const char *p = mime; *p; p++)
            if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
                return 0;
        if (!json_type && !json_is_string(v))
            return 0;
    }
    return 1;
}

static int traceback_ok(const json_t *tb)
{
    if (!json_is_array(tb))
        return 0;
    size_t i;
    json_t *line;
    json_array_foreach(tb, i, line)
        if (!json_is_string(line))
            return 0;
    return 1;
}

/* A count from a done frame's "dropped": a whole number the runtime could
 * have counted, else 0. */
static uint64_t count_member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
    return n > 0 && n < ((json_int_t)1 << 50) ? (uint64_t)n : 0;
}

static kiln_frame_kind check(kiln_frame *f, const char *ev)
{
    json_t *root = f->root;
    if (strcmp(ev, "running") == 0)
        return KILN_FRAME_RUNNING;
    if (strcmp(ev, "display") == 0 || strcmp(ev, "result") == 0) {
        f->data = json_object_get(root, "data");
        json_t *metadata = json_object_get(root, "metadata");
        if (!bundle_ok(f->data) || (metadata && !json_is_object(metadata)))
            return KILN_FRAME_NONE;
        f->metadata = metadata;
        return ev[0] == 'd' ? KILN_FRAME_DISPLAY : KILN_FRAME_RESULT;
    }
    if (strcmp(ev, "error") == 0) {
        f->ename = json_string_value(json_object_get(root, "ename"));
        f->evalue = json_string_value(json_object_get(root, "evalue"));
        f->traceback = json_object_get(root, "traceback");
        if (!f->ename || !f->evalue || !traceback_ok(f->traceback))
            return KILN_FRAME_NONE;
        return KILN_FRAME_ERROR;
    }
    if (strcmp(ev, "done") == 0) {
        static const char *const statuses[] = {"ok", "error", "interrupted"};
        const char *st = json_string_value(json_object_get(root, "status"));
        /* A done frame always ends the cell; one that says nothing we know
         * ends it as an error. */
        f->status = "error";
        for (size_t i = 0; st && i < sizeof statuses / sizeof statuses[0]; i++)
            if (strcmp(st, statuses[i]) == 0)
                f->status = statuses[i];
        json_t *dropped = json_object_get(root, "dropped");
        f->dropped_displays = count_member(dropped, "displays");
        f->dropped_bytes = count_member(dropped, "bytes");
        return KILN_FRAME_DONE;
    }
    return KILN_FRAME_NONE;
}

kiln_frame_kind kiln_frame_parse(const char *line, size_t len, uint64_t cell, kiln_frame *f)
{
    memset(f, 0, sizeof *f);
    f->root = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
    const char *ev = json_string_value(json_object_get(f->root, "ev"));
    const json_t *number = json_object_get(f->root, "cell");
    if (ev && json_is_integer(number) && json_integer_value(number) >= 0 &&
        (uint64_t)json_integer_value(number) == cell)
        f->kind = check(f, ev);
    if (f->kind == KILN_FRAME_NONE)
        kiln_frame_release(f);
    return f->kind;
}

void kiln_frame_release(kiln_frame *f)
{
    json_decref(f->root);
    memset(f, 0, sizeof *f);
}
