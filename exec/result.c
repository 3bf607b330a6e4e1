/*
 * result.c - the one place the JSON result of a run is built.
 *
 * The supervisor records what it saw in a kiln_run_report; this file
 * decides the status (one word a caller can switch on, with a fixed order
 * of precedence when several things went wrong at once) and writes every
 * member docs/run.md describes. Keeping it here means the CLI, the batch
 * runner and the server all report a run the same way.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "contract/limits.h"
#include "exec/exec_internal.h"
#include "../common/banned.h"

static json_t *signal_name(int sig)
{
    const char *abbrev = sigabbrev_np(sig);
    if (!abbrev)
        return json_sprintf("SIG%d", sig);
    return json_sprintf("SIG%s", abbrev);
}

/* Split the collected files into plain files and rendered documents, and
 * list the renders that failed. What a render entry holds beyond "name",
 * "ok" and its errors is the render step's (exec/run.h): copied, never
 * read. files/documents/render_errors are new. */
static void split_documents(const kiln_run_report *r, json_t *files, json_t *documents,
                            json_t *render_errors)
{
    size_t i;
    json_t *file;
    json_array_foreach(r->collected->files, i, file) {
        const char *name = json_string_value(json_object_get(file, "name"));
        json_t *render = NULL;
        size_t j;
        json_t *candidate;
        if (r->renders && name) {
            json_array_foreach(r->renders, j, candidate) {
                const char *out = json_string_value(json_object_get(candidate, "name"));
                if (out && strcmp(out, name) == 0 &&
                    json_is_true(json_object_get(candidate, "ok")))
                    render = candidate;
            }
        }
        if (!render) {
            json_array_append(files, file);
            continue;
        }
        /* What the render step said of it, but whether it succeeded (it
         * did: it is a document) and its name and size (the file's). */
        json_t *doc = json_deep_copy(file);
        const char *key;
        json_t *value;
        json_object_foreach(render, key, value) {
            if (strcmp(key, "name") != 0 && strcmp(key, "ok") != 0 && strcmp(key, "bytes") != 0 &&
                strcmp(key, "errors") != 0 && strcmp(key, "more_errors") != 0)
                json_object_set(doc, key, value);
        }
        json_array_append_new(documents, doc);
    }
    if (!r->renders)
        return;
    json_t *render;
    json_array_foreach(r->renders, i, render) {
        if (json_is_true(json_object_get(render, "ok")))
            continue;
        /* The step's entry as it is, its "ok" aside: the same error
         * list every front end gives (contract/errors.h). */
        json_t *failed = json_deep_copy(render);
        json_object_del(failed, "ok");
        json_array_append_new(render_errors, failed);
    }
}

json_t *kiln_result_build(const kiln_run_report *r)
{
    const kiln_run_limits *l = r->limits;
    const kiln_collect_result *c = r->collected;
    int exited_normally = r->exited && WIFEXITED(r->wait_status);
    int exit_code = exited_normally ? WEXITSTATUS(r->wait_status) : -1;
    int sig = r->exited && WIFSIGNALED(r->wait_status) ? WTERMSIG(r->wait_status) : 0;
    const char *status;
    char message[400];

    /* Precedence: the first cause that explains the outcome wins. A job the
     * sandbox stopped is reported by why it was stopped, not by the
     * SIGKILL that did it. */
    if (r->setup_failed) {
        status = "setup_failure";
        snprintf(message, sizeof message, "The sandbox could not be set up: %s failed (%s).",
                 r->setup_what, strerror(r->setup_errno));
    } else if (sig == SIGSYS) {
        status = "seccomp_violation";
        snprintf(message, sizeof message,
                 "The program made a system call the sandbox forbids and was killed (SIGSYS).");
    } else if (r->usage.oom_kills > 0 && exit_code != 0) {
        status = "memory_limit";
        snprintf(message, sizeof message,
                 "The job went over its memory limit of %" PRIu64 " bytes and was ended.",
                 l->memory_bytes);
    } else if (r->timeout == KILN_TIMEOUT_WALL) {
        status = "timeout";
        snprintf(message, sizeof message,
                 "The job ran past its wall-clock limit of %g s and was stopped.",
                 l->wall_seconds);
    } else if (r->timeout == KILN_TIMEOUT_CPU) {
        status = "timeout";
        snprintf(message, sizeof message,
                 "The job used more than its %g s of CPU time and was stopped.", l->cpu_seconds);
    } else if (r->stream_killed) {
        status = "output_limit";
        snprintf(message, sizeof message,
                 "The job wrote more than %" PRIu64
                 " bytes to stdout and stderr and was stopped.",
                 l->stream_kill_bytes);
    } else if (sig == SIGXFSZ) {
        status = "output_limit";
        snprintf(message, sizeof message,
                 "The program wrote past the file size limit of %" PRIu64
                 " bytes and was killed.",
                 l->file_bytes);
    } else if (c && c->not_examined > 0) {
        status = "output_limit";
        snprintf(message, sizeof message,
                 "Collecting the output files stopped after examining %" PRIu32
                 " directory entries; %" PRIu64 " more were counted, not examined "
                 "(see \"collection_incomplete\").",
                 c->max_entries, c->not_examined);
    } else if (c && c->cap_hit) {
        status = "output_limit";
        snprintf(message, sizeof message,
                 "Output files were refused for passing the limits on their number or size "
                 "(see \"refused\").");
    } else if (!r->exited) {
        status = "setup_failure";
        snprintf(message, sizeof message,
                 "The sandbox ended before the program's exit was seen.");
    } else if (sig) {
        status = "signalled";
        snprintf(message, sizeof message, "The program was killed by SIG%s.",
                 sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
    } else if (exit_code != 0) {
        status = "error_exit";
        snprintf(message, sizeof message, "The program exited with status %d.", exit_code);
    } else {
        status = "ok";
        snprintf(message, sizeof message, "The program exited with status 0.");
    }

    json_t *files = json_array(), *documents = json_array(), *render_errors = json_array();
    if (c)
        split_documents(r, files, documents, render_errors);

    json_t *refused = c ? json_incref(c->refused) : json_array();
    json_t *by_reason = c && c->refused_by_reason ? json_incref(c->refused_by_reason)
                                                  : json_object();
    /* Say so when the collection stopped early, and why: the entries it did
     * not examine are only counted (in refused_more too). */
    json_t *incomplete = c && c->not_examined > 0
                             ? json_pack("{s:s, s:I, s:I, s:s}", "reason", "too many entries",
                                         "max_entries", (json_int_t)c->max_entries,
                                         "not_examined", (json_int_t)c->not_examined,
                                         "stopped_in", c->stopped_in ? c->stopped_in : ".")
                             : json_null();
    json_t *timeout = r->timeout == KILN_TIMEOUT_WALL  ? json_string("wall")
                      : r->timeout == KILN_TIMEOUT_CPU ? json_string("cpu")
                                                       : json_null();
    json_t *root = json_pack(
        "{s:s, s:s, s:o, s:o, s:o, s:f, s:f, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:o,"
        " s:o, s:o, s:o}",
        "status", status, "message", message, "exit_code",
        exited_normally ? json_integer(exit_code) : json_null(), "signal",
        sig ? signal_name(sig) : json_null(), "timeout", timeout, "wall_seconds", r->wall_seconds,
        "cpu_seconds", (double)r->usage.cpu_usec / 1e6, "peak_memory_bytes",
        r->usage.peak_bytes ? json_integer((json_int_t)r->usage.peak_bytes) : json_null(),
        "language", r->language == KILN_LANG_BASH ? "bash" : "python", "limits",
        kiln_job_limits_json(l), "stdout", r->out ? kiln_stream_json(r->out) : json_null(),
        "stderr", r->err ? kiln_stream_json(r->err) : json_null(), "files", files, "documents",
        documents, "refused", refused, "refused_more", (json_int_t)(c ? c->refused_more : 0),
        "refused_by_reason", by_reason, "collection_incomplete", incomplete, "render_errors",
        render_errors, "out_dir", r->out_dir ? json_string(r->out_dir) : json_null());
    return root;
}
