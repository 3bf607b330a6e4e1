/*
 * mcp_backend.c - what the MCP tools act on under `kiln serve`
 * (mcp_api.h): the tenant's sessions, renders and stored files.
 *
 * Nothing here is MCP's: each call is one the HTTP API has too (a cell of
 * POST /v1/sessions/{id}/cells, a POST /v1/render, a file's metadata and
 * body), made through the same code, so the limits, the caps and the
 * tenant checks are the ones documented for those routes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/http.h"
#include "service/mcp_api.h"
#include "service/sessions.h"
#include "../common/banned.h"

/* A file of the store the tools may read whole: the store's own ceiling
 * (the larger of --max-upload and the produced-file limit). */
static uint64_t read_max(const kiln_server *srv)
{
    return srv->opt.max_upload_bytes > srv->opt.max_file_bytes ? srv->opt.max_upload_bytes
                                                               : srv->opt.max_file_bytes;
}

static kiln_status be_open(void *ctx, const char *tenant, char *id, kiln_error *err)
{
    char sid[KILN_STORE_ID_LEN + 1];
    kiln_status st = kiln_sessions_open(ctx, tenant, sid, err);
    if (st == KILN_E_OK)
        snprintf(id, KILN_MCP_ID_MAX, "%s", sid);
    return st;
}

/* The documents of a record are also files of it (source document): each
 * gets the file object its files[] entry was stored as, by name. */
static void link_documents(json_t *record)
{
    json_t *files = json_object_get(record, "files");
    json_t *docs = json_object_get(record, "documents");
    size_t i, j;
    json_t *d, *f;
    json_array_foreach(docs, i, d) {
        const char *name = json_string_value(json_object_get(d, "name"));
        json_array_foreach(files, j, f) {
            const char *fname = json_string_value(json_object_get(f, "name"));
            if (name && fname && strcmp(name, fname) == 0 &&
                json_is_object(json_object_get(f, "file"))) {
                json_object_set(d, "file", json_object_get(f, "file"));
                break;
            }
        }
    }
}

static kiln_status be_execute(void *ctx, const char *tenant, const char *session_id,
                              const json_t *request, kiln_mcp_event_fn on_event, void *arg,
                              json_t **record, kiln_error *err)
{
    kiln_status st = kiln_sessions_execute(ctx, tenant, session_id, request, on_event, arg,
                                           record, err);
    if (st == KILN_E_OK)
        link_documents(*record);
    return st;
}

static kiln_status be_interrupt(void *ctx, const char *tenant, const char *session_id,
                                kiln_error *err)
{
    return kiln_sessions_interrupt(ctx, tenant, session_id, err);
}

static kiln_status be_files(void *ctx, const char *tenant, const char *session_id, json_t **files,
                            kiln_error *err)
{
    return kiln_sessions_files(ctx, tenant, session_id, files, err);
}

static kiln_status be_put(void *ctx, const char *tenant, const char *session_id, const char *name,
                          const void *data, size_t len, json_t **file, kiln_error *err)
{
    return kiln_sessions_put(ctx, tenant, session_id, name, data, len, file, err);
}

static void be_close(void *ctx, const char *tenant, const char *session_id)
{
    kiln_sessions_close(ctx, tenant, session_id);
}

/* The format label of a render, bounded to the known ones. */
static const char *format_label(const json_t *request)
{
    static const char *const known[] = {"xlsx", "docx", "pptx", "pdf"};
    const char *f = json_string_value(json_object_get(request, "format"));
    for (size_t i = 0; f && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(f, known[i]) == 0)
            return known[i];
    return "other";
}

/* A render as POST /v1/render does it (no inputs: a tool's spec names no
 * uploads), its reply turned into the backend's shapes. */
static kiln_status be_render(void *ctx, const char *tenant, const json_t *request, json_t **file,
                             json_t **warnings, json_t **errors, kiln_error *err)
{
    kiln_server *srv = ctx;
    *file = *warnings = *errors = NULL;
    json_t *rq = json_object();
    const char *keys[] = {"format", "spec", "filename"};
    for (size_t i = 0; rq && i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(request, keys[i]);
        if (v && !json_is_null(v))
            json_object_set(rq, keys[i], v);
    }
    if (!rq)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    kiln_api_reply reply;
    memset(&reply, 0, sizeof reply);
    kiln_api_render(&srv->api, tenant, rq, &reply);
    json_decref(rq);
    kiln_metrics_render(srv->metrics, format_label(request),
                        reply.status == 201 ? "ok" : "error");
    kiln_status st = KILN_E_OK;
    if (reply.status == 201 && json_is_object(reply.body)) {
        json_t *w = json_object_get(reply.body, "warnings");
        *warnings = json_is_array(w) ? json_incref(w) : json_array();
        json_object_del(reply.body, "warnings");
        *file = json_incref(reply.body);
    } else {
        const json_t *e = json_object_get(reply.body, "error");
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        const json_t *details = json_object_get(e, "details");
        if (reply.status == 422 && code && strcmp(code, "invalid_spec") == 0) {
            const json_t *list = json_object_get(details, "errors");
            const json_t *more = json_object_get(details, "more_errors");
            *errors = json_pack("{s:O, s:I}", "errors", list ? list : json_array(), "dropped",
                                json_is_integer(more) ? json_integer_value(more) : 0);
            st = kiln_error_set(err, KILN_E_INVALID_SPEC, NULL, "%s",
                                msg ? msg : "The spec is not valid.");
        } else {
            if (reply.log[0])
                http_event(srv, "error", json_pack("{s:s}", "message", reply.log));
            st = kiln_error_set(err,
                                reply.status == 413   ? KILN_E_TOO_LARGE
                                : reply.status == 400 ? KILN_E_USAGE
                                : reply.status == 404 ? KILN_E_INPUT
                                                      : KILN_E_INTERNAL,
                                NULL, "%s", msg ? msg : "The render failed.");
        }
    }
    json_decref(reply.body);
    return st;
}

struct list_ctx {
    json_t *files;
};

static void list_one(const kiln_store_file *file, void *arg)
{
    struct list_ctx *c = arg;
    json_array_append_new(c->files, kiln_api_file_json(file));
}

static kiln_status be_file_list(void *ctx, const char *tenant, json_t **files, kiln_error *err)
{
    kiln_server *srv = ctx;
    struct list_ctx c = {.files = json_array()};
    int64_t total = 0;
    *files = NULL;
    if (!c.files)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    /* The newest 1000 (the store's page): resources/list pages them. */
    if (kiln_store_list(srv->store, tenant, 0, 1000, list_one, &c, &total, err) !=
        KILN_STORE_OK) {
        json_decref(c.files);
        return err->code ? err->code : KILN_E_INTERNAL;
    }
    *files = c.files;
    return KILN_E_OK;
}

static kiln_status be_file_read(void *ctx, const char *tenant, const char *id, json_t **file,
                                void **data, size_t *len, kiln_error *err)
{
    kiln_server *srv = ctx;
    *file = NULL;
    *data = NULL;
    *len = 0;
    kiln_store_file f;
    int fd = -1;
    /* A malformed id, another tenant's and a missing one: the same words. */
    kiln_store_result r = kiln_api_valid_id(id)
                              ? kiln_store_open_body(srv->store, tenant, id, &f, &fd, err)
                              : KILN_STORE_NOT_FOUND;
    if (r == KILN_STORE_NOT_FOUND)
        return kiln_error_set(err, KILN_E_INPUT, NULL, "No such file: %s.", id);
    if (r == KILN_STORE_GONE) {
        char when[32];
        kiln_api_time(f.expires_at, when, sizeof when);
        return kiln_error_set(err, KILN_E_INPUT, NULL, "File %s expired at %s.", id, when);
    }
    if (r != KILN_STORE_OK)
        return err->code ? err->code : KILN_E_INTERNAL;
    struct stat st;
    char *buf = NULL;
    kiln_status status = KILN_E_OK;
    if (fstat(fd, &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size > read_max(srv)) {
        status = kiln_error_set(err, KILN_E_INTERNAL, NULL, "Cannot read file %s.", id);
    } else if (!(buf = malloc((size_t)st.st_size + 1))) {
        status = kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    } else {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got != (size_t)st.st_size)
            status = kiln_error_set(err, KILN_E_INTERNAL, NULL, "Cannot read file %s: %s.", id,
                                    strerror(errno));
        *len = got;
    }
    close(fd);
    if (status != KILN_E_OK) {
        free(buf);
        *len = 0;
        return status;
    }
    *file = kiln_api_file_json(&f);
    *data = buf;
    return KILN_E_OK;
}

void kiln_mcp_service_backend(kiln_server *srv, kiln_mcp_backend *out)
{
    *out = (kiln_mcp_backend){
        .ctx = srv,
        .session_open = be_open,
        .session_execute = be_execute,
        .session_interrupt = be_interrupt,
        .session_files = be_files,
        .session_put = be_put,
        .session_close = be_close,
        .render = be_render,
        .file_list = be_file_list,
        .file_read = be_file_read,
    };
}
