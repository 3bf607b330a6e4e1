/*
 * render_job.c - turning the specs a job saved into documents, each inside
 * a sandbox of its own.
 *
 * What a render is, is not this file's business: the render step
 * (kiln_run_render_step, exec/run.h) is handed in, and this file only
 * finds the specs, names their outputs and contains each call.
 *
 * The specs were written by untrusted code, and the step is C that parses
 * them, so a render gets the same containment as the job: new
 * namespaces, the minimal read-only root with the job directory at
 * /mnt/data, the job's limits in a fresh cgroup, and a seccomp profile
 * (KILN_SECCOMP_RENDER) stricter than the job's: no exec, no new processes,
 * no sockets. The step runs in the contained process itself (a fork of
 * this one), so no binary has to be found inside the sandbox.
 *
 * A spec saved as /mnt/data/.kiln/OUT.spec.json is made into /mnt/data/OUT
 * with .kiln/ as the base directory for the files it names. The outcome
 * comes back as one JSON object on the contained process's stdout.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "contract/errors.h"
#include "exec/exec_internal.h"
#include "../common/banned.h"

/* Specs rendered per job; more are listed as errors, not rendered. */
#define KILN_RUN_MAX_DOCUMENTS 20

typedef struct render_task {
    char spec[300]; /* file name under .kiln/ */
    char out[256];  /* file name under /mnt/data */
    uint64_t max_bytes;
    const kiln_run_render_step *step;
} render_task;

/* An error entry of a render's "errors" (contract/errors.h's shape). */
static json_t *error_json(kiln_status code, const char *message)
{
    kiln_error e;
    kiln_error_set(&e, code, "", "%s", message);
    return kiln_error_json(&e);
}

/* Runs inside the render sandbox, after seccomp. */
static int render_payload(void *arg)
{
    const render_task *t = arg;
    char spec_path[400], out_path[400];
    snprintf(spec_path, sizeof spec_path, KILN_JOB_DIR "/" KILN_SPEC_DIR "/%s", t->spec);
    snprintf(out_path, sizeof out_path, KILN_JOB_DIR "/%s", t->out);
    json_t *outcome = t->step->render(t->step->arg, spec_path, KILN_JOB_DIR "/" KILN_SPEC_DIR,
                                      out_path, t->max_bytes, "/tmp");
    int rc = outcome && json_dumpfd(outcome, 1, JSON_COMPACT) == 0 ? 0 : 1;
    json_decref(outcome);
    return rc;
}

/* A result entry for a spec: {"name", "spec", "ok": false}; the render
 * fills in the rest. */
static json_t *new_entry(const char *out, const char *spec_dir, const char *spec)
{
    return json_pack("{s:s, s:s+, s:b}", "name", out, "spec", spec_dir, spec, "ok", 0);
}

/* entry with its one error: "errors" and "more_errors", as every error
 * list (contract/errors.h). */
static json_t *failed_entry(json_t *entry, json_t *error)
{
    json_object_set_new(entry, "errors", json_pack("[o]", error));
    json_object_set_new(entry, "more_errors", json_integer(0));
    return entry;
}

/* Run the step for t in a sandbox of its own, the outcome into entry. */
static void render_one(const kiln_jobdir *jd, const kiln_idmap *map,
                       const kiln_run_limits *job_limits, const kiln_seccomp_program *filter,
                       render_task *t, int index, json_t *entry)
{
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_run_limits l = *job_limits;
    l.processes = 4; /* init and the writer; nothing forks */
    l.stream_keep_bytes = 1u << 20;

    kiln_cgroup cg;
    memset(&cg, 0, sizeof cg);
    kiln_stream out, errs;
    memset(&out, 0, sizeof out);
    memset(&errs, 0, sizeof errs);
    char cg_name[64];
    snprintf(cg_name, sizeof cg_name, "kiln-%d-render-%d", (int)getpid(), index);
    kiln_cgroup_roots roots = {.fs_root = "/sys/fs/cgroup",
                               .proc_self_cgroup = "/proc/self/cgroup"};
    if (kiln_cgroup_create(&cg, &roots, cg_name, &l, &err) != KILN_E_OK ||
        kiln_stream_init(&out, l.stream_keep_bytes, &err) != KILN_E_OK ||
        kiln_stream_init(&errs, 64 * 1024, &err) != KILN_E_OK)
        goto report_error;
    kiln_contain_job job = {
        .mount = {.job_dir_host = jd->path,
                  .tmp_bytes = l.tmp_bytes,
                  .job_dir_owner = KILN_SANDBOX_UID},
        .limits = &l,
        .filter = filter,
        .payload = render_payload,
        .payload_arg = t,
    };
    kiln_watch w;
    if (kiln_sandbox_run(&job, map, &cg, &out, &errs, &w, &err) != KILN_E_OK)
        goto report_error;
    kiln_cgroup_usage usage;
    kiln_cgroup_read_usage(&cg, &usage);

    json_t *outcome = NULL;
    if (w.exited && WIFEXITED(w.wait_status) && WEXITSTATUS(w.wait_status) == 0 && !w.timeout)
        outcome = json_loadb(out.buf, out.kept, 0, NULL);
    if (json_is_object(outcome)) {
        json_object_update(entry, outcome);
    } else {
        const char *why = w.setup_failed        ? "the render sandbox could not be set up"
                          : w.timeout           ? "the render ran past the job's time limit"
                          : usage.oom_kills > 0 ? "the render went over the job's memory limit"
                                                : "the render ended abnormally";
        failed_entry(entry, error_json(KILN_E_INTERNAL, why));
    }
    json_decref(outcome);
    goto release;

report_error:
    failed_entry(entry, kiln_error_json(&err));
release:
    kiln_stream_release(&out);
    kiln_stream_release(&errs);
    kiln_cgroup_release(&cg);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

json_t *kiln_render_job_specs(const kiln_jobdir *jd, const kiln_idmap *map,
                              const kiln_run_limits *limits, uint64_t max_bytes,
                              const kiln_run_render_step *step)
{
    json_t *renders = json_array();
    struct open_how how = {
        .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                   RESOLVE_NO_XDEV,
    };
    int dir_fd = (int)syscall(SYS_openat2, jd->fd, KILN_SPEC_DIR, &how, sizeof how);
    if (dir_fd < 0) {
        /* No .kiln: nothing was saved. Anything else there (a symlink, a
         * file) is said, never followed. */
        if (errno != ENOENT)
            json_array_append_new(
                renders, failed_entry(new_entry("", KILN_SPEC_DIR, ""),
                                      error_json(KILN_E_INPUT, KILN_SPEC_DIR
                                                 " is not a directory (a symlink or a file); no "
                                                 "spec in it was read")));
        return renders;
    }
    DIR *dir = fdopendir(dir_fd);
    if (!dir) {
        close(dir_fd);
        return renders;
    }
    json_t *skipped = json_array();
    char *names[KILN_RUN_MAX_DOCUMENTS + 1];
    size_t count = 0, extra = 0;
    struct dirent *de;
    size_t suffix_len = strlen(KILN_SPEC_SUFFIX);
    while ((de = readdir(dir)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len <= suffix_len || strcmp(de->d_name + len - suffix_len, KILN_SPEC_SUFFIX) != 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode)) {
            /* Never followed nor read; said, so a job is not left guessing
             * why its document is missing. */
            char out[256];
            snprintf(out, sizeof out, "%.*s", (int)(len - suffix_len), de->d_name);
            json_t *entry = failed_entry(
                new_entry(out, KILN_SPEC_DIR "/", de->d_name),
                error_json(KILN_E_INPUT, "the spec is not a regular file (a symlink, a "
                                         "directory or a device); not read"));
            if (entry)
                json_array_append_new(skipped, entry);
            continue;
        }
        if (count == KILN_RUN_MAX_DOCUMENTS) {
            extra++;
            continue;
        }
        names[count] = strdup(de->d_name);
        if (names[count])
            count++;
    }
    closedir(dir);
    qsort(names, count, sizeof names[0], compare_names);

    /* One filter for every render of the job. */
    kiln_seccomp_program filter = {NULL, 0};
    const char *filter_what = NULL;
    int filter_ok = count == 0 ||
                    kiln_seccomp_build(KILN_SECCOMP_RENDER, &filter, &filter_what) == 0;
    int filter_errno = errno;

    for (size_t i = 0; i < count; i++) {
        render_task t;
        memset(&t, 0, sizeof t);
        size_t len = strlen(names[i]) - suffix_len;
        if (len >= sizeof t.out || strlen(names[i]) >= sizeof t.spec) {
            free(names[i]);
            continue;
        }
        memcpy(t.out, names[i], len);
        t.out[len] = '\0';
        snprintf(t.spec, sizeof t.spec, "%s", names[i]);
        t.max_bytes = max_bytes;
        t.step = step;
        json_t *entry = new_entry(t.out, KILN_SPEC_DIR "/", t.spec), *error = NULL;
        if (step->prepare(step->arg, t.out, entry, &error) != 0) {
            failed_entry(entry, error);
        } else if (!filter_ok) {
            char why[KILN_MESSAGE_MAX];
            snprintf(why, sizeof why, "cannot build the render sandbox's seccomp filter: %s: %s",
                     filter_what ? filter_what : "?", strerror(filter_errno));
            failed_entry(entry, error_json(KILN_E_INTERNAL, why));
        } else {
            render_one(jd, map, limits, &filter, &t, (int)i, entry);
        }
        if (entry)
            json_array_append_new(renders, entry);
        free(names[i]);
    }
    kiln_seccomp_program_release(&filter);
    json_array_extend(renders, skipped);
    json_decref(skipped);
    if (extra > 0) {
        kiln_error e;
        kiln_error_limit(&e, KILN_E_LIMIT, "", KILN_RUN_MAX_DOCUMENTS,
                         KILN_RUN_MAX_DOCUMENTS + extra,
                         "more than %d specs were saved; only the first %d were rendered",
                         KILN_RUN_MAX_DOCUMENTS, KILN_RUN_MAX_DOCUMENTS);
        json_array_append_new(renders, failed_entry(new_entry("", KILN_SPEC_DIR, ""),
                                                    kiln_error_json(&e)));
    }
    return renders;
}
