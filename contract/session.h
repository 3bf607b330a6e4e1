/*
 * session.h - the messages of a session (docs/session.md), one JSON object
 * per request, shared by every front end that drives one: `kiln session`
 * (newline-delimited JSON on stdin/stdout), and the service and MCP server
 * that speak to it.
 *
 *   {"op": "execute", "id": ..., "code": "...", "language": "python"|"bash",
 *    "timeout": SECONDS}
 *   {"op": "interrupt"} {"op": "files"} {"op": "info"} {"op": "close"}
 *   {"op": "put", "name": "a.csv", "content_base64": "..."}
 *   {"op": "get", "name": "out/plot.png"}
 *
 * Every reply and event is an object with "event" (and the request's "id"
 * when it had one); a request that cannot be done is answered with
 * {"event": "rejected", "id", "errors": [...], "more_errors"} whose errors
 * name the member at fault by JSON Pointer (contract/errors.h).
 */
#ifndef KILN_CONTRACT_SESSION_H
#define KILN_CONTRACT_SESSION_H

#include <jansson.h>
#include <stddef.h>

#include "../exec/session.h"

/* The longest request line: a cell's code (KILN_JOB_CODE_MAX) or a put's
 * file in base64 fits. */
#define KILN_SESSION_REQUEST_BYTES (72u << 20)
/* The most bytes one put may carry (decoded). */
#define KILN_SESSION_PUT_BYTES (48u << 20)

/* Handle one request line (not NUL-terminated, without its newline) on a
 * live session: replies and the cell's events go to emit. Returns 1 when
 * the request was "close" (the caller closes the session), else 0. */
int kiln_session_handle_line(kiln_session *s, const char *line, size_t len,
                             kiln_session_emit emit, void *arg);

/* The reply to a request line longer than KILN_SESSION_REQUEST_BYTES (the
 * caller skips it to its newline). */
void kiln_session_line_too_long(kiln_session_emit emit, void *arg);

#endif
