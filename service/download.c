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
#include "../common/banned.h"

int http_is_attr_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$&+-.^_`|~", c));
}

/* The fallback "attachment" when the real header cannot be written. */
static int disposition_refuse(char *out, size_t cap)
{
    if (cap > 0)
        snprintf(out, cap, "%s", "attachment");
    return -1;
}

int http_disposition(const char *name, char *out, size_t cap)
{
    /* Past the store's limit the worst case below no longer holds, and no
     * stored file has such a name. */
    size_t nlen = strlen(name);
    if (nlen > KILN_STORE_FILENAME_MAX)
        return disposition_refuse(out, cap);
    char ascii[KILN_STORE_FILENAME_MAX + 1];
    size_t o = 0;
    /* plain: the fallback is the name itself. Whenever it is not (a
     * character replaced by '_'), filename* carries the real name, or it
     * would be lost ('a"b' is not 'a_b'). */
    int plain = 1;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (*p >= 0x80) {
            plain = 0;
            /* One '_' per character, not per byte. */
            if ((*p & 0xC0) == 0x80)
                continue;
            ascii[o++] = '_';
        } else if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\') {
            plain = 0;
            ascii[o++] = '_';
        } else {
            ascii[o++] = (char)*p;
        }
    }
    ascii[o] = '\0';
    /* Measure first: a filename* cut at a %XX boundary decodes to a
     * different, valid name, so a short buffer is an error, never a cut. */
    static const char pre[] = "; filename*=UTF-8''";
    size_t need = sizeof "attachment; filename=\"\"" - 1 + o;
    if (!plain) {
        need += sizeof pre - 1;
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
            need += http_is_attr_char(*p) ? 1 : 3;
    }
    if (need + 1 > cap)
        return disposition_refuse(out, cap);
    size_t w = (size_t)snprintf(out, cap, "attachment; filename=\"%s\"", ascii);
    if (plain)
        return 0;
    memcpy(out + w, pre, sizeof pre - 1);
    w += sizeof pre - 1;
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (http_is_attr_char(*p)) {
            out[w++] = (char)*p;
        } else {
            out[w++] = '%';
            out[w++] = hex[*p >> 4];
            out[w++] = hex[*p & 15];
        }
    }
    out[w] = '\0';
    return 0;
}

/* Weak comparison (RFC 9110 13.1.2): W/ prefixes are ignored. */
int http_none_match(const char *header, const char *sha)
{
    const char *p = header;
    size_t n = strlen(sha);
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
        if ((size_t)(q - p - 1) == n && strncmp(p + 1, sha, n) == 0)
            return 1;
        p = q + 1;
    }
    return 0;
}

/* If-Range needs a strong validator (RFC 9110 13.1.5): a weak ETag never
 * holds, and a date only when it is exactly our Last-Modified. */
int http_if_range_holds(const char *header, const kiln_store_file *file)
{
    while (*header == ' ' || *header == '\t')
        header++;
    if (header[0] == '"') {
        size_t n = strlen(file->sha256);
        /* strncmp stops at header's NUL, so header[n + 1] is in bounds. */
        return strncmp(header + 1, file->sha256, n) == 0 && header[n + 1] == '"' &&
               header[n + 2] == '\0';
    }
    int64_t t;
    return http_parse_date(header, &t) == 0 && t == file->created_at;
}

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* A run of decimal digits into *v, saturating at UINT64_MAX (a position
 * past any file means the same as the largest one). NULL if no digit. */
static const char *range_number(const char *p, uint64_t *v)
{
    if (*p < '0' || *p > '9')
        return NULL;
    uint64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        n = n > (UINT64_MAX - d) / 10 ? UINT64_MAX : n * 10 + d;
    }
    *v = n;
    return p;
}

http_range_kind http_parse_range(const char *h, uint64_t size, uint64_t *first, uint64_t *last)
{
    while (is_ows(*h))
        h++;
    if (strncasecmp(h, "bytes=", 6) != 0)
        return HTTP_RANGE_NONE;
    h += 6;
    /* Several ranges: the whole file is a valid answer, and spares us
     * multipart/byteranges. */
    if (strchr(h, ','))
        return HTTP_RANGE_NONE;
    while (is_ows(*h))
        h++;
    uint64_t a = 0, b = UINT64_MAX;
    int suffix = *h == '-';
    const char *p = range_number(suffix ? h + 1 : h, suffix ? &b : &a);
    if (!p)
        return HTTP_RANGE_NONE;
    if (!suffix) {
        if (*p++ != '-')
            return HTTP_RANGE_NONE;
        if (*p >= '0' && *p <= '9') {
            p = range_number(p, &b);
            /* last < first is an invalid range-spec: ignored, 200. */
            if (b < a)
                return HTTP_RANGE_NONE;
        }
    }
    while (is_ows(*p))
        p++;
    if (*p)
        return HTTP_RANGE_NONE;
    if (suffix) {
        /* bytes=-0, or any suffix of an empty file: nothing to send. */
        if (b == 0 || size == 0)
            return HTTP_RANGE_BAD;
        *first = b >= size ? 0 : size - b;
        *last = size - 1;
        return HTTP_RANGE_ONE;
    }
    if (a >= size)
        return HTTP_RANGE_BAD;
    *first = a;
    *last = b >= size ? size - 1 : b;
    return HTTP_RANGE_ONE;
}

static void common_headers(struct MHD_Response *resp, const kiln_store_file *file,
                           const char *etag, const char *modified)
{
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
    if (modified[0])
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
    kiln_store_result r = kiln_store_open_body(req->srv->store, req->tenant, req->id, &file, &fd,
                                               &err);
    if (r != KILN_STORE_OK)
        return http_store_failure(req, r, &file, &err);
    char etag[70], modified[40], disp[KILN_HTTP_DISPOSITION_MAX];
    snprintf(etag, sizeof etag, "\"%s\"", file.sha256);
    /* A created_at no date can show (never stored) leaves modified "":
     * no Last-Modified then. */
    http_date(file.created_at, modified, sizeof modified);

    const char *inm = http_header(req, MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm && http_none_match(inm, file.sha256)) {
        /*
         * libmicrohttpd 0.9.75 writes Content-Length for a 304 as for any
         * status but 1xx and 204, from the response's size, and refuses one
         * set by hand (MHD_add_response_header ignores it unless
         * MHD_RF_INSANITY_HEADER_CONTENT_LENGTH, which then sends both). An
         * empty response would say 0, which RFC 9110 8.6 forbids for a file
         * that is not empty. So the response is the file's own, sized as
         * the 200 would be: its Content-Length is the one value allowed, and
         * no body is ever read from it, as a 304 has none.
         */
        struct MHD_Response *resp = file.bytes
                                        ? MHD_create_response_from_fd_at_offset64(file.bytes, fd,
                                                                                  0)
                                        : MHD_create_response_from_buffer(0, NULL,
                                                                          MHD_RESPMEM_PERSISTENT);
        if (!file.bytes || !resp)
            close(fd); /* else the response owns it */
        if (!resp)
            return http_internal(req, "cannot make the 304 response");
        common_headers(resp, &file, etag, modified);
        return http_queue(req, MHD_HTTP_NOT_MODIFIED, resp, 0);
    }

    uint64_t first = 0, last = file.bytes ? file.bytes - 1 : 0;
    http_range_kind rk = HTTP_RANGE_NONE;
    const char *range = http_header(req, MHD_HTTP_HEADER_RANGE);
    if (range) {
        const char *ifr = http_header(req, MHD_HTTP_HEADER_IF_RANGE);
        if (!ifr || http_if_range_holds(ifr, &file))
            rk = http_parse_range(range, file.bytes, &first, &last);
    }
    if (rk == HTTP_RANGE_BAD) {
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
        struct MHD_Response *resp = MHD_create_response_from_buffer(len, text,
                                                                    MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(text);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
        common_headers(resp, &file, etag, modified);
        return http_queue(req, MHD_HTTP_RANGE_NOT_SATISFIABLE, resp, len);
    }

    uint64_t len = rk == HTTP_RANGE_ONE ? last - first + 1 : file.bytes;
    uint64_t off = rk == HTTP_RANGE_ONE ? first : 0;
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
    /* Cannot fail for a stored name (the buffer is its worst case); if it
     * did, disp is a bare "attachment". */
    http_disposition(file.filename, disp, sizeof disp);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, file.media_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
    common_headers(resp, &file, etag, modified);
    if (rk == HTTP_RANGE_ONE) {
        char cr[80];
        snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu", (unsigned long long)first,
                 (unsigned long long)last, (unsigned long long)file.bytes);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
        return http_queue(req, MHD_HTTP_PARTIAL_CONTENT, resp, len);
    }
    return http_queue(req, MHD_HTTP_OK, resp, len);
}
