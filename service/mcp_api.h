/*
 * mcp_api.h - the service's side of the MCP server (mcp/mcp.h): the
 * backend its tools act through (mcp_backend.c). The transport, /mcp, is
 * mcp_http.c (http.h).
 */
#ifndef KILN_SERVICE_MCP_API_H
#define KILN_SERVICE_MCP_API_H

#include "mcp/mcp.h"

struct kiln_server;

/*
 * The backend over the service's own pieces: sessions are /v1/sessions'
 * (the internal API of sessions.h: the pool, the caps and the idle clock
 * apply), renders are POST /v1/render's (kiln_api_render), files are the
 * store's. Every call is tenant-checked: another tenant's session or file
 * answers exactly as an unknown id does. ctx is the server.
 */
void kiln_mcp_service_backend(struct kiln_server *srv, kiln_mcp_backend *out);

#endif
