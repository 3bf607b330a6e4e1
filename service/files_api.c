/*
 * files_api.c - the file endpoints: upload (multipart or raw, streamed
 * into the store as it arrives, never buffered whole), list, metadata,
 * delete, and signed links.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/media_type.h"
#include "common/utf8.h"
#include "service/api_internal.h"
#include "service/http.h"
#include "../common/banned.h"

/* ---- upload ---- */

static void set_bad(kiln_req *req, const char *msg)
{
    if (!req->bad_request) {
        req->bad_request = 1;
        snprintf(req->bad_message, sizeof req->bad_message, "%s", msg);
    }
}

static void drop_upload(kiln_req *req)
{
    if (req->upload) {
        kiln_store_abort(req->upload);
        req->upload = NULL;
    }
}

void http_pick_media_type(kiln_req *req, const char *given)
{
    const char *guess = kiln_media_type_guess(req->filename);
    req->media_type[0] = '\0';
    if (given) {
        while (*given == ' ')
            given++;
        if (*given && strncasecmp(given, "application/octet-stream", 24) != 0 &&
            strncasecmp(given, "application/x-www-form-urlencoded", 33) != 0 &&
            strncasecmp(given, "multipart/", 10) != 0 && strlen(given) < sizeof req->media_type) {
            snprintf(req->media_type, sizeof req->media_type, "%s", given);
            return;
        }
    }
    snprintf(req->media_type, sizeof req->media_type, "%s",
             guess ? guess : "application/octet-stream");
}

/* Take name (len bytes, a NUL inside counting) as req->filename when the
 * service's file-name rule (api_internal.h) allows it; what is the subject
 * of the message ("The file name given by ?filename="). 0, or -1 with the
 * 400 set (set_bad). */
static int take_name(kiln_req *req, const char *name, size_t len, const char *what)
{
    const char *why = kiln_api_check_filename(name, len);
    if (why) {
        char msg[KILN_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s %s.", what, why);
        set_bad(req, msg);
        return -1;
    }
    /* The rule holds len to KILN_STORE_FILENAME_MAX: it fits. */
    memcpy(req->filename, name, len);
    req->filename[len] = '\0';
    return 0;
}

static int begin_store(kiln_req *req)
{
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_result r = kiln_store_begin(req->srv->store, req->tenant, req->filename,
                                           req->media_type, KILN_STORE_SOURCE_INPUT, &req->upload,
                                           &err);
    if (r == KILN_STORE_OK)
        return 0;
    if (err.code == KILN_E_USAGE)
        set_bad(req, err.message);
    else {
        req->upload_failed = 1;
        req->upload_err = err;
    }
    return -1;
}

/* Write a piece of the file; -1 once the upload is over (limit, error). */
static int write_piece(kiln_req *req, const char *data, size_t size)
{
    if (!req->upload)
        return -1;
    if (req->part_bytes + size > req->limit) {
        req->too_large = 1;
        drop_upload(req);
        return -1;
    }
    req->part_bytes += size;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_result r = kiln_store_write(req->upload, data, size, &err);
    if (r == KILN_STORE_OK)
        return 0;
    if (r == KILN_STORE_TOO_LARGE)
        req->too_large = 1;
    else {
        req->upload_failed = 1;
        req->upload_err = err;
    }
    drop_upload(req);
    return -1;
}

static enum MHD_Result post_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size)
{
    kiln_req *req = cls;
    (void)kind;
    (void)transfer_encoding;
    if (!key || strcmp(key, "file") != 0)
        return MHD_YES;
    /*
     * Only the first part named "file" counts; later ones are ignored. The
     * iterator is never told where a part ends, so a later part is told
     * from the first by what libmicrohttpd 0.9.75 guarantees: a part's
     * offsets only grow; its first call may carry no data, but every later
     * call carries some. So a call at offset 0 after the first part began
     * is a new part when the first part has data already, or when it
     * carries none itself. What is left (the first part's first call was
     * empty, and a call at offset 0 brings data) is either the first
     * part's data arriving late or the next part after an empty first
     * one: the file name tells them apart, except for two parts of the
     * same name, where the empty first one loses to the next.
     */
    if (req->part_seen && off == 0 &&
        (req->part_bytes > 0 || size == 0 || !filename || strcmp(filename, req->filename) != 0))
        req->part_skip = 1;
    if (req->part_skip)
        return MHD_YES;
    if (!req->part_seen) {
        req->part_seen = 1;
        if (!filename) {
            set_bad(req, "The multipart part named file has no filename.");
            return MHD_NO;
        }
        if (take_name(req, filename, strlen(filename),
                      "The filename of the multipart part named file") != 0)
            return MHD_NO;
        http_pick_media_type(req, content_type);
        if (begin_store(req) != 0)
            return MHD_NO;
    }
    if (size == 0)
        return MHD_YES;
    return write_piece(req, data, size) == 0 ? MHD_YES : MHD_NO;
}

int http_pct_decode(const char *src, size_t n, char *dst, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)src[i];
        if (c == '%') {
            if (i + 2 >= n || !isxdigit((unsigned char)src[i + 1]) ||
                !isxdigit((unsigned char)src[i + 2]))
                return -1;
            char hex[3] = {src[i + 1], src[i + 2], 0};
            c = (int)strtol(hex, NULL, 16);
            i += 2;
        }
        if (o + 1 >= cap || c == 0)
            return -1;
        dst[o++] = (char)c;
    }
    if (cap == 0)
        return -1;
    dst[o] = '\0';
    return 0;
}

/* RFC 9110 5.6.2 tchar. */
static int is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* An RFC 8187 ext-value (charset'[language]'value-chars) of n bytes into
 * out: 0, 1 when its charset is not UTF-8 (we read no other; the plain
 * filename may still do), -1 when malformed or not valid UTF-8. */
static int ext_value(const char *v, size_t n, char *out, size_t cap)
{
    const char *end = v + n, *q1 = memchr(v, '\'', n);
    if (!q1 || q1 == v)
        return -1;
    const char *q2 = memchr(q1 + 1, '\'', (size_t)(end - q1 - 1));
    if (!q2)
        return -1;
    for (const char *p = q1 + 1; p < q2; p++)
        if (!isalnum((unsigned char)*p) && *p != '-')
            return -1;
    for (const char *p = q2 + 1; p < end; p++)
        if (*p != '%' && !http_is_attr_char((unsigned char)*p))
            return -1;
    if ((size_t)(q1 - v) != 5 || strncasecmp(v, "UTF-8", 5) != 0)
        return 1;
    if (http_pct_decode(q2 + 1, (size_t)(end - q2 - 1), out, cap) != 0 ||
        !kiln_utf8_valid(out, strlen(out)))
        return -1;
    return 0;
}

/* A parameter value at p: a token, or a quoted-string (qdtext, or "\"
 * before HTAB / SP / VCHAR / obs-text). Sets *v and *n to its text (quotes
 * included) and returns the end, or NULL when it is neither. */
static const char *param_value(const char *p, const char **v, size_t *n)
{
    const char *start = p;
    if (*p != '"') {
        while (is_tchar((unsigned char)*p))
            p++;
        if (p == start)
            return NULL;
    } else {
        for (p++; *p != '"'; p++) {
            unsigned char c = (unsigned char)(*p == '\\' ? *++p : *p);
            if (c == '\0' || (c < 0x20 && c != '\t') || c == 0x7f)
                return NULL; /* unterminated, or a control */
        }
        p++;
    }
    *v = start;
    *n = (size_t)(p - start);
    return p;
}

/* A value param_value accepted, unquoted and unescaped into out: 0, or -1
 * when it does not fit. */
static int param_copy(const char *v, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    int quoted = v[0] == '"';
    const char *end = quoted ? v + n - 1 : v + n;
    for (const char *p = quoted ? v + 1 : v; p < end; p++) {
        if (quoted && *p == '\\')
            p++;
        if (o + 1 >= cap)
            return -1;
        out[o++] = *p;
    }
    out[o] = '\0';
    return 0;
}

/*
 * RFC 6266: disposition-type *( OWS ";" OWS name OWS "=" OWS value ), the
 * value a token or a quoted-string. The walk goes parameter by parameter,
 * so "filename" inside a quoted value or at the end of another name
 * ("xfilename*=") is never taken for one; anything off the grammar, an
 * unterminated quote, or a filename given twice is no name at all, since
 * two readers of a malformed header may disagree on the file it names.
 */
int http_disposition_filename(const char *h, char *out, size_t cap)
{
    if (cap == 0)
        return -1;
    const char *p = skip_ows(h);
    const char *type = p;
    while (is_tchar((unsigned char)*p))
        p++;
    if (p == type)
        return -1;
    /* Both are found before either is used: filename* wins wherever it is. */
    const char *plain = NULL, *ext = NULL;
    size_t plain_len = 0, ext_len = 0;
    for (;;) {
        p = skip_ows(p);
        if (!*p)
            break;
        if (*p != ';')
            return -1;
        p = skip_ows(p + 1);
        if (!*p)
            break; /* a trailing ';' is harmless */
        const char *name = p;
        while (is_tchar((unsigned char)*p))
            p++;
        size_t name_len = (size_t)(p - name);
        if (name_len == 0)
            return -1;
        p = skip_ows(p);
        if (*p != '=')
            return -1;
        const char *v;
        size_t n;
        p = param_value(skip_ows(p + 1), &v, &n);
        if (!p)
            return -1;
        if (name_len == 8 && strncasecmp(name, "filename", 8) == 0) {
            if (plain)
                return -1;
            plain = v, plain_len = n;
        } else if (name_len == 9 && strncasecmp(name, "filename*", 9) == 0) {
            if (ext || v[0] == '"') /* an ext-value is never quoted (RFC 8187) */
                return -1;
            ext = v, ext_len = n;
        }
    }
    if (ext) {
        int e = ext_value(ext, ext_len, out, cap);
        if (e < 0)
            return -1;
        if (e == 0)
            return out[0] ? 0 : -1;
    }
    if (!plain || param_copy(plain, plain_len, out, cap) != 0)
        return -1;
    return out[0] ? 0 : -1;
}

enum MHD_Result files_upload_begin(kiln_req *req)
{
    kiln_server *srv = req->srv;
    req->limit = srv->opt.max_upload_bytes;
    int multipart = http_content_type_is(req, "multipart/form-data");
    uint64_t clen = 0;
    if (http_content_length(req, &clen) &&
        clen > req->limit + (multipart ? KILN_HTTP_MULTIPART_OVERHEAD : 0))
        return http_too_large(req, req->limit);
    if (multipart) {
        req->body = BODY_MULTIPART;
        req->pp = MHD_create_post_processor(req->conn, KILN_HTTP_POST_BUFFER, post_iter, req);
        if (!req->pp)
            return http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request",
                              "The multipart Content-Type has no usable boundary.", NULL);
        return MHD_YES;
    }
    req->body = BODY_UPLOAD;
    /* The name: ?filename= first, else Content-Disposition. The query
     * value is read with its length, since %00 decodes to a NUL that would
     * otherwise end the name early ("a%00b" is no name, not "a"). */
    const char *name = NULL;
    size_t name_len = 0;
    const char *cd = http_header(req, MHD_HTTP_HEADER_CONTENT_DISPOSITION);
    json_t *where;
    if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, "filename",
                                      sizeof "filename" - 1, &name, &name_len) == MHD_YES) {
        where = json_pack("{s:s}", "parameter", "filename");
        take_name(req, name ? name : "", name ? name_len : 0,
                  "The file name given by ?filename=");
    } else if (cd) {
        where = json_pack("{s:s}", "header", "Content-Disposition");
        /* Room for a name well past the limit, so a long one is refused
         * as long rather than as a header that does not parse. */
        char buf[4 * KILN_STORE_FILENAME_MAX + 1];
        if (http_disposition_filename(cd, buf, sizeof buf) != 0)
            set_bad(req, "The Content-Disposition header is malformed or names no file (it "
                         "takes attachment; filename=\"NAME\" or filename*=UTF-8''NAME).");
        else
            take_name(req, buf, strlen(buf), "The file name given by Content-Disposition");
    } else {
        return http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request",
                          "The file needs a name: ?filename=NAME, or Content-Disposition with "
                          "filename=, or a multipart part named file.",
                          json_pack("{s:s}", "parameter", "filename"));
    }
    if (req->bad_request)
        return http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request", req->bad_message, where);
    http_pick_media_type(req, http_header(req, MHD_HTTP_HEADER_CONTENT_TYPE));
    if (begin_store(req) != 0) {
        if (req->bad_request)
            return http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request", req->bad_message,
                              where);
        json_decref(where);
        return http_internal(req, req->upload_err.message);
    }
    json_decref(where);
    return MHD_YES;
}

enum MHD_Result files_upload_data(kiln_req *req, const char *data, size_t size)
{
    req->received += size;
    uint64_t allowed = req->limit +
                       (req->body == BODY_MULTIPART ? KILN_HTTP_MULTIPART_OVERHEAD : 0);
    if (req->too_large || req->upload_failed || req->bad_request) {
        /* Read on (to send the error) but not forever. */
        return req->received > allowed + KILN_HTTP_DISCARD_MAX ? MHD_NO : MHD_YES;
    }
    if (req->body == BODY_UPLOAD) {
        write_piece(req, data, size);
        return MHD_YES;
    }
    if (req->received > allowed) {
        req->too_large = 1;
        drop_upload(req);
        return MHD_YES;
    }
    if (MHD_post_process(req->pp, data, size) != MHD_YES && !req->too_large &&
        !req->upload_failed)
        set_bad(req, "The multipart body is malformed.");
    return MHD_YES;
}

enum MHD_Result files_upload_finish(kiln_req *req)
{
    if (req->pp) {
        /* MHD_NO: the body ended inside a part or before the closing
         * boundary. What was written of the part is then a cut file, never
         * one to store. */
        if (MHD_destroy_post_processor(req->pp) != MHD_YES)
            set_bad(req, "The multipart body ends before its closing boundary.");
        req->pp = NULL;
    }
    if (req->too_large) {
        drop_upload(req);
        return http_too_large(req, req->limit);
    }
    if (req->upload_failed) {
        drop_upload(req);
        return http_internal(req, req->upload_err.message);
    }
    if (!req->bad_request && req->body == BODY_MULTIPART && !req->part_seen)
        set_bad(req, "The multipart body has no part named file.");
    if (req->bad_request) {
        /* The file part began but no upload did: its headers (the file
         * name, the media type) were refused, so the details say where. */
        json_t *details = req->body == BODY_MULTIPART && req->part_seen && !req->upload
                              ? json_pack("{s:s}", "part", "file")
                              : NULL;
        drop_upload(req);
        return http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request", req->bad_message,
                          details);
    }
    kiln_store_file file;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_upload *up = req->upload;
    req->upload = NULL;
    kiln_store_result r = kiln_store_commit(up, &file, &err);
    if (r == KILN_STORE_TOO_LARGE)
        return http_too_large(req, req->limit);
    if (r != KILN_STORE_OK)
        return http_internal(req, err.message);
    char location[96];
    snprintf(location, sizeof location, "/v1/files/%s", file.id);
    return http_json_location(req, MHD_HTTP_CREATED, kiln_api_file_json(&file), location);
}

void files_upload_cleanup(kiln_req *req)
{
    if (req->pp) {
        MHD_destroy_post_processor(req->pp);
        req->pp = NULL;
    }
    drop_upload(req);
}

/* ---- list, metadata, delete ---- */

int http_query_int(const char *s, int64_t max, int64_t *out)
{
    if (!s)
        return 0;
    if (!*s)
        return -1;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > max)
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (v > max)
        return -1;
    *out = v;
    return 1;
}

static void list_one(const kiln_store_file *file, void *arg)
{
    json_array_append_new(arg, kiln_api_file_json(file));
}

int http_list_page(kiln_req *req, int64_t *limit, int64_t *offset, enum MHD_Result *reply)
{
    *limit = 100;
    *offset = 0;
    if (http_query_int(http_arg(req, "limit"), 1000, limit) < 0 || *limit < 1) {
        *reply = http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request",
                            "limit must be a whole number from 1 to 1000.",
                            json_pack("{s:s}", "parameter", "limit"));
        return -1;
    }
    if (http_query_int(http_arg(req, "offset"), INT64_MAX / 16, offset) < 0) {
        *reply = http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request",
                            "offset must be a whole number, 0 or more.",
                            json_pack("{s:s}", "parameter", "offset"));
        return -1;
    }
    return 0;
}

enum MHD_Result files_list(kiln_req *req)
{
    int64_t limit, offset;
    enum MHD_Result bad;
    if (http_list_page(req, &limit, &offset, &bad) != 0)
        return bad;
    json_t *files = json_array();
    int64_t total = 0;
    kiln_error err;
    memset(&err, 0, sizeof err);
    if (kiln_store_list(req->srv->store, req->tenant, offset, limit, list_one, files, &total,
                        &err) != KILN_STORE_OK) {
        json_decref(files);
        return http_internal(req, err.message);
    }
    return http_json(req, MHD_HTTP_OK,
                     json_pack("{s:o, s:I, s:I, s:I}", "files", files, "total", (json_int_t)total,
                               "limit", (json_int_t)limit, "offset", (json_int_t)offset));
}

enum MHD_Result files_get(kiln_req *req)
{
    kiln_store_file file;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_result r = kiln_store_get(req->srv->store, req->tenant, req->id, &file, &err);
    if (r != KILN_STORE_OK)
        return http_store_failure(req, r, &file, &err);
    return http_json(req, MHD_HTTP_OK, kiln_api_file_json(&file));
}

enum MHD_Result files_delete(kiln_req *req)
{
    if (kiln_inuse_busy(req->srv->inuse, req->tenant, req->id))
        return http_error(req, MHD_HTTP_CONFLICT, "file_in_use",
                          "The file is an input of a render or run that has not finished.", NULL);
    kiln_error err;
    memset(&err, 0, sizeof err);
    switch (kiln_store_delete(req->srv->store, req->tenant, req->id, &err)) {
    case KILN_STORE_OK: {
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL,
                                                                    MHD_RESPMEM_PERSISTENT);
        return http_queue(req, MHD_HTTP_NO_CONTENT, resp, 0);
    }
    case KILN_STORE_NOT_FOUND:
        return http_not_found(req);
    default:
        return http_internal(req, err.message);
    }
}

/* ---- signed links ---- */

/* A Host header fit to go into a URL: host name, IPv4, [IPv6], :port. */
static int host_ok(const char *h)
{
    size_t n = strlen(h);
    if (n == 0 || n > 255)
        return 0;
    for (const char *p = h; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr(".-:[]_", *p))
            return 0;
    return 1;
}

enum MHD_Result files_link(kiln_req *req)
{
    kiln_server *srv = req->srv;
    json_t *body = NULL;
    enum MHD_Result r = MHD_NO;
    if (http_body_json(req, 1, &body, &r) != 0)
        return r;
    json_int_t expires_in = KILN_SERVER_LINK_DEFAULT_SECONDS;
    json_t *e = json_object_get(body, "expires_in");
    if (e) {
        if (!json_is_integer(e) || json_integer_value(e) < 1 ||
            json_integer_value(e) > KILN_SERVER_LINK_MAX_SECONDS) {
            json_decref(body);
            return http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request",
                              "expires_in must be a whole number of seconds from 1 to 604800.",
                              json_pack("{s:s}", "pointer", "/expires_in"));
        }
        expires_in = json_integer_value(e);
    }
    json_decref(body);

    kiln_store_file file;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_store_result sr = kiln_store_get(srv->store, req->tenant, req->id, &file, &err);
    if (sr != KILN_STORE_OK)
        return http_store_failure(req, sr, &file, &err);
    int64_t expires = (int64_t)time(NULL) + (int64_t)expires_in;
    if (expires > file.expires_at)
        expires = file.expires_at;

    char base[512];
    if (srv->opt.public_url && srv->opt.public_url[0]) {
        snprintf(base, sizeof base, "%s", srv->opt.public_url);
        size_t n = strlen(base);
        while (n > 0 && base[n - 1] == '/')
            base[--n] = '\0';
    } else {
        const char *host = http_header(req, MHD_HTTP_HEADER_HOST);
        if (host && !host_ok(host))
            return http_error(req, MHD_HTTP_BAD_REQUEST, "invalid_request",
                              "The Host header is not a valid host.", NULL);
        if (host)
            snprintf(base, sizeof base, "http://%s", host);
        else
            snprintf(base, sizeof base,
                     strchr(srv->host, ':') ? "http://[%s]:%u" : "http://%s:%u", srv->host,
                     srv->port);
    }
    char sig[KILN_AUTH_SIG_HEX + 1], path[256], url[800], when[32];
    kiln_auth_sign_link(srv->link_secret, req->tenant, req->id, expires, sig);
    snprintf(path, sizeof path, "/v1/files/%s/content?tenant=%s&expires=%lld&signature=%s",
             req->id, req->tenant, (long long)expires, sig);
    snprintf(url, sizeof url, "%s%s", base, path);
    kiln_api_time(expires, when, sizeof when);
    return http_json(req, MHD_HTTP_CREATED,
                     json_pack("{s:s, s:s, s:s}", "url", url, "path", path, "expires_at", when));
}
