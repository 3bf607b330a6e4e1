/*
 * fuzz_http.c - the HTTP service's parsers of untrusted request input, on
 * their own, without a daemon, a socket or a store.
 *
 * The input is up to 13 NUL-separated fields (a missing field is an absent
 * header):
 *
 *   0  "SIZE TIME": the file's size and created_at, decimal
 *   1  Range                 7  a query value (percent-encoded, as on the wire)
 *   2  If-Range              8  Content-Type
 *   3  If-None-Match         9  Content-Length
 *   4  an HTTP date          10 a JSON body (the limit is SIZE % 65536)
 *   5  a stored file name    11 the URL path
 *   6  Content-Disposition   12 the method
 *
 * What is driven, and what must hold:
 *   http_parse_range   a range lies in [0, size), first <= last; ranges we
 *                      write ourselves parse to what we meant.
 *   http_none_match    our quoted ETag after any quote-free list matches;
 *                      a header without our hash and without '*' does not.
 *   http_if_range_holds  our strong ETag holds, a weak one or a longer one
 *                      does not; a date holds only if it parses to created_at.
 *   http_parse_date    an accepted date is exactly what its form writes for
 *                      the time it parsed to (so no field out of range was
 *                      silently normalised); http_date output parses back.
 *   http_disposition   the header is printable ASCII, filename="..." holds
 *                      no '"' or '\\', one '_' per non-ASCII character; for
 *                      a name the store accepts (<= 255 bytes of UTF-8) a
 *                      non-ASCII name has a filename* that decodes back to
 *                      it, and http_disposition_filename() reads our own
 *                      header back to the name whenever the name survives
 *                      filename="..." or has a filename*. A name past 255
 *                      bytes, or a buffer short by one byte, is -1 and a
 *                      bare "attachment", never a header cut short.
 *   http_disposition_filename  on success a non-empty string within the
 *                      buffer; filename*=UTF-8''pct of a UTF-8 name and
 *                      filename="escaped" of a name quoted-string can carry
 *                      parse back to it.
 *   http_query_int     1 only for all-digit values <= max.
 *   kiln_media_type_guess / http_pick_media_type / http_content_type_matches /
 *   http_parse_content_length / http_buffer_append / http_body_parse /
 *   http_route_of / http_method_allowed   the obvious bounds and consistency.
 *
 * Everything here is declared in service/http.h and linked from
 * the service objects in fuzz/build/obj/: no connection, no daemon.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/media_type.h"
#include "common/utf8.h"
#include "service/http.h"
#include "../common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    F_NUMBERS,
    F_RANGE,
    F_IF_RANGE,
    F_INM,
    F_DATE,
    F_NAME,
    F_CD,
    F_QUERY,
    F_CTYPE,
    F_CLEN,
    F_BODY,
    F_URL,
    F_METHOD,
    F_COUNT
};

/* ---- helpers ---- */

#define CHECK(cond)                                                                             \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "fuzz_http: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                            \
        }                                                                                       \
    } while (0)

/* The SHA-256 of nothing: any 64 lowercase hex digits would do. */
static const char SHA[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/* A heap copy of exactly len + 1 bytes, so ASan sees a read past the end. */
static char *dup_exact(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (!d)
        abort();
    memcpy(d, s, n + 1);
    return d;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* ---- the parts ---- */

static void check_range(const char *h, uint64_t fsize)
{
    uint64_t first = 12345, last = 67890;
    char *hc = dup_exact(h);
    http_range_kind k = http_parse_range(hc, fsize, &first, &last);
    free(hc);
    CHECK(k == HTTP_RANGE_NONE || k == HTTP_RANGE_ONE || k == HTTP_RANGE_BAD);
    if (k == HTTP_RANGE_ONE) {
        CHECK(fsize > 0);
        CHECK(first <= last);
        CHECK(last < fsize);
    } else {
        CHECK(first == 12345 && last == 67890); /* untouched */
    }
}

static void check_own_ranges(uint64_t fsize, uint64_t t)
{
    char h[80];
    uint64_t first, last;
    if (fsize == 0) {
        CHECK(http_parse_range("bytes=0-0", 0, &first, &last) == HTTP_RANGE_BAD);
        CHECK(http_parse_range("bytes=-1", 0, &first, &last) == HTTP_RANGE_BAD);
        return;
    }
    uint64_t a = t % fsize, b = a + (t >> 7) % 1000;
    if (b < a)
        b = UINT64_MAX;
    snprintf(h, sizeof h, "bytes=%llu-%llu", (unsigned long long)a, (unsigned long long)b);
    CHECK(http_parse_range(h, fsize, &first, &last) == HTTP_RANGE_ONE);
    CHECK(first == a && last == (b < fsize ? b : fsize - 1));
    snprintf(h, sizeof h, "bytes=%llu-", (unsigned long long)a);
    CHECK(http_parse_range(h, fsize, &first, &last) == HTTP_RANGE_ONE);
    CHECK(first == a && last == fsize - 1);
    uint64_t n = 1 + (t >> 3) % (fsize < UINT64_MAX - 10 ? fsize + 10 : fsize);
    snprintf(h, sizeof h, "bytes=-%llu", (unsigned long long)n);
    CHECK(http_parse_range(h, fsize, &first, &last) == HTTP_RANGE_ONE);
    CHECK(last == fsize - 1 && first == (n >= fsize ? 0 : fsize - n));
    snprintf(h, sizeof h, "bytes=%llu-", (unsigned long long)fsize);
    CHECK(http_parse_range(h, fsize, &first, &last) == HTTP_RANGE_BAD);
}

static void check_none_match(const char *h)
{
    char *hc = dup_exact(h);
    int m = http_none_match(hc, SHA);
    free(hc);
    CHECK(m == 0 || m == 1);
    if (!strstr(h, SHA) && !strchr(h, '*'))
        CHECK(m == 0);
    /* h with its quotes dropped, then our ETag: must match */
    size_t n = strlen(h);
    char *list = malloc(n + sizeof SHA + 8);
    if (!list)
        abort();
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (h[i] != '"')
            list[o++] = h[i];
    snprintf(list + o, sizeof SHA + 8, ", \"%s\"", SHA);
    CHECK(http_none_match(list, SHA) == 1);
    snprintf(list + o, sizeof SHA + 8, ", W/\"%s\"", SHA);
    CHECK(http_none_match(list, SHA) == 1);
    free(list);
}

static void check_if_range(const char *h, int64_t created)
{
    kiln_store_file f;
    memset(&f, 0, sizeof f);
    snprintf(f.sha256, sizeof f.sha256, "%s", SHA);
    f.created_at = created;
    char *hc = dup_exact(h);
    int holds = http_if_range_holds(hc, &f);
    free(hc);
    if (holds) {
        const char *p = h;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '"') {
            CHECK(strlen(p) == strlen(SHA) + 2 && strncmp(p + 1, SHA, strlen(SHA)) == 0);
        } else {
            int64_t t = 0;
            CHECK(http_parse_date(p, &t) == 0 && t == created);
        }
    }
    char own[100];
    snprintf(own, sizeof own, "\"%s\"", SHA);
    CHECK(http_if_range_holds(own, &f) == 1);
    snprintf(own, sizeof own, "W/\"%s\"", SHA);
    CHECK(http_if_range_holds(own, &f) == 0);
    snprintf(own, sizeof own, "\"%s\"x", SHA);
    CHECK(http_if_range_holds(own, &f) == 0);
    snprintf(own, sizeof own, "\"%.63s\"", SHA);
    CHECK(http_if_range_holds(own, &f) == 0);
    if (created >= 0 && created <= INT64_C(253402300799)) { /* 1970 .. 9999 */
        CHECK(http_date(created, own, sizeof own) == 0);
        CHECK(http_if_range_holds(own, &f) == 1);
    }
}

static const char month_names[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char day_names[7][10] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                      "Thursday", "Friday", "Saturday"};

static void check_date(const char *s, int64_t t)
{
    char buf[64];
    int64_t back = 0;
    /* what we write parses back (years 1970 .. 9999) */
    if (t >= 0 && t <= INT64_C(253402300799)) {
        CHECK(http_date(t, buf, sizeof buf) == 0);
        CHECK(strlen(buf) == 29);
        CHECK(http_parse_date(buf, &back) == 0 && back == t);
    }
    /* a short buffer is an error and "", never overrun (any time: a
     * failing gmtime_r must not leave fields unset) */
    char *small = malloc(8);
    if (!small)
        abort();
    memset(small, 'Z', 8);
    CHECK(http_date(t, small, 8) == -1 && small[0] == '\0');
    free(small);
    char *full = malloc(30);
    if (!full)
        abort();
    memset(full, 'Z', 30);
    int w = http_date(t, full, 30);
    CHECK(memchr(full, '\0', 30) != NULL);
    CHECK(w == 0 ? strlen(full) == 29 : full[0] == '\0');
    free(full);

    char *sc = dup_exact(s);
    back = -7;
    int r = http_parse_date(sc, &back);
    free(sc);
    if (r != 0) {
        CHECK(back == -7); /* untouched */
        return;
    }
    /* Accepted: the input is exactly what its form writes for the time it
     * parsed to, so every field (weekday included) is the date's own and
     * nothing was normalised (31 Feb, -1 hours, 60 minutes, a leap second:
     * all refused). */
    CHECK(back >= 0 && back <= INT64_C(253402300799));
    time_t tt = (time_t)back;
    struct tm tm;
    CHECK(gmtime_r(&tt, &tm) != NULL);
    char imf[64], rfc850[64], asc[64];
    snprintf(imf, sizeof imf, "%.3s, %02d %s %04d %02d:%02d:%02d GMT", day_names[tm.tm_wday],
             tm.tm_mday, month_names[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
             tm.tm_sec);
    snprintf(rfc850, sizeof rfc850, "%s, %02d-%s-%02d %02d:%02d:%02d GMT", day_names[tm.tm_wday],
             tm.tm_mday, month_names[tm.tm_mon], (tm.tm_year + 1900) % 100, tm.tm_hour, tm.tm_min,
             tm.tm_sec);
    snprintf(asc, sizeof asc, "%.3s %s %2d %02d:%02d:%02d %04d", day_names[tm.tm_wday],
             month_names[tm.tm_mon], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             tm.tm_year + 1900);
    /* asctime's day is date3 = 2DIGIT / ( SP DIGIT ) (RFC 9110 5.6.7): "06" or " 6" */
    char asc_zero[64];
    snprintf(asc_zero, sizeof asc_zero, "%.3s %s %02d %02d:%02d:%02d %04d", day_names[tm.tm_wday],
             month_names[tm.tm_mon], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             tm.tm_year + 1900);
    if (strcmp(s, imf) != 0 && strcmp(s, rfc850) != 0 && strcmp(s, asc) != 0 &&
        strcmp(s, asc_zero) != 0) {
        fprintf(stderr, "fuzz_http: http_parse_date(\"%s\") accepted it as %lld = %s\n", s,
                (long long)back, imf);
        CHECK(!"an accepted date is the date it parsed to");
    }
}

/* Decode a filename* value (attr-chars and %XX only) into out; -1 if it is
 * not one. */
static int decode_ext_value(const char *v, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = v; *p; p++) {
        int c = (unsigned char)*p;
        if (c == '%') {
            int hi = hexval((unsigned char)p[1]), lo = hi < 0 ? -1 : hexval((unsigned char)p[2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = hi * 16 + lo;
            p += 2;
        } else if (!http_is_attr_char((unsigned char)c)) {
            return -1;
        }
        if (o + 1 >= cap)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return 0;
}

static void check_disposition(const char *name)
{
    const size_t cap = KILN_HTTP_DISPOSITION_MAX;
    char *nc = dup_exact(name);
    char *out = malloc(cap);
    if (!out)
        abort();
    memset(out, 'Z', cap);
    int r = http_disposition(nc, out, cap);
    size_t len = strnlen(out, cap);
    CHECK(len < cap); /* NUL-terminated inside the buffer */
    size_t nlen = strlen(name);
    if (nlen > KILN_STORE_FILENAME_MAX) {
        /* never stored: refused, as a bare "attachment" */
        CHECK(r == -1 && strcmp(out, "attachment") == 0);
        free(nc);
        free(out);
        return;
    }
    CHECK(r == 0); /* the buffer is the worst case of any such name */
    /* one byte short: refused, never cut (a cut filename* names another
     * file) */
    char *short_out = malloc(len);
    if (!short_out)
        abort();
    CHECK(http_disposition(nc, short_out, len) == -1);
    CHECK(strnlen(short_out, len) < len);
    CHECK(len <= sizeof "attachment" - 1 || strcmp(short_out, "attachment") == 0);
    free(short_out);
    free(nc);
    for (size_t i = 0; i < len; i++)
        CHECK((unsigned char)out[i] >= 0x20 && (unsigned char)out[i] < 0x7f);

    static const char pre[] = "attachment; filename=\"";
    CHECK(strncmp(out, pre, sizeof pre - 1) == 0);
    const char *q = out + sizeof pre - 1, *qend = strchr(q, '"');
    CHECK(qend != NULL);
    for (const char *p = q; p < qend; p++)
        CHECK(*p != '\\');
    const char *rest = qend + 1;
    static const char ext[] = "; filename*=UTF-8''";
    int has_ext = strncmp(rest, ext, sizeof ext - 1) == 0;
    CHECK(*rest == '\0' || has_ext);

    int ascii = 1, lossy = 0, controls = 0;
    size_t chars = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (*p >= 0x80)
            ascii = 0;
        if ((*p & 0xc0) != 0x80)
            chars++;
        if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\')
            lossy = 1;
        if (*p < 0x20 || *p == 0x7f)
            controls = 1;
    }
    /* filename* exactly when the ASCII fallback is not the name itself */
    CHECK(has_ext == (!ascii || lossy));
    if (!kiln_utf8_valid(name, strlen(name))) {
        free(out); /* the store never keeps such a name: memory safety only */
        return;
    }

    /* one character of the quoted name per character of the name */
    CHECK((size_t)(qend - q) == chars);
    if (ascii) {
        for (size_t i = 0; i < nlen; i++) {
            unsigned char c = (unsigned char)name[i];
            int bad = c < 0x20 || c == 0x7f || c == '"' || c == '\\';
            CHECK(q[i] == (bad ? '_' : (char)c));
        }
    }
    if (has_ext) { /* the real name must reach the client */
        char back[KILN_STORE_FILENAME_MAX * 3 + 1];
        if (decode_ext_value(rest + sizeof ext - 1, back, sizeof back) != 0 ||
            strcmp(back, name) != 0) {
            fprintf(stderr,
                    "fuzz_http: http_disposition() of a %zu-byte name wrote %zu bytes (cap %zu); "
                    "filename* does not decode back to the name:\n%s\n",
                    nlen, len, cap, out);
            CHECK(!"filename* decodes back to the name");
        }
    }

    /* what we write, we read back (names with control characters are never
     * stored: the reader refuses them) */
    if (!controls) {
        char *parsed = malloc(KILN_STORE_FILENAME_MAX + 1);
        if (!parsed)
            abort();
        int pr = http_disposition_filename(out, parsed, KILN_STORE_FILENAME_MAX + 1);
        if (!(nlen > 0 ? pr == 0 && strcmp(parsed, name) == 0 : pr != 0)) {
            fprintf(stderr,
                    "fuzz_http: http_disposition_filename() of our own header\n  %s\n"
                    "gave %d \"%s\", not the name \"%s\"\n",
                    out, pr, pr == 0 ? parsed : "", name);
            CHECK(!"http_disposition_filename reads http_disposition's output back");
        }
        free(parsed);
    }
    free(out);
}

static void check_disposition_filename(const char *h, const char *name)
{
    const size_t cap = KILN_STORE_FILENAME_MAX + 1;
    char *out = malloc(cap);
    if (!out)
        abort();
    char *hc = dup_exact(h);
    if (http_disposition_filename(hc, out, cap) == 0) {
        size_t n = strnlen(out, cap);
        CHECK(n < cap && n > 0);
    }
    free(hc);

    /* the name, sent as filename*=UTF-8''pct (when it is UTF-8: nothing
     * else is read from filename*) and as filename="escaped" (when a
     * quoted-string can carry it: no control but HTAB) */
    size_t nlen = strlen(name);
    if (nlen > 0 && nlen < cap) {
        size_t hcap = nlen * 3 + 64;
        char *hdr = malloc(hcap);
        if (!hdr)
            abort();
        size_t w = (size_t)snprintf(hdr, hcap, "attachment; filename*=UTF-8''");
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
            w += http_is_attr_char(*p) ? (size_t)snprintf(hdr + w, hcap - w, "%c", *p)
                                       : (size_t)snprintf(hdr + w, hcap - w, "%%%02x", *p);
        int r = http_disposition_filename(hdr, out, cap);
        CHECK(kiln_utf8_valid(name, strlen(name)) ? r == 0 && strcmp(out, name) == 0 : r != 0);

        w = (size_t)snprintf(hdr, hcap, "form-data; name=\"file\"; filename=\"");
        int quotable = 1;
        for (const char *p = name; *p; p++) {
            unsigned char c = (unsigned char)*p;
            if ((c < 0x20 && c != '\t') || c == 0x7f)
                quotable = 0;
            if (*p == '"' || *p == '\\')
                hdr[w++] = '\\';
            hdr[w++] = *p;
        }
        hdr[w++] = '"';
        hdr[w] = '\0';
        r = http_disposition_filename(hdr, out, cap);
        CHECK(quotable ? r == 0 && strcmp(out, name) == 0 : r != 0);
        free(hdr);
    }
    free(out);
}

static void check_media_types(const char *name, const char *ctype)
{
    const char *g = kiln_media_type_guess(name);
    CHECK(!g || strchr(g, '/'));
    char *up = dup_exact(name);
    for (char *p = up; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    CHECK(kiln_media_type_guess(up) == g);
    free(up);

    static kiln_req req;
    memset(&req, 0, sizeof req);
    snprintf(req.filename, sizeof req.filename, "%s", name);
    memset(req.media_type, 'Z', sizeof req.media_type);
    http_pick_media_type(&req, ctype);
    size_t n = strnlen(req.media_type, sizeof req.media_type);
    CHECK(n > 0 && n < sizeof req.media_type);
}

static void check_query(const char *raw)
{
    /* as libmicrohttpd hands a query value over: unescaped in place */
    char *v = dup_exact(raw);
    size_t n = MHD_http_unescape(v);
    CHECK(n <= strlen(raw) && strlen(v) <= n);

    static const int64_t maxes[] = {0, 1, 1000, INT64_MAX / 16};
    for (size_t i = 0; i < sizeof maxes / sizeof maxes[0]; i++) {
        int64_t out = -7;
        int r = http_query_int(v, maxes[i], &out);
        int digits = v[0] != '\0';
        for (const char *p = v; *p; p++)
            if (*p < '0' || *p > '9')
                digits = 0;
        if (r == 1) {
            CHECK(digits && out >= 0 && out <= maxes[i]);
            CHECK(strlen(v) > 18 || out == (int64_t)strtoll(v, NULL, 10));
        } else {
            CHECK(r == -1 && out == -7);
            CHECK(!digits || strlen(v) > 18 || strtoll(v, NULL, 10) > maxes[i]);
        }
        CHECK(http_query_int(NULL, maxes[i], &out) == 0); /* absent */
    }
    free(v);
}

static void check_request_headers(const char *ctype, const char *clen)
{
    char *ct = ctype ? dup_exact(ctype) : NULL, *cl = clen ? dup_exact(clen) : NULL;
    static const char *types[] = {"multipart/form-data", "application/json", ""};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (http_content_type_matches(ct, types[i])) {
            CHECK(ct);
            const char *p = ct + strspn(ct, " \t");
            CHECK(strncasecmp(p, types[i], strlen(types[i])) == 0);
        }
    }
    uint64_t len = 99;
    if (http_parse_content_length(cl, &len)) {
        CHECK(cl && cl[0] >= '0' && cl[0] <= '9');
        CHECK(strspn(cl, "0123456789") == strlen(cl));
        CHECK(strlen(cl) > 19 || len == strtoull(cl, NULL, 10));
    } else {
        CHECK(len == 99);
    }
    free(ct);
    free(cl);
}

static void check_body(const char *body, size_t body_len, uint64_t limit)
{
    static kiln_req req;
    memset(&req, 0, sizeof req);
    req.limit = limit;
    /* in pieces of 1, 2, 3, ... bytes, as libmicrohttpd might hand them over */
    size_t off = 0, piece = 1;
    int failed = 0;
    while (off < body_len) {
        size_t n = body_len - off < piece ? body_len - off : piece;
        if (http_buffer_append(&req, body + off, n) != 0) {
            failed = 1;
            break;
        }
        off += n;
        piece++;
        CHECK(req.len == off && req.len <= req.limit && req.len < req.cap);
        CHECK(req.buf[req.len] == '\0');
    }
    CHECK(failed == (body_len > limit));
    CHECK(req.too_large == failed);
    if (!failed) {
        CHECK(req.len == body_len && (body_len == 0 || memcmp(req.buf, body, body_len) == 0));
        json_t *root = NULL;
        json_error_t jerr;
        int r = http_body_parse(req.buf, req.len, 1, &root, &jerr);
        if (r == 0) {
            CHECK(json_is_object(root));
            json_decref(root);
        } else {
            /* http_body_json answers 400 for both */
            CHECK(!root && (r == HTTP_BODY_INVALID_JSON || r == HTTP_BODY_NOT_OBJECT));
        }
    }
    free(req.buf);
}

static void check_route(const char *url, const char *method)
{
    char *uc = dup_exact(url);
    char *seg = malloc(64);
    if (!seg)
        abort();
    memset(seg, 'Z', 64);
    kiln_route r = http_route_of(uc, seg, 64);
    CHECK(strnlen(seg, 64) < 64);
    if (r == ROUTE_FILE || r == ROUTE_CONTENT || r == ROUTE_LINK) {
        CHECK(strncmp(url, "/v1/files/", 10) == 0);
        CHECK(strchr(seg, '/') == NULL);
        if (seg[0])
            CHECK(strncmp(url + 10, seg, strlen(seg)) == 0);
    }
    /* the method as req_new keeps it (15 bytes), the empty one included */
    char m[16];
    snprintf(m, sizeof m, "%s", method);
    int ok = http_method_allowed(r, m);
    if (ok) {
        /* a whole item of the Allow list, not a piece of one */
        const char *allow = http_route_allow(r), *p = strstr(allow, m);
        size_t n = strlen(m);
        CHECK(n > 0 && p != NULL);
        int whole = 0;
        for (; p; p = strstr(p + 1, m))
            if ((p == allow || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
                whole = 1;
        CHECK(whole);
    }
    CHECK(http_method_allowed(r, "") == 0);
    free(seg);
    free(uc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* split into NUL-terminated fields (the input copied, so each field is
     * its own heap string when duplicated) */
    char *buf = malloc(size + 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *field[F_COUNT] = {0};
    size_t field_len[F_COUNT] = {0};
    size_t pos = 0;
    for (int i = 0; i < F_COUNT && pos <= size; i++) {
        field[i] = buf + pos;
        field_len[i] = strlen(buf + pos);
        pos += field_len[i] + 1;
    }

    unsigned long long fsize = 0;
    long long created = 0;
    if (field[F_NUMBERS]) {
        char *end = NULL;
        fsize = strtoull(field[F_NUMBERS], &end, 10);
        created = strtoll(end, NULL, 10);
    }
    uint64_t t = (uint64_t)created ^ (fsize * 0x9e3779b97f4a7c15ull);

    check_own_ranges(fsize, t);
    if (field[F_RANGE])
        check_range(field[F_RANGE], fsize);
    if (field[F_INM])
        check_none_match(field[F_INM]);
    if (field[F_IF_RANGE])
        check_if_range(field[F_IF_RANGE], created);
    else
        check_if_range("", created);
    check_date(field[F_DATE] ? field[F_DATE] : "", created);
    if (field[F_NAME]) {
        check_disposition(field[F_NAME]);
        check_media_types(field[F_NAME], field[F_CTYPE]);
        check_disposition_filename(field[F_CD] ? field[F_CD] : "", field[F_NAME]);
    }
    if (field[F_QUERY])
        check_query(field[F_QUERY]);
    check_request_headers(field[F_CTYPE], field[F_CLEN]);
    if (field[F_BODY])
        check_body(field[F_BODY], field_len[F_BODY], fsize % 65536);
    if (field[F_URL])
        check_route(field[F_URL], field[F_METHOD] ? field[F_METHOD] : "GET");
    free(buf);
    return 0;
}
