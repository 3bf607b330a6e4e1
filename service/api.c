/*
 * api.c - the JSON every endpoint shares (the error shape, the file
 * object), the registry of files in use, and the helpers render_api.c and
 * runs_api.c share (api_internal.h).
 */
#include "service/api.h"
#include "service/api_internal.h"
#include "common/utf8.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../common/banned.h"

/* ---- the shared JSON ---- */

json_t *kiln_api_error(const char *code, const char *message, json_t *details)
{
    if (!details)
        details = json_object();
    /* "o" steals details even when json_pack fails. */
    return json_pack("{s:{s:s, s:s, s:o}}", "error", "code", code, "message", message, "details",
                     details);
}

void kiln_api_time(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0) {
        snprintf(buf, cap, "%s", "1970-01-01T00:00:00Z");
        return;
    }
    snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

json_t *kiln_api_file_json(const kiln_store_file *file)
{
    char created[32], expires[32];
    kiln_api_time(file->created_at, created, sizeof created);
    kiln_api_time(file->expires_at, expires, sizeof expires);
    const char *source = kiln_store_source_name(file->source);
    return json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:o}", "id", file->id, "filename",
                     file->filename, "bytes", (json_int_t)file->bytes, "sha256", file->sha256,
                     "media_type", file->media_type, "created_at", created, "expires_at", expires,
                     "source", source ? json_string(source) : json_null());
}

int kiln_api_valid_id(const char *s)
{
    if (!s)
        return 0;
    size_t i;
    for (i = 0; s[i]; i++)
        if (i >= KILN_STORE_ID_LEN ||
            !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return i == KILN_STORE_ID_LEN;
}

void kiln_api_reply_error(kiln_api_reply *reply, int status, const char *code,
                          const char *message, json_t *details)
{
    json_decref(reply->body);
    reply->status = status;
    reply->body = kiln_api_error(code, message, details);
    reply->location[0] = '\0';
}

void kiln_api_reply_internal(kiln_api_reply *reply, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reply->log, sizeof reply->log, fmt, ap);
    va_end(ap);
    kiln_api_reply_error(reply, 500, "internal",
                         "The server failed; the request did not complete.", NULL);
}

int kiln_api_client_gone(int fd)
{
    if (fd < 0)
        return 0;
    struct pollfd pf = {.fd = fd, .events = POLLRDHUP};
    int n;
    while ((n = poll(&pf, 1, 0)) < 0 && errno == EINTR)
        ;
    return n > 0 && (pf.revents & KILN_API_CLIENT_GONE);
}

const char *kiln_api_check_filename(const char *s, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > KILN_STORE_FILENAME_MAX)
        return "is longer than 255 bytes";
    if (memchr(s, '\0', len))
        return "contains a NUL byte";
    if (!kiln_utf8_valid(s, len))
        return "is not valid UTF-8";
    /* A control character could end a header line or a log line wherever
     * the name is shown. (In valid UTF-8 every byte below 0x80 is an ASCII
     * character of its own.) */
    for (size_t pos = 0; pos < len; pos++)
        if ((unsigned char)s[pos] < 0x20 || s[pos] == 0x7f)
            return "contains a control character (U+0000 to U+001F or U+007F)";
    /* A name is one path component wherever it is used: a run sees its
     * inputs under their names in /mnt/data. */
    if (memchr(s, '/', len))
        return "contains '/'";
    if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
        return "cannot be '.' or '..'";
    return NULL;
}

/* ---- files in use ---- */

#define INUSE_BUCKETS 256

typedef struct inuse_entry {
    struct inuse_entry *next;
    unsigned count;
    char id[KILN_STORE_ID_LEN + 1];
    char tenant[KILN_STORE_TENANT_MAX + 1];
} inuse_entry;

struct kiln_inuse {
    pthread_mutex_t lock;
    inuse_entry *buckets[INUSE_BUCKETS];
};

kiln_status kiln_inuse_init(kiln_inuse **inuse, kiln_error *err)
{
    *inuse = calloc(1, sizeof **inuse);
    if (!*inuse)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    pthread_mutex_init(&(*inuse)->lock, NULL);
    return KILN_E_OK;
}

void kiln_inuse_free(kiln_inuse *inuse)
{
    if (!inuse)
        return;
    for (size_t b = 0; b < INUSE_BUCKETS; b++) {
        inuse_entry *e = inuse->buckets[b];
        while (e) {
            inuse_entry *next = e->next;
            free(e);
            e = next;
        }
    }
    pthread_mutex_destroy(&inuse->lock);
    free(inuse);
}

/* FNV-1a over the id (128 random bits: the tenant adds nothing). */
static size_t bucket_of(const char *id)
{
    uint32_t h = 2166136261u;
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 16777619u;
    return h % INUSE_BUCKETS;
}

static inuse_entry **find(kiln_inuse *inuse, const char *tenant, const char *id)
{
    inuse_entry **p = &inuse->buckets[bucket_of(id)];
    for (; *p; p = &(*p)->next)
        if (strcmp((*p)->id, id) == 0 && strcmp((*p)->tenant, tenant) == 0)
            break;
    return p;
}

void kiln_inuse_take(kiln_inuse *inuse, const char *tenant, const char *const *ids, size_t n)
{
    pthread_mutex_lock(&inuse->lock);
    for (size_t i = 0; i < n; i++) {
        /* Longer than an entry holds: no such file exists to protect. */
        size_t id_len = ids[i] ? strlen(ids[i]) : 0, tenant_len = strlen(tenant);
        if (!ids[i] || id_len > KILN_STORE_ID_LEN || tenant_len > KILN_STORE_TENANT_MAX)
            continue;
        inuse_entry **p = find(inuse, tenant, ids[i]);
        if (*p) {
            (*p)->count++;
            continue;
        }
        inuse_entry *e = calloc(1, sizeof *e);
        if (!e)
            continue; /* out of memory: the file is merely not protected from DELETE */
        e->count = 1;
        /* calloc's zeros end both strings. */
        memcpy(e->id, ids[i], id_len);
        memcpy(e->tenant, tenant, tenant_len);
        *p = e;
    }
    pthread_mutex_unlock(&inuse->lock);
}

void kiln_inuse_release(kiln_inuse *inuse, const char *tenant, const char *const *ids, size_t n)
{
    pthread_mutex_lock(&inuse->lock);
    for (size_t i = 0; i < n; i++) {
        if (!ids[i])
            continue;
        inuse_entry **p = find(inuse, tenant, ids[i]);
        if (!*p)
            continue;
        if (--(*p)->count == 0) {
            inuse_entry *gone = *p;
            *p = gone->next;
            free(gone);
        }
    }
    pthread_mutex_unlock(&inuse->lock);
}

int kiln_inuse_busy(kiln_inuse *inuse, const char *tenant, const char *id)
{
    pthread_mutex_lock(&inuse->lock);
    int busy = *find(inuse, tenant, id) != NULL;
    pthread_mutex_unlock(&inuse->lock);
    return busy;
}

/* ---- inputs ---- */

int kiln_api_inputs_open(const kiln_api_ctx *ctx, const char *tenant, const json_t *ids,
                         kiln_api_input **inputs, kiln_api_reply *reply)
{
    size_t n = json_array_size(ids);
    *inputs = NULL;
    if (n == 0)
        return 0;
    kiln_api_input *in = calloc(n, sizeof *in);
    if (!in) {
        kiln_api_reply_internal(reply, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        in[i].fd = -1;
    for (size_t i = 0; i < n; i++) {
        const char *id = json_string_value(json_array_get(ids, i));
        char pointer[32];
        snprintf(pointer, sizeof pointer, "/inputs/%zu", i);
        kiln_error err;
        memset(&err, 0, sizeof err);
        kiln_store_result r = kiln_api_valid_id(id)
                                  ? kiln_store_open_body(ctx->store, tenant, id, &in[i].file,
                                                         &in[i].fd, &err)
                                  : KILN_STORE_NOT_FOUND;
        if (r == KILN_STORE_OK) {
            snprintf(in[i].id, sizeof in[i].id, "%s", id);
            continue;
        }
        char msg[160];
        if (r == KILN_STORE_NOT_FOUND) {
            snprintf(msg, sizeof msg, "No file with the id given at %s.", pointer);
            kiln_api_reply_error(reply, 404, "not_found", msg,
                                 json_pack("{s:s}", "pointer", pointer));
        } else if (r == KILN_STORE_GONE) {
            char when[32];
            kiln_api_time(in[i].file.expires_at, when, sizeof when);
            snprintf(msg, sizeof msg, "File %s expired at %s.", id, when);
            kiln_api_reply_error(reply, 410, "gone", msg, json_pack("{s:s}", "pointer", pointer));
        } else {
            kiln_api_reply_internal(reply, "input %s: %s", id, err.message);
        }
        kiln_api_inputs_close(in, n);
        return -1;
    }
    *inputs = in;
    return 0;
}

void kiln_api_inputs_close(kiln_api_input *inputs, size_t n)
{
    if (!inputs)
        return;
    for (size_t i = 0; i < n; i++)
        if (inputs[i].fd >= 0)
            close(inputs[i].fd);
    free(inputs);
}

const char **kiln_api_input_ids(const kiln_api_input *inputs, size_t n)
{
    if (n == 0)
        return NULL;
    const char **ids = calloc(n, sizeof *ids);
    if (ids)
        for (size_t i = 0; i < n; i++)
            ids[i] = inputs[i].id;
    return ids;
}

/* ---- scratch directories ---- */

int kiln_api_scratch_make(const kiln_api_ctx *ctx, const char *prefix, char *path, size_t cap)
{
    int n = snprintf(path, cap, "%s/%s-XXXXXX", ctx->work_dir, prefix);
    if (n < 0 || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkdtemp(path) ? 0 : -1;
}

/* Empty the directory dfd (which this closes), depth-first. The depth is
 * bounded by what the writers and kiln run make (a few levels); the bound
 * here only keeps a surprise from exhausting file descriptors. */
static void empty_dir(int dfd, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
            continue;
        if (errno != EISDIR && errno != EPERM)
            continue;
        if (depth < 64) {
            int sub = openat(dirfd(d), de->d_name,
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                empty_dir(sub, depth + 1);
        }
        unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

void kiln_api_rmtree(const char *path)
{
    if (!path || !path[0])
        return;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        empty_dir(fd, 0);
    if (rmdir(path) != 0)
        unlink(path);
}
