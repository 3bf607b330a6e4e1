/*
 * session.c - a session's requests, checked and carried out (session.h).
 *
 * One function per request; each checks its members (unknown ones are an
 * error, as everywhere in the contract), calls exec/session.h and emits the
 * reply. Errors are the contract's error objects, so a front end shows
 * them as it shows any other.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/pointer.h"
#include "contract/errors.h"
#include "contract/job.h"
#include "contract/session.h"
#include "../common/banned.h"

typedef struct request {
    json_t *msg;
    json_t *id; /* borrowed from msg, or NULL */
    kiln_session_emit emit;
    void *arg;
} request;

static json_t *reply_new(const request *rq, const char *event)
{
    json_t *ev = json_pack("{s:s}", "event", event);
    if (ev && rq->id)
        json_object_set(ev, "id", rq->id);
    return ev;
}

static void send_reply(const request *rq, json_t *ev)
{
    if (ev)
        rq->emit(rq->arg, ev);
    json_decref(ev);
}

static void reject(const request *rq, const kiln_error *err, const json_t *ended)
{
    json_t *ev = reply_new(rq, "rejected");
    json_t *list = kiln_error_list_json(err);
    if (ev && list)
        json_object_update(ev, list);
    if (ev && ended)
        json_object_set(ev, "session", (json_t *)ended);
    json_decref(list);
    send_reply(rq, ev);
}

static void reject_with(const request *rq, kiln_status code, const char *pointer,
                        const char *message)
{
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_error_set(&err, code, pointer, "%s", message);
    reject(rq, &err, NULL);
}

/* Every member of the request is one the op takes: 0, else rejected. */
static int only_members(const request *rq, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(rq->msg, key, v) {
        int ok = strcmp(key, "op") == 0 || strcmp(key, "id") == 0;
        for (size_t i = 0; !ok && allowed[i]; i++)
            ok = strcmp(key, allowed[i]) == 0;
        if (!ok) {
            kiln_error err;
            memset(&err, 0, sizeof err);
            kiln_error_set(&err, KILN_E_USAGE, "", "unknown member \"%s\"", key);
            err.pointer[0] = '/';
            kiln_ptr_escape(err.pointer + 1, sizeof err.pointer - 1, key);
            reject(rq, &err, NULL);
            return -1;
        }
    }
    return 0;
}

static const char *string_member(const request *rq, const char *name, int required)
{
    json_t *v = json_object_get(rq->msg, name);
    char pointer[64];
    snprintf(pointer, sizeof pointer, "/%s", name);
    if (!v && !required)
        return "";
    if (!json_is_string(v)) {
        reject_with(rq, KILN_E_USAGE, pointer, v ? "must be a string" : "is required");
        return NULL;
    }
    return json_string_value(v);
}

static void do_execute(kiln_session *s, const request *rq)
{
    static const char *const members[] = {"code", "language", "timeout", NULL};
    if (only_members(rq, members) < 0)
        return;
    const char *code = string_member(rq, "code", 1);
    const char *language = code ? string_member(rq, "language", 0) : NULL;
    if (!language)
        return;
    size_t len = json_string_length(json_object_get(rq->msg, "code"));
    if (len > KILN_JOB_CODE_MAX) {
        kiln_error err;
        memset(&err, 0, sizeof err);
        kiln_error_set(&err, KILN_E_LIMIT, "/code", "the code is larger than %u bytes",
                       KILN_JOB_CODE_MAX);
        err.limit = KILN_JOB_CODE_MAX;
        err.actual = (double)len;
        reject(rq, &err, NULL);
        return;
    }
    kiln_run_language lang = KILN_LANG_PYTHON;
    if (strcmp(language, "bash") == 0)
        lang = KILN_LANG_BASH;
    else if (language[0] && strcmp(language, "python") != 0) {
        reject_with(rq, KILN_E_USAGE, "/language", "must be \"python\" or \"bash\"");
        return;
    }
    json_t *t = json_object_get(rq->msg, "timeout");
    double timeout = 0;
    if (t) {
        timeout = json_number_value(t);
        if (!json_is_number(t) || !(timeout > 0) || !isfinite(timeout)) {
            reject_with(rq, KILN_E_USAGE, "/timeout", "must be a number of seconds above 0");
            return;
        }
    }
    kiln_error err;
    memset(&err, 0, sizeof err);
    if (kiln_session_execute(s, code, len, language[0] ? &lang : NULL, timeout, rq->id, rq->emit,
                             rq->arg, &err) != KILN_E_OK)
        reject(rq, &err, kiln_session_ended(s));
}

static void do_files(kiln_session *s, const request *rq)
{
    static const char *const members[] = {NULL};
    if (only_members(rq, members) < 0)
        return;
    kiln_error err;
    memset(&err, 0, sizeof err);
    if (kiln_session_ended(s)) {
        kiln_error_set(&err, KILN_E_GONE, "", "the session has ended");
        reject(rq, &err, kiln_session_ended(s));
        return;
    }
    json_t *files = kiln_session_files(s, &err);
    if (!files) {
        reject(rq, &err, NULL);
        return;
    }
    json_t *ev = reply_new(rq, "files");
    if (ev)
        json_object_set(ev, "files", files);
    if (ev && kiln_session_refused(s))
        json_object_update(ev, (json_t *)kiln_session_refused(s));
    json_decref(files);
    send_reply(rq, ev);
}

static void do_put(kiln_session *s, const request *rq)
{
    static const char *const members[] = {"name", "content_base64", NULL};
    if (only_members(rq, members) < 0)
        return;
    const char *name = string_member(rq, "name", 1);
    const char *content = name ? string_member(rq, "content_base64", 1) : NULL;
    if (!content)
        return;
    size_t len = json_string_length(json_object_get(rq->msg, "content_base64"));
    if (len / 4 * 3 > KILN_SESSION_PUT_BYTES + 3) {
        kiln_error err;
        memset(&err, 0, sizeof err);
        kiln_error_set(&err, KILN_E_LIMIT, "/content_base64", "a put carries at most %u bytes",
                       KILN_SESSION_PUT_BYTES);
        err.limit = KILN_SESSION_PUT_BYTES;
        err.actual = (double)(len / 4 * 3);
        reject(rq, &err, NULL);
        return;
    }
    unsigned char *buf = malloc(KILN_BASE64_DECODED_MAX(len) + 1);
    size_t n = 0, bad = 0;
    if (!buf) {
        reject_with(rq, KILN_E_NOMEM, "", "out of memory");
        return;
    }
    if (kiln_base64_decode_into(content, len, buf, &n, &bad) != 0) {
        free(buf);
        reject_with(rq, KILN_E_USAGE, "/content_base64", "is not valid base64");
        return;
    }
    kiln_error err;
    memset(&err, 0, sizeof err);
    json_t *file = kiln_session_put(s, name, buf, n, &err);
    free(buf);
    if (!file) {
        reject(rq, &err, kiln_session_ended(s));
        return;
    }
    json_t *ev = reply_new(rq, "put");
    if (ev)
        json_object_set(ev, "file", file);
    json_decref(file);
    send_reply(rq, ev);
}

static void do_get(kiln_session *s, const request *rq)
{
    static const char *const members[] = {"name", NULL};
    if (only_members(rq, members) < 0)
        return;
    const char *name = string_member(rq, "name", 1);
    if (!name)
        return;
    char *data = NULL;
    size_t len = 0;
    kiln_error err;
    memset(&err, 0, sizeof err);
    if (kiln_session_get(s, name, &data, &len, &err) != KILN_E_OK) {
        reject(rq, &err, kiln_session_ended(s));
        return;
    }
    char *b64 = kiln_base64_encode(data, len, NULL);
    free(data);
    json_t *ev = reply_new(rq, "file");
    if (!b64 || !ev) {
        free(b64);
        json_decref(ev);
        reject_with(rq, KILN_E_NOMEM, "", "out of memory");
        return;
    }
    json_object_set_new(ev, "name", json_string(name));
    json_object_set_new(ev, "bytes", json_integer((json_int_t)len));
    json_object_set_new(ev, "content_base64", json_string(b64));
    free(b64);
    send_reply(rq, ev);
}

/* 1 when the request was done (a close: the caller ends the session). */
static int do_simple(kiln_session *s, const request *rq, const char *op)
{
    static const char *const members[] = {NULL};
    if (only_members(rq, members) < 0)
        return 0;
    json_t *ev = NULL;
    if (strcmp(op, "interrupt") == 0) {
        ev = reply_new(rq, "interrupt");
        if (ev)
            json_object_set_new(ev, "interrupted", json_boolean(kiln_session_interrupt(s)));
    } else if (strcmp(op, "info") == 0) {
        ev = reply_new(rq, "info");
        if (ev)
            json_object_set_new(ev, "session", kiln_session_info(s));
    } else {
        ev = reply_new(rq, "closed");
    }
    send_reply(rq, ev);
    return 1;
}

int kiln_session_handle_line(kiln_session *s, const char *line, size_t len,
                             kiln_session_emit emit, void *arg)
{
    request rq = {.emit = emit, .arg = arg};
    json_error_t jerr;
    rq.msg = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(rq.msg)) {
        char why[300];
        snprintf(why, sizeof why, "a request is one JSON object: %s",
                 rq.msg ? "this is not an object" : jerr.text);
        reject_with(&rq, KILN_E_USAGE, "", why);
        json_decref(rq.msg);
        return 0;
    }
    json_t *id = json_object_get(rq.msg, "id");
    if (json_is_string(id) || json_is_integer(id))
        rq.id = id;
    const char *op = json_string_value(json_object_get(rq.msg, "op"));
    int closing = 0;
    if (id && !rq.id)
        reject_with(&rq, KILN_E_USAGE, "/id", "must be a string or an integer");
    else if (!op)
        reject_with(&rq, KILN_E_USAGE, "/op",
                    "is required: execute, interrupt, files, put, "
                    "get, info or close");
    else if (strcmp(op, "execute") == 0)
        do_execute(s, &rq);
    else if (strcmp(op, "files") == 0)
        do_files(s, &rq);
    else if (strcmp(op, "put") == 0)
        do_put(s, &rq);
    else if (strcmp(op, "get") == 0)
        do_get(s, &rq);
    else if (strcmp(op, "interrupt") == 0 || strcmp(op, "info") == 0 ||
             strcmp(op, "close") == 0) {
        closing = do_simple(s, &rq, op) && strcmp(op, "close") == 0;
    } else
        reject_with(&rq, KILN_E_USAGE, "/op",
                    "unknown op: execute, interrupt, files, put, get, info or close");
    json_decref(rq.msg);
    return closing;
}

void kiln_session_line_too_long(kiln_session_emit emit, void *arg)
{
    request rq = {.emit = emit, .arg = arg};
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_error_set(&err, KILN_E_LIMIT, "", "a request line is at most %u bytes",
                   KILN_SESSION_REQUEST_BYTES);
    err.limit = KILN_SESSION_REQUEST_BYTES;
    reject(&rq, &err, NULL);
}
