/*
 * execute.c - one batch job, in a worker process (execute.h).
 */
#include "execute.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "../artifacts/render.h"
#include "../artifacts/spec/spec.h"
#include "../common/dirs.h"
#include "../contract/errors.h"
#include "../contract/job.h"
#include "../contract/report.h"
#include "../exec/run.h"
#include "../common/banned.h"

static json_t *failed(const kiln_errors *errs)
{
    json_t *r = kiln_errors_json(errs);
    if (r) {
        json_object_set_new(r, "status", json_string("failed"));
        json_object_set_new(r, "files", json_array());
    }
    return r;
}

static json_t *failed_one(kiln_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static json_t *failed_one(kiln_status code, const char *fmt, ...)
{
    char message[KILN_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    kiln_errors errs;
    kiln_errors_init(&errs);
    kiln_errors_addf(&errs, code, NULL, "%s", message);
    return failed(&errs);
}

/* {"name", "bytes", "sha256", "mtime_ns", "inode"} of a file as it is now. */
static json_t *file_json(const char *name, uint64_t bytes, const unsigned char sha[32],
                         int64_t mtime_ns, uint64_t inode)
{
    char hex[65];
    kiln_sha256_hex(sha, hex);
    return json_pack("{s:s, s:I, s:s, s:I, s:I}", "name", name, "bytes", (json_int_t)bytes,
                     "sha256", hex, "mtime_ns", (json_int_t)mtime_ns, "inode", (json_int_t)inode);
}

/* A spec_file's text, read beneath base_dir and bounded by the spec limit;
 * the spec is parsed into *doc. */
static kiln_status load_spec_file(const char *base_dir, const char *rel,
                                  const kiln_parse_options *popt, kiln_doc **doc,
                                  kiln_errors *errs)
{
    char why[256];
    int is_input;
    int fd = kiln_open_beneath(base_dir, rel, why, sizeof why, &is_input);
    if (fd < 0)
        return kiln_errors_addf(errs, is_input ? KILN_E_INPUT : KILN_E_INVALID_JOB, NULL,
                                "spec_file '%.200s': %s", rel, why);
    uint64_t max = popt->limits.spec_bytes;
    struct stat st;
    kiln_status status;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size > max) {
        status =
            kiln_errors_addf(errs, KILN_E_LIMIT, "",
                             "spec_file '%.200s' is larger than the spec limit of %llu bytes",
                             rel, (unsigned long long)max);
        goto close_fd;
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    if (!text) {
        status = kiln_errors_addf(errs, KILN_E_NOMEM, NULL, "out of memory");
        goto close_fd;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    status = kiln_doc_parse(text, got, popt, doc, errs);
    free(text);
close_fd:
    close(fd);
    return status;
}

static json_t *do_render(const json_t *task)
{
    const char *base_dir = json_string_value(json_object_get(task, "base_dir"));
    const char *out_dir = json_string_value(json_object_get(task, "out_dir"));
    const char *filename = json_string_value(json_object_get(task, "filename"));
    const char *spec_file = json_string_value(json_object_get(task, "spec_file"));
    kiln_format format;
    if (!out_dir || !filename ||
        kiln_format_from_name(json_string_value(json_object_get(task, "format")), &format) != 0)
        return failed_one(KILN_E_INTERNAL, "a malformed task");

    kiln_parse_options popt;
    kiln_parse_options_init(&popt);
    popt.base_dir = base_dir;
    kiln_errors errs;
    kiln_errors_init(&errs);
    kiln_doc *doc = NULL;
    kiln_status st = spec_file
                         ? load_spec_file(base_dir, spec_file, &popt, &doc, &errs)
                         : kiln_doc_parse_json(json_object_get(task, "spec"), &popt, &doc, &errs);
    if (st != KILN_E_OK)
        return failed(&errs);

    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", out_dir, filename) >= (int)sizeof path) {
        kiln_doc_free(doc);
        return failed_one(KILN_E_WRITE, "the output path is too long: %s", filename);
    }
    /* Not fsynced here: the runner syncs the file system once for many
     * documents before their journal lines are written (runner.c). */
    kiln_render_options ropt = {.max_bytes = (uint64_t)json_integer_value(
                                    json_object_get(task, "max_bytes")),
                                .defer_sync = 1};
    kiln_render_result rr;
    kiln_error err;
    memset(&rr, 0, sizeof rr);
    memset(&err, 0, sizeof err);
    st = kiln_render(doc, format, path, &ropt, &rr, &err);
    kiln_doc_free(doc);
    if (st != KILN_E_OK) {
        kiln_errors_add(&errs, &err);
        return failed(&errs);
    }

    int dir = open(out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    unsigned char sha[32];
    uint64_t bytes;
    int64_t mtime_ns;
    uint64_t inode;
    int hashed = dir >= 0 && kiln_file_sha256(dir, filename, sha, &bytes, &mtime_ns, &inode) == 0;
    if (dir >= 0)
        close(dir);
    if (!hashed)
        return failed_one(KILN_E_WRITE, "cannot read back the file it wrote: %s",
                          strerror(errno));
    json_t *r = kiln_render_outcome_json(&rr, NULL, NULL);
    if (!r)
        return NULL;
    json_object_del(r, "ok");
    json_object_set_new(r, "status", json_string("ok"));
    json_object_set_new(r, "files",
                        json_pack("[o]", file_json(filename, bytes, sha, mtime_ns, inode)));
    return r;
}

/* fsync path (a file or a directory). */
static int sync_path(int dir_fd, const char *rel, int directory)
{
    int fd = openat(dir_fd, rel,
                    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (directory ? O_DIRECTORY : O_NONBLOCK));
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* The run's listed files (result "files" and "documents") made durable in
 * the staging directory, as journal file objects named ID/NAME. */
static json_t *staged_files(const char *staging, const char *id, const json_t *result)
{
    int dir = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    json_t *out = json_array();
    if (dir < 0 || !out)
        goto fail;
    static const char *const lists[] = {"files", "documents"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *f;
        json_array_foreach(json_object_get(result, lists[l]), i, f) {
            const char *name = json_string_value(json_object_get(f, "name"));
            unsigned char sha[32];
            struct stat st;
            char full[PATH_MAX];
            if (!name ||
                kiln_sha256_unhex(json_string_value(json_object_get(f, "sha256")), sha) != 0 ||
                fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
                sync_path(dir, name, 0) != 0 ||
                snprintf(full, sizeof full, "%s/%s", id, name) >= (int)sizeof full)
                goto fail;
            int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
            if (json_array_append_new(out, file_json(full, (uint64_t)st.st_size, sha, mtime,
                                                     (uint64_t)st.st_ino)) != 0)
                goto fail;
            /* The file's directory entry, in a directory of its own. */
            const char *slash = strrchr(name, '/');
            if (slash) {
                char sub[PATH_MAX];
                snprintf(sub, sizeof sub, "%.*s", (int)(slash - name), name);
                sync_path(dir, sub, 1);
            }
        }
    }
    if (fsync(dir) != 0)
        goto fail;
    close(dir);
    return out;

fail:
    if (dir >= 0)
        close(dir);
    json_decref(out);
    return NULL;
}

/* Put the staging directory at out_dir/id, whole, in place of what was
 * there (a directory of an earlier run, or anything else by that name). */
static int move_into_place(const char *out_dir, const char *staging, const char *id)
{
    char final[PATH_MAX], old[PATH_MAX];
    if (snprintf(final, sizeof final, "%s/%s", out_dir, id) >= (int)sizeof final ||
        snprintf(old, sizeof old, "%s/%s/old.%s.%ld", out_dir, KILN_BATCH_STAGING, id,
                 (long)getpid()) >= (int)sizeof old)
        return -1;
    struct stat st;
    if (lstat(final, &st) == 0) {
        if (rename(final, old) != 0)
            return -1;
        kiln_remove_tree(old);
    }
    if (rename(staging, final) != 0)
        return -1;
    return sync_path(AT_FDCWD, out_dir, 1);
}

/* A stream of a run's report ({"text", "bytes", "truncated"}) with its text
 * cut to KILN_BATCH_STREAM_TEXT bytes, never inside a character. */
static void trim_stream(json_t *stream)
{
    const char *text = json_string_value(json_object_get(stream, "text"));
    size_t len = json_string_length(json_object_get(stream, "text"));
    if (!text || len <= KILN_BATCH_STREAM_TEXT)
        return;
    size_t cut = KILN_BATCH_STREAM_TEXT;
    while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
        cut--;
    json_object_set_new(stream, "text", json_stringn(text, cut));
    json_object_set_new(stream, "truncated", json_true());
}

static json_t *do_run(const json_t *task)
{
    const char *id = json_string_value(json_object_get(task, "id"));
    const char *out_dir = json_string_value(json_object_get(task, "out_dir"));
    const json_t *doc = json_object_get(task, "request");
    if (!id || !out_dir || !doc)
        return failed_one(KILN_E_INTERNAL, "a malformed task");
    kiln_errors errs;
    kiln_errors_init(&errs);
    kiln_job_request rq;
    kiln_job_parse_options popt = {.inputs = KILN_JOB_INPUT_PATHS};
    if (kiln_job_request_parse(doc, &popt, &rq, &errs) != KILN_E_OK)
        return failed(&errs);

    char staging[PATH_MAX];
    if (snprintf(staging, sizeof staging, "%s/%s/run.%s.%ld", out_dir, KILN_BATCH_STAGING, id,
                 (long)getpid()) >= (int)sizeof staging)
        return failed_one(KILN_E_WRITE, "the output path is too long: %s", id);
    kiln_remove_tree(staging); /* what a killed worker of this pid left */
    if (kiln_mkdir_p(staging, 0755, 0755) != 0)
        return failed_one(KILN_E_WRITE, "cannot create the staging directory: %s",
                          strerror(errno));

    kiln_run_options opt;
    memset(&opt, 0, sizeof opt);
    kiln_run_input *inputs = calloc(json_array_size(rq.inputs) + 1, sizeof *inputs);
    const char **args = calloc(json_array_size(rq.args) + 1, sizeof *args);
    json_t *result = NULL, *r = NULL;
    if (!inputs || !args)
        goto release;
    kiln_job_run_options(&rq, &opt, inputs, args);
    opt.out_dir = staging;
    kiln_error err;
    memset(&err, 0, sizeof err);
    if (kiln_run_job(&opt, &result, &err) != KILN_E_OK) {
        kiln_errors_add(&errs, &err);
        r = failed(&errs);
        goto release;
    }
    json_t *files = staged_files(staging, id, result);
    if (!files || move_into_place(out_dir, staging, id) != 0) {
        json_decref(files);
        r = failed_one(KILN_E_WRITE, "cannot put the run's files in place: %s", strerror(errno));
        goto release;
    }
    const char *status = json_string_value(json_object_get(result, "status"));
    const json_t *render_errors = json_object_get(result, "render_errors");
    int ok = status && strcmp(status, "ok") == 0 && json_array_size(render_errors) == 0;
    json_t *errors = json_array();
    if (status && strcmp(status, "ok") != 0)
        json_array_append_new(
            errors, json_pack("{s:s, s:s}", "code", status, "message",
                              json_string_value(json_object_get(result, "message"))
                                  ? json_string_value(json_object_get(result, "message"))
                                  : status));
    size_t i;
    const json_t *re;
    json_array_foreach(render_errors, i, re) {
        size_t k;
        const json_t *e;
        json_array_foreach(json_object_get(re, "errors"), k, e) {
            json_t *copy = json_deep_copy(e);
            json_object_set(copy, "document", json_object_get(re, "name"));
            json_array_append_new(errors, copy);
        }
    }
    /* The run's own report, but for what the journal says itself, and with
     * its streams cut to what a journal line should hold (the whole of them
     * is the run's to save as files). */
    trim_stream(json_object_get(result, "stdout"));
    trim_stream(json_object_get(result, "stderr"));
    json_object_del(result, "files");
    json_object_del(result, "documents");
    json_object_del(result, "out_dir");
    json_object_del(result, "limits");
    r = json_pack("{s:s, s:o, s:o, s:i, s:O}", "status", ok ? "ok" : "failed", "files", files,
                  "errors", errors, "more_errors", 0, "run", result);

release:
    if (!r || strcmp(json_string_value(json_object_get(r, "status")), "ok") != 0)
        kiln_remove_tree(staging);
    json_decref(result);
    free(inputs);
    free(args);
    return r;
}

json_t *kiln_batch_execute(const json_t *task, void *arg)
{
    (void)arg;
    const char *kind = json_string_value(json_object_get(task, "kind"));
    if (kind && strcmp(kind, "render") == 0)
        return do_render(task);
    if (kind && strcmp(kind, "run") == 0)
        return do_run(task);
    return failed_one(KILN_E_INTERNAL, "a task of no known kind");
}
