/*
 * download.c - GET and HEAD /v1/files/{id}/content.
 *
 * The body goes from the stored file's descriptor to the socket
 * (libmicrohttpd uses sendfile for a file-descriptor response), never
 * through memory. Around it, what a browser or a download tool needs:
 * the exact media type, Content-Disposition with an ASCII filename and
 * an RFC 8187 filename* for other names, a strong ETag (the SHA-256) with
 * If-None-Match, a single byte range with If-Range, and nosniff.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "service/http.h"

/* Room for a 255-byte name percent-encoded (3 bytes each) and the rest. */
#define DISPOSITION_MAX 1024

static int is_attr_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$&+-.^_`|~", c));
}

/* attachment; filename="ascii"[; filename*=UTF-8''pct] */
static void disposition(const char *name, char *out, size_t cap)
{
    char ascii[KILN_STORE_FILENAME_MAX + 1];
    size_t o = 0;
    int plain = 1;
    for (const unsigned char *p = (const unsigned char *)name; *p && o + 1 < sizeof ascii; p++) {
        if (*p >= 0x80) {
            plain = 0;
            /* One '_' per character, not per byte. */
            if ((*p & 0xC0) == 0x80)
                continue;
            ascii[o++] = '_';
        } else if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\') {
            ascii[o++] = '_';
        } else {
            ascii[o++] = (char)*p;
        }
    }
    ascii[o] = '\0';
    int n = snprintf(out, cap, "attachment; filename=\"%s\"", ascii);
    if (plain || n < 0 || (size_t)n >= cap)
        return;
    size_t w = (size_t)n;
    const char *pre = "; filename*=UTF-8''";
    if (w + strlen(pre) >= cap)
        return;
    strcpy(out + w, pre);
    w += strlen(pre);
    for (const unsigned char *p = (const unsigned char *)name; *p && w + 4 < cap; p++) {
        if (is_attr_char(*p))
            out[w++] = (char)*p;
        else
            w += (size_t)snprintf(out + w, cap - w, "%%%02X", *p);
    }
    out[w] = '\0';
}

/* If-None-Match against our ETag ("sha256"), compared weakly (RFC 9110
 * 13.1.2): W/ prefixes are ignored; "*" matches any existing file. */
static int none_match(const char *header, const char *sha)
{
    const char *p = header;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        if (*p == '*')
            return 1;
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        if (*p != '"') {
            p += strcspn(p, ",");
            continue;
        }
        const char *q = strchr(p + 1, '"');
        if (!q)
            break;
        if ((size_t)(q - p - 1) == strlen(sha) && strncmp(p + 1, sha, strlen(sha)) == 0)
            return 1;
        p = q + 1;
    }
    return 0;
}

/* If-Range: our strong ETag exactly, or an HTTP date equal to Last-Modified. */
static int if_range_holds(const char *header, const kiln_store_file *file)
{
    while (*header == ' ')
        header++;
    if (header[0] == '"') {
        size_t n = strlen(file->sha256);
        return strncmp(header + 1, file->sha256, n) == 0 && header[n + 1] == '"' &&
               header[n + 2] == '\0';
    }
    int64_t t;
    return http_parse_date(header, &t) == 0 && t == file->created_at;
}

typedef enum { RANGE_NONE, RANGE_ONE, RANGE_BAD } range_kind;

/* A Range header with one range over size bytes. Multiple ranges and
 * syntax we do not read are NONE (the whole file: allowed by RFC 9110). */
static range_kind parse_range(const char *h, uint64_t size, uint64_t *first, uint64_t *last)
{
    while (*h == ' ')
        h++;
    if (strncasecmp(h, "bytes=", 6) != 0)
        return RANGE_NONE;
    h += 6;
    if (strchr(h, ','))
        return RANGE_NONE;
    while (*h == ' ')
        h++;
    char *end;
    if (*h == '-') {
        if (h[1] < '0' || h[1] > '9')
            return RANGE_NONE;
        unsigned long long n = strtoull(h + 1, &end, 10);
        while (*end == ' ')
            end++;
        if (*end)
            return RANGE_NONE;
        if (n == 0 || size == 0)
            return RANGE_BAD;
        *first = n >= size ? 0 : size - n;
        *last = size - 1;
        return RANGE_ONE;
    }
    if (*h < '0' || *h > '9')
        return RANGE_NONE;
    unsigned long long a = strtoull(h, &end, 10), b = UINT64_MAX;
    if (*end != '-')
        return RANGE_NONE;
    end++;
    if (*end >= '0' && *end <= '9') {
        b = strtoull(end, &end, 10);
        if (b < a)
            return RANGE_NONE;
    }
    while (*end == ' ')
        end++;
    if (*end)
        return RANGE_NONE;
    if (a >= size)
        return RANGE_BAD;
    *first = a;
    *last = b >= size ? size - 1 : b;
    return RANGE_ONE;
}

static void common_headers(struct MHD_Response *resp, const kiln_store_file *file,
                           const char *etag, const char *modified)
{
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_LAST_MODIFIED, modified);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "private, no-cache");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, "nosniff");
    (void)file;
}

enum MHD_Result download_content(kiln_req *req)
{
    kiln_store_file file;
    kiln_error err;
    int fd = -1;
    memset(&err, 0, sizeof err);
    switch (kiln_store_open_body(req->srv->store, req->tenant, req->id, &file, &fd, &err)) {
    case KILN_STORE_OK: break;
    case KILN_STORE_NOT_FOUND: return http_not_found(req);
    case KILN_STORE_GONE: return http_gone(req, &file);
    default: return http_internal(req, err.message);
    }
    char etag[70], modified[40], disp[DISPOSITION_MAX];
    snprintf(etag, sizeof etag, "\"%s\"", file.sha256);
    http_date(file.created_at, modified, sizeof modified);

    const char *inm = http_header(req, MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm && none_match(inm, file.sha256)) {
        close(fd);
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (!resp)
            return MHD_NO;
        common_headers(resp, &file, etag, modified);
        return http_queue(req, MHD_HTTP_NOT_MODIFIED, resp, 0);
    }

    uint64_t first = 0, last = file.bytes ? file.bytes - 1 : 0;
    range_kind rk = RANGE_NONE;
    const char *range = http_header(req, MHD_HTTP_HEADER_RANGE);
    if (range) {
        const char *ifr = http_header(req, MHD_HTTP_HEADER_IF_RANGE);
        if (!ifr || if_range_holds(ifr, &file))
            rk = parse_range(range, file.bytes, &first, &last);
    }
    if (rk == RANGE_BAD) {
        close(fd);
        char cr[48], msg[96];
        snprintf(cr, sizeof cr, "bytes */%llu", (unsigned long long)file.bytes);
        snprintf(msg, sizeof msg, "The range is outside the file's %llu bytes.",
                 (unsigned long long)file.bytes);
        json_t *body = kiln_api_error("range_not_satisfiable", msg,
                                      json_pack("{s:I}", "size", (json_int_t)file.bytes));
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        if (!text)
            return MHD_NO;
        size_t len = strlen(text);
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(text);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
        common_headers(resp, &file, etag, modified);
        return http_queue(req, MHD_HTTP_RANGE_NOT_SATISFIABLE, resp, len);
    }

    uint64_t len = rk == RANGE_ONE ? last - first + 1 : file.bytes;
    uint64_t off = rk == RANGE_ONE ? first : 0;
    struct MHD_Response *resp;
    if (len == 0) {
        close(fd);
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    } else {
        /* The response owns fd from here (closed when it is destroyed). */
        resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
        if (!resp)
            close(fd);
    }
    if (!resp)
        return http_internal(req, "cannot make the file response");
    disposition(file.filename, disp, sizeof disp);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, file.media_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
    common_headers(resp, &file, etag, modified);
    if (rk == RANGE_ONE) {
        char cr[80];
        snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu", (unsigned long long)first,
                 (unsigned long long)last, (unsigned long long)file.bytes);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
        return http_queue(req, MHD_HTTP_PARTIAL_CONTENT, resp, len);
    }
    return http_queue(req, MHD_HTTP_OK, resp, len);
}
