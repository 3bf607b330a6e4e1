/*
 * journal.c - the results journal (journal.h).
 *
 * The ids are kept in an open-addressing table over an array of entries, so
 * finding the result of one of 10,000 jobs is one probe or two, and a resumed
 * batch decides what to skip without reading its files again.
 */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "../common/output.h"
#include "../common/banned.h"

#define JOURNAL_NAME "results.jsonl"

struct kiln_journal {
    int fd;
    char *path;
    kiln_journal_entry *entries;
    size_t count, cap;
    size_t *slots; /* index + 1 into entries; 0 = free */
    size_t slot_cap;
    struct timespec last_sync;
    int dirty;
};

void kiln_sha256_hex(const unsigned char sha256[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[sha256[i] >> 4];
        hex[2 * i + 1] = digits[sha256[i] & 15];
    }
    hex[64] = '\0';
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int kiln_sha256_unhex(const char *hex, unsigned char sha256[32])
{
    if (!hex || strlen(hex) != 64)
        return -1;
    for (int i = 0; i < 32; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        sha256[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

int kiln_file_sha256(int dir_fd, const char *name, unsigned char sha256[32], uint64_t *bytes,
                     int64_t *mtime_ns, uint64_t *inode)
{
    /* A run's files are DIR/NAME: no component may be a link out. */
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int fd = (int)syscall(SYS_openat2, dir_fd, name, &how, sizeof how);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    struct sha256_ctx md;
    sha256_init(&md);
    unsigned char buf[65536];
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (n == 0)
            break;
        sha256_update(&md, (size_t)n, buf);
        total += (uint64_t)n;
    }
    close(fd);
    sha256_digest(&md, SHA256_DIGEST_SIZE, sha256);
    *bytes = total;
    *mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    *inode = (uint64_t)st.st_ino;
    return 0;
}

/* ---- the id table ---- */

static uint64_t id_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t *slot_for(const kiln_journal *j, const char *id)
{
    size_t mask = j->slot_cap - 1;
    for (size_t i = (size_t)id_hash(id) & mask;; i = (i + 1) & mask) {
        size_t *s = &j->slots[i];
        if (*s == 0 || strcmp(j->entries[*s - 1].id, id) == 0)
            return s;
    }
}

static int grow_slots(kiln_journal *j)
{
    size_t cap = j->slot_cap ? j->slot_cap * 2 : 1024;
    size_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    free(j->slots);
    j->slots = slots;
    j->slot_cap = cap;
    for (size_t i = 0; i < j->count; i++)
        *slot_for(j, j->entries[i].id) = i + 1;
    return 0;
}

static void entry_release(kiln_journal_entry *e)
{
    for (size_t i = 0; i < e->file_count; i++)
        free(e->files[i].name);
    free(e->files);
    free(e->id);
    memset(e, 0, sizeof *e);
}

/* The compact form of a line's entry: what resuming needs. 0, or -1 (not an
 * entry: no id; or out of memory, with errno ENOMEM). */
static int entry_from_json(const json_t *line, kiln_journal_entry *e)
{
    memset(e, 0, sizeof *e);
    const char *id = json_string_value(json_object_get(line, "id"));
    if (!id) {
        errno = EINVAL;
        return -1;
    }
    e->ok = json_is_string(json_object_get(line, "status")) &&
            strcmp(json_string_value(json_object_get(line, "status")), "ok") == 0;
    e->has_input_sha256 = kiln_sha256_unhex(json_string_value(
                                                json_object_get(line, "input_sha256")),
                                            e->input_sha256) == 0;
    const char *first = json_string_value(
        json_object_get(json_array_get(json_object_get(line, "errors"), 0), "code"));
    e->timed_out = !e->ok && first && strcmp(first, "timeout") == 0;
    e->job_timeout = json_number_value(json_object_get(line, "job_timeout"));
    const json_t *files = json_object_get(line, "files");
    size_t n = json_array_size(files);
    if (!json_is_array(files))
        e->ok = 0; /* a result that does not say what it made vouches for nothing */
    e->id = strdup(id);
    e->files = calloc(n ? n : 1, sizeof *e->files);
    if (!e->id || !e->files)
        goto fail_release;
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(files, i);
        const char *name = json_string_value(json_object_get(f, "name"));
        kiln_journal_file *jf = &e->files[e->file_count];
        if (!name ||
            kiln_sha256_unhex(json_string_value(json_object_get(f, "sha256")), jf->sha256) != 0) {
            e->ok = 0; /* a result naming a file it cannot vouch for is no result */
            continue;
        }
        if (!(jf->name = strdup(name)))
            goto fail_release;
        jf->bytes = (uint64_t)json_integer_value(json_object_get(f, "bytes"));
        jf->mtime_ns = json_integer_value(json_object_get(f, "mtime_ns"));
        jf->inode = (uint64_t)json_integer_value(json_object_get(f, "inode"));
        e->file_count++;
    }
    return 0;

fail_release:
    entry_release(e);
    errno = ENOMEM;
    return -1;
}

/* Put e (moved) in as its id's result; *index gets where it went. */
static int remember(kiln_journal *j, kiln_journal_entry *e, size_t *index)
{
    if ((j->count + 1) * 2 > j->slot_cap && grow_slots(j) != 0)
        return -1;
    size_t *slot = slot_for(j, e->id);
    if (*slot) {
        entry_release(&j->entries[*slot - 1]);
        j->entries[*slot - 1] = *e;
        *index = *slot - 1;
        return 0;
    }
    if (j->count == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 256;
        kiln_journal_entry *grown = realloc(j->entries, cap * sizeof *grown);
        if (!grown)
            return -1;
        j->entries = grown;
        j->cap = cap;
    }
    j->entries[j->count] = *e;
    *slot = ++j->count;
    *index = j->count - 1;
    return 0;
}

const kiln_journal_entry *kiln_journal_find(const kiln_journal *j, const char *id)
{
    if (!j->slot_cap)
        return NULL;
    size_t s = *slot_for(j, id);
    return s ? &j->entries[s - 1] : NULL;
}

size_t kiln_journal_count(const kiln_journal *j)
{
    return j->count;
}

/* ---- reading back ---- */

typedef struct line_span {
    size_t off, len;
} line_span;

/* The whole journal text (it is read once, at open; its size is what the
 * batch wrote). NULL with err. */
static char *read_all(int fd, size_t *len, kiln_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        kiln_error_set(err, KILN_E_INPUT, NULL, "cannot read the journal: %s", strerror(errno));
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size + 1);
    if (!buf) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory reading the journal");
        return NULL;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    *len = got;
    return buf;
}

/* Rewrite the journal with only the kept lines (keep[i] for entries[i],
 * in the order of the entries). */
static kiln_status rewrite(kiln_journal *j, const char *text, const line_span *keep,
                           kiln_error *err)
{
    kiln_output out;
    kiln_status st = kiln_output_open(&out, j->path, UINT64_MAX, err);
    if (st != KILN_E_OK)
        return st;
    for (size_t i = 0; i < j->count && st == KILN_E_OK; i++) {
        st = kiln_output_write(&out, text + keep[i].off, keep[i].len, err);
        if (st == KILN_E_OK)
            st = kiln_output_write(&out, "\n", 1, err);
    }
    if (st != KILN_E_OK) {
        kiln_output_abort(&out);
        return st;
    }
    st = kiln_output_commit(&out, NULL, err);
    if (st != KILN_E_OK)
        return st;
    int fd = open(j->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot open %s: %s", j->path,
                              strerror(errno));
    close(j->fd);
    j->fd = fd;
    return KILN_E_OK;
}

/* Read every line: each that parses is its id's latest result. Cuts a torn
 * last line; rewrites when lines were superseded or unreadable. */
static kiln_status load(kiln_journal *j, kiln_error *err)
{
    size_t len;
    char *text = read_all(j->fd, &len, err);
    if (!text)
        return err->code;
    kiln_status st = KILN_E_OK;
    size_t lines = 0, spans_cap = 0;
    line_span *spans = NULL;
    size_t end = len;
    while (end > 0 && text[end - 1] != '\n')
        end--; /* a torn last line: the write a kill cut short */
    if (end < len && ftruncate(j->fd, (off_t)end) != 0) {
        st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot repair %s: %s", j->path,
                            strerror(errno));
        goto release_text;
    }
    for (size_t at = 0; at < end;) {
        char *nl = memchr(text + at, '\n', end - at);
        size_t n = (size_t)(nl - (text + at));
        lines++;
        if (n > KILN_JOURNAL_LINE_MAX) {
            /* No line Kiln writes is this long (kiln_journal_append bounds
             * them): not a result; its job runs again. */
            at += n + 1;
            continue;
        }
        json_t *line = json_loadb(text + at, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
        kiln_journal_entry e;
        size_t index;
        if (!line || entry_from_json(line, &e) != 0) {
            json_decref(line);
            if (errno == ENOMEM) {
                st = kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory reading %s", j->path);
                goto release_spans;
            }
            at += n + 1;
            continue;
        }
        json_decref(line);
        if (remember(j, &e, &index) != 0) {
            entry_release(&e);
            st = kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory reading %s", j->path);
            goto release_spans;
        }
        if (j->cap > spans_cap) {
            line_span *grown = realloc(spans, j->cap * sizeof *grown);
            if (!grown) {
                st = kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory reading %s", j->path);
                goto release_spans;
            }
            spans = grown;
            spans_cap = j->cap;
        }
        spans[index] = (line_span){at, n};
        at += n + 1;
    }
    if (lines > j->count)
        st = rewrite(j, text, spans, err);
release_spans:
    free(spans);
release_text:
    free(text);
    return st;
}

kiln_journal *kiln_journal_open(const char *out_dir, kiln_error *err)
{
    kiln_journal *j = calloc(1, sizeof *j);
    if (!j) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        return NULL;
    }
    j->fd = -1;
    size_t n = strlen(out_dir) + sizeof "/" JOURNAL_NAME;
    if (!(j->path = malloc(n)) || grow_slots(j) != 0) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        goto fail_free;
    }
    snprintf(j->path, n, "%s/%s", out_dir, JOURNAL_NAME);
    /* O_NOFOLLOW: a results.jsonl planted as a link is not written through. */
    j->fd = open(j->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (j->fd < 0) {
        kiln_error_set(err, KILN_E_WRITE, NULL, "cannot open %s: %s", j->path, strerror(errno));
        goto fail_free;
    }
    if (load(j, err) != KILN_E_OK)
        goto fail_free;
    clock_gettime(CLOCK_MONOTONIC, &j->last_sync);
    return j;

fail_free:
    kiln_journal_free(j);
    return NULL;
}

kiln_status kiln_journal_append(kiln_journal *j, const json_t *entry, kiln_error *err)
{
    char *line = json_dumps(entry, JSON_COMPACT | JSON_REAL_PRECISION(10));
    if (line && strlen(line) > KILN_JOURNAL_LINE_MAX) {
        /* Never a line the journal would not read back: the run's own
         * report goes, the rest (id, status, files, errors) stays. */
        free(line);
        json_t *slim = json_deep_copy(entry);
        json_object_del(slim, "run");
        json_object_set_new(slim, "run_omitted", json_true());
        json_t *errors = json_object_get(slim, "errors");
        while (json_array_size(errors) > 5)
            json_array_remove(errors, json_array_size(errors) - 1);
        line = json_dumps(slim, JSON_COMPACT | JSON_REAL_PRECISION(10));
        json_decref(slim);
        if (line && strlen(line) > KILN_JOURNAL_LINE_MAX) {
            free(line);
            return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                  "a journal line for %s is longer than %u bytes",
                                  json_string_value(json_object_get(entry, "id")),
                                  KILN_JOURNAL_LINE_MAX);
        }
    }
    kiln_journal_entry e;
    if (!line || entry_from_json(entry, &e) != 0) {
        free(line);
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing the journal");
    }
    size_t n = strlen(line);
    line[n] = '\n'; /* one write: a line lands whole or (cut by a crash) is cut off at open */
    size_t done = 0;
    kiln_status st = KILN_E_OK;
    while (done < n + 1) {
        ssize_t w = write(j->fd, line + done, n + 1 - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot write %s: %s", j->path,
                                w < 0 ? strerror(errno) : "no progress");
            break;
        }
        done += (size_t)w;
    }
    free(line);
    size_t index;
    if (st == KILN_E_OK && remember(j, &e, &index) != 0)
        st = kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing the journal");
    if (st != KILN_E_OK)
        entry_release(&e);
    j->dirty = 1;
    return st;
}

kiln_status kiln_journal_sync(kiln_journal *j, int force, kiln_error *err)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double since = (double)(now.tv_sec - j->last_sync.tv_sec) +
                   (double)(now.tv_nsec - j->last_sync.tv_nsec) / 1e9;
    if (!j->dirty || (!force && since < 1.0))
        return KILN_E_OK;
    j->last_sync = now;
    j->dirty = 0;
    if (fdatasync(j->fd) != 0)
        return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot write %s: %s", j->path,
                              strerror(errno));
    return KILN_E_OK;
}

void kiln_journal_free(kiln_journal *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->count; i++)
        entry_release(&j->entries[i]);
    free(j->entries);
    free(j->slots);
    if (j->fd >= 0)
        close(j->fd);
    free(j->path);
    free(j);
}
