/*
 * sources.c - a jobs file and a mail merge as batch sources (sources.h).
 */
#include "sources.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "data_rows.h"
#include "execute.h"
#include "../artifacts/spec/spec.h"
#include "../contract/batch.h"
#include "../contract/errors.h"
#include "../common/utf8.h"
#include "../common/banned.h"

/* ---- lines of at most max bytes, pulled one at a time ---- */

typedef struct line_source {
    int fd;
    char *buf;
    size_t start, len, cap, max;
    int eof;
    uint64_t line; /* of the line last returned, 1-based */
} line_source;

static int lines_open(line_source *r, const char *path, size_t max)
{
    memset(r, 0, sizeof r[0]);
    r->max = max;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    return r->fd < 0 ? -1 : 0;
}

static void lines_close(line_source *r)
{
    if (r->fd >= 0)
        close(r->fd);
    free(r->buf);
    r->fd = -1;
    r->buf = NULL;
}

/* 1 with the next line (without its newline; NUL-terminated in place), 0 at
 * the end, -1 with errno (EFBIG: a line over max). */
static int lines_next(line_source *r, char **line, size_t *len)
{
    for (;;) {
        char *nl = r->len > r->start ? memchr(r->buf + r->start, '\n', r->len - r->start) : NULL;
        if (nl || (r->eof && r->len > r->start)) {
            size_t n = nl ? (size_t)(nl - (r->buf + r->start)) : r->len - r->start;
            *line = r->buf + r->start;
            (*line)[n] = '\0'; /* the newline's place, or the spare byte kept below */
            *len = n;
            r->start += n + (nl ? 1 : 0);
            r->line++;
            return 1;
        }
        if (r->eof)
            return 0;
        if (r->len - r->start > r->max) {
            errno = EFBIG;
            return -1;
        }
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->len - r->start);
            r->len -= r->start;
            r->start = 0;
        }
        if (r->cap - r->len < 65536 + 1) {
            size_t cap = r->cap ? r->cap * 2 : 1 << 20;
            if (cap > r->max + 65536 + 2)
                cap = r->max + 65536 + 2;
            if (cap <= r->cap) {
                errno = EFBIG;
                return -1;
            }
            char *grown = realloc(r->buf, cap);
            if (!grown)
                return -1;
            r->buf = grown;
            r->cap = cap;
        }
        ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            r->eof = 1;
        r->len += (size_t)n;
    }
}

/* ---- a set of names, to find the second job writing one ---- */

typedef struct name_set {
    char **slots;
    size_t cap, count;
} name_set;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* 1 when name was new (now in), 0 when it was there, -1 out of memory. */
static int set_add(name_set *s, const char *name)
{
    if ((s->count + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        char **slots = calloc(cap, sizeof *slots);
        if (!slots)
            return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i])
                continue;
            size_t j = (size_t)name_hash(s->slots[i]) & (cap - 1);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = s->slots[i];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t j = (size_t)name_hash(name) & (s->cap - 1);
    for (; s->slots[j]; j = (j + 1) & (s->cap - 1))
        if (strcmp(s->slots[j], name) == 0)
            return 0;
    if (!(s->slots[j] = strdup(name)))
        return -1;
    s->count++;
    return 1;
}

static void set_release(name_set *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->slots[i]);
    free(s->slots);
    memset(s, 0, sizeof *s);
}

/* ---- hashing ---- */

static void hash_json(struct sha256_ctx *md, const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (text) {
        sha256_update(md, strlen(text) + 1, (const uint8_t *)text);
        free(text);
    }
}

/* The bytes of a file, into the hash (a length first, so that two files
 * cannot run together). 0, or -1 with errno. */
static int hash_fd(struct sha256_ctx *md, int fd)
{
    unsigned char buf[65536];
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        sha256_update(md, (size_t)n, buf);
        total += (uint64_t)n;
    }
    sha256_update(md, sizeof total, (const uint8_t *)&total);
    return 0;
}

/* 0, or -1 with why and *code: KILN_E_INVALID_JOB for a path the base
 * directory's rule refuses, KILN_E_INPUT for a file that cannot be read. */
static int hash_beneath(struct sha256_ctx *md, const char *base_dir, const char *rel, char *why,
                        size_t why_cap, kiln_status *code)
{
    int is_input;
    int fd = kiln_open_beneath(base_dir, rel, why, why_cap, &is_input);
    *code = is_input ? KILN_E_INPUT : KILN_E_INVALID_JOB;
    if (fd < 0)
        return -1;
    int rc = hash_fd(md, fd);
    if (rc != 0)
        snprintf(why, why_cap, "cannot read it: %s", strerror(errno));
    close(fd);
    return rc;
}

/* ---- errors with where they are ---- */

static void add_at(kiln_errors *errs, const char *where, uint64_t line, const kiln_error *e)
{
    kiln_error moved = *e;
    char prefix[64];
    int n = snprintf(prefix, sizeof prefix, "%s %llu", where, (unsigned long long)line);
    if (strncmp(e->message, prefix, (size_t)n) == 0) { /* the merge says it already */
        kiln_errors_add(errs, e);
        return;
    }
    snprintf(moved.message, sizeof moved.message, "%s %llu: %.480s", where,
             (unsigned long long)line, e->message);
    kiln_utf8_cut(moved.message);
    kiln_errors_add(errs, &moved);
}

static void add_all_at(kiln_errors *errs, const char *where, uint64_t line,
                       const kiln_errors *found)
{
    for (size_t i = 0; i < found->count; i++)
        add_at(errs, where, line, &found->items[i]);
    errs->dropped += found->dropped;
}

/* ---- the jobs file ---- */

typedef struct jobs_source {
    void (*release)(void *self);
    kiln_batch_jobs_file f;
    line_source lines;
    kiln_batch_job_options jopt;
} jobs_source;

/* The next job line that is not blank: 1, 0 at the end, -1 with err. */
static int next_job_line(line_source *r, const char *path, json_t **doc, kiln_error *err)
{
    for (;;) {
        char *text;
        size_t len;
        int got = lines_next(r, &text, &len);
        if (got < 0) {
            kiln_error_set(err, errno == EFBIG ? KILN_E_INVALID_JOB : KILN_E_INPUT, NULL,
                           "%s: line %llu: %s", path, (unsigned long long)r->line + 1,
                           errno == EFBIG ? "longer than the most a job line may be"
                                          : strerror(errno));
            return -1;
        }
        if (got == 0)
            return 0;
        size_t i = 0;
        while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r'))
            i++;
        if (i == len)
            continue;
        json_error_t je;
        *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
        if (!*doc)
            kiln_error_set(err, KILN_E_INVALID_JOB, "", "not valid JSON at column %d: %s",
                           je.column, je.text);
        return 1;
    }
}

/* The hash of one job: its canonical line and the files it names. */
static int job_hash(const kiln_batch_job *job, const json_t *doc, const char *base_dir,
                    uint64_t max_bytes, unsigned char out[32], kiln_error *err)
{
    struct sha256_ctx md;
    sha256_init(&md);
    hash_json(&md, doc);
    /* The ceiling decides whether a render is too_large: a new one, a new try. */
    if (job->kind == KILN_BATCH_RENDER)
        sha256_update(&md, sizeof max_bytes, (const uint8_t *)&max_bytes);
    char why[256];
    kiln_status code;
    if (job->kind == KILN_BATCH_RENDER && job->spec_file &&
        hash_beneath(&md, base_dir, job->spec_file, why, sizeof why, &code) != 0) {
        kiln_error_set(err, code, "/render/spec_file", "spec_file '%.200s': %s", job->spec_file,
                       why);
        return -1;
    }
    size_t i;
    const json_t *in;
    json_array_foreach(job->run.inputs, i, in) {
        const char *p = json_string_value(json_object_get(in, "path"));
        if (hash_beneath(&md, base_dir, p, why, sizeof why, &code) != 0) {
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/run/inputs/%zu/path", i);
            kiln_error_set(err, code, ptr, "input '%.200s': %s", p, why);
            return -1;
        }
    }
    sha256_digest(&md, SHA256_DIGEST_SIZE, out);
    return 0;
}

/* The name a job writes in the output directory: its file, or its run's
 * directory. */
static const char *job_output_name(const kiln_batch_job *job)
{
    return job->kind == KILN_BATCH_RENDER ? job->filename : job->id;
}

/* A run's request with its inputs made absolute host paths beneath base_dir
 * (each was checked by job_hash). A new reference. */
static json_t *run_request(const kiln_batch_job *job, const char *base_dir)
{
    json_t *rq = json_deep_copy(job->run_doc);
    json_t *inputs = json_array();
    size_t i;
    const json_t *in;
    json_array_foreach(job->run.inputs, i, in) {
        const char *p = json_string_value(json_object_get(in, "path"));
        const char *name = json_string_value(json_object_get(in, "name"));
        size_t n = strlen(base_dir) + strlen(p) + 2;
        char *abs = malloc(n);
        if (abs)
            snprintf(abs, n, "%s/%s", base_dir, p);
        json_array_append_new(inputs, json_pack("{s:s?, s:s}", "path", abs, "name",
                                                kiln_run_input_name(p, name)));
        free(abs);
    }
    if (rq)
        json_object_set_new(rq, "inputs", inputs);
    else
        json_decref(inputs);
    return rq;
}

static json_t *job_task(const kiln_batch_job *job, const kiln_batch_jobs_file *f)
{
    if (job->kind == KILN_BATCH_RUN)
        return json_pack("{s:s, s:s, s:o, s:s}", "kind", "run", "id", job->id, "request",
                         run_request(job, f->base_dir), "out_dir", f->out_dir);
    json_t *t = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "kind", "render", "format",
                          kiln_writer_for(job->format)->name, "base_dir", f->base_dir, "out_dir",
                          f->out_dir, "filename", job->filename, "max_bytes",
                          (json_int_t)f->max_bytes);
    if (t && job->spec)
        json_object_set(t, "spec", (json_t *)job->spec);
    else if (t)
        json_object_set_new(t, "spec_file", json_string(job->spec_file));
    return t;
}

/* One spec validated as the worker will parse it. */
static void validate_spec(const kiln_batch_job *job, const char *base_dir, kiln_errors *errs)
{
    kiln_parse_options popt;
    kiln_parse_options_init(&popt);
    popt.base_dir = base_dir;
    kiln_doc *doc = NULL;
    if (job->spec) {
        kiln_doc_parse_json(job->spec, &popt, &doc, errs);
    } else {
        char why[256];
        int is_input;
        int fd = kiln_open_beneath(base_dir, job->spec_file, why, sizeof why, &is_input);
        if (fd < 0) {
            kiln_errors_addf(errs, KILN_E_INPUT, "/render/spec_file", "spec_file '%.200s': %s",
                             job->spec_file, why);
            return;
        }
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        kiln_doc_load(path, &popt, &doc, errs);
        close(fd);
    }
    kiln_doc_free(doc);
}

kiln_status kiln_batch_jobs_check(const kiln_batch_jobs_file *f, int validate_specs,
                                  size_t *count, kiln_errors *errs)
{
    line_source r;
    *count = 0;
    if (lines_open(&r, f->path, KILN_BATCH_LINE_BYTES) != 0)
        return kiln_errors_addf(errs, KILN_E_INPUT, NULL, "cannot read %s: %s", f->path,
                                strerror(errno));
    kiln_batch_job_options jopt = {.inputs = KILN_JOB_INPUT_PATHS};
    name_set ids, names;
    memset(&ids, 0, sizeof ids);
    memset(&names, 0, sizeof names);
    size_t before = errs->count + errs->dropped;
    for (;;) {
        json_t *doc = NULL;
        kiln_error e;
        memset(&e, 0, sizeof e);
        int got = next_job_line(&r, f->path, &doc, &e);
        if (got < 0) {
            kiln_errors_add(errs, &e);
            break;
        }
        if (got == 0)
            break;
        if (++*count > KILN_BATCH_JOBS_MAX) {
            kiln_errors_addf(errs, KILN_E_LIMIT, NULL, "%s holds more than %u jobs", f->path,
                             KILN_BATCH_JOBS_MAX);
            json_decref(doc);
            break;
        }
        if (!doc) {
            add_at(errs, "line", r.line, &e);
            continue;
        }
        kiln_errors found;
        kiln_errors_init(&found);
        kiln_batch_job job;
        if (kiln_batch_job_parse(doc, &jopt, &job, &found) == KILN_E_OK) {
            unsigned char sha[32];
            if (job_hash(&job, doc, f->base_dir, f->max_bytes, sha, &e) != 0)
                kiln_errors_add(&found, &e);
            int fresh = set_add(&ids, job.id);
            int free_name = set_add(&names, job_output_name(&job));
            if (fresh < 0 || free_name < 0)
                kiln_errors_addf(&found, KILN_E_NOMEM, NULL, "out of memory");
            else if (!fresh)
                kiln_errors_addf(&found, KILN_E_INVALID_JOB, "/id",
                                 "the id '%.100s' is used by an earlier job", job.id);
            else if (!free_name)
                kiln_errors_addf(&found, KILN_E_INVALID_JOB,
                                 job.kind == KILN_BATCH_RENDER ? "/render/filename" : "/id",
                                 "an earlier job writes '%.100s' already", job_output_name(&job));
            if (validate_specs && job.kind == KILN_BATCH_RENDER && found.count == 0)
                validate_spec(&job, f->base_dir, &found);
        }
        add_all_at(errs, "line", r.line, &found);
        json_decref(doc);
    }
    lines_close(&r);
    set_release(&ids);
    set_release(&names);
    if (errs->count + errs->dropped == before)
        return KILN_E_OK;
    return errs->count > before ? errs->items[before].code : errs->items[0].code;
}

static void jobs_release(void *self)
{
    jobs_source *s = self;
    lines_close(&s->lines);
    free(s);
}

static int jobs_next(void *arg, kiln_batch_item *item, kiln_error *err)
{
    jobs_source *s = arg;
    json_t *doc = NULL;
    int got = next_job_line(&s->lines, s->f.path, &doc, err);
    if (got <= 0)
        return got;
    kiln_errors found;
    kiln_errors_init(&found);
    kiln_batch_job job;
    kiln_error e;
    memset(&e, 0, sizeof e);
    memset(item, 0, sizeof *item);
    item->line = s->lines.line;
    /* Checked before the batch began; a line that fails now was changed
     * since: it is that job's failure. */
    if (!doc) {
        kiln_errors_add(&found, err);
        memset(err, 0, sizeof *err);
    } else if (kiln_batch_job_parse(doc, &s->jopt, &job, &found) == KILN_E_OK) {
        item->kind = job.kind == KILN_BATCH_RUN ? "run" : "render";
        item->id = strdup(job.id);
        if (job_hash(&job, doc, s->f.base_dir, s->f.max_bytes, item->input_sha256, &e) != 0)
            kiln_errors_add(&found, &e);
        else
            item->task = job_task(&job, &s->f);
    }
    if (!item->id) {
        char fallback[32];
        snprintf(fallback, sizeof fallback, "line-%llu", (unsigned long long)item->line);
        item->id = strdup(fallback);
    }
    if (found.count)
        item->failed = kiln_errors_json(&found);
    json_decref(doc);
    if (!item->id || (!item->task && !item->failed)) {
        kiln_batch_item_release(item);
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        return -1;
    }
    return 1;
}

kiln_status kiln_batch_jobs_source(const kiln_batch_jobs_file *f, kiln_batch_source *src,
                                   kiln_error *err)
{
    jobs_source *s = calloc(1, sizeof *s);
    if (!s)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    s->release = jobs_release;
    s->f = *f;
    s->jopt.inputs = KILN_JOB_INPUT_PATHS;
    if (lines_open(&s->lines, f->path, KILN_BATCH_LINE_BYTES) != 0) {
        kiln_error_set(err, KILN_E_INPUT, NULL, "cannot read %s: %s", f->path, strerror(errno));
        free(s);
        return KILN_E_INPUT;
    }
    src->next = jobs_next;
    src->arg = s;
    return KILN_E_OK;
}

/* ---- the mail merge ---- */

typedef struct merge_source {
    void (*release)(void *self);
    kiln_batch_merge m;
    json_t *tmpl;
    unsigned char tmpl_sha256[32];
    kiln_data_rows *rows;
    int csv;
} merge_source;

/* The template, parsed, and the hash of its bytes. */
static json_t *load_template(const char *path, unsigned char sha[32], kiln_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        kiln_error_set(err, KILN_E_INPUT, NULL, "cannot read the template %s: %s", path,
                       strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > KILN_LIMIT_SPEC_BYTES) {
        kiln_error_set(err, KILN_E_INPUT, NULL,
                       "the template %s is not a regular file of at most %u bytes", path,
                       KILN_LIMIT_SPEC_BYTES);
        close(fd);
        return NULL;
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (text && got < (size_t)st.st_size) {
        ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!text) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        return NULL;
    }
    struct sha256_ctx md;
    sha256_init(&md);
    sha256_update(&md, got, (const uint8_t *)text);
    sha256_digest(&md, SHA256_DIGEST_SIZE, sha);
    json_error_t je;
    json_t *t = json_loadb(text, got, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!t)
        kiln_error_set(err, KILN_E_INVALID_SPEC, "",
                       "the template %s is not valid JSON at line %d, column %d: %s", path,
                       je.line, je.column, je.text);
    else if (!json_is_object(t)) {
        kiln_error_set(err, KILN_E_INVALID_SPEC, "", "the template %s is not a JSON object",
                       path);
        json_decref(t);
        t = NULL;
    }
    return t;
}

/* A row's file name: merged, one name, the format's extension. NULL with
 * err (a new string otherwise). */
static char *row_name(const kiln_batch_merge *m, const json_t *row, uint64_t line, int csv,
                      kiln_error *err)
{
    kiln_merge_options mo = {.missing = m->missing, .line = line, .csv_fields = csv};
    char *name = kiln_merge_text(m->name, row, &mo, "--name", err);
    if (!name)
        return NULL;
    kiln_format by_name;
    if (!kiln_batch_name_ok(name, KILN_BATCH_NAME_MAX)) {
        kiln_error_set(err, KILN_E_INVALID_JOB, NULL,
                       "--name gives '%.200s', which is not a file name (1 to %d bytes, no "
                       "'/' or control characters, not starting with '.')",
                       name, KILN_BATCH_NAME_MAX);
    } else if (kiln_format_from_path(name, &by_name) != 0 || by_name != m->format) {
        kiln_error_set(err, KILN_E_INVALID_JOB, NULL,
                       "--name gives '%.200s', which does not end in %s", name,
                       kiln_writer_for(m->format)->extension);
    } else {
        return name;
    }
    free(name);
    return NULL;
}

/* The value at JSON Pointer ptr in doc (RFC 6901), or NULL. Borrowed. */
static json_t *at_pointer(json_t *doc, const char *ptr)
{
    char seg[KILN_POINTER_MAX];
    json_t *v = doc;
    while (v && *ptr == '/') {
        ptr++;
        size_t n = 0;
        for (; *ptr && *ptr != '/' && n + 1 < sizeof seg; ptr++) {
            if (ptr[0] == '~' && (ptr[1] == '0' || ptr[1] == '1')) {
                seg[n++] = ptr[1] == '0' ? '~' : '/';
                ptr++;
            } else {
                seg[n++] = *ptr;
            }
        }
        seg[n] = '\0';
        if (json_is_object(v)) {
            v = json_object_get(v, seg);
        } else if (json_is_array(v)) {
            char *end;
            unsigned long i = strtoul(seg, &end, 10);
            v = *seg && !*end ? json_array_get(v, i) : NULL;
        } else {
            v = NULL;
        }
    }
    return *ptr ? NULL : v;
}

/* Replace the value at ptr (an object member or an array element) with v
 * (stolen). */
static void replace_at(json_t *doc, const char *ptr, json_t *v)
{
    const char *slash = strrchr(ptr, '/');
    char parent_ptr[KILN_POINTER_MAX];
    snprintf(parent_ptr, sizeof parent_ptr, "%.*s", (int)(slash - ptr), ptr);
    json_t *parent = at_pointer(doc, parent_ptr);
    const json_t *old = at_pointer(doc, ptr);
    if (json_is_array(parent)) {
        json_array_set_new(parent, strtoul(slash + 1, NULL, 10), v);
        return;
    }
    /* the member's own name, as the object holds it */
    const char *key;
    json_t *member;
    json_object_foreach(parent, key, member)
        if (member == old) {
            json_object_set_new(parent, key, v);
            return;
        }
    json_decref(v);
}

/*
 * One row's spec, merged and parsed. A whole-string placeholder keeps its
 * field's type (merge.h), which is what a cell or a chart's values want; but
 * where the spec takes only text (a paragraph's text, a title) a number
 * there is an error the user did not make. So where the parse finds fault
 * with a value that a whole-string placeholder made a number or a boolean,
 * that value is written as text instead and the spec parsed again: numbers
 * stay numbers wherever the spec takes them. Returns the spec (new) with
 * *doc parsed, or NULL with errs.
 */
static json_t *merge_row(const json_t *tmpl, const json_t *row, const kiln_merge_options *mo,
                         const char *base_dir, kiln_doc **doc, kiln_errors *errs)
{
    kiln_errors found;
    kiln_errors_init(&found);
    json_t *spec = kiln_merge_spec(tmpl, row, mo, &found);
    kiln_parse_options popt;
    kiln_parse_options_init(&popt);
    popt.base_dir = base_dir;
    for (int attempt = 0; spec && attempt < 2; attempt++) {
        kiln_errors_init(&found);
        if (kiln_doc_parse_json(spec, &popt, doc, &found) == KILN_E_OK)
            return spec;
        int changed = 0;
        for (size_t i = 0; attempt == 0 && i < found.count; i++) {
            const char *ptr = found.items[i].pointer;
            const json_t *t = at_pointer((json_t *)tmpl, ptr);
            json_t *v = at_pointer(spec, ptr);
            const char *ts = json_string_value(t);
            if (!ts || !*ptr || !(json_is_number(v) || json_is_boolean(v)))
                continue;
            kiln_error e;
            char *text = kiln_merge_text(ts, row, mo, ptr, &e);
            if (!text)
                continue;
            replace_at(spec, ptr, json_string(text));
            free(text);
            changed = 1;
        }
        if (!changed)
            break;
    }
    for (size_t i = 0; i < found.count; i++)
        kiln_errors_add(errs, &found.items[i]);
    errs->dropped += found.dropped;
    json_decref(spec);
    return NULL;
}

kiln_status kiln_batch_merge_check(const kiln_batch_merge *m, int validate_specs, size_t *count,
                                   kiln_errors *errs)
{
    size_t before = errs->count + errs->dropped;
    kiln_error e;
    memset(&e, 0, sizeof e);
    unsigned char sha[32];
    *count = 0;
    json_t *tmpl = load_template(m->template_path, sha, &e);
    if (!tmpl) {
        kiln_errors_add(errs, &e);
        return e.code;
    }
    kiln_data_rows *rows = NULL;
    if (kiln_data_rows_open(m->data_path, -1, &rows, &e) != KILN_E_OK) {
        kiln_errors_add(errs, &e);
        json_decref(tmpl);
        return e.code;
    }
    name_set names;
    memset(&names, 0, sizeof names);
    int csv = kiln_data_rows_format(rows) == KILN_DATA_CSV;
    for (;;) {
        json_t *row = NULL;
        uint64_t line = 0;
        int got = kiln_data_rows_next(rows, &row, &line, &e);
        if (got < 0) {
            kiln_errors_add(errs, &e);
            break;
        }
        if (got == 0)
            break;
        if (++*count > KILN_BATCH_JOBS_MAX) {
            kiln_errors_addf(errs, KILN_E_LIMIT, NULL, "%s holds more than %u rows", m->data_path,
                             KILN_BATCH_JOBS_MAX);
            json_decref(row);
            break;
        }
        kiln_errors found;
        kiln_errors_init(&found);
        char *name = row_name(m, row, line, csv, &e);
        if (!name) {
            kiln_errors_add(&found, &e);
        } else {
            int fresh = set_add(&names, name);
            if (fresh < 0)
                kiln_errors_addf(&found, KILN_E_NOMEM, NULL, "out of memory");
            else if (!fresh)
                kiln_errors_addf(&found, KILN_E_INVALID_JOB, NULL,
                                 "--name gives '%.200s', as it does for an earlier row", name);
        }
        if (validate_specs) {
            kiln_merge_options mo = {.missing = m->missing, .line = line, .csv_fields = csv};
            kiln_doc *doc = NULL;
            json_decref(merge_row(tmpl, row, &mo, m->base_dir, &doc, &found));
            kiln_doc_free(doc);
        }
        add_all_at(errs, "data line", line, &found);
        free(name);
        json_decref(row);
    }
    set_release(&names);
    kiln_data_rows_free(rows);
    json_decref(tmpl);
    if (errs->count + errs->dropped == before)
        return KILN_E_OK;
    return errs->count > before ? errs->items[before].code : errs->items[0].code;
}

static void merge_release(void *self)
{
    merge_source *s = self;
    json_decref(s->tmpl);
    kiln_data_rows_free(s->rows);
    free(s);
}

static int merge_next(void *arg, kiln_batch_item *item, kiln_error *err)
{
    merge_source *s = arg;
    json_t *row = NULL;
    uint64_t line = 0;
    int got = kiln_data_rows_next(s->rows, &row, &line, err);
    if (got <= 0)
        return got;
    memset(item, 0, sizeof *item);
    item->line = line;
    item->kind = "render";
    kiln_errors found;
    kiln_errors_init(&found);
    kiln_error e;
    memset(&e, 0, sizeof e);

    struct sha256_ctx md;
    sha256_init(&md);
    sha256_update(&md, 32, s->tmpl_sha256);
    const char *fmt = kiln_writer_for(s->m.format)->name;
    sha256_update(&md, strlen(fmt) + 1, (const uint8_t *)fmt);
    sha256_update(&md, strlen(s->m.name) + 1, (const uint8_t *)s->m.name);
    sha256_update(&md, 1,
                  (const uint8_t *)(s->m.missing == KILN_MERGE_MISSING_EMPTY ? "e" : "r"));
    hash_json(&md, row);
    sha256_update(&md, sizeof s->m.max_bytes, (const uint8_t *)&s->m.max_bytes);
    sha256_digest(&md, SHA256_DIGEST_SIZE, item->input_sha256);

    item->id = row_name(&s->m, row, line, s->csv, &e);
    if (!item->id) {
        /* Checked before the batch began: the data changed since. */
        kiln_errors_add(&found, &e);
        char fallback[48];
        snprintf(fallback, sizeof fallback, "data-line-%llu", (unsigned long long)line);
        item->id = strdup(fallback);
        item->failed = kiln_errors_json(&found);
        json_decref(row);
    } else {
        /* Merged only if it has to run (merge_build): a resumed batch skips most
         * rows, and merging and parsing each was most of what re-running a
         * finished one cost. */
        item->deferred = row;
    }
    if (!item->id || (!item->deferred && !item->failed)) {
        kiln_batch_item_release(item);
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        return -1;
    }
    return 1;
}

/* The row's task (or its failure), for a job that has to run. */
static int merge_build(void *arg, kiln_batch_item *item, kiln_error *err)
{
    merge_source *s = arg;
    kiln_errors found;
    kiln_errors_init(&found);
    kiln_merge_options mo = {.missing = s->m.missing, .line = item->line, .csv_fields = s->csv};
    kiln_doc *doc = NULL;
    /* Parsed here once to settle each value's type; the worker parses the
     * spec it is given again (a doc does not cross processes). */
    json_t *spec = merge_row(s->tmpl, item->deferred, &mo, s->m.base_dir, &doc, &found);
    kiln_doc_free(doc);
    if (spec)
        item->task = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:o}", "kind", "render", "format",
                               kiln_writer_for(s->m.format)->name, "base_dir", s->m.base_dir,
                               "out_dir", s->m.out_dir, "filename", item->id, "max_bytes",
                               (json_int_t)s->m.max_bytes, "spec", spec);
    if (found.count)
        item->failed = kiln_errors_json(&found);
    json_decref(item->deferred);
    item->deferred = NULL;
    if (!item->task && !item->failed) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        return -1;
    }
    return 0;
}

kiln_status kiln_batch_merge_source(const kiln_batch_merge *m, kiln_batch_source *src,
                                    kiln_error *err)
{
    merge_source *s = calloc(1, sizeof *s);
    if (!s)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    s->release = merge_release;
    s->m = *m;
    if (!(s->tmpl = load_template(m->template_path, s->tmpl_sha256, err)) ||
        kiln_data_rows_open(m->data_path, -1, &s->rows, err) != KILN_E_OK) {
        merge_release(s);
        return err->code;
    }
    s->csv = kiln_data_rows_format(s->rows) == KILN_DATA_CSV;
    src->next = merge_next;
    src->build = merge_build;
    src->arg = s;
    return KILN_E_OK;
}

void kiln_batch_source_free(kiln_batch_source *src)
{
    if (src && src->arg) {
        void (**release)(void *) = src->arg;
        (*release)(src->arg);
        src->arg = NULL;
    }
}
