/*
 * call.c - a connection's state, and what the handler of one of its
 * requests asks of it (mcp_internal.h): which session a tool acts on,
 * whether the request was cancelled, and the notifications that go out
 * before its reply.
 *
 * A connection is used from several threads at once (one per request the
 * front end is working on, and the one that reads the next message, which
 * may cancel one of them), so its state is under its lock. The lock is
 * never held across a call into the backend: a session can take seconds
 * to open and a cell minutes to run.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_internal.h"
#include "common/banned.h"

kiln_mcp_conn *kiln_mcp_conn_new(kiln_mcp_server *srv, const char *tenant)
{
    kiln_mcp_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->early_cancels = json_array();
    if (!c->early_cancels) {
        free(c);
        return NULL;
    }
    c->srv = srv;
    snprintf(c->tenant, sizeof c->tenant, "%s", tenant ? tenant : "");
    c->log_level = 8;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->open_lock, NULL);
    return c;
}

void kiln_mcp_conn_free(kiln_mcp_conn *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_opened; i++) {
        c->srv->backend.session_close(c->srv->backend.ctx, c->tenant, c->opened[i]);
        free(c->opened[i]);
    }
    while (c->inflight) {
        mcp_inflight *f = c->inflight;
        c->inflight = f->next;
        json_decref(f->id);
        free(f);
    }
    json_decref(c->early_cancels);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->open_lock);
    free(c);
}

const char *kiln_mcp_conn_version(kiln_mcp_conn *c)
{
    pthread_mutex_lock(&c->lock);
    /* The version never changes once set, so the pointer stays good. */
    const char *v = c->version[0] ? c->version : NULL;
    pthread_mutex_unlock(&c->lock);
    return v;
}

mcp_inflight *mcp_inflight_begin(kiln_mcp_conn *c, const json_t *id)
{
    mcp_inflight *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->id = json_deep_copy(id);
    pthread_mutex_lock(&c->lock);
    size_t i;
    json_t *early;
    json_array_foreach(c->early_cancels, i, early) {
        if (json_equal(early, id)) {
            json_array_remove(c->early_cancels, i);
            f->cancelled = 1;
            break;
        }
    }
    f->next = c->inflight;
    c->inflight = f;
    pthread_mutex_unlock(&c->lock);
    return f;
}

void mcp_inflight_end(kiln_mcp_conn *c, mcp_inflight *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&c->lock);
    for (mcp_inflight **p = &c->inflight; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    json_decref(f->id);
    free(f);
}

void kiln_mcp_cancel(kiln_mcp_conn *c, const json_t *id)
{
    char sid[KILN_MCP_ID_MAX] = "";
    int found = 0;
    if (!id)
        return;
    pthread_mutex_lock(&c->lock);
    for (mcp_inflight *f = c->inflight; f; f = f->next)
        if (json_equal(f->id, id)) {
            f->cancelled = 1;
            snprintf(sid, sizeof sid, "%s", f->session_id);
            found = 1;
            break;
        }
    /* A cancellation may overtake its request (the front end hands the
     * request to a thread that has not begun): keep it for a while. */
    if (!found) {
        if (json_array_size(c->early_cancels) >= MCP_EARLY_CANCELS)
            json_array_remove(c->early_cancels, 0);
        json_array_append_new(c->early_cancels, json_deep_copy(id));
    }
    pthread_mutex_unlock(&c->lock);
    if (sid[0]) {
        kiln_error err;
        memset(&err, 0, sizeof err);
        c->srv->backend.session_interrupt(c->srv->backend.ctx, c->tenant, sid, &err);
    }
}

int mcp_call_running(mcp_call *call, const char *sid)
{
    kiln_mcp_conn *c = call->conn;
    pthread_mutex_lock(&c->lock);
    snprintf(call->inflight->session_id, sizeof call->inflight->session_id, "%s", sid);
    int cancelled = call->inflight->cancelled;
    pthread_mutex_unlock(&c->lock);
    return cancelled;
}

int mcp_call_cancelled(mcp_call *call)
{
    pthread_mutex_lock(&call->conn->lock);
    int cancelled = call->inflight->cancelled;
    pthread_mutex_unlock(&call->conn->lock);
    return cancelled;
}

/* Remember a session this connection opened, so freeing it closes it.
 * -1 when the connection has as many open as it may. */
static int remember(kiln_mcp_conn *c, const char *sid)
{
    int ok = -1;
    pthread_mutex_lock(&c->lock);
    if (c->n_opened < MCP_CONN_SESSIONS_MAX) {
        c->opened[c->n_opened] = strdup(sid);
        if (c->opened[c->n_opened]) {
            c->n_opened++;
            ok = 0;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return ok;
}

/* Open a session; the connection's own (keep) is closed with it. A
 * session opened for a stateless request is the tenant's, like one of
 * /v1/sessions: it lasts until it is closed, idles out or ends, and the
 * backend's own caps bound how many a tenant has. */
static kiln_status open_session(mcp_call *call, char *sid, int keep, kiln_error *err)
{
    kiln_status st = call->backend->session_open(call->backend->ctx, call->tenant, sid, err);
    if (st != KILN_E_OK)
        return st;
    if (keep && remember(call->conn, sid) != 0) {
        call->backend->session_close(call->backend->ctx, call->tenant, sid);
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    }
    json_t *data = json_pack("{s:s, s:s}", "event", "session_opened", "session_id", sid);
    mcp_call_log(call, 1, data);
    return KILN_E_OK;
}

kiln_status mcp_call_session(mcp_call *call, const char *requested, char *sid, int *fresh,
                             kiln_error *err)
{
    kiln_mcp_conn *c = call->conn;
    *fresh = 0;
    if (requested) {
        if (!*requested || strlen(requested) >= KILN_MCP_ID_MAX)
            return kiln_error_set(err, KILN_E_GONE, "/session_id", "there is no session '%.64s'",
                                  requested);
        snprintf(sid, KILN_MCP_ID_MAX, "%s", requested);
        return KILN_E_OK;
    }
    if (call->modern) {
        *fresh = 1;
        return open_session(call, sid, 0, err);
    }
    /* One session per connection: two first calls at once open one. */
    pthread_mutex_lock(&c->open_lock);
    pthread_mutex_lock(&c->lock);
    snprintf(sid, KILN_MCP_ID_MAX, "%s", c->session_id);
    pthread_mutex_unlock(&c->lock);
    kiln_status st = KILN_E_OK;
    if (!sid[0]) {
        st = open_session(call, sid, 1, err);
        if (st == KILN_E_OK) {
            *fresh = 1;
            pthread_mutex_lock(&c->lock);
            snprintf(c->session_id, sizeof c->session_id, "%s", sid);
            pthread_mutex_unlock(&c->lock);
        }
    }
    pthread_mutex_unlock(&c->open_lock);
    return st;
}

void mcp_call_session_gone(mcp_call *call, const char *sid)
{
    kiln_mcp_conn *c = call->conn;
    pthread_mutex_lock(&c->lock);
    if (strcmp(c->session_id, sid) == 0)
        c->session_id[0] = '\0';
    for (size_t i = 0; i < c->n_opened; i++)
        if (strcmp(c->opened[i], sid) == 0) {
            free(c->opened[i]);
            c->opened[i] = c->opened[--c->n_opened];
            break;
        }
    pthread_mutex_unlock(&c->lock);
    call->backend->session_close(call->backend->ctx, call->tenant, sid);
}

void mcp_call_progress(mcp_call *call, const char *message)
{
    if (!call->progress_token || mcp_call_cancelled(call))
        return;
    json_t *params = json_pack("{s:O, s:I}", "progressToken", call->progress_token, "progress",
                               (json_int_t)++call->progress);
    if (params && message)
        json_object_set_new(params, "message", json_string(message));
    json_t *n = mcp_notification("notifications/progress", params);
    if (n)
        call->send(call->send_arg, n);
    json_decref(n);
}

void mcp_call_log(mcp_call *call, int level, json_t *data)
{
    if (!data)
        return;
    if (level < call->log_level || mcp_call_cancelled(call)) {
        json_decref(data);
        return;
    }
    json_t *n = mcp_notification("notifications/message",
                                 json_pack("{s:s, s:s, s:o}", "level", mcp_log_level_name(level),
                                           "logger", "kiln", "data", data));
    if (n)
        call->send(call->send_arg, n);
    json_decref(n);
}

void mcp_outcome_error(mcp_outcome *o, int code, json_t *data, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->message, sizeof o->message, fmt, ap);
    va_end(ap);
    json_decref(o->result);
    o->result = NULL;
    o->code = code;
    json_decref(o->data);
    o->data = data;
}
