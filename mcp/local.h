/*
 * local.h - the backend of `kiln mcp` (local.c): each session a `kiln
 * session` child driven by its JSON lines (docs/session.md), the files the
 * sessions and renders make written into one directory (--out) and known
 * by id for as long as the process lives.
 */
#ifndef KILN_MCP_LOCAL_H
#define KILN_MCP_LOCAL_H

#include <stdint.h>

#include "mcp/mcp.h"

/* Sessions one `kiln mcp` keeps at once, by default. */
#define KILN_MCP_LOCAL_SESSIONS 8

typedef struct kiln_mcp_local_options {
    const char *kiln_exe;        /* the kiln executable, for `kiln session` children */
    const char *out_dir;         /* made when missing */
    const char *session_request; /* NULL, or a file each child gets as --request */
    unsigned max_sessions;       /* 0: KILN_MCP_LOCAL_SESSIONS */
    uint64_t max_file_bytes;     /* a file kept or rendered; 0: 30 MiB */
    int spare;                   /* keep one session started ahead of its need */
} kiln_mcp_local_options;

/* *out is new (kiln_mcp_local_free). KILN_E_USAGE when out_dir cannot be
 * made or opened. */
kiln_status kiln_mcp_local_new(const kiln_mcp_local_options *opt, kiln_mcp_backend **out,
                               kiln_error *err);
/* Closes every session and waits for its child. */
void kiln_mcp_local_free(kiln_mcp_backend *backend);

#endif
