/*
 * fuzz_mcp.c - the MCP server's handling of messages (mcp/) on arbitrary
 * bytes, as a client on stdio or /mcp may send them.
 *
 * The input is lines. The first is the cell record the backend below
 * answers every execute_code with (when it is a JSON object; the session's
 * record is checked output, but its shapes are what the result is built
 * from); every later line is a message, handled on one connection in turn.
 * For every message going out:
 *   - it is a JSON-RPC 2.0 object: a notification with a method, or a
 *     response with an id and exactly one of result and error (an error
 *     with an integer code and a string message);
 *   - its compact text holds no newline (stdio frames by lines);
 *   - a request gets at most one response, a notification none.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mcp/mcp.h"
#include "../common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *record_template;

static kiln_status open_session(void *ctx, const char *tenant, char *id, kiln_error *err)
{
    (void)ctx, (void)tenant, (void)err;
    snprintf(id, KILN_MCP_ID_MAX, "s1");
    return KILN_E_OK;
}

static kiln_status execute(void *ctx, const char *tenant, const char *sid, const json_t *request,
                           kiln_mcp_event_fn on_event, void *arg, json_t **record,
                           kiln_error *err)
{
    (void)ctx, (void)tenant, (void)request;
    if (strcmp(sid, "s1") != 0)
        return kiln_error_set(err, KILN_E_GONE, "/session_id", "no such session");
    json_t *ev = json_pack("{s:s, s:s}", "event", "stdout", "text", "x");
    on_event(arg, ev);
    json_decref(ev);
    *record = record_template ? json_deep_copy(record_template)
                              : json_pack("{s:s}", "status", "ok");
    return KILN_E_OK;
}

static kiln_status interrupt(void *ctx, const char *tenant, const char *sid, kiln_error *err)
{
    (void)ctx, (void)tenant, (void)sid, (void)err;
    return KILN_E_OK;
}

static kiln_status files(void *ctx, const char *tenant, const char *sid, json_t **out,
                         kiln_error *err)
{
    (void)ctx, (void)tenant, (void)sid, (void)err;
    *out = json_array();
    return KILN_E_OK;
}

static kiln_status put(void *ctx, const char *tenant, const char *sid, const char *name,
                       const void *d, size_t len, json_t **file, kiln_error *err)
{
    (void)ctx, (void)tenant, (void)sid, (void)d, (void)err;
    *file = json_pack("{s:s, s:I}", "name", name, "bytes", (json_int_t)len);
    return KILN_E_OK;
}

static void close_session(void *ctx, const char *tenant, const char *sid)
{
    (void)ctx, (void)tenant, (void)sid;
}

static kiln_status render(void *ctx, const char *tenant, const json_t *request, json_t **file,
                          json_t **warnings, json_t **errors, kiln_error *err)
{
    (void)ctx, (void)tenant;
    const json_t *spec = json_object_get(request, "spec");
    if (json_object_size(spec) % 2) {
        *errors = json_pack("{s:[{s:s, s:s, s:s}], s:i}", "errors", "pointer", "/x", "code",
                            "invalid_spec", "message", "bad", "dropped", 0);
        return kiln_error_set(err, KILN_E_INVALID_SPEC, "", "invalid");
    }
    *file = json_pack("{s:s, s:s, s:s, s:i, s:s}", "id", "f1", "filename", "a.xlsx", "media_type",
                      "application/x", "bytes", 3, "sha256", "00");
    *warnings = json_array();
    return KILN_E_OK;
}

static kiln_status file_list(void *ctx, const char *tenant, json_t **out, kiln_error *err)
{
    (void)ctx, (void)tenant, (void)err;
    *out = json_pack("[{s:s, s:s}]", "id", "f1", "filename", "a.xlsx");
    return KILN_E_OK;
}

static kiln_status file_read(void *ctx, const char *tenant, const char *id, json_t **file,
                             void **d, size_t *len, kiln_error *err)
{
    (void)ctx, (void)tenant;
    if (strcmp(id, "f1") != 0)
        return kiln_error_set(err, KILN_E_INPUT, "", "no such file");
    *file = json_pack("{s:s}", "id", "f1");
    *d = strdup("abc");
    *len = 3;
    return KILN_E_OK;
}

static const kiln_mcp_backend backend = {NULL, open_session,  execute, interrupt, files,
                                         put,  close_session, render,  file_list, file_read};

typedef struct sink {
    int responses;
} sink;

static void check_out(void *arg, const json_t *m)
{
    sink *s = arg;
    if (!json_is_object(m) ||
        strcmp(json_string_value(json_object_get(m, "jsonrpc")) ?: "", "2.0"))
        abort();
    char *text = json_dumps(m, JSON_COMPACT);
    if (!text || strchr(text, '\n'))
        abort();
    free(text);
    if (json_object_get(m, "method")) {
        if (!json_is_string(json_object_get(m, "method")) || json_object_get(m, "id"))
            abort();
        return;
    }
    const json_t *result = json_object_get(m, "result"), *error = json_object_get(m, "error");
    if (!json_object_get(m, "id") || !!result == !!error)
        abort();
    if (error && (!json_is_integer(json_object_get(error, "code")) ||
                  !json_is_string(json_object_get(error, "message"))))
        abort();
    s->responses++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static kiln_mcp_server *srv;
    if (!srv) {
        static const char *const allow[] = {"/nonexistent-kiln-fuzz"};
        kiln_mcp_options opt = {.backend = &backend, .allow_read = allow, .n_allow_read = 0};
        kiln_error err;
        if (kiln_mcp_server_new(&opt, &srv, &err) != KILN_E_OK)
            abort();
    }
    kiln_mcp_conn *c = kiln_mcp_conn_new(srv, "t");
    if (!c)
        return 0;
    const char *p = (const char *)data, *end = p + size;
    int first = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        json_error_t jerr;
        json_t *msg = json_loadb(p, len, 0, &jerr);
        if (first) {
            record_template = json_is_object(msg) ? msg : NULL;
            if (!record_template)
                json_decref(msg);
            first = 0;
        } else if (msg) {
            sink s = {0};
            kiln_mcp_kind kind = kiln_mcp_classify(msg);
            kiln_mcp_handle(c, msg, check_out, &s);
            if (s.responses > 1 || (kind == KILN_MCP_NOTIFICATION && s.responses) ||
                (kind == KILN_MCP_RESPONSE && s.responses))
                abort();
            json_decref(msg);
        }
        p += len + 1;
    }
    json_decref(record_template);
    record_template = NULL;
    kiln_mcp_conn_free(c);
    return 0;
}
