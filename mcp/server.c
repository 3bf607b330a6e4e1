/*
 * server.c - the server, the lifecycle of each revision and the dispatch
 * of every message (mcp.h).
 *
 * Which revision a request is served under is decided per request, as the
 * 2026-07-28 revision's "dual-era" servers do: a request whose _meta names
 * a protocol version is modern (served on its own; an unsupported version
 * is -32022 with the ones this server has), anything else is legacy and
 * needs the connection's `initialize` first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_internal.h"
#include "common/templates.h"
#include "common/version.h"
#include "common/banned.h"

static const char default_instructions[] =
    "Kiln runs Python (with numpy, pandas, matplotlib) or bash in a sandbox without network, "
    "and renders real .xlsx, .docx, .pptx and .pdf files from a JSON document spec. Use "
    "execute_code for computation and analysis: variables and files in /mnt/data persist "
    "between calls of the same session_id. Use render_document to make a document: a bad spec "
    "comes back with every error at a JSON Pointer, to fix and retry. Files come back as "
    "kiln://files/{id} resource links.";

kiln_status kiln_mcp_server_new(const kiln_mcp_options *opt, kiln_mcp_server **out,
                                kiln_error *err)
{
    *out = NULL;
    kiln_mcp_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    srv->backend = *opt->backend;
    size_t len = 0;
    const char *defs = kiln_template("tools/mcp.json", &len);
    json_error_t jerr;
    json_t *doc = defs ? json_loadb(defs, len, 0, &jerr) : NULL;
    srv->tools = json_incref(json_object_get(doc, "tools"));
    json_decref(doc);
    srv->instructions = strdup(opt->instructions ? opt->instructions : default_instructions);
    kiln_status st = KILN_E_OK;
    if (!json_is_array(srv->tools) || !srv->instructions)
        st = kiln_error_set(err, KILN_E_INTERNAL, "",
                            "the built-in tool definitions are missing");
    if (st == KILN_E_OK)
        st = mcp_allow_open(opt->allow_read, opt->n_allow_read, &srv->allow, err);
    if (st == KILN_E_OK)
        srv->n_allow = opt->n_allow_read;
    if (st != KILN_E_OK) {
        kiln_mcp_server_free(srv);
        return st;
    }
    *out = srv;
    return KILN_E_OK;
}

void kiln_mcp_server_free(kiln_mcp_server *srv)
{
    if (!srv)
        return;
    json_decref(srv->tools);
    mcp_allow_close(srv->allow, srv->n_allow);
    free(srv->instructions);
    free(srv);
}

static json_t *server_info(void)
{
    return json_pack("{s:s, s:s, s:s}", "name", "kiln", "title", "Kiln", "version", KILN_VERSION);
}

static json_t *capabilities(int legacy)
{
    json_t *c = json_pack("{s:{s:b}, s:{s:b, s:b}}", "tools", "listChanged", 0, "resources",
                          "subscribe", 0, "listChanged", 0);
    /* Logging is deprecated in 2026-07-28, where a request asks for its own
     * log messages by _meta; a legacy client sets a level. */
    if (c && legacy)
        json_object_set_new(c, "logging", json_object());
    return c;
}

/* ---- the lifecycle ---- */

static void initialize(mcp_call *call, mcp_outcome *o)
{
    kiln_mcp_conn *c = call->conn;
    const char *asked = json_string_value(json_object_get(call->params, "protocolVersion"));
    if (!asked) {
        mcp_outcome_error(o, KILN_MCP_INVALID_PARAMS, NULL,
                          "initialize needs params.protocolVersion");
        return;
    }
    /* The client's version when this server has it, else this server's
     * latest legacy one: the client decides whether it can go on. */
    const char *version = mcp_legacy_supported(asked) ? asked : KILN_MCP_LEGACY_LATEST;
    pthread_mutex_lock(&c->lock);
    int again = c->version[0] != '\0';
    if (!again)
        snprintf(c->version, sizeof c->version, "%s", version);
    pthread_mutex_unlock(&c->lock);
    if (again) {
        mcp_outcome_error(o, KILN_MCP_INVALID_REQUEST, NULL,
                          "this connection is initialized already");
        return;
    }
    o->result = json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", version, "capabilities",
                          capabilities(1), "serverInfo", server_info(), "instructions",
                          c->srv->instructions);
}

static void discover(mcp_call *call, mcp_outcome *o)
{
    o->result = json_pack("{s:o, s:o, s:{s:o}, s:s, s:i, s:s}", "supportedVersions",
                          kiln_mcp_versions(), "capabilities", capabilities(0), "_meta",
                          "io.modelcontextprotocol/serverInfo", server_info(), "instructions",
                          call->conn->srv->instructions, "ttlMs", 3600000, "cacheScope",
                          "public");
}

static void ping(mcp_call *call, mcp_outcome *o)
{
    (void)call;
    o->result = json_object();
}

static void set_level(mcp_call *call, mcp_outcome *o)
{
    int level = mcp_log_level(json_string_value(json_object_get(call->params, "level")));
    if (level < 0) {
        mcp_outcome_error(o, KILN_MCP_INVALID_PARAMS, NULL,
                          "params.level must be one of debug, info, notice, warning, error, "
                          "critical, alert, emergency");
        return;
    }
    pthread_mutex_lock(&call->conn->lock);
    call->conn->log_level = level;
    pthread_mutex_unlock(&call->conn->lock);
    o->result = json_object();
}

/* ---- the dispatch ---- */

enum { LEGACY = 1, MODERN = 2, BOTH = 3 };

static const struct method {
    const char *name;
    void (*fn)(mcp_call *call, mcp_outcome *o);
    int eras;
    const char *cache_scope; /* modern results: CacheableResult's, or NULL */
    int ttl_ms;
} methods[] = {
    {"ping", ping, LEGACY, NULL, 0},
    {"logging/setLevel", set_level, LEGACY, NULL, 0},
    {"tools/list", mcp_tools_list, BOTH, "public", 3600000},
    {"tools/call", mcp_tools_call, BOTH, NULL, 0},
    {"resources/list", mcp_resources_list, BOTH, "private", 0},
    {"resources/templates/list", mcp_resources_templates, BOTH, "public", 3600000},
    {"resources/read", mcp_resources_read, BOTH, "private", 3600000},
};

static const struct method *find_method(const char *name, int era)
{
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (strcmp(methods[i].name, name) == 0 && (methods[i].eras & era))
            return &methods[i];
    return NULL;
}

static void send_reply(mcp_call *call, json_t *reply)
{
    if (reply)
        call->send(call->send_arg, reply);
    json_decref(reply);
}

/* A modern result says it is complete and who answered it. */
static void modern_result(json_t *result, const struct method *m)
{
    json_object_set_new(result, "resultType", json_string("complete"));
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    json_object_set_new(meta, "io.modelcontextprotocol/serverInfo", server_info());
    if (m && m->cache_scope) {
        json_object_set_new(result, "ttlMs", json_integer(m->ttl_ms));
        json_object_set_new(result, "cacheScope", json_string(m->cache_scope));
    }
}

/* The era and level of a request; 0, or -1 when it was answered with an
 * error (a modern request it cannot serve). */
static int request_era(mcp_call *call, const json_t *msg, const char *method)
{
    const json_t *meta = json_object_get(call->params, "_meta");
    const char *version = kiln_mcp_message_version(msg);
    call->progress_token = json_object_get(meta, "progressToken");
    if (call->progress_token && !json_is_string(call->progress_token) &&
        !json_is_integer(call->progress_token))
        call->progress_token = NULL;
    if (!version || strcmp(method, "initialize") == 0) {
        pthread_mutex_lock(&call->conn->lock);
        call->log_level = call->conn->log_level;
        pthread_mutex_unlock(&call->conn->lock);
        return 0;
    }
    call->modern = 1;
    call->log_level = 8;
    if (strcmp(version, KILN_MCP_MODERN_VERSION) != 0) {
        json_t *data = json_pack("{s:o, s:s}", "supported", kiln_mcp_versions(), "requested",
                                 version);
        send_reply(call, kiln_mcp_error_reply(call->id, KILN_MCP_UNSUPPORTED_VERSION,
                                              "Unsupported protocol version", data));
        return -1;
    }
    if (strcmp(method, "server/discover") != 0 &&
        !json_is_object(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"))) {
        send_reply(call, kiln_mcp_error_reply(
                             call->id, KILN_MCP_INVALID_PARAMS,
                             "_meta needs io.modelcontextprotocol/clientCapabilities (an object)",
                             NULL));
        return -1;
    }
    const char *level = json_string_value(
        json_object_get(meta, "io.modelcontextprotocol/logLevel"));
    if (level && mcp_log_level(level) >= 0)
        call->log_level = mcp_log_level(level);
    return 0;
}

static void handle_request(kiln_mcp_conn *c, const json_t *msg, kiln_mcp_send_fn send, void *arg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *empty = json_object();
    mcp_call call = {.conn = c,
                     .backend = &c->srv->backend,
                     .tenant = c->tenant,
                     .id = json_object_get(msg, "id"),
                     .params = json_object_get(msg, "params"),
                     .send = send,
                     .send_arg = arg};
    if (!call.params)
        call.params = empty;
    if (request_era(&call, msg, method) != 0)
        goto free_empty;

    mcp_outcome o = {0};
    const struct method *m = NULL;
    if (strcmp(method, "initialize") == 0) {
        initialize(&call, &o);
    } else if (strcmp(method, "server/discover") == 0) {
        discover(&call, &o);
    } else if (!(m = find_method(method, call.modern ? MODERN : LEGACY))) {
        mcp_outcome_error(&o, KILN_MCP_METHOD_NOT_FOUND, NULL, "Method not found: %.100s",
                          method);
    } else if (!call.modern && strcmp(method, "ping") != 0 && !kiln_mcp_conn_version(c)) {
        mcp_outcome_error(&o, KILN_MCP_INVALID_REQUEST, NULL,
                          "not initialized: send initialize first, or name a protocol version "
                          "in params._meta (io.modelcontextprotocol/protocolVersion: \"%s\")",
                          KILN_MCP_MODERN_VERSION);
    } else {
        call.inflight = mcp_inflight_begin(c, call.id);
        if (!call.inflight) {
            mcp_outcome_error(&o, KILN_MCP_INTERNAL_ERROR, NULL, "out of memory");
        } else {
            m->fn(&call, &o);
            int cancelled = mcp_call_cancelled(&call);
            mcp_inflight_end(c, call.inflight);
            if (cancelled) { /* the spec: no reply to a cancelled request */
                json_decref(o.result);
                json_decref(o.data);
                goto free_empty;
            }
        }
    }
    if (o.result) {
        if (call.modern)
            modern_result(o.result, m);
        send_reply(&call, mcp_result_reply(call.id, o.result));
    } else {
        send_reply(&call, kiln_mcp_error_reply(call.id, o.code, o.message, o.data));
    }
free_empty:
    json_decref(empty);
}

static void handle_notification(kiln_mcp_conn *c, const json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    const json_t *params = json_object_get(msg, "params");
    if (strcmp(method, "notifications/initialized") == 0) {
        pthread_mutex_lock(&c->lock);
        c->initialized = 1;
        pthread_mutex_unlock(&c->lock);
    } else if (strcmp(method, "notifications/cancelled") == 0) {
        kiln_mcp_cancel(c, json_object_get(params, "requestId"));
    }
    /* Any other notification is one this server has no use for. */
}

void kiln_mcp_handle(kiln_mcp_conn *c, const json_t *msg, kiln_mcp_send_fn send, void *arg)
{
    switch (kiln_mcp_classify(msg)) {
    case KILN_MCP_REQUEST:
        handle_request(c, msg, send, arg);
        break;
    case KILN_MCP_NOTIFICATION:
        handle_notification(c, msg);
        break;
    case KILN_MCP_RESPONSE:
        break;
    case KILN_MCP_INVALID: {
        json_t *reply = kiln_mcp_error_reply(
            json_object_get(msg, "id"), KILN_MCP_INVALID_REQUEST,
            json_is_array(msg) ? "Invalid Request: a batch (a JSON array) is not accepted "
                                 "since revision 2025-06-18: send one message at a time"
                               : "Invalid Request: not a JSON-RPC 2.0 message",
            NULL);
        if (reply)
            send(arg, reply);
        json_decref(reply);
        break;
    }
    }
}
