/*
 * protocol.c - the shapes of JSON-RPC 2.0 and the MCP revisions this
 * server speaks (mcp_internal.h).
 */
#include <string.h>

#include "mcp/mcp_internal.h"
#include "common/banned.h"

/* Newest first: the modern revision, then the legacy ones `initialize`
 * negotiates (2025-06-18 is the oldest with structuredContent, outputSchema
 * and resource links, which the tools' results are made of). */
static const char *const versions[] = {KILN_MCP_MODERN_VERSION, "2025-11-25", "2025-06-18"};
#define N_VERSIONS (sizeof versions / sizeof versions[0])

int kiln_mcp_version_supported(const char *version)
{
    for (size_t i = 0; version && i < N_VERSIONS; i++)
        if (strcmp(version, versions[i]) == 0)
            return 1;
    return 0;
}

int mcp_legacy_supported(const char *version)
{
    return kiln_mcp_version_supported(version) && strcmp(version, KILN_MCP_MODERN_VERSION) != 0;
}

json_t *kiln_mcp_versions(void)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < N_VERSIONS; i++)
        json_array_append_new(a, json_string(versions[i]));
    return a;
}

const char *kiln_mcp_message_version(const json_t *msg)
{
    const json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    return json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
}

/* An id is a string or a number (JSON-RPC 2.0; MCP forbids null). */
static int valid_id(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id) || json_is_real(id);
}

kiln_mcp_kind kiln_mcp_classify(const json_t *msg)
{
    if (!json_is_object(msg))
        return KILN_MCP_INVALID;
    const json_t *version = json_object_get(msg, "jsonrpc");
    if (!json_is_string(version) || strcmp(json_string_value(version), "2.0") != 0)
        return KILN_MCP_INVALID;
    const json_t *method = json_object_get(msg, "method");
    const json_t *id = json_object_get(msg, "id");
    if (method) {
        if (!json_is_string(method))
            return KILN_MCP_INVALID;
        const json_t *params = json_object_get(msg, "params");
        if (params && !json_is_object(params))
            return KILN_MCP_INVALID;
        if (!id)
            return KILN_MCP_NOTIFICATION;
        return valid_id(id) ? KILN_MCP_REQUEST : KILN_MCP_INVALID;
    }
    if ((json_object_get(msg, "result") || json_object_get(msg, "error")) && id)
        return KILN_MCP_RESPONSE;
    return KILN_MCP_INVALID;
}

json_t *kiln_mcp_error_reply(const json_t *id, int code, const char *message, json_t *data)
{
    json_t *error = json_pack("{s:i, s:s}", "code", code, "message", message);
    if (error && data)
        json_object_set_new(error, "data", data);
    else
        json_decref(data);
    if (!error)
        return NULL;
    return json_pack("{s:s, s:O?, s:o}", "jsonrpc", "2.0", "id", valid_id(id) ? id : json_null(),
                     "error", error);
}

json_t *mcp_result_reply(const json_t *id, json_t *result)
{
    if (!result)
        return NULL;
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

json_t *mcp_notification(const char *method, json_t *params)
{
    if (!params)
        return NULL;
    return json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}

static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                     "error", "critical", "alert",  "emergency"};

int mcp_log_level(const char *name)
{
    for (int i = 0; name && i < 8; i++)
        if (strcmp(name, levels[i]) == 0)
            return i;
    return -1;
}

const char *mcp_log_level_name(int level)
{
    return level >= 0 && level < 8 ? levels[level] : "info";
}
