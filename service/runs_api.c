/*
 * runs_api.c - POST /v1/runs (api.h): untrusted code run by a `kiln run`
 * child, its files stored.
 *
 * Why a child process and not kiln_run_job in the server: the runner needs
 * a process it may turn into a sandbox supervisor (groups dropped, a mount
 * namespace of its own), and a child that dies takes nothing of the
 * server with it. The child is the kiln executable itself:
 *
 *   kiln run --request /proc/self/fd/3 -o SCRATCH/out
 *
 * The request is checked here against the contract (contract/job.h: the
 * same parser `kiln run --request` uses), then handed to the child as one
 * JSON document on descriptor 3, a sealed memfd: nothing of the job is
 * re-printed as flags. Its inputs are the stored bodies, inherited as
 * descriptors 4.. and named in the document by /proc/self/fd/N (the runner
 * open()s the path; no client name reaches a path), each with its stored
 * filename as its name in /mnt/data. The child runs in a process group of
 * its own, so kiln_api_kill_runs can end it and everything it started at
 * shutdown. Its stdout (the result JSON) and stderr are read bounded, and
 * the files it collected are copied into the store, but for the inputs it
 * left unchanged, which are already there.
 */
#include "service/api.h"
#include "service/api_internal.h"

#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "contract/job.h"
#include "contract/limits.h"
#include "contract/report.h"
#include "../common/fdio.h"
#include "../common/banned.h"

/* The child's stdout is the result JSON: stdout and stderr of the job are
 * in it, each at most 64 MiB kept (docs/run.md), plus the lists. */
#define KILN_API_RUN_RESULT_MAX (80u << 20)
/* stderr of the child is only read for a message when it fails. */
#define KILN_API_RUN_STDERR_KEEP (16u << 10)

/* ---- the limits a request may set ---- */

/* ctx->run_max with its zeros ("the default") made the documented defaults. */
static void effective_max(const kiln_api_ctx *ctx, kiln_run_limits *max)
{
    *max = ctx->run_max;
    kiln_job_limits_fill(max);
}

/* ---- children in flight ---- */

typedef kiln_api_child child;

static pthread_mutex_t children_lock = PTHREAD_MUTEX_INITIALIZER;
static child *children;
static int children_killed; /* kiln_api_kill_runs ran: no new child starts */

void kiln_api_kill_runs(void)
{
    pthread_mutex_lock(&children_lock);
    children_killed = 1;
    /* A registered pid is never reaped while registered (see reap), so
     * it cannot name another process here. */
    for (child *c = children; c; c = c->next)
        kill(-c->pid, SIGKILL);
    pthread_mutex_unlock(&children_lock);
}

static void unregister_child(child *me)
{
    pthread_mutex_lock(&children_lock);
    for (child **p = &children; *p; p = &(*p)->next) {
        if (*p == me) {
            *p = me->next;
            break;
        }
    }
    pthread_mutex_unlock(&children_lock);
}

/* Wait for the child to end without reaping it, take it off the list, then
 * reap it: a pid on the list is always still ours. *status = waitpid's. */
static void reap(child *me, int *status)
{
    siginfo_t info;
    while (waitid(P_PID, (id_t)me->pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    unregister_child(me);
    while (waitpid(me->pid, status, 0) < 0 && errno == EINTR)
        ;
}

/* ---- the request ---- */

static void invalid_run(kiln_api_reply *reply, const kiln_errors *errs)
{
    size_t n = errs->count + errs->dropped;
    char msg[96];
    snprintf(msg, sizeof msg, "The run request has %zu error%s.", n, n == 1 ? "" : "s");
    kiln_api_reply_error(reply, 422, "invalid_run", msg, kiln_errors_json(errs));
}

/* The request against the contract, with this server's maxima; a limit
 * left out gets the maximum. 0, or -1 with reply set (400 / 422). */
static int check_request(const kiln_api_ctx *ctx, const json_t *request, kiln_job_request *rq,
                         kiln_api_reply *reply)
{
    if (!json_is_object(request)) {
        kiln_api_reply_error(reply, 400, "invalid_request",
                             "The request body must be a JSON object.",
                             json_pack("{s:s}", "pointer", ""));
        return -1;
    }
    kiln_run_limits max;
    effective_max(ctx, &max);
    kiln_job_parse_options popt = {.inputs = KILN_JOB_INPUT_IDS, .max = &max, .unset = &max};
    kiln_errors *errs = malloc(sizeof *errs);
    if (!errs) {
        kiln_api_reply_internal(reply, "out of memory");
        return -1;
    }
    int rc = 0;
    if (kiln_job_request_parse(request, &popt, rq, errs) != KILN_E_OK) {
        invalid_run(reply, errs);
        rc = -1;
    }
    free(errs);
    return rc;
}

/* The stored filename each input gets in /mnt/data, checked as the job
 * contract checks every input name (contract/job.h). 0, or -1 with reply
 * set (422). */
static int check_input_names(const kiln_api_input *in, size_t n, kiln_api_reply *reply)
{
    kiln_errors *errs = malloc(sizeof *errs);
    const char **names = calloc(n + 1, sizeof *names);
    int rc = -1;
    if (!errs || !names) {
        kiln_api_reply_internal(reply, "out of memory");
        goto release;
    }
    for (size_t i = 0; i < n; i++)
        names[i] = in[i].file.filename;
    kiln_errors_init(errs);
    rc = kiln_job_check_input_names(names, NULL, n, errs);
    if (rc != 0)
        invalid_run(reply, errs);
release:
    free(names);
    free(errs);
    return rc;
}

/* ---- the child ---- */

/* The environment of the child: what the runner reads, nothing else (the
 * server's environment may hold API keys). */
static char **child_env(void)
{
    static const char *const keep[] = {
        "PATH=", "TMPDIR=", "KILN_CACHE_DIR=", "KILN_WRITERS=", "LANG=", "LC_ALL=", "TZ="};
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    int have_path = 0;
    for (char **e = environ; *e; e++) {
        for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
            if (strncmp(*e, keep[i], strlen(keep[i])) == 0) {
                env[k++] = *e;
                have_path |= i == 0;
                break;
            }
        }
    }
    if (!have_path)
        env[k++] = "PATH=/usr/local/bin:/usr/bin:/bin";
    env[k] = NULL;
    return env;
}

typedef struct buffer {
    char *data;
    size_t len, cap, max;
    int over; /* more arrived than max */
} buffer;

static int buffer_read(buffer *b, int fd)
{
    char chunk[65536];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : -1;
    if (n == 0)
        return 0;
    size_t keep = (size_t)n;
    if (b->len + keep > b->max) {
        b->over = 1;
        keep = b->max - b->len;
    }
    if (b->len + keep + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + keep + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return -1;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, chunk, keep);
    b->len += keep;
    b->data[b->len] = '\0';
    return 1;
}

/* The child's stderr as one message: its last line, "kiln: error: " off. */
static void stderr_message(const buffer *b, char *out, size_t cap)
{
    out[0] = '\0';
    if (!b->data)
        return;
    size_t end = b->len;
    while (end > 0 && (b->data[end - 1] == '\n' || b->data[end - 1] == '\r'))
        end--;
    size_t start = end;
    while (start > 0 && b->data[start - 1] != '\n')
        start--;
    const char *line = b->data + start;
    size_t len = end - start;
    static const char prefix[] = "kiln: error: ";
    if (len >= sizeof prefix - 1 && strncmp(line, prefix, sizeof prefix - 1) == 0) {
        line += sizeof prefix - 1;
        len -= sizeof prefix - 1;
    }
    snprintf(out, cap, "%.*s", (int)len, line);
}

/* api_internal.h */
int kiln_api_name_beneath(const char *name)
{
    if (!name || !name[0] || name[0] == '/')
        return 0;
    for (const char *p = name; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        p += n;
        if (*p == '/')
            p++;
        if (!*p && p[-1] == '/')
            return 0;
    }
    return 1;
}

/* The input an entry of the result is, unchanged (the same name in
 * /mnt/data and the same SHA-256), or NULL: the run created or changed it. */
static const kiln_api_input *unchanged_input(const json_t *entry, const kiln_api_input *inputs,
                                             size_t input_count)
{
    const char *name = json_string_value(json_object_get(entry, "name"));
    const char *sha = json_string_value(json_object_get(entry, "sha256"));
    for (size_t k = 0; name && sha && k < input_count; k++)
        if (strcmp(inputs[k].file.filename, name) == 0 && strcmp(inputs[k].file.sha256, sha) == 0)
            return &inputs[k];
    return NULL;
}

/* Store the files of one result list (files or documents) as source,
 * adding "file" to each entry. The runner lists every file in /mnt/data,
 * the inputs too: an input the run left as it was is not stored again,
 * its "file" is the input's own file object. An entry the store refuses
 * gets "file": null and "file_error". -1 (reply set) on a server fault. */
static int store_outputs(const kiln_api_ctx *ctx, const char *tenant, const char *out_dir,
                         json_t *list, kiln_store_source source, const kiln_api_input *inputs,
                         size_t input_count, kiln_api_reply *reply)
{
    size_t i;
    json_t *entry;
    json_array_foreach(list, i, entry) {
        const char *name = json_string_value(json_object_get(entry, "name"));
        const char *media = json_string_value(json_object_get(entry, "media_type"));
        if (!kiln_api_name_beneath(name)) {
            json_object_set_new(entry, "file", json_null());
            continue;
        }
        const kiln_api_input *same = unchanged_input(entry, inputs, input_count);
        if (same) {
            json_object_set_new(entry, "file", kiln_api_file_json(&same->file));
            continue;
        }
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", out_dir, name);
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        kiln_store_file file;
        kiln_error err;
        memset(&err, 0, sizeof err);
        kiln_store_result r = kiln_store_put_path(ctx->store, tenant, path, base,
                                                  media ? media : "application/octet-stream",
                                                  source, &file, &err);
        if (r == KILN_STORE_OK) {
            json_object_set_new(entry, "file", kiln_api_file_json(&file));
        } else if (r == KILN_STORE_TOO_LARGE || r == KILN_STORE_NOT_FOUND ||
                   (r == KILN_STORE_ERROR && err.code == KILN_E_INPUT)) {
            json_object_set_new(entry, "file", json_null());
            json_object_set_new(entry, "file_error", json_string(err.message));
        } else {
            kiln_api_reply_internal(reply, "storing %s: %s", name, err.message);
            return -1;
        }
    }
    return 0;
}

/* text in a sealed memfd at offset 0: the fd, or -1 with errno. */
int kiln_api_sealed_memfd(const char *name, const char *text)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    if (kiln_write_all(fd, text, strlen(text)) != 0 || lseek(fd, 0, SEEK_SET) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int kiln_api_doc_memfd(const char *name, json_t *doc)
{
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!text) {
        errno = ENOMEM;
        return -1;
    }
    int fd = kiln_api_sealed_memfd(name, text);
    free(text);
    return fd;
}

int kiln_api_input_refs_make(const kiln_api_input *inputs, size_t n, kiln_api_input_refs *r)
{
    r->paths = calloc(n + 1, sizeof *r->paths);
    r->path_ptrs = calloc(n + 1, sizeof *r->path_ptrs);
    r->names = calloc(n + 1, sizeof *r->names);
    if (!r->paths || !r->path_ptrs || !r->names) {
        kiln_api_input_refs_free(r);
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(r->paths[i], sizeof r->paths[i], "/proc/self/fd/%zu", 4 + i);
        r->path_ptrs[i] = r->paths[i];
        r->names[i] = inputs[i].file.filename;
    }
    return 0;
}

void kiln_api_input_refs_free(kiln_api_input_refs *r)
{
    free(r->paths);
    free(r->path_ptrs);
    free(r->names);
    memset(r, 0, sizeof *r);
}

/* The job document for the child, in a sealed memfd: the request as
 * checked, inputs as the descriptors 4.. they will be. The fd, or -1 with
 * errno. */
static int request_memfd(const kiln_job_request *rq, const kiln_api_input *inputs,
                         size_t input_count)
{
    kiln_api_input_refs refs;
    if (kiln_api_input_refs_make(inputs, input_count, &refs) != 0)
        return -1;
    int fd = kiln_api_doc_memfd("kiln-job-request",
                                kiln_job_request_json(rq, refs.path_ptrs, refs.names,
                                                      input_count));
    kiln_api_input_refs_free(&refs);
    return fd;
}

/* A spawned `kiln run` child and its pipes. */
typedef struct run_child {
    child entry;        /* on the children list while it runs */
    int out_fd, err_fd; /* read ends of its stdout and stderr */
    int refused;        /* not started: the server is shutting down */
} run_child;

int kiln_api_spawn(const kiln_api_ctx *ctx, char *const argv[], const int *fds, size_t nfds,
                   int with_stdin, kiln_api_spawned *sp, kiln_api_reply *reply)
{
    int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, result = -1;
    int *high = calloc(nfds + 1, sizeof *high);
    size_t duped = 0;
    char **env = child_env();
    sp->in_fd = sp->out_fd = sp->err_fd = -1;
    sp->refused = 0;
    if (!high || !env) {
        kiln_api_reply_internal(reply, "out of memory");
        goto release;
    }
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
        (with_stdin && pipe2(in_pipe, O_CLOEXEC) != 0)) {
        kiln_api_reply_internal(reply, "cannot make pipes: %s", strerror(errno));
        goto release;
    }
    /* Each descriptor is first moved above the range it goes to, so no
     * dup2 below overwrites another's source. */
    for (; duped < nfds; duped++) {
        high[duped] = fcntl(fds[duped], F_DUPFD_CLOEXEC, (int)(3 + nfds));
        if (high[duped] < 0) {
            kiln_api_reply_internal(reply, "cannot duplicate a descriptor: %s", strerror(errno));
            goto release;
        }
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    if (with_stdin)
        posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    for (size_t i = 0; i < nfds; i++)
        posix_spawn_file_actions_adddup2(&fa, high[i], (int)(3 + i));
    /* Whatever another thread opened without O_CLOEXEC stays out. */
    posix_spawn_file_actions_addclosefrom_np(&fa, (int)(3 + nfds));
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    /* Spawned under the lock, so kiln_api_kill_runs either sees this child
     * or has already refused it. */
    int spawn_rc = 0;
    pthread_mutex_lock(&children_lock);
    if (children_killed) {
        sp->refused = 1;
    } else {
        spawn_rc = posix_spawn(&sp->pid, ctx->kiln_exe, &fa, &attr, argv, env);
        if (spawn_rc == 0 && sp->entry) {
            sp->entry->pid = sp->pid;
            sp->entry->next = children;
            children = sp->entry;
        }
    }
    pthread_mutex_unlock(&children_lock);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (sp->refused) {
        kiln_api_reply_error(reply, 503, "unavailable", "The server is shutting down.", NULL);
        goto release;
    }
    if (spawn_rc != 0) {
        kiln_api_reply_internal(reply, "cannot start %s: %s", ctx->kiln_exe, strerror(spawn_rc));
        goto release;
    }
    sp->in_fd = in_pipe[1];
    sp->out_fd = out_pipe[0];
    sp->err_fd = err_pipe[0];
    in_pipe[1] = out_pipe[0] = err_pipe[0] = -1;
    result = 0;
release:
    for (int k = 0; k < 2; k++) {
        if (in_pipe[k] >= 0)
            close(in_pipe[k]);
        if (out_pipe[k] >= 0)
            close(out_pipe[k]);
        if (err_pipe[k] >= 0)
            close(err_pipe[k]);
    }
    while (duped-- > 0)
        close(high[duped]);
    free(high);
    free(env);
    return result;
}

/* Start `kiln run --request /proc/self/fd/3 -o OUT_DIR` with descriptors
 * 0 /dev/null, 1 and 2 pipes, 3 the request, 4.. the inputs. 0, or -1
 * with reply set. */
static int spawn_run(const kiln_api_ctx *ctx, int request_fd, const kiln_api_input *inputs,
                     size_t input_count, const char *out_dir, run_child *rc,
                     kiln_api_reply *reply)
{
    char *argv[] = {(char *)ctx->kiln_exe, "run", "--request", "/proc/self/fd/3", "-o",
                    (char *)out_dir,       NULL};
    size_t nfds = input_count + 1; /* the request, then the inputs */
    int *fds = calloc(nfds, sizeof *fds);
    if (!fds) {
        kiln_api_reply_internal(reply, "out of memory");
        return -1;
    }
    fds[0] = request_fd;
    for (size_t i = 0; i < input_count; i++)
        fds[1 + i] = inputs[i].fd;
    kiln_api_spawned sp = {.entry = &rc->entry};
    int result = kiln_api_spawn(ctx, argv, fds, nfds, 0, &sp, reply);
    free(fds);
    rc->refused = sp.refused;
    rc->out_fd = sp.out_fd;
    rc->err_fd = sp.err_fd;
    return result;
}

/* What the child left: its output, and how it ended. */
typedef struct run_outcome {
    buffer out, err;
    int status; /* waitpid's */
    int read_failed, client_gone, killed_at_shutdown;
} run_outcome;

/* Both pipes to their end; a result past the bound kills the child, and so
 * does the client going away (its socket is only polled: a third
 * descriptor, -1 when there is none, which poll skips). Then the child is
 * reaped. */
static void collect_child(run_child *rc, int client_fd, run_outcome *o)
{
    o->out.max = KILN_API_RUN_RESULT_MAX;
    o->err.max = KILN_API_RUN_STDERR_KEEP;
    struct pollfd pf[3] = {{.fd = rc->out_fd, .events = POLLIN},
                           {.fd = rc->err_fd, .events = POLLIN},
                           {.fd = client_fd, .events = POLLRDHUP}};
    int open_count = 2;
    while (open_count > 0) {
        if (poll(pf, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            o->read_failed = 1;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (pf[k].fd < 0 || !(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int r = buffer_read(k == 0 ? &o->out : &o->err, pf[k].fd);
            if (r <= 0) {
                if (r < 0)
                    o->read_failed = 1;
                pf[k].fd = -1;
                open_count--;
            }
        }
        o->client_gone = pf[2].fd >= 0 && (pf[2].revents & KILN_API_CLIENT_GONE);
        if (o->out.over || o->read_failed || o->client_gone) {
            kill(-rc->entry.pid, SIGKILL);
            break;
        }
    }
    reap(&rc->entry, &o->status);
    pthread_mutex_lock(&children_lock);
    o->killed_at_shutdown = children_killed;
    pthread_mutex_unlock(&children_lock);
}

/* The child's result, or NULL with reply set: how it ended, mapped to the
 * API's replies (a 503 when the sandbox cannot be set up or the server shut
 * down, a 422 when the inputs do not fit, else a 500 saying what the child
 * said). A new reference. */
static json_t *child_result(const run_outcome *o, kiln_api_reply *reply)
{
    char why[KILN_MESSAGE_MAX];
    stderr_message(&o->err, why, sizeof why);
    if (o->out.over) {
        kiln_api_reply_internal(reply, "the result of kiln run passed %u bytes",
                                KILN_API_RUN_RESULT_MAX);
        return NULL;
    }
    if (o->read_failed) {
        kiln_api_reply_internal(reply, "reading kiln run's output: %s", strerror(errno));
        return NULL;
    }
    if (WIFSIGNALED(o->status)) {
        if (o->killed_at_shutdown)
            kiln_api_reply_error(reply, 503, "unavailable",
                                 "The server shut down before the run ended.", NULL);
        else
            kiln_api_reply_internal(reply, "kiln run ended by signal %d: %s", WTERMSIG(o->status),
                                    why);
        return NULL;
    }
    int code = WEXITSTATUS(o->status);
    json_t *result = o->out.data ? json_loadb(o->out.data, o->out.len, 0, NULL) : NULL;
    if (code == kiln_status_exit(KILN_E_INTERNAL)) {
        const char *m = json_string_value(json_object_get(result, "message"));
        kiln_api_reply_error(reply, 503, "sandbox_unavailable",
                             "The sandbox for runs cannot be set up on this server.",
                             json_pack("{s:s}", "reason", m ? m : why));
    } else if (code == 3) {
        kiln_errors errs;
        kiln_errors_init(&errs);
        kiln_error e;
        kiln_error_limit(&e, KILN_E_LIMIT, "/limits/disk_bytes", 0, 0, "%s",
                         why[0] ? why : "the inputs do not fit in the job directory");
        kiln_errors_add(&errs, &e);
        invalid_run(reply, &errs);
    } else if ((code != 0 && code != 1) || !json_is_object(result)) {
        kiln_api_reply_internal(reply, "kiln run exited with status %d: %s", code,
                                why[0] ? why : "no result");
    } else {
        return result;
    }
    json_decref(result);
    return NULL;
}

void kiln_api_run(const kiln_api_ctx *ctx, const char *tenant, const json_t *request,
                  int client_fd, kiln_api_reply *reply)
{
    memset(reply, 0, sizeof *reply);
    kiln_job_request rq;
    if (check_request(ctx, request, &rq, reply) != 0)
        return;

    size_t input_count = json_array_size(rq.inputs);
    kiln_api_input *inputs = NULL;
    if (kiln_api_inputs_open(ctx, tenant, rq.inputs, &inputs, reply) != 0)
        return;
    const char **held = kiln_api_input_ids(inputs, input_count);
    if (held)
        kiln_inuse_take(ctx->inuse, tenant, held, input_count);
    if (check_input_names(inputs, input_count, reply) != 0)
        goto release_inputs;

    char scratch[PATH_MAX], out_dir[PATH_MAX + 16];
    if (kiln_api_scratch_make(ctx, "run", scratch, sizeof scratch) != 0) {
        kiln_api_reply_internal(reply, "cannot make a scratch directory in %s: %s", ctx->work_dir,
                                strerror(errno));
        goto release_inputs;
    }
    snprintf(out_dir, sizeof out_dir, "%s/out", scratch);
    int request_fd = request_memfd(&rq, inputs, input_count);
    if (request_fd < 0 || mkdir(out_dir, 0700) != 0) {
        kiln_api_reply_internal(reply, "cannot hand the job to kiln run: %s", strerror(errno));
        goto close_request;
    }

    run_child rc;
    memset(&rc, 0, sizeof rc);
    if (spawn_run(ctx, request_fd, inputs, input_count, out_dir, &rc, reply) != 0)
        goto close_request;
    run_outcome o;
    memset(&o, 0, sizeof o);
    collect_child(&rc, client_fd, &o);
    close(rc.out_fd);
    close(rc.err_fd);
    json_t *result = o.client_gone ? NULL : child_result(&o, reply);
    reply->client_gone = o.client_gone;
    free(o.out.data);
    free(o.err.data);
    if (!result)
        goto close_request;
    json_object_del(result, "out_dir");
    if (store_outputs(ctx, tenant, out_dir, json_object_get(result, "files"),
                      KILN_STORE_SOURCE_OUTPUT, inputs, input_count, reply) != 0 ||
        store_outputs(ctx, tenant, out_dir, json_object_get(result, "documents"),
                      KILN_STORE_SOURCE_DOCUMENT, NULL, 0, reply) != 0) {
        json_decref(result);
        goto close_request;
    }
    reply->status = 200;
    reply->body = result;

close_request:
    if (request_fd >= 0)
        close(request_fd);
    kiln_api_rmtree(scratch);
release_inputs:
    if (held)
        kiln_inuse_release(ctx->inuse, tenant, held, input_count);
    free((void *)held);
    kiln_api_inputs_close(inputs, input_count);
}
