/*
 * resources.c - resources/list, resources/templates/list and
 * resources/read (mcp_internal.h): every file a session or a render made
 * for the tenant, as kiln://files/{id}, read whole as a base64 blob.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_internal.h"
#include "common/base64.h"
#include "common/banned.h"

#define URI_PREFIX "kiln://files/"
/* resources/list gives this many at a time; its cursor is the offset. */
#define PAGE 100

static json_t *resource_of(const json_t *file)
{
    const char *id = json_string_value(json_object_get(file, "id"));
    if (!id)
        return NULL;
    char uri[KILN_MCP_ID_MAX + sizeof URI_PREFIX];
    snprintf(uri, sizeof uri, URI_PREFIX "%s", id);
    const char *name = json_string_value(json_object_get(file, "filename"));
    json_t *r = json_pack("{s:s, s:s}", "uri", uri, "name", name ? name : id);
    const char *media = json_string_value(json_object_get(file, "media_type"));
    if (r && media)
        json_object_set_new(r, "mimeType", json_string(media));
    if (r && json_is_integer(json_object_get(file, "bytes")))
        json_object_set(r, "size", json_object_get(file, "bytes"));
    return r;
}

void mcp_resources_list(mcp_call *call, mcp_outcome *o)
{
    size_t from = 0;
    const json_t *cursor = json_object_get(call->params, "cursor");
    if (cursor && !json_is_null(cursor)) {
        const char *s = json_string_value(cursor);
        char *end = NULL;
        unsigned long long v = s ? strtoull(s, &end, 10) : 0;
        if (!s || !*s || *end || v > (1u << 30)) {
            mcp_outcome_error(o, KILN_MCP_INVALID_PARAMS, NULL, "unknown cursor");
            return;
        }
        from = (size_t)v;
    }
    kiln_error err;
    memset(&err, 0, sizeof err);
    json_t *files = NULL;
    if (call->backend->file_list(call->backend->ctx, call->tenant, &files, &err) != KILN_E_OK) {
        mcp_outcome_error(o, KILN_MCP_INTERNAL_ERROR, NULL, "%s", err.message);
        return;
    }
    json_t *list = json_array();
    size_t n = json_array_size(files);
    for (size_t i = from; i < n && i < from + PAGE; i++)
        json_array_append_new(list, resource_of(json_array_get(files, i)));
    o->result = json_pack("{s:o}", "resources", list);
    if (o->result && from + PAGE < n) {
        char next[32];
        snprintf(next, sizeof next, "%zu", from + PAGE);
        json_object_set_new(o->result, "nextCursor", json_string(next));
    }
    json_decref(files);
}

void mcp_resources_templates(mcp_call *call, mcp_outcome *o)
{
    (void)call;
    o->result = json_pack("{s:[{s:s, s:s, s:s, s:s}]}", "resourceTemplates", "uriTemplate",
                          URI_PREFIX "{id}", "name", "kiln-file", "title", "A file Kiln made",
                          "description",
                          "A file a session or a render made: a resource_link of a tool "
                          "result names it. Read as a base64 blob.");
}

static void not_found(mcp_call *call, mcp_outcome *o, const char *uri)
{
    /* -32002 until 2026-07-28, which made it Invalid Params. */
    mcp_outcome_error(o,
                      call->modern ? KILN_MCP_INVALID_PARAMS : KILN_MCP_RESOURCE_NOT_FOUND_LEGACY,
                      json_pack("{s:s}", "uri", uri), "Resource not found");
}

void mcp_resources_read(mcp_call *call, mcp_outcome *o)
{
    const char *uri = json_string_value(json_object_get(call->params, "uri"));
    if (!uri) {
        mcp_outcome_error(o, KILN_MCP_INVALID_PARAMS, NULL, "resources/read needs params.uri");
        return;
    }
    const char *id = strncmp(uri, URI_PREFIX, strlen(URI_PREFIX)) == 0 ? uri + strlen(URI_PREFIX)
                                                                       : NULL;
    if (!id || !*id || strlen(id) >= KILN_MCP_ID_MAX) {
        not_found(call, o, uri);
        return;
    }
    kiln_error err;
    memset(&err, 0, sizeof err);
    json_t *file = NULL;
    void *data = NULL;
    size_t len = 0;
    kiln_status st = call->backend->file_read(call->backend->ctx, call->tenant, id, &file, &data,
                                              &len, &err);
    if (st == KILN_E_INPUT || st == KILN_E_GONE) {
        not_found(call, o, uri);
        return;
    }
    if (st != KILN_E_OK) {
        mcp_outcome_error(o, KILN_MCP_INTERNAL_ERROR, NULL, "%s", err.message);
        return;
    }
    char *b64 = kiln_base64_encode(data, len, NULL);
    free(data);
    const char *media = json_string_value(json_object_get(file, "media_type"));
    if (b64)
        o->result = json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
                              media ? media : "application/octet-stream", "blob", b64);
    free(b64);
    json_decref(file);
    if (!o->result)
        mcp_outcome_error(o, KILN_MCP_INTERNAL_ERROR, NULL, "out of memory");
}
