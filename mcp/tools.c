/*
 * tools.c - tools/list and tools/call (mcp_internal.h).
 *
 * The tools' definitions are docs/tools/mcp.json (made by `make tools` from
 * tools/, built into the binary): what a model reads is written once, for
 * every API. Here each tool checks its arguments, acts through the backend
 * and makes its result twice over, as MCP asks: `content` for the model
 * (text, figures as images, files as resource links) and the whole
 * outcome as `structuredContent`. Bad arguments and failed runs are results
 * with isError (the model reads them and can correct itself); only an
 * unknown tool or a malformed call is a JSON-RPC error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_internal.h"
#include "contract/errors.h"
#include "contract/session.h"
#include "common/pointer.h"
#include "common/banned.h"

/* The text a result shows of a cell's output, in all: past it the text is
 * cut with a note (the record in structuredContent keeps what the session
 * kept). Clients refuse long results (Claude Code stops at 25,000 tokens,
 * images included), so images are capped too. */
#define TEXT_MAX 20000
/* Within it, what stdout and stderr may take, and with them the values
 * shown: the rest is kept for the traceback (its last TRACEBACK_MAX bytes,
 * where the exception is), the status and the files, which must be seen
 * whatever the cell printed. */
#define STREAMS_MAX 14000
#define OUTPUTS_MAX 17000
#define TRACEBACK_MAX 2900
#define IMAGES_MAX 8
#define IMAGE_BYTES_MAX (4u << 20)

void mcp_tools_list(mcp_call *call, mcp_outcome *o)
{
    const json_t *cursor = json_object_get(call->params, "cursor");
    if (cursor && !json_is_null(cursor)) {
        /* Every tool is on the first page: no cursor was ever given out. */
        mcp_outcome_error(o, KILN_MCP_INVALID_PARAMS, NULL, "unknown cursor");
        return;
    }
    o->result = json_pack("{s:O}", "tools", call->conn->srv->tools);
}

/* ---- results ---- */

static json_t *text_item(const char *text)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", text);
}

/* A tool result: content (stolen), structuredContent (stolen, may be
 * NULL), isError. */
static json_t *tool_result(json_t *content, json_t *structured, int is_error)
{
    json_t *r = json_pack("{s:o, s:b}", "content", content, "isError", is_error);
    if (r && structured)
        json_object_set_new(r, "structuredContent", structured);
    else
        json_decref(structured);
    return r;
}

/* A failed call: one text naming the member at fault, and the error as
 * structuredContent {"errors": [{pointer, code, message}]}. */
static json_t *error_result(const kiln_error *err)
{
    char text[KILN_POINTER_MAX + KILN_MESSAGE_MAX + 64];
    if (err->pointer[0])
        snprintf(text, sizeof text, "%s: %s", err->pointer, err->message);
    else
        snprintf(text, sizeof text, "%s", err->message);
    json_t *content = json_array();
    json_array_append_new(content, text_item(text));
    return tool_result(content, kiln_error_list_json(err), 1);
}

/* ---- arguments ---- */

typedef struct args {
    const json_t *obj;
    kiln_error *err;
} args;

/* Every member of the arguments is one the tool knows. */
static int only(args *a, const char *const *known)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)a->obj, key, v) {
        size_t i = 0;
        while (known[i] && strcmp(known[i], key) != 0)
            i++;
        if (!known[i]) {
            char p[KILN_POINTER_MAX] = "/";
            kiln_ptr_escape(p + 1, sizeof p - 1, key);
            kiln_error_set(a->err, KILN_E_USAGE, p, "is not an argument of this tool");
            return -1;
        }
    }
    return 0;
}

/* A string member (NULL and no error when absent or null and optional). */
static const char *string_arg(args *a, const char *name, int required, int *bad)
{
    const json_t *v = json_object_get(a->obj, name);
    char p[KILN_POINTER_MAX];
    snprintf(p, sizeof p, "/%s", name);
    if ((!v || json_is_null(v)) && !required)
        return NULL;
    if (!v) {
        kiln_error_set(a->err, KILN_E_USAGE, p, "is required");
        *bad = 1;
        return NULL;
    }
    if (!json_is_string(v)) {
        kiln_error_set(a->err, KILN_E_USAGE, p, "must be a string");
        *bad = 1;
        return NULL;
    }
    return json_string_value(v);
}

/* ---- execute_code ---- */

typedef struct text_out {
    char *buf;
    size_t len, cap;
    size_t left_out; /* bytes not shown */
} text_out;

/* The longest prefix of s's first n bytes (s has more) that does not
 * cut a UTF-8 sequence. */
static size_t utf8_prefix(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* Append n bytes of s; what would take the text past cap (0: none) is
 * counted, not shown. */
static void text_append(text_out *t, const char *s, size_t n, size_t cap)
{
    if (cap && t->len + n > cap) {
        size_t room = cap > t->len ? cap - t->len : 0;
        room = utf8_prefix(s, room);
        t->left_out += n - room;
        n = room;
    }
    if (t->len + n + 1 > t->cap) {
        size_t grown = t->cap * 2 > t->len + n + 1 ? t->cap * 2 : t->len + n + 1 + 256;
        char *more = realloc(t->buf, grown);
        if (!more)
            return;
        t->buf = more;
        t->cap = grown;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void text_add(text_out *t, const char *s, size_t n)
{
    text_append(t, s, n, TEXT_MAX);
}

static void text_adds(text_out *t, const char *s)
{
    text_add(t, s, strlen(s));
}

/* A stream's text, with a line saying what the session did not keep. */
static void add_stream(text_out *t, const json_t *stream, const char *label)
{
    const char *text = json_string_value(json_object_get(stream, "text"));
    if (!text || !*text)
        return;
    if (label)
        text_append(t, label, strlen(label), STREAMS_MAX);
    text_append(t, text, json_string_length(json_object_get(stream, "text")), STREAMS_MAX);
    if (t->len && t->buf[t->len - 1] != '\n')
        text_adds(t, "\n");
    if (json_is_true(json_object_get(stream, "truncated"))) {
        char note[160];
        snprintf(note, sizeof note, "[%s: %lld bytes in all; the session kept the first %zu]\n",
                 label ? "stderr" : "stdout",
                 (long long)json_integer_value(json_object_get(stream, "bytes")),
                 json_string_length(json_object_get(stream, "text")));
        text_adds(t, note);
    }
}

static const char *status_note(const char *status)
{
    static const struct {
        const char *status, *note;
    } notes[] = {
        {"interrupted", "the cell was interrupted"},
        {"timeout", "the cell passed its time limit and was interrupted"},
        {"memory_limit", "a process of the cell was killed: the session's memory limit"},
        {"output_limit", "the cell wrote more output than a cell may and was interrupted"},
        {"session_lost",
         "the session ended under the cell: its variables and files are gone (the next call "
         "without session_id starts a new session)"},
    };
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++)
        if (strcmp(status, notes[i].status) == 0)
            return notes[i].note;
    return NULL;
}

/* The outputs: each image goes into content (up to the caps) and its
 * base64 out of the record's copy, which says where it went instead, so a
 * figure is not sent twice; text/plain of the rest goes into the text. */
static void add_outputs(json_t *content, text_out *t, json_t *outputs, json_int_t count)
{
    size_t i, images = 0, image_bytes = 0, not_shown = 0;
    json_t *out;
    json_array_foreach(outputs, i, out) {
        json_t *data = json_object_get(out, "data");
        json_t *png = json_object_get(data, "image/png");
        if (json_is_string(png)) {
            size_t n = json_string_length(png);
            if (images < IMAGES_MAX && image_bytes + n <= IMAGE_BYTES_MAX) {
                json_array_append_new(content, json_pack("{s:s, s:O, s:s}", "type", "image",
                                                         "data", png, "mimeType", "image/png"));
                images++;
                image_bytes += n;
                /* Its index once the text goes in front (cell_result). */
                char where[64];
                snprintf(where, sizeof where, "(in content[%zu])", json_array_size(content));
                json_object_set_new(data, "image/png", json_string(where));
            } else {
                not_shown++;
            }
            continue;
        }
        const char *plain = json_string_value(json_object_get(data, "text/plain"));
        if (plain) {
            const char *type = json_string_value(json_object_get(out, "type"));
            if (type && strcmp(type, "result") == 0) {
                char label[48];
                snprintf(label, sizeof label, "Out[%lld]: ", (long long)count);
                text_append(t, label, strlen(label), OUTPUTS_MAX);
            }
            text_append(t, plain, strlen(plain), OUTPUTS_MAX);
            text_append(t, "\n", 1, OUTPUTS_MAX);
        }
    }
    if (not_shown) {
        char note[160];
        snprintf(note, sizeof note,
                 "[%zu figure(s) not shown: a result carries at most %d images, %u MiB]\n",
                 not_shown, IMAGES_MAX, IMAGE_BYTES_MAX >> 20);
        text_adds(t, note);
    }
}

/* The link of a file the cell or a render made, and its uri in the
 * record's entry. */
static json_t *file_link(const json_t *file, const char *description)
{
    const char *id = json_string_value(json_object_get(file, "id"));
    if (!id)
        return NULL;
    char uri[KILN_MCP_ID_MAX + 16];
    snprintf(uri, sizeof uri, "kiln://files/%s", id);
    const char *name = json_string_value(json_object_get(file, "filename"));
    json_t *link = json_pack("{s:s, s:s, s:s}", "type", "resource_link", "uri", uri, "name",
                             name ? name : id);
    const char *media = json_string_value(json_object_get(file, "media_type"));
    if (link && media)
        json_object_set_new(link, "mimeType", json_string(media));
    if (link && json_is_integer(json_object_get(file, "bytes")))
        json_object_set(link, "size", json_object_get(file, "bytes"));
    const char *path = json_string_value(json_object_get(file, "path"));
    char desc[KILN_MESSAGE_MAX];
    if (path) {
        snprintf(desc, sizeof desc, "%s, saved as %s", description, path);
        description = desc;
    }
    if (link)
        json_object_set_new(link, "description", json_string(description));
    return link;
}

static void add_files(json_t *content, text_out *t, json_t *entries)
{
    size_t i, unlinked = 0;
    json_t *entry;
    json_array_foreach(entries, i, entry) {
        json_t *file = json_object_get(entry, "file");
        const char *source = json_string_value(json_object_get(entry, "source"));
        const char *what = source && strcmp(source, "document") == 0 ? "document" : "file";
        json_t *link = file_link(file, what);
        if (!link) {
            unlinked++;
            continue;
        }
        json_object_set(entry, "uri", json_object_get(link, "uri"));
        char line[KILN_MESSAGE_MAX];
        snprintf(line, sizeof line, "%s %s (%lld bytes): %s\n", what,
                 json_string_value(json_object_get(entry, "name")),
                 (long long)json_integer_value(json_object_get(file, "bytes")),
                 json_string_value(json_object_get(link, "uri")));
        text_adds(t, line);
        json_array_append_new(content, link);
    }
    if (unlinked) {
        char line[200];
        snprintf(line, sizeof line,
                 "[%zu more file(s) of the cell not kept (too large, or past the files kept per "
                 "cell): list_files names them]\n",
                 unlinked);
        text_adds(t, line);
    }
}

/* The documents: each rendered one's entry gets its file's uri; one that
 * failed says why, every error at its pointer into the spec the cell
 * saved, so the model can fix the code that made it. */
static void add_documents(text_out *t, json_t *documents)
{
    size_t i, j;
    json_t *doc, *e;
    json_array_foreach(documents, i, doc) {
        const json_t *file = json_object_get(doc, "file");
        if (json_is_string(json_object_get(file, "id"))) {
            char uri[KILN_MCP_ID_MAX + 16];
            snprintf(uri, sizeof uri, "kiln://files/%s",
                     json_string_value(json_object_get(file, "id")));
            json_object_set_new(doc, "uri", json_string(uri));
        }
        if (json_is_true(json_object_get(doc, "ok")))
            continue;
        char line[KILN_POINTER_MAX + KILN_MESSAGE_MAX + 64];
        snprintf(line, sizeof line, "document %s was not rendered:\n",
                 json_string_value(json_object_get(doc, "name")) ?: "?");
        text_adds(t, line);
        json_array_foreach(json_object_get(doc, "errors"), j, e) {
            const char *pointer = json_string_value(json_object_get(e, "pointer"));
            snprintf(line, sizeof line, "  %s: %s\n", pointer && *pointer ? pointer : "(spec)",
                     json_string_value(json_object_get(e, "message")) ?: "");
            text_adds(t, line);
        }
    }
}

static void add_traceback(text_out *t, const json_t *error)
{
    const json_t *tb = json_object_get(error, "traceback");
    text_out lines = {0};
    size_t i;
    const json_t *line;
    json_array_foreach(tb, i, line) {
        const char *s = json_string_value(line);
        if (!s)
            continue;
        text_append(&lines, s, strlen(s), 0);
        if (!*s || s[strlen(s) - 1] != '\n')
            text_append(&lines, "\n", 1, 0);
    }
    if (!lines.len) {
        char head[KILN_MESSAGE_MAX];
        snprintf(head, sizeof head, "%s: %s\n",
                 json_string_value(json_object_get(error, "ename")) ?: "Error",
                 json_string_value(json_object_get(error, "evalue")) ?: "");
        text_append(&lines, head, strlen(head), 0);
    }
    /* Its end names the exception: a long one keeps its last lines. */
    const char *from = lines.buf ? lines.buf : "";
    if (lines.len > TRACEBACK_MAX) {
        from = lines.buf + lines.len - TRACEBACK_MAX;
        while (((unsigned char)*from & 0xC0) == 0x80)
            from++;
        text_adds(t, "[... the traceback's first lines left out]\n");
    }
    text_adds(t, from);
    free(lines.buf);
}

/* The result of a cell: record is the backend's (stolen). */
static json_t *cell_result(json_t *record, const char *sid, int fresh)
{
    json_object_del(record, "event");
    json_object_del(record, "id");
    json_object_set_new(record, "session_id", json_string(sid));
    const char *status = json_string_value(json_object_get(record, "status")) ?: "error";
    json_t *content = json_array();
    text_out t = {0};
    text_adds(&t, "");
    if (fresh) {
        char line[160];
        snprintf(line, sizeof line, "[a new session was started: session_id %s]\n", sid);
        text_adds(&t, line);
    }
    add_stream(&t, json_object_get(record, "stdout"), NULL);
    add_stream(&t, json_object_get(record, "stderr"), "[stderr]\n");
    add_outputs(content, &t, json_object_get(record, "outputs"),
                json_integer_value(json_object_get(record, "execution_count")));
    const json_t *error = json_object_get(record, "error");
    if (json_is_object(error))
        add_traceback(&t, error);
    const char *note = status_note(status);
    if (note) {
        char line[320];
        snprintf(line, sizeof line, "[status %s: %s]\n", status, note);
        text_adds(&t, line);
    }
    add_files(content, &t, json_object_get(record, "files"));
    add_documents(&t, json_object_get(record, "documents"));
    if (t.left_out) {
        char line[200];
        snprintf(line, sizeof line,
                 "[%zu bytes of this text not shown: structuredContent has the cell record]\n",
                 t.left_out);
        text_append(&t, line, strlen(line), 0);
    }
    if (t.len == 0)
        text_adds(&t, strcmp(status, "ok") == 0 ? "[the cell printed nothing]\n" : "");
    json_array_insert_new(content, 0, text_item(t.buf ? t.buf : ""));
    free(t.buf);
    return tool_result(content, record, strcmp(status, "ok") != 0);
}

/* A cell's event. The request counts as running its cell from the cell's
 * "started" to its record, and only then: a cancellation must interrupt
 * this request's cell, never the cell of another request queued before it
 * in the same session, and the session's interrupt stops whichever cell
 * runs. */
static void on_cell_event(void *arg, const json_t *ev)
{
    mcp_call *call = arg;
    const char *kind = json_string_value(json_object_get(ev, "event"));
    if (!kind)
        return;
    if (strcmp(kind, "started") == 0 && mcp_call_running(call, call->cell_session)) {
        kiln_error err;
        memset(&err, 0, sizeof err);
        call->backend->session_interrupt(call->backend->ctx, call->tenant, call->cell_session,
                                         &err);
    }
    if (strcmp(kind, "cell") == 0) {
        mcp_call_running(call, "");
        return;
    }
    char message[200];
    const char *text = json_string_value(json_object_get(ev, "text"));
    if (text)
        snprintf(message, sizeof message, "%s: %.*s", kind,
                 (int)(strnlen(text, 161) > 160 ? utf8_prefix(text, 160) : strlen(text)), text);
    else
        snprintf(message, sizeof message, "%s", kind);
    mcp_call_progress(call, message);
}

static json_t *execute_code(mcp_call *call, args *a)
{
    static const char *const known[] = {"code", "language", "session_id", "timeout_seconds",
                                        NULL};
    int bad = 0;
    if (only(a, known) != 0)
        return error_result(a->err);
    const char *code = string_arg(a, "code", 1, &bad);
    const char *language = bad ? NULL : string_arg(a, "language", 0, &bad);
    const char *requested = bad ? NULL : string_arg(a, "session_id", 0, &bad);
    if (bad)
        return error_result(a->err);
    /* The language, and the rest of the cell's request, are the session
     * contract's to check (contract/session.c): its refusal names the
     * member, which is the tool's argument of the same name. */
    const json_t *timeout = json_object_get(a->obj, "timeout_seconds");
    if (timeout && !json_is_null(timeout) &&
        (!json_is_number(timeout) || json_number_value(timeout) < 1 ||
         json_number_value(timeout) > 600)) {
        kiln_error_set(a->err, KILN_E_USAGE, "/timeout_seconds",
                       "must be a number of seconds from 1 to 600");
        return error_result(a->err);
    }
    char sid[KILN_MCP_ID_MAX];
    int fresh = 0;
    if (mcp_call_session(call, requested, sid, &fresh, a->err) != KILN_E_OK)
        return error_result(a->err);
    json_t *request = json_pack("{s:s, s:s}", "code", code, "language", language ?: "python");
    if (request && timeout && !json_is_null(timeout))
        json_object_set_new(request, "timeout", json_real(json_number_value(timeout)));
    if (!request) {
        kiln_error_set(a->err, KILN_E_NOMEM, "", "out of memory");
        return error_result(a->err);
    }
    if (mcp_call_cancelled(call)) {
        json_decref(request);
        return NULL;
    }
    snprintf(call->cell_session, sizeof call->cell_session, "%s", sid);
    json_t *record = NULL;
    kiln_status st = call->backend->session_execute(call->backend->ctx, call->tenant, sid,
                                                    request, on_cell_event, call, &record,
                                                    a->err);
    json_decref(request);
    mcp_call_running(call, "");
    if (st != KILN_E_OK) {
        json_decref(record);
        /* The session's request calls it timeout; the tool, timeout_seconds. */
        if (strcmp(a->err->pointer, "/timeout") == 0)
            snprintf(a->err->pointer, sizeof a->err->pointer, "/timeout_seconds");
        if (st == KILN_E_GONE && !requested)
            mcp_call_session_gone(call, sid);
        if (st == KILN_E_GONE) {
            char m[KILN_MESSAGE_MAX + 160];
            snprintf(m, sizeof m, "%s (session %s)%s", a->err->message, sid,
                     requested ? ": leave out session_id to start a new session" : "");
            snprintf(a->err->message, sizeof a->err->message, "%.*s", KILN_MESSAGE_MAX - 1, m);
        }
        return error_result(a->err);
    }
    const char *status = json_string_value(json_object_get(record, "status"));
    if (status && strcmp(status, "session_lost") == 0 && !requested)
        mcp_call_session_gone(call, sid);
    if (status && strcmp(status, "ok") != 0)
        mcp_call_log(call, 3,
                     json_pack("{s:s, s:s, s:s}", "event", "cell_failed", "session_id", sid,
                               "status", status));
    return cell_result(record, sid, fresh);
}

/* ---- render_document ---- */

static json_t *spec_errors_result(json_t *errors)
{
    text_out t = {0};
    size_t n = json_array_size(json_object_get(errors, "errors")), i;
    char head[160];
    snprintf(head, sizeof head,
             "The spec is not valid: %zu error(s), each at a JSON Pointer into `spec`. Fix them "
             "all and call render_document again.\n",
             n);
    text_adds(&t, head);
    json_t *e;
    json_array_foreach(json_object_get(errors, "errors"), i, e) {
        char line[KILN_POINTER_MAX + KILN_MESSAGE_MAX + 8];
        const char *pointer = json_string_value(json_object_get(e, "pointer"));
        snprintf(line, sizeof line, "%s: %s\n", pointer && *pointer ? pointer : "(spec)",
                 json_string_value(json_object_get(e, "message")) ?: "");
        text_adds(&t, line);
    }
    json_int_t more = json_integer_value(json_object_get(errors, "dropped"));
    if (!more)
        more = json_integer_value(json_object_get(errors, "more_errors"));
    if (more) {
        char line[96];
        snprintf(line, sizeof line, "[%lld more error(s) not listed]\n", (long long)more);
        text_adds(&t, line);
    }
    json_t *content = json_array();
    json_array_append_new(content, text_item(t.buf ? t.buf : ""));
    free(t.buf);
    return tool_result(content, errors, 1);
}

static json_t *render_document(mcp_call *call, args *a)
{
    static const char *const known[] = {"format", "spec", "filename", NULL};
    static const char *const formats[] = {"xlsx", "docx", "pptx", "pdf", NULL};
    int bad = 0;
    if (only(a, known) != 0)
        return error_result(a->err);
    const char *format = string_arg(a, "format", 1, &bad);
    const char *filename = bad ? NULL : string_arg(a, "filename", 0, &bad);
    if (bad)
        return error_result(a->err);
    size_t f = 0;
    while (formats[f] && strcmp(formats[f], format) != 0)
        f++;
    if (!formats[f]) {
        kiln_error_set(a->err, KILN_E_USAGE, "/format", "must be xlsx, docx, pptx or pdf");
        return error_result(a->err);
    }
    const json_t *spec = json_object_get(a->obj, "spec");
    if (!json_is_object(spec)) {
        kiln_error_set(a->err, KILN_E_USAGE, "/spec",
                       spec ? "must be an object: the document spec" : "is required");
        return error_result(a->err);
    }
    json_t *request = json_pack("{s:s, s:O}", "format", format, "spec", spec);
    if (request && filename)
        json_object_set_new(request, "filename", json_string(filename));
    json_t *file = NULL, *warnings = NULL, *errors = NULL;
    kiln_status st = request ? call->backend->render(call->backend->ctx, call->tenant, request,
                                                     &file, &warnings, &errors, a->err)
                             : kiln_error_set(a->err, KILN_E_NOMEM, "", "out of memory");
    json_decref(request);
    if (st == KILN_E_INVALID_SPEC && errors)
        return spec_errors_result(errors);
    json_decref(errors);
    if (st != KILN_E_OK) {
        json_decref(file);
        json_decref(warnings);
        return error_result(a->err);
    }
    json_t *content = json_array();
    json_t *link = file_link(file, "the rendered document");
    json_t *structured = json_deep_copy(file);
    json_object_set(structured, "uri", json_object_get(link, "uri"));
    json_object_set_new(structured, "warnings", warnings ? warnings : json_array());
    char line[KILN_MESSAGE_MAX];
    snprintf(line, sizeof line, "Rendered %s (%lld bytes): %s",
             json_string_value(json_object_get(file, "filename")) ?: "the document",
             (long long)json_integer_value(json_object_get(file, "bytes")),
             json_string_value(json_object_get(link, "uri")) ?: "");
    json_array_append_new(content, text_item(line));
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(structured, "warnings"), i, w) {
        char wl[320];
        snprintf(wl, sizeof wl, "warning: %s", json_string_value(json_object_get(w, "message")));
        json_array_append_new(content, text_item(wl));
    }
    if (link)
        json_array_append_new(content, link);
    json_decref(file);
    return tool_result(content, structured, 0);
}

/* ---- list_files and load_file ---- */

/* A small result whose text is its JSON, as MCP advises for clients that
 * do not read structuredContent. structured is stolen. */
static json_t *json_result(const char *lead, json_t *structured)
{
    char *dump = json_dumps(structured, JSON_COMPACT);
    size_t n = strlen(lead) + (dump ? strlen(dump) : 0) + 2;
    char *text = malloc(n);
    if (text)
        snprintf(text, n, "%s\n%s", lead, dump ? dump : "");
    json_t *content = json_array();
    json_array_append_new(content, text_item(text ? text : lead));
    free(text);
    free(dump);
    return tool_result(content, structured, 0);
}

static json_t *list_files(mcp_call *call, args *a)
{
    static const char *const known[] = {"session_id", NULL};
    int bad = 0;
    if (only(a, known) != 0)
        return error_result(a->err);
    const char *requested = string_arg(a, "session_id", 0, &bad);
    if (bad)
        return error_result(a->err);
    /* A stateless request has no session of its own: a new one would be
     * empty (and one more to keep). */
    if (!requested && call->modern) {
        kiln_error_set(a->err, KILN_E_USAGE, "/session_id",
                       "is needed: under revision 2026-07-28 a call has no session of its own; "
                       "pass the session_id an execute_code result returned");
        return error_result(a->err);
    }
    char sid[KILN_MCP_ID_MAX];
    int fresh = 0;
    if (mcp_call_session(call, requested, sid, &fresh, a->err) != KILN_E_OK)
        return error_result(a->err);
    json_t *files = NULL;
    if (call->backend->session_files(call->backend->ctx, call->tenant, sid, &files, a->err) !=
        KILN_E_OK) {
        if (a->err->code == KILN_E_GONE && !requested)
            mcp_call_session_gone(call, sid);
        return error_result(a->err);
    }
    char lead[160];
    snprintf(lead, sizeof lead, "%zu file(s) in /mnt/data of session %s:", json_array_size(files),
             sid);
    return json_result(lead, json_pack("{s:s, s:o}", "session_id", sid, "files", files));
}

/* The base name of a path, for the file's name in /mnt/data. */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static json_t *load_file(mcp_call *call, args *a)
{
    static const char *const known[] = {"path", "name", "session_id", NULL};
    int bad = 0;
    if (only(a, known) != 0)
        return error_result(a->err);
    const char *path = string_arg(a, "path", 1, &bad);
    const char *name = bad ? NULL : string_arg(a, "name", 0, &bad);
    const char *requested = bad ? NULL : string_arg(a, "session_id", 0, &bad);
    if (bad)
        return error_result(a->err);
    if (!name)
        name = base_name(path);
    if (!*name) {
        kiln_error_set(a->err, KILN_E_USAGE, "/name", "is needed when the path ends in '/'");
        return error_result(a->err);
    }
    const kiln_mcp_server *srv = call->conn->srv;
    void *data = NULL;
    size_t len = 0;
    if (mcp_allow_read(srv->allow, srv->n_allow, path, KILN_SESSION_PUT_BYTES, &data, &len,
                       a->err) != KILN_E_OK)
        return error_result(a->err);
    char sid[KILN_MCP_ID_MAX];
    int fresh = 0;
    json_t *file = NULL;
    kiln_status st = mcp_call_session(call, requested, sid, &fresh, a->err);
    if (st == KILN_E_OK)
        st = call->backend->session_put(call->backend->ctx, call->tenant, sid, name, data, len,
                                        &file, a->err);
    free(data);
    if (st != KILN_E_OK) {
        /* The session's pointers name the put's members: say it of ours. */
        if (strcmp(a->err->pointer, "/name") != 0 && strncmp(a->err->pointer, "/content", 8) == 0)
            snprintf(a->err->pointer, sizeof a->err->pointer, "/path");
        if (a->err->code == KILN_E_GONE && !requested)
            mcp_call_session_gone(call, sid);
        return error_result(a->err);
    }
    json_t *structured = json_pack("{s:s, s:s, s:O?, s:O?}", "session_id", sid, "name", name,
                                   "bytes", json_object_get(file, "bytes"), "sha256",
                                   json_object_get(file, "sha256"));
    json_decref(file);
    char lead[KILN_MESSAGE_MAX];
    snprintf(lead, sizeof lead, "Copied %s into /mnt/data/%s (session %s).", path, name, sid);
    return json_result(lead, structured);
}

/* ---- the dispatch ---- */

static const struct {
    const char *name;
    json_t *(*fn)(mcp_call *call, args *a);
} tools[] = {
    {"execute_code", execute_code},
    {"render_document", render_document},
    {"list_files", list_files},
    {"load_file", load_file},
};

void mcp_tools_call(mcp_call *call, mcp_outcome *o)
{
    const char *name = json_string_value(json_object_get(call->params, "name"));
    const json_t *arguments = json_object_get(call->params, "arguments");
    if (!name) {
        mcp_outcome_error(o, KILN_MCP_INVALID_PARAMS, NULL, "tools/call needs params.name");
        return;
    }
    size_t i = 0;
    while (i < sizeof tools / sizeof tools[0] && strcmp(tools[i].name, name) != 0)
        i++;
    if (i == sizeof tools / sizeof tools[0]) {
        mcp_outcome_error(o, KILN_MCP_INVALID_PARAMS, json_pack("{s:s}", "tool", name),
                          "unknown tool '%.100s' (tools/list has execute_code, render_document, "
                          "list_files and load_file)",
                          name);
        return;
    }
    kiln_error err;
    memset(&err, 0, sizeof err);
    json_t *empty = json_object();
    args a = {arguments ? arguments : empty, &err};
    if (arguments && !json_is_object(arguments)) {
        kiln_error_set(&err, KILN_E_USAGE, "", "the arguments must be an object");
        o->result = error_result(&err);
    } else {
        o->result = tools[i].fn(call, &a);
    }
    json_decref(empty);
    if (!o->result && !mcp_call_cancelled(call))
        mcp_outcome_error(o, KILN_MCP_INTERNAL_ERROR, NULL, "out of memory");
}
