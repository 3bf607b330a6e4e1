/*
 * runs_api.c - POST /v1/runs (api.h): untrusted code run by a `kiln run`
 * child, its files stored.
 *
 * Why a child process and not kiln_run_job in the server: the runner needs
 * a process it may turn into a sandbox supervisor (groups dropped, a mount
 * namespace of its own), and a child that dies takes nothing of the
 * server with it. The child is the kiln executable itself:
 *
 *   kiln run -l LANG -o SCRATCH/out [--no-render] --timeout .. --memory .. ...
 *            -i /proc/self/fd/3:NAME ... SCRATCH/code -- ARGS...
 *
 * The code goes in a file (argv is limited to 128 KiB a string), each input
 * body as an inherited descriptor (the runner open()s its path, and the
 * child's /proc/self/fd/N is the body; no client name reaches a path), the
 * stored filename as its name in /mnt/data. The child runs in a process
 * group of its own, so kiln_api_kill_runs can end it and everything it
 * started at shutdown. Its stdout (the result JSON) and stderr are read
 * bounded, and the files it collected are copied into the store, but for
 * the inputs it left unchanged, which are already there.
 */
#include "service/api.h"
#include "service/api_internal.h"

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
#include "../common/banned.h"

/* The most program text a run takes (as `kiln run` does). */
#define KILN_API_RUN_CODE_MAX (16u << 20)
/* The program's arguments: count, bytes of one (the kernel's limit on one
 * argv string is 128 KiB), bytes of all together. */
#define KILN_API_RUN_ARGS_MAX 1024
#define KILN_API_RUN_ARG_BYTES ((128u << 10) - 1)
#define KILN_API_RUN_ARGS_BYTES (1u << 20)
/* The child's stdout is the result JSON: stdout and stderr of the job are
 * in it, each at most 64 MiB kept (docs/run.md), plus the lists. */
#define KILN_API_RUN_RESULT_MAX (80u << 20)
/* stderr of the child is only read for a message when it fails. */
#define KILN_API_RUN_STDERR_KEEP (16u << 10)

/* ---- the limits a request may set ---- */

enum limit_kind { SECONDS, BYTES, COUNT };

typedef struct limit_def {
    const char *name;   /* member of "limits" (and of the result's "limits") */
    const char *flag;   /* kiln run's option */
    enum limit_kind kind;
    size_t offset;      /* in kiln_run_limits */
    double least;       /* the smallest kiln run accepts (exec/run.h); 0 = any positive */
} limit_def;

#define LIMIT(name, flag, kind, field, least) \
    {name, flag, kind, offsetof(kiln_run_limits, field), least}
static const limit_def limit_defs[] = {
    LIMIT("wall_seconds", "--timeout", SECONDS, wall_seconds, 0),
    LIMIT("cpu_seconds", "--cpu", SECONDS, cpu_seconds, 0),
    LIMIT("memory_bytes", "--memory", BYTES, memory_bytes, (double)KILN_RUN_MEMORY_MIN),
    LIMIT("processes", "--processes", COUNT, processes, KILN_RUN_PROCESSES_MIN),
    LIMIT("disk_bytes", "--disk", BYTES, job_dir_bytes, 0),
    LIMIT("tmp_bytes", "--tmp", BYTES, tmp_bytes, 0),
    LIMIT("file_bytes", "--file-size", BYTES, file_bytes, 0),
    LIMIT("open_files", "--open-files", COUNT, open_files, KILN_RUN_OPEN_FILES_MIN),
    LIMIT("stream_keep_bytes", "--stream-keep", BYTES, stream_keep_bytes, 0),
    LIMIT("output_files", "--max-files", COUNT, output_files, 0),
    LIMIT("output_file_bytes", "--max-file-bytes", BYTES, output_file_bytes, 0),
    LIMIT("output_total_bytes", "--max-total-bytes", BYTES, output_total_bytes, 0),
};
#define LIMIT_COUNT (sizeof limit_defs / sizeof limit_defs[0])

static double limit_get(const kiln_run_limits *l, const limit_def *d)
{
    const char *p = (const char *)l + d->offset;
    switch (d->kind) {
    case SECONDS: return *(const double *)p;
    case BYTES: return (double)*(const uint64_t *)p;
    default: return (double)*(const uint32_t *)p;
    }
}

static void limit_set(kiln_run_limits *l, const limit_def *d, double v)
{
    char *p = (char *)l + d->offset;
    switch (d->kind) {
    case SECONDS: *(double *)p = v; break;
    case BYTES: *(uint64_t *)p = (uint64_t)v; break;
    default: *(uint32_t *)p = (uint32_t)v; break;
    }
}

/* ctx->run_max with its zeros ("the default") made the documented defaults. */
static void effective_max(const kiln_api_ctx *ctx, kiln_run_limits *max)
{
    kiln_run_limits def;
    kiln_run_limits_default(&def);
    *max = ctx->run_max;
    for (size_t i = 0; i < LIMIT_COUNT; i++)
        if (limit_get(max, &limit_defs[i]) <= 0)
            limit_set(max, &limit_defs[i], limit_get(&def, &limit_defs[i]));
    if (!max->stream_kill_bytes)
        max->stream_kill_bytes = def.stream_kill_bytes;
}

/* ---- children in flight ---- */

typedef struct child {
    struct child *next;
    pid_t pid;
} child;

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

typedef struct run_request {
    const char *code;
    size_t code_len;
    const char *language;    /* "python" or "bash" */
    int render;
    const json_t *inputs;    /* borrowed; NULL = none */
    const json_t *args;      /* borrowed; NULL = none */
    kiln_run_limits limits;  /* every member set */
} run_request;

static void add_error(json_t *errors, const char *pointer, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_error(json_t *errors, const char *pointer, const char *code, const char *fmt, ...)
{
    char msg[KILN_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_array_append_new(errors, json_pack("{s:s, s:s, s:s}", "pointer", pointer, "code", code,
                                            "message", msg));
}

static void invalid_run(kiln_api_reply *reply, json_t *errors)
{
    size_t n = json_array_size(errors);
    char msg[96];
    snprintf(msg, sizeof msg, "The run request has %zu error%s.", n, n == 1 ? "" : "s");
    kiln_api_reply_error(reply, 422, "invalid_run", msg,
                         json_pack("{s:o, s:i}", "errors", errors, "dropped", 0));
}

static void check_limits(const json_t *limits, const kiln_run_limits *max, kiln_run_limits *out,
                         json_t *errors)
{
    *out = *max;
    if (!limits || json_is_null(limits))
        return;
    if (!json_is_object(limits)) {
        add_error(errors, "/limits", "invalid_run", "limits must be an object");
        return;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)limits, key, value) {
        char pointer[KILN_POINTER_MAX];
        snprintf(pointer, sizeof pointer, "/limits/%.200s", key);
        const limit_def *d = NULL;
        for (size_t i = 0; i < LIMIT_COUNT; i++)
            if (strcmp(limit_defs[i].name, key) == 0)
                d = &limit_defs[i];
        if (!d) {
            add_error(errors, pointer, "invalid_run",
                      "unknown limit (wall_seconds, cpu_seconds, memory_bytes, processes, "
                      "disk_bytes, tmp_bytes, file_bytes, open_files, stream_keep_bytes, "
                      "output_files, output_file_bytes, output_total_bytes)");
            continue;
        }
        double v = json_number_value(value);
        if (!json_is_number(value) || !(v > 0) || !isfinite(v)) {
            add_error(errors, pointer, "invalid_run", "%s must be a positive number", key);
            continue;
        }
        if (d->kind != SECONDS && floor(v) != v) {
            add_error(errors, pointer, "invalid_run", "%s must be a whole number", key);
            continue;
        }
        if (v < d->least) {
            add_error(errors, pointer, "invalid_run", "%s must be at least %.15g", key,
                      d->least);
            continue;
        }
        double most = limit_get(max, d);
        if (v > most) {
            add_error(errors, pointer, "limit_exceeded", "%s may be at most %.15g on this server",
                      key, most);
            json_object_set_new(json_array_get(errors, json_array_size(errors) - 1), "limit",
                                d->kind == SECONDS ? json_real(most)
                                                   : json_integer((json_int_t)most));
            continue;
        }
        limit_set(out, d, v);
    }
}

/* 0, or -1 with reply set (400 / 422). */
static int check_request(const kiln_api_ctx *ctx, const json_t *request, run_request *rq,
                         kiln_api_reply *reply)
{
    memset(rq, 0, sizeof *rq);
    rq->render = 1; /* as kiln run: saved specs become documents unless asked not to */
    if (!json_is_object(request)) {
        kiln_api_reply_error(reply, 400, "invalid_request", "The request body must be a JSON object.",
                             json_pack("{s:s}", "pointer", ""));
        return -1;
    }
    json_t *errors = json_array();
    if (!errors) {
        kiln_api_reply_internal(reply, "out of memory");
        return -1;
    }

    const json_t *code = json_object_get(request, "code");
    if (!json_is_string(code)) {
        add_error(errors, "/code", "invalid_run", "code (the program text, a string) is required");
    } else if (json_string_length(code) > KILN_API_RUN_CODE_MAX) {
        add_error(errors, "/code", "invalid_run", "code is longer than %u bytes",
                  KILN_API_RUN_CODE_MAX);
    } else {
        rq->code = json_string_value(code);
        rq->code_len = json_string_length(code);
    }

    const json_t *lang = json_object_get(request, "language");
    rq->language = "python";
    if (lang && !json_is_null(lang)) {
        const char *l = json_string_value(lang);
        if (l && (strcmp(l, "python") == 0 || strcmp(l, "bash") == 0))
            rq->language = l;
        else
            add_error(errors, "/language", "invalid_run", "language must be python or bash");
    }

    const json_t *render = json_object_get(request, "render");
    if (render && !json_is_null(render)) {
        if (json_is_boolean(render))
            rq->render = json_is_true(render);
        else
            add_error(errors, "/render", "invalid_run", "render must be true or false");
    }

    const json_t *args = json_object_get(request, "args");
    if (args && !json_is_null(args)) {
        if (!json_is_array(args)) {
            add_error(errors, "/args", "invalid_run", "args must be an array of strings");
        } else if (json_array_size(args) > KILN_API_RUN_ARGS_MAX) {
            add_error(errors, "/args", "invalid_run", "at most %d args may be given",
                      KILN_API_RUN_ARGS_MAX);
        } else {
            size_t total = 0;
            int ok = 1;
            for (size_t i = 0; i < json_array_size(args); i++) {
                const json_t *a = json_array_get(args, i);
                char pointer[32];
                snprintf(pointer, sizeof pointer, "/args/%zu", i);
                if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a)) {
                    add_error(errors, pointer, "invalid_run", "each arg must be a string without NUL");
                    ok = 0;
                } else if (json_string_length(a) > KILN_API_RUN_ARG_BYTES) {
                    add_error(errors, pointer, "invalid_run", "an arg may be at most %u bytes",
                              KILN_API_RUN_ARG_BYTES);
                    ok = 0;
                } else {
                    total += json_string_length(a) + 1;
                }
            }
            if (total > KILN_API_RUN_ARGS_BYTES) {
                add_error(errors, "/args", "invalid_run", "the args may be at most %u bytes together",
                          KILN_API_RUN_ARGS_BYTES);
                ok = 0;
            }
            if (ok)
                rq->args = args;
        }
    }

    const json_t *inputs = json_object_get(request, "inputs");
    if (inputs && !json_is_null(inputs)) {
        if (!json_is_array(inputs)) {
            add_error(errors, "/inputs", "invalid_run", "inputs must be an array of file ids");
        } else if (json_array_size(inputs) > KILN_API_MAX_INPUTS) {
            add_error(errors, "/inputs", "invalid_run", "at most %d inputs may be given",
                      KILN_API_MAX_INPUTS);
        } else {
            int ok = 1;
            for (size_t i = 0; i < json_array_size(inputs); i++) {
                if (!json_is_string(json_array_get(inputs, i))) {
                    char pointer[32];
                    snprintf(pointer, sizeof pointer, "/inputs/%zu", i);
                    add_error(errors, pointer, "invalid_run", "each input must be a file id (a string)");
                    ok = 0;
                }
            }
            if (ok)
                rq->inputs = inputs;
        }
    }

    kiln_run_limits max;
    effective_max(ctx, &max);
    check_limits(json_object_get(request, "limits"), &max, &rq->limits, errors);

    if (json_array_size(errors) > 0) {
        invalid_run(reply, errors);
        return -1;
    }
    json_decref(errors);
    return 0;
}

/* The stored filename an input gets in /mnt/data must be one `kiln run -i
 * PATH:NAME` takes (exec/jobdir.c: one path component, not . .. .kiln, under
 * 256 bytes) and, since the option splits at the last ':', hold no ':'.
 * Two inputs may not share one. 0, or -1 with reply set (422). */
static int check_input_names(const kiln_api_input *in, size_t n, kiln_api_reply *reply)
{
    json_t *errors = json_array();
    for (size_t i = 0; i < n; i++) {
        const char *name = in[i].file.filename;
        char pointer[32];
        snprintf(pointer, sizeof pointer, "/inputs/%zu", i);
        if (strchr(name, ':')) {
            /* Uploads allow ':' ("10:30 notes.csv"); only here is it a
             * problem, so the message says why and what to do. */
            add_error(errors, pointer, "invalid_run",
                      "the file's name \"%.255s\" contains ':', which a run cannot give an "
                      "input: kiln run takes inputs as -i PATH:NAME and splits at the last ':'; "
                      "upload the file again under a name without ':'",
                      name);
            continue;
        }
        if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 ||
            strcmp(name, "..") == 0 || strcmp(name, ".kiln") == 0 || strlen(name) >= 256) {
            add_error(errors, pointer, "invalid_run",
                      "the file's name \"%.255s\" cannot be a name in /mnt/data (one file name, "
                      "not '.', '..' or '.kiln')",
                      name);
            continue;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(in[j].file.filename, name) == 0) {
                add_error(errors, pointer, "invalid_run",
                          "the file's name \"%.255s\" is the name of /inputs/%zu too: two inputs "
                          "cannot share a name in /mnt/data",
                          name, j);
                break;
            }
        }
    }
    if (json_array_size(errors) == 0) {
        json_decref(errors);
        return 0;
    }
    invalid_run(reply, errors);
    return -1;
}

/* ---- the child ---- */

typedef struct argv_builder {
    char **v;
    size_t n, cap;
    int failed;
} argv_builder;

static void arg(argv_builder *b, const char *s)
{
    if (b->failed)
        return;
    if (b->n + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        char **v = realloc(b->v, cap * sizeof *v);
        if (!v) {
            b->failed = 1;
            return;
        }
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n] = strdup(s);
    if (!b->v[b->n]) {
        b->failed = 1;
        return;
    }
    b->v[++b->n] = NULL;
}

static void argv_free(argv_builder *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->v[i]);
    free(b->v);
}

/* The environment of the child: what the runner reads, nothing else (the
 * server's environment may hold API keys). */
static char **child_env(void)
{
    static const char *const keep[] = {"PATH=", "TMPDIR=", "KILN_CACHE_DIR=", "KILN_WRITERS=",
                                       "LANG=", "LC_ALL=", "TZ="};
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
    int over;   /* more arrived than max */
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

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* A name from the runner's result is relative to out_dir and stays below
 * it: no leading '/', no empty, "." or ".." component. (The runner only
 * lists names it collected that way; this keeps a surprise from reaching
 * the store.) */
static int name_beneath(const char *name)
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
        if (!name_beneath(name)) {
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

void kiln_api_run(const kiln_api_ctx *ctx, const char *tenant, const json_t *request,
                  int client_fd, kiln_api_reply *reply)
{
    memset(reply, 0, sizeof *reply);
    run_request rq;
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

    char scratch[PATH_MAX];
    if (kiln_api_scratch_make(ctx, "run", scratch, sizeof scratch) != 0) {
        kiln_api_reply_internal(reply, "cannot make a scratch directory in %s: %s", ctx->work_dir,
                                strerror(errno));
        goto release_inputs;
    }
    char code_path[PATH_MAX + 16], out_dir[PATH_MAX + 16];
    snprintf(code_path, sizeof code_path, "%s/code", scratch);
    snprintf(out_dir, sizeof out_dir, "%s/out", scratch);
    int code_fd = open(code_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (code_fd < 0 || write_all(code_fd, rq.code, rq.code_len) != 0 || close(code_fd) != 0 ||
        mkdir(out_dir, 0700) != 0) {
        if (code_fd >= 0)
            close(code_fd);
        kiln_api_reply_internal(reply, "cannot write the code to %s: %s", scratch, strerror(errno));
        goto remove_scratch;
    }

    /* The command line. */
    argv_builder av = {0};
    arg(&av, ctx->kiln_exe);
    arg(&av, "run");
    arg(&av, "-l");
    arg(&av, rq.language);
    arg(&av, "-o");
    arg(&av, out_dir);
    if (!rq.render)
        arg(&av, "--no-render");
    for (size_t i = 0; i < LIMIT_COUNT; i++) {
        char value[64];
        double v = limit_get(&rq.limits, &limit_defs[i]);
        if (limit_defs[i].kind == SECONDS)
            snprintf(value, sizeof value, "%.17g", v);
        else
            snprintf(value, sizeof value, "%.0f", v);
        arg(&av, limit_defs[i].flag);
        arg(&av, value);
    }
    {
        kiln_run_limits max;
        effective_max(ctx, &max);
        char value[32];
        snprintf(value, sizeof value, "%llu", (unsigned long long)max.stream_kill_bytes);
        arg(&av, "--stream-kill");
        arg(&av, value);
    }
    for (size_t i = 0; i < input_count; i++) {
        char spec[64 + KILN_STORE_FILENAME_MAX];
        snprintf(spec, sizeof spec, "/proc/self/fd/%zu:%s", 3 + i, inputs[i].file.filename);
        arg(&av, "-i");
        arg(&av, spec);
    }
    arg(&av, code_path);
    arg(&av, "--");
    for (size_t i = 0; i < json_array_size(rq.args); i++)
        arg(&av, json_string_value(json_array_get(rq.args, i)));
    char **env = child_env();
    if (av.failed || !env) {
        free(env);
        argv_free(&av);
        kiln_api_reply_internal(reply, "out of memory");
        goto remove_scratch;
    }

    /* The descriptors: 0 /dev/null, 1 and 2 pipes, 3.. the inputs. Each
     * input is first moved above the range it goes to, so no dup2 below
     * overwrites another's source. */
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    int *high = calloc(input_count + 1, sizeof *high);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int spawn_rc = -1;
    child me = {0};
    buffer out = {.max = KILN_API_RUN_RESULT_MAX}, errb = {.max = KILN_API_RUN_STDERR_KEEP};
    int killed_at_shutdown = 0;
    if (!high || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
        kiln_api_reply_internal(reply, "cannot make pipes: %s", strerror(errno));
        goto close_fds;
    }
    for (size_t i = 0; i < input_count; i++) {
        high[i] = fcntl(inputs[i].fd, F_DUPFD_CLOEXEC, (int)(3 + input_count));
        if (high[i] < 0) {
            kiln_api_reply_internal(reply, "cannot duplicate an input: %s", strerror(errno));
            while (i-- > 0)
                close(high[i]);
            goto close_fds;
        }
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    for (size_t i = 0; i < input_count; i++)
        posix_spawn_file_actions_adddup2(&fa, high[i], (int)(3 + i));
    /* Whatever another thread opened without O_CLOEXEC stays out. */
    posix_spawn_file_actions_addclosefrom_np(&fa, (int)(3 + input_count));
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
    pthread_mutex_lock(&children_lock);
    if (children_killed) {
        pthread_mutex_unlock(&children_lock);
        killed_at_shutdown = 1;
    } else {
        spawn_rc = posix_spawn(&me.pid, ctx->kiln_exe, &fa, &attr, av.v, env);
        if (spawn_rc == 0) {
            me.next = children;
            children = &me;
        }
        pthread_mutex_unlock(&children_lock);
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    for (size_t i = 0; i < input_count; i++)
        close(high[i]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    out_pipe[1] = err_pipe[1] = -1;
    if (killed_at_shutdown) {
        kiln_api_reply_error(reply, 503, "unavailable", "The server is shutting down.", NULL);
        goto close_fds;
    }
    if (spawn_rc != 0) {
        kiln_api_reply_internal(reply, "cannot start %s: %s", ctx->kiln_exe, strerror(spawn_rc));
        goto close_fds;
    }

    /* Both pipes to their end; a result past the bound kills the child, and
     * so does the client going away (its socket is only polled: a third
     * descriptor, -1 when there is none, which poll skips). */
    struct pollfd pf[3] = {{.fd = out_pipe[0], .events = POLLIN},
                           {.fd = err_pipe[0], .events = POLLIN},
                           {.fd = client_fd, .events = POLLRDHUP}};
    int open_count = 2, read_failed = 0, client_gone = 0;
    while (open_count > 0) {
        if (poll(pf, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            read_failed = 1;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (pf[k].fd < 0 || !(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int rc = buffer_read(k == 0 ? &out : &errb, pf[k].fd);
            if (rc <= 0) {
                if (rc < 0)
                    read_failed = 1;
                pf[k].fd = -1;
                open_count--;
            }
        }
        client_gone = pf[2].fd >= 0 && (pf[2].revents & KILN_API_CLIENT_GONE);
        if (out.over || read_failed || client_gone) {
            kill(-me.pid, SIGKILL);
            break;
        }
    }
    int status = 0;
    reap(&me, &status);
    pthread_mutex_lock(&children_lock);
    killed_at_shutdown = children_killed;
    pthread_mutex_unlock(&children_lock);

    if (client_gone) {
        reply->client_gone = 1;
        goto close_fds;
    }
    char why[KILN_MESSAGE_MAX];
    stderr_message(&errb, why, sizeof why);
    if (out.over) {
        kiln_api_reply_internal(reply, "the result of kiln run passed %u bytes",
                                KILN_API_RUN_RESULT_MAX);
        goto close_fds;
    }
    if (read_failed) {
        kiln_api_reply_internal(reply, "reading kiln run's output: %s", strerror(errno));
        goto close_fds;
    }
    if (WIFSIGNALED(status)) {
        if (killed_at_shutdown)
            kiln_api_reply_error(reply, 503, "unavailable",
                                 "The server shut down before the run ended.", NULL);
        else
            kiln_api_reply_internal(reply, "kiln run ended by signal %d: %s", WTERMSIG(status), why);
        goto close_fds;
    }
    int code = WEXITSTATUS(status);
    json_t *result = out.data ? json_loadb(out.data, out.len, 0, NULL) : NULL;
    if (code == 70) {
        const char *m = json_string_value(json_object_get(result, "message"));
        kiln_api_reply_error(reply, 503, "sandbox_unavailable",
                             "The sandbox for runs cannot be set up on this server.",
                             json_pack("{s:s}", "reason", m ? m : why));
        json_decref(result);
        goto close_fds;
    }
    if (code == 3) {
        json_t *errors = json_array();
        add_error(errors, "/limits/disk_bytes", "limit_exceeded", "%s",
                  why[0] ? why : "the inputs do not fit in the job directory");
        invalid_run(reply, errors);
        json_decref(result);
        goto close_fds;
    }
    if ((code != 0 && code != 1) || !json_is_object(result)) {
        kiln_api_reply_internal(reply, "kiln run exited with status %d: %s", code,
                                why[0] ? why : "no result");
        json_decref(result);
        goto close_fds;
    }
    json_object_del(result, "out_dir");
    if (store_outputs(ctx, tenant, out_dir, json_object_get(result, "files"),
                      KILN_STORE_SOURCE_OUTPUT, inputs, input_count, reply) != 0 ||
        store_outputs(ctx, tenant, out_dir, json_object_get(result, "documents"),
                      KILN_STORE_SOURCE_DOCUMENT, NULL, 0, reply) != 0) {
        json_decref(result);
        goto close_fds;
    }
    reply->status = 200;
    reply->body = result;

close_fds:
    free(out.data);
    free(errb.data);
    for (int k = 0; k < 2; k++) {
        if (out_pipe[k] >= 0)
            close(out_pipe[k]);
        if (err_pipe[k] >= 0)
            close(err_pipe[k]);
    }
    free(high);
    free(env);
    argv_free(&av);
remove_scratch:
    kiln_api_rmtree(scratch);
release_inputs:
    if (held)
        kiln_inuse_release(ctx->inuse, tenant, held, input_count);
    free((void *)held);
    kiln_api_inputs_close(inputs, input_count);
}
