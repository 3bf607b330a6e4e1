/*
 * http_util.c - replies and the small HTTP pieces every route uses: the
 * error shape with its common headers, HTTP dates, media types by
 * extension, bounded body buffers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "service/http.h"

enum MHD_Result http_queue(kiln_req *req, int status, struct MHD_Response *resp,
                           uint64_t body_bytes)
{
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "X-Request-Id", req->request_id);
    req->status = status;
    req->bytes_out = strcmp(req->method, "HEAD") == 0 ? 0 : body_bytes;
    req->queued = 1;
    enum MHD_Result r = MHD_queue_response(req->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return r;
}

static struct MHD_Response *json_response(json_t *body, size_t *len)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text)
        return NULL;
    *len = strlen(text);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(*len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return NULL;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return resp;
}

enum MHD_Result http_json_location(kiln_req *req, int status, json_t *body,
                                   const char *location)
{
    size_t len = 0;
    struct MHD_Response *resp = json_response(body, &len);
    if (!resp)
        return MHD_NO;
    if (location && location[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
    if (status == MHD_HTTP_TOO_MANY_REQUESTS) {
        char secs[16];
        snprintf(secs, sizeof secs, "%u", req->retry_after ? req->retry_after : 1);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"kiln\"");
    return http_queue(req, status, resp, len);
}

enum MHD_Result http_json(kiln_req *req, int status, json_t *body)
{
    return http_json_location(req, status, body, NULL);
}

enum MHD_Result http_error(kiln_req *req, int status, const char *code, const char *message,
                           json_t *details)
{
    return http_json(req, status, kiln_api_error(code, message, details));
}

enum MHD_Result http_internal(kiln_req *req, const char *detail)
{
    http_event(req->srv, "error",
               json_pack("{s:s, s:s, s:s}", "request_id", req->request_id, "path", req->path,
                         "message", detail ? detail : "unknown"));
    return http_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                      "The server failed to handle the request.", NULL);
}

enum MHD_Result http_not_found(kiln_req *req)
{
    return http_error(req, MHD_HTTP_NOT_FOUND, "not_found", "No such resource.", NULL);
}

enum MHD_Result http_gone(kiln_req *req, const kiln_store_file *file)
{
    char when[32], msg[128];
    kiln_api_time(file->expires_at, when, sizeof when);
    snprintf(msg, sizeof msg, "file %s expired at %s", file->id, when);
    return http_error(req, 410, "gone", msg, json_pack("{s:s}", "expired_at", when));
}

enum MHD_Result http_too_large(kiln_req *req, uint64_t limit)
{
    char msg[128];
    snprintf(msg, sizeof msg, "The request body is larger than the limit of %llu bytes.",
             (unsigned long long)limit);
    return http_error(req, MHD_HTTP_CONTENT_TOO_LARGE, "too_large", msg,
                      json_pack("{s:I}", "limit", (json_int_t)limit));
}

void http_event(kiln_server *srv, const char *event, json_t *fields)
{
    if (!srv->opt.log) {
        json_decref(fields);
        return;
    }
    json_t *o = json_object();
    char now[32];
    kiln_api_time((int64_t)time(NULL), now, sizeof now);
    json_object_set_new(o, "time", json_string(now));
    json_object_set_new(o, "event", json_string(event));
    if (fields)
        json_object_update(o, fields);
    json_decref(fields);
    char *line = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (line)
        srv->opt.log(srv->opt.log_arg, line);
    free(line);
}

static const char wdays[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* By hand, not strftime: %a and %b follow the locale. */
void http_date(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    snprintf(buf, cap, "%s, %02d %s %04d %02d:%02d:%02d GMT", wdays[tm.tm_wday % 7],
             tm.tm_mday, months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
             tm.tm_sec);
}

int http_parse_date(const char *s, int64_t *t)
{
    char wd[4], mon[4];
    int day, year, h, m, sec, n = 0;
    if (sscanf(s, "%3s, %d %3s %d %d:%d:%d GMT%n", wd, &day, mon, &year, &h, &m, &sec, &n) != 7 ||
        n == 0 || s[n] != '\0')
        return -1;
    int month = -1;
    for (int i = 0; i < 12; i++)
        if (strcmp(mon, months[i]) == 0)
            month = i;
    if (month < 0 || day < 1 || day > 31 || h > 23 || m > 59 || sec > 60 || year < 1970)
        return -1;
    struct tm tm = {.tm_year = year - 1900, .tm_mon = month, .tm_mday = day,
                    .tm_hour = h, .tm_min = m, .tm_sec = sec};
    *t = (int64_t)timegm(&tm);
    return 0;
}

/* The formats Kiln writes, and what is usually uploaded beside them. */
static const struct {
    const char *ext;
    const char *type;
} media_types[] = {
    {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    {"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
    {"pdf", "application/pdf"},
    {"csv", "text/csv"},
    {"tsv", "text/tab-separated-values"},
    {"json", "application/json"},
    {"jsonl", "application/jsonl"},
    {"ndjson", "application/x-ndjson"},
    {"txt", "text/plain"},
    {"md", "text/markdown"},
    {"html", "text/html"},
    {"xml", "application/xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"svg", "image/svg+xml"},
    {"webp", "image/webp"},
    {"py", "text/x-python"},
    {"sh", "application/x-sh"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"xls", "application/vnd.ms-excel"},
    {"parquet", "application/vnd.apache.parquet"},
};

const char *http_media_type_guess(const char *filename)
{
    const char *dot = filename ? strrchr(filename, '.') : NULL;
    if (!dot || !dot[1])
        return NULL;
    for (size_t i = 0; i < sizeof media_types / sizeof media_types[0]; i++)
        if (strcasecmp(dot + 1, media_types[i].ext) == 0)
            return media_types[i].type;
    return NULL;
}

int http_buffer_append(kiln_req *req, const char *data, size_t len)
{
    if ((uint64_t)req->len + len > req->limit) {
        req->too_large = 1;
        return -1;
    }
    if (req->len + len + 1 > req->cap) {
        size_t cap = req->cap ? req->cap : 4096;
        while (cap < req->len + len + 1)
            cap *= 2;
        char *grown = realloc(req->buf, cap);
        if (!grown)
            return -1;
        req->buf = grown;
        req->cap = cap;
    }
    memcpy(req->buf + req->len, data, len);
    req->len += len;
    req->buf[req->len] = '\0';
    return 0;
}

const char *http_header(kiln_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *http_arg(kiln_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

int http_content_type_is(kiln_req *req, const char *type)
{
    const char *ct = http_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct)
        return 0;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strlen(type);
    if (strncasecmp(ct, type, n) != 0)
        return 0;
    ct += n;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return *ct == '\0' || *ct == ';';
}

int http_content_length(kiln_req *req, uint64_t *len)
{
    const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl || *cl < '0' || *cl > '9')
        return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(cl, &end, 10);
    if (errno || *end)
        return 0;
    *len = n;
    return 1;
}

int http_body_json(kiln_req *req, int empty_ok, json_t **out, enum MHD_Result *r)
{
    *out = NULL;
    if (req->len == 0 && empty_ok) {
        *out = json_object();
        return 0;
    }
    json_error_t jerr;
    json_t *root = json_loadb(req->buf ? req->buf : "", req->len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char msg[256];
        snprintf(msg, sizeof msg, "The body is not valid JSON: %s.", jerr.text);
        *r = http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_json", msg,
                        json_pack("{s:i, s:i}", "line", jerr.line, "column", jerr.column));
        return -1;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        *r = http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request",
                        "The body must be a JSON object.", json_pack("{s:s}", "pointer", ""));
        return -1;
    }
    *out = root;
    return 0;
}
