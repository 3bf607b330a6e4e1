/*
 * http_util.c - replies and the small HTTP pieces every route uses: the
 * error shape with its common headers, HTTP dates, media types by
 * extension, bounded body buffers.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "service/http.h"
#include "service/json_budget.h"
#include "../common/banned.h"

/* A freed request text or refused parse this big is worth malloc_trim:
 * glibc keeps freed heap memory, and raises its mmap threshold to the
 * largest block freed, so one big body would otherwise stay resident. */
#define HTTP_BODY_TRIM_BYTES (1u << 20)

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
    struct MHD_Response *resp = MHD_create_response_from_buffer(*len, text,
                                                                MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return NULL;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return resp;
}

enum MHD_Result http_json_location(kiln_req *req, int status, json_t *body, const char *location)
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
    snprintf(msg, sizeof msg, "File %s expired at %s.", file->id, when);
    return http_error(req, 410, "gone", msg, json_pack("{s:s}", "expired_at", when));
}

enum MHD_Result http_store_failure(kiln_req *req, kiln_store_result r,
                                   const kiln_store_file *file, const kiln_error *err)
{
    if (r == KILN_STORE_NOT_FOUND)
        return http_not_found(req);
    if (r == KILN_STORE_GONE)
        return http_gone(req, file);
    return http_internal(req, err->message);
}

int http_contract_status(const char *code)
{
    static const struct {
        const char *code;
        int status;
    } table[] = {
        {"session_busy", 409},
        {"session_gone", 410},
        {"usage", 422},
        {"invalid_run", 422},
        {"invalid_session", 422},
        {"invalid_cell", 422},
        {"limit_exceeded", 422},
        {"unreadable_input", 422},
        {"too_large", 413},
        {"not_found", 404},
        {"gone", 410},
    };
    for (size_t i = 0; code && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(code, table[i].code) == 0)
            return table[i].status;
    return 500;
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
static const char wdays_long[7][10] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                       "Thursday", "Friday", "Saturday"};
static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* By hand, not strftime: %a and %b follow the locale. */
int http_date(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (cap > 0)
        buf[0] = '\0';
    /* gmtime_r fails past its year range and leaves tm unset; a year of
     * five digits (or a negative one) is no IMF-fixdate. */
    if ((int64_t)tt != t || !gmtime_r(&tt, &tm) || tm.tm_year < -1900 ||
        tm.tm_year > 9999 - 1900 || cap < 30)
        return -1;
    snprintf(buf, cap, "%s, %02d %s %04d %02d:%02d:%02d GMT", wdays[tm.tm_wday], tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return 0;
}

/* A cursor over a date: every step matches exactly or fails, so a field
 * can never be wider, narrower, signed or padded differently than its
 * form says (sscanf's %d allowed all of that, and overflowed). */
static int date_lit(const char **p, const char *lit)
{
    size_t n = strlen(lit);
    if (strncmp(*p, lit, n) != 0)
        return 0;
    *p += n;
    return 1;
}

/* Exactly n digits (a leading space allowed when space_pad: asctime's
 * day). */
static int date_num(const char **p, int n, int space_pad, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (i == 0 && space_pad && c == ' ' && n > 1)
            continue;
        if (c < '0' || c > '9')
            return 0;
        x = x * 10 + (c - '0');
    }
    *p += n;
    *v = x;
    return 1;
}

/* One of n names of a table, case-sensitive (RFC 9110 5.6.7): its index. */
static int date_name(const char **p, const char *table, size_t stride, int n, int *idx)
{
    for (int i = 0; i < n; i++) {
        if (date_lit(p, table + (size_t)i * stride)) {
            *idx = i;
            return 1;
        }
    }
    return 0;
}

static int date_time(const char **p, int *h, int *m, int *sec)
{
    return date_num(p, 2, 0, h) && date_lit(p, ":") && date_num(p, 2, 0, m) && date_lit(p, ":") &&
           date_num(p, 2, 0, sec);
}

static int leap_year(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (month 0..11):
 * H. Hinnant's days_from_civil, exact for every year here. */
static int64_t days_from_civil(int y, int m0, int d)
{
    int m = m0 + 1; /* the algorithm counts months from 1 */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t mp = (m + 9) % 12;
    int64_t doy = (153 * mp + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* RFC 850's two-digit year (RFC 9110 5.6.7): one more than 50 years
 * ahead of now is the most recent past year with those digits. */
static int rfc850_year(int yy)
{
    time_t now = time(NULL);
    struct tm tm;
    int cur = gmtime_r(&now, &tm) ? tm.tm_year + 1900 : 2026;
    int y = cur - cur % 100 + yy;
    if (y > cur + 50)
        y -= 100;
    else if (y <= cur - 50)
        y += 100;
    return y;
}

int http_parse_date(const char *s, int64_t *t)
{
    const char *p = s;
    int wd = -1, day = 0, mon = -1, year = 0, h = 0, m = 0, sec = 0;
    if (date_name(&p, &wdays[0][0], sizeof wdays[0], 7, &wd) && date_lit(&p, ", ")) {
        /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
        if (!(date_num(&p, 2, 0, &day) && date_lit(&p, " ") &&
              date_name(&p, &months[0][0], sizeof months[0], 12, &mon) && date_lit(&p, " ") &&
              date_num(&p, 4, 0, &year) && date_lit(&p, " ") && date_time(&p, &h, &m, &sec) &&
              date_lit(&p, " GMT")))
            return -1;
    } else if (p = s, date_name(&p, &wdays_long[0][0], sizeof wdays_long[0], 7, &wd) &&
                          date_lit(&p, ", ")) {
        /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
        if (!(date_num(&p, 2, 0, &day) && date_lit(&p, "-") &&
              date_name(&p, &months[0][0], sizeof months[0], 12, &mon) && date_lit(&p, "-") &&
              date_num(&p, 2, 0, &year) && date_lit(&p, " ") && date_time(&p, &h, &m, &sec) &&
              date_lit(&p, " GMT")))
            return -1;
        year = rfc850_year(year);
    } else if (p = s, date_name(&p, &wdays[0][0], sizeof wdays[0], 7, &wd) && date_lit(&p, " ")) {
        /* asctime: Sun Nov  6 08:49:37 1994 */
        if (!(date_name(&p, &months[0][0], sizeof months[0], 12, &mon) && date_lit(&p, " ") &&
              date_num(&p, 2, 1, &day) && date_lit(&p, " ") && date_time(&p, &h, &m, &sec) &&
              date_lit(&p, " ") && date_num(&p, 4, 0, &year)))
            return -1;
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    /* Every field in range, so nothing is normalised into another date. A
     * leap second (:60) is refused rather than clamped: POSIX time has no
     * such second, and If-Range compares dates exactly, so no clamped
     * value could ever be ours. */
    if (year < 1970 || year > 9999 || day < 1 ||
        day > mdays[mon] + (mon == 1 && leap_year(year)) || h > 23 || m > 59 || sec > 59)
        return -1;
    int64_t days = days_from_civil(year, mon, day);
    if ((days % 7 + 4) % 7 != wd) /* 1970-01-01 was a Thursday */
        return -1;
    int64_t v = days * 86400 + h * 3600 + m * 60 + sec;
    /* Round trip: what gmtime_r makes of v must be the fields read. */
    time_t tt = (time_t)v;
    struct tm tm;
    if ((int64_t)tt != v || !gmtime_r(&tt, &tm) || tm.tm_year + 1900 != year ||
        tm.tm_mon != mon || tm.tm_mday != day || tm.tm_hour != h || tm.tm_min != m ||
        tm.tm_sec != sec || tm.tm_wday != wd)
        return -1;
    *t = v;
    return 0;
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
    return http_content_type_matches(http_header(req, MHD_HTTP_HEADER_CONTENT_TYPE), type);
}

int http_content_type_matches(const char *ct, const char *type)
{
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
    return http_parse_content_length(http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH), len);
}

int http_parse_content_length(const char *cl, uint64_t *len)
{
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

int http_body_parse(const char *buf, size_t len, int empty_ok, json_t **out, json_error_t *err)
{
    *out = NULL;
    if (len == 0 && empty_ok) {
        *out = json_object();
        return 0;
    }
    int over_budget = 0;
    json_t *root = kiln_json_budget_load(buf ? buf : "", len, JSON_REJECT_DUPLICATES, err,
                                         &over_budget);
    if (!root)
        return over_budget ? HTTP_BODY_OVER_BUDGET : HTTP_BODY_INVALID_JSON;
    if (!json_is_object(root)) {
        json_decref(root);
        return HTTP_BODY_NOT_OBJECT;
    }
    *out = root;
    return 0;
}

int http_body_json(kiln_req *req, int empty_ok, json_t **out, enum MHD_Result *r)
{
    json_error_t jerr;
    size_t len = req->len;
    int rc = http_body_parse(req->buf, len, empty_ok, out, &jerr);
    /* The text is not needed again: free it now rather than when the
     * request ends, which for a render or run is after the job. */
    int big = req->cap >= HTTP_BODY_TRIM_BYTES;
    free(req->buf);
    req->buf = NULL;
    req->len = req->cap = 0;
    if (big)
        malloc_trim(0);
    if (rc == HTTP_BODY_OVER_BUDGET) {
        *r = http_error(req, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
                        "The JSON needs more memory than its size allows (deeply nested or "
                        "many empty values).",
                        json_pack("{s:I}", "limit", (json_int_t)kiln_json_budget_for(len)));
        return -1;
    }
    if (rc == HTTP_BODY_INVALID_JSON) {
        char msg[256];
        snprintf(msg, sizeof msg, "The body is not valid JSON: %s.", jerr.text);
        *r = http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_json", msg,
                        json_pack("{s:i, s:i}", "line", jerr.line, "column", jerr.column));
        return -1;
    }
    if (rc == HTTP_BODY_NOT_OBJECT) {
        *r = http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request",
                        "The body must be a JSON object.", json_pack("{s:s}", "pointer", ""));
        return -1;
    }
    return 0;
}
