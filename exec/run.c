/*
 * run.c - the supervisor: everything around the sandbox.
 *
 * kiln_run_job() forks one supervisor process so the caller is never changed.
 * The supervisor, in order:
 *   1. drops its supplementary groups and takes a private mount namespace,
 *      where it mounts the job directory (jobdir.c) and copies the inputs in;
 *   2. creates the job's cgroup (cgroup.c);
 *   3. spawns the contained process (contain.c) with the program and the
 *      kiln helper module written into its root;
 *   4. watches it (kiln_watch_run): streams kept up to their cap, the
 *      report of how the program ended, the wall clock and the cgroup's CPU
 *      time, killing everything at a limit;
 *   5. renders the specs the job saved, each in a sandbox of its own
 *      (render_job.c), collects the files (collect.c) and builds the result
 *      (result.c), which goes back to kiln_run_job over a pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/templates.h"
#include "contract/limits.h"
#include "exec/exec_internal.h"
#include "../common/banned.h"

const char *kiln_python_lib(size_t *len)
{
    return kiln_template("python/kiln.py", len);
}

/* ---- the supervisor --------------------------------------------------- */

/* PATH is the first entry: /usr/local/bin joins it when a --ro-bind path
 * makes it visible (job_path). */
static const char *const job_env[] = {
    "PATH=/usr/bin:/bin",
    "HOME=/tmp",
    "TMPDIR=/tmp",
    "LANG=C.UTF-8",
    "LC_ALL=C.UTF-8",
    "MPLBACKEND=Agg",
    "MPLCONFIGDIR=/tmp/.matplotlib",
    "PYTHONPATH=" KILN_SANDBOX_LIB_DIR,
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONUNBUFFERED=1",
    "KILN_JOB_DIR=" KILN_JOB_DIR,
    "USER=kiln",
    "LOGNAME=kiln",
    NULL,
};

const char *const *kiln_job_environment(const char **path)
{
    if (path)
        *path = job_env[0];
    return job_env;
}

/* 1 when `path` is `dir` or lies below it. */
static int path_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return 1;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The job's PATH: /usr/local/bin first (as Debian has it) only when a
 * --ro-bind path shows it, else the directories the root holds. */
static const char *job_path(const kiln_run_options *opt)
{
    for (size_t i = 0; i < opt->ro_bind_count && i < KILN_RUN_RO_BINDS_MAX; i++)
        if (path_within("/usr/local/bin", opt->ro_binds[i]))
            return "PATH=/usr/local/bin:/usr/bin:/bin";
    return job_env[0];
}

void kiln_run_add_ro_bind(kiln_run_options *opt, const char *path)
{
    if (opt->ro_bind_count < KILN_RUN_RO_BINDS_MAX)
        opt->ro_binds[opt->ro_bind_count] = path;
    opt->ro_bind_count++;
}

/* What a --ro-bind path may not be, nor hold: the sandbox's own parts (its
 * /proc, /dev, /tmp, job directory, program, identity files), the kernel's
 * interfaces, and the host's runtime directories, whose Unix sockets a
 * read-only bind would not stop a job from connecting to. Nor may it lie
 * below one of them, but for /tmp: a host directory there is shown inside
 * the sandbox's own /tmp. */
static const struct {
    const char *path;
    int below_ok;
} ro_bind_reserved[] = {
    {"/proc", 0},       {"/sys", 0},       {"/dev", 0},       {"/tmp", 1},
    {KILN_JOB_DIR, 0},  {"/opt/kiln", 0},  {"/run", 0},       {"/var/run", 0},
    {"/etc/passwd", 0}, {"/etc/group", 0}, {"/etc/hosts", 0}, {"/etc/hostname", 0},
};

static kiln_status check_ro_bind(const char *path, kiln_error *err)
{
    if (path[0] != '/')
        return kiln_error_set(err, KILN_E_USAGE, "", "--ro-bind '%s': the path must be absolute",
                              path);
    char real[PATH_MAX];
    if (!realpath(path, real))
        return kiln_error_set(err, KILN_E_INPUT, "", "--ro-bind '%s': %s", path, strerror(errno));
    if (strcmp(real, path) != 0)
        return kiln_error_set(err, KILN_E_USAGE, "",
                              "--ro-bind '%s': give the path as it is, without a symlink, '.', "
                              "'..', '//' or a final '/' in it: '%s'",
                              path, real);
    struct stat st;
    if (stat(path, &st) < 0)
        return kiln_error_set(err, KILN_E_INPUT, "", "--ro-bind '%s': %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
        return kiln_error_set(err, KILN_E_USAGE, "",
                              "--ro-bind '%s': only a directory or a regular file can be bound",
                              path);
    /* The sandbox opens the path as its own root, which is any other user
     * to the host: every directory on the way must be searchable by others
     * (and the job reads what is there as any other user would). */
    char prefix[PATH_MAX];
    for (const char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        size_t n = (size_t)(slash - path);
        memcpy(prefix, path, n);
        prefix[n] = '\0';
        struct stat dir;
        if (stat(prefix, &dir) < 0 || !(dir.st_mode & S_IXOTH))
            return kiln_error_set(err, KILN_E_INPUT, "",
                                  "--ro-bind '%s': the sandbox reaches it as any other user of "
                                  "the host would, and '%s' is not searchable by others",
                                  path, prefix);
    }
    for (size_t i = 0; i < sizeof ro_bind_reserved / sizeof ro_bind_reserved[0]; i++) {
        const char *r = ro_bind_reserved[i].path;
        const char *how = strcmp(path, r) == 0                                    ? "is"
                          : path_within(r, path)                                  ? "holds"
                          : !ro_bind_reserved[i].below_ok && path_within(path, r) ? "is in"
                                                                                  : NULL;
        if (how)
            return kiln_error_set(err, KILN_E_USAGE, "",
                                  "--ro-bind '%s': the path %s %s, which is the sandbox's own "
                                  "or the host's runtime state and cannot be bound",
                                  path, how, r);
    }
    return KILN_E_OK;
}

/* The job's seccomp program, built on a thread of its own while the
 * supervisor prepares the job directory and the cgroup: on two cores that
 * takes its compile time (a few milliseconds) off the job's start. */
typedef struct filter_build {
    kiln_seccomp_program prog;
    const char *what;
    int err_no;
    int rc;
} filter_build;

static void *build_filter_thread(void *arg)
{
    filter_build *fb = arg;
    fb->rc = kiln_seccomp_build(KILN_SECCOMP_CODE, &fb->prog, &fb->what);
    fb->err_no = errno;
    return NULL;
}

typedef struct supervisor {
    const kiln_run_options *opt;
    const kiln_run_limits *limits;
    kiln_idmap map;
    kiln_jobdir jd;
    kiln_cgroup cg;
    kiln_stream out, err;
} supervisor;

static json_t *supervise(supervisor *s, kiln_error *err)
{
    const kiln_run_options *opt = s->opt;
    const kiln_run_limits *l = s->limits;
    json_t *result = NULL, *renders = NULL;
    kiln_collect_result collected;
    memset(&collected, 0, sizeof collected);
    char **argv = NULL, *font_list = NULL;

    /* The job's processes must not inherit root's groups: the user
     * namespace will forbid setgroups, so they would keep them. */
    if (setgroups(0, NULL) < 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "", "kiln run needs root: cannot drop groups (%s)",
                       strerror(errno));
        return NULL;
    }
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "",
                       "kiln run needs root: cannot make a mount namespace (%s)",
                       strerror(errno));
        return NULL;
    }
    filter_build fb = {.rc = -1};
    pthread_t builder;
    int building = pthread_create(&builder, NULL, build_filter_thread, &fb) == 0;
    if (!building)
        build_filter_thread(&fb);

    kiln_idmap_for_job(&s->map, getpid());
    uid_t job_uid = s->map.host_uid_base + 1;
    gid_t job_gid = s->map.host_gid_base + 1;

    if (kiln_jobdir_create(&s->jd, l->job_dir_bytes, job_uid, job_gid, err) != KILN_E_OK)
        goto join_builder;

    /* matplotlib's font list: from the cache, else made now by Kiln's own
     * warm-up sandbox, while the job directory is still empty. */
    kiln_file_blob font_blob;
    int have_font_list = 0;
    memset(&font_blob, 0, sizeof font_blob);
    if (opt->language == KILN_LANG_PYTHON) {
        have_font_list = kiln_fontcache_load(&font_blob);
        if (!have_font_list) {
            /* The warm-up forks: the builder thread must be done first. */
            if (building) {
                pthread_join(builder, NULL);
                building = 0;
            }
            if (fb.rc == 0)
                have_font_list = kiln_fontcache_make(&s->jd, &s->map, l, &fb.prog, &font_blob);
        }
    }
    font_list = have_font_list ? (char *)font_blob.data : NULL;
    for (size_t i = 0; i < opt->input_count; i++)
        if (kiln_jobdir_add_input(&s->jd, &opt->inputs[i], job_uid, job_gid, err) != KILN_E_OK)
            goto release_jobdir;

    char cg_name[64];
    snprintf(cg_name, sizeof cg_name, "kiln-%d", (int)getpid());
    kiln_cgroup_roots roots = {.fs_root = "/sys/fs/cgroup",
                               .proc_self_cgroup = "/proc/self/cgroup"};
    if (kiln_cgroup_create(&s->cg, &roots, cg_name, l, err) != KILN_E_OK)
        goto release_jobdir;
    if (kiln_stream_init(&s->out, l->stream_keep_bytes, err) != KILN_E_OK ||
        kiln_stream_init(&s->err, l->stream_keep_bytes, err) != KILN_E_OK)
        goto release_streams;

    /* The program and the helper module go into the root before it turns
     * read-only: the job can read them, not change them, and they are not
     * in /mnt/data among its outputs. */
    int bash = opt->language == KILN_LANG_BASH;
    size_t lib_len = 0;
    const char *lib = kiln_python_lib(&lib_len);
    kiln_file_blob blobs[3] = {
        {bash ? KILN_SANDBOX_CODE_DIR "/main.sh" : KILN_SANDBOX_CODE_DIR "/main.py", opt->code,
         opt->code_len, 0644, 0},
        {KILN_SANDBOX_LIB_DIR "/kiln.py", lib ? lib : "", lib ? lib_len : 0, 0644, 0},
    };
    /* Every fork and clone below needs the builder thread finished: a
     * child of a multithreaded process could inherit a lock it holds. */
    if (building) {
        pthread_join(builder, NULL);
        building = 0;
    }
    if (fb.rc != 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "", "cannot build the seccomp filter: %s: %s",
                       fb.what ? fb.what : "?", strerror(fb.err_no));
        goto free_argv;
    }
    size_t blob_count = 2;
    if (have_font_list)
        blobs[blob_count++] = font_blob;
    size_t argc = 0;
    while (opt->args && opt->args[argc])
        argc++;
    argv = calloc(argc + 3, sizeof *argv);
    if (!argv) {
        kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
        goto free_argv;
    }
    argv[0] = bash ? "/bin/bash" : "/usr/bin/python3";
    argv[1] = (char *)blobs[0].path;
    for (size_t i = 0; i < argc; i++)
        argv[2 + i] = (char *)opt->args[i];

    const char *envp[sizeof job_env / sizeof job_env[0]];
    memcpy(envp, job_env, sizeof envp);
    envp[0] = job_path(opt);
    kiln_contain_job job = {
        .mount = {.job_dir_host = s->jd.path,
                  .tmp_bytes = l->tmp_bytes,
                  .files = blobs,
                  .file_count = blob_count,
                  .job_dir_owner = KILN_SANDBOX_UID,
                  .ro_binds = opt->ro_binds,
                  .ro_bind_count = opt->ro_bind_count},
        .limits = l,
        .filter = &fb.prog,
        .argv = argv,
        .envp = (char *const *)envp,
    };
    kiln_watch w;
    if (kiln_sandbox_run(&job, &s->map, &s->cg, &s->out, &s->err, &w, err) != KILN_E_OK)
        goto free_argv;

    kiln_run_report r;
    memset(&r, 0, sizeof r);
    kiln_cgroup_read_usage(&s->cg, &r.usage);
    kiln_cgroup_release(&s->cg);

    if (opt->render && !w.setup_failed)
        renders = kiln_render_job_specs(&s->jd, &s->map, l, l->output_file_bytes, opt->render);

    kiln_collect_limits cl = {.files = l->output_files,
                              .file_bytes = l->output_file_bytes,
                              .total_bytes = l->output_total_bytes};
    const char *const skip_render[] = {KILN_SPEC_DIR, NULL};
    const char *const skip_none[] = {NULL};
    if (kiln_collect(s->jd.fd, opt->out_dir, &cl, opt->render ? skip_render : skip_none,
                     &collected, err) != KILN_E_OK)
        goto free_json;

    r.language = opt->language;
    r.limits = l;
    r.setup_failed = w.setup_failed;
    memcpy(r.setup_what, w.setup_what, sizeof r.setup_what);
    r.setup_errno = w.setup_errno;
    r.exited = w.exited;
    r.wait_status = w.wait_status;
    r.timeout = w.timeout;
    r.stream_killed = w.stream_killed;
    r.wall_seconds = w.wall_seconds;
    r.out = &s->out;
    r.err = &s->err;
    r.collected = &collected;
    r.renders = renders;
    r.out_dir = opt->out_dir;
    result = kiln_result_build(&r);
    if (!result)
        kiln_error_set(err, KILN_E_NOMEM, "", "out of memory building the result");

free_json:
    kiln_collect_result_release(&collected);
    json_decref(renders);
free_argv:
    free(argv);
release_streams:
    kiln_stream_release(&s->out);
    kiln_stream_release(&s->err);
    kiln_cgroup_release(&s->cg);
release_jobdir:
    kiln_jobdir_release(&s->jd);
    free(font_list);
join_builder:
    if (building)
        pthread_join(builder, NULL);
    kiln_seccomp_program_release(&fb.prog);
    return result;
}

/* Runs in the forked supervisor: the outcome goes to fd as JSON, either
 * {"result": ...} or {"error": {"code", "message"}}. */
static _Noreturn void supervisor_main(const kiln_run_options *opt, const kiln_run_limits *l,
                                      int fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    supervisor s;
    memset(&s, 0, sizeof s);
    s.opt = opt;
    s.limits = l;
    s.jd.fd = -1;
    kiln_error err;
    memset(&err, 0, sizeof err);
    json_t *result = supervise(&s, &err);
    json_t *msg = result ? json_pack("{s:o}", "result", result)
                         : json_pack("{s:{s:i, s:s}}", "error", "code", (int)err.code, "message",
                                     err.message);
    /* One write of the whole text rather than jansson's many small ones. */
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    int rc = text ? 0 : 1;
    size_t len = text ? strlen(text) : 0, done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = 1;
            break;
        }
        done += (size_t)n;
    }
    free(text);
    json_decref(msg);
    close(fd);
    _exit(rc);
}

static kiln_status check_options(const kiln_run_options *opt, const kiln_run_limits *l,
                                 kiln_error *err)
{
    if (!opt->code)
        return kiln_error_set(err, KILN_E_USAGE, "", "no program to run");
    if (opt->language != KILN_LANG_PYTHON && opt->language != KILN_LANG_BASH)
        return kiln_error_set(err, KILN_E_USAGE, "", "unknown language");
    kiln_status st = kiln_job_limits_check(l, err);
    if (st != KILN_E_OK)
        return st;
    if (opt->out_dir && opt->out_dir[0] != '/')
        return kiln_error_set(err, KILN_E_USAGE, "", "the output directory must be absolute");
    if (opt->ro_bind_count > KILN_RUN_RO_BINDS_MAX)
        return kiln_error_set(err, KILN_E_USAGE, "", "--ro-bind: at most %d paths",
                              KILN_RUN_RO_BINDS_MAX);
    for (size_t i = 0; i < opt->ro_bind_count; i++) {
        st = check_ro_bind(opt->ro_binds[i], err);
        if (st != KILN_E_OK)
            return st;
    }
    return KILN_E_OK;
}

kiln_status kiln_run_job(const kiln_run_options *opt, json_t **result, kiln_error *err)
{
    *result = NULL;
    kiln_run_limits l = opt->limits;
    kiln_job_limits_fill(&l);
    kiln_status st = check_options(opt, &l, err);
    if (st != KILN_E_OK)
        return st;

    if (opt->in_process) {
        supervisor s;
        memset(&s, 0, sizeof s);
        s.opt = opt;
        s.limits = &l;
        s.jd.fd = -1;
        kiln_error local;
        memset(&local, 0, sizeof local);
        *result = supervise(&s, err ? err : &local);
        return *result ? KILN_E_OK : (err ? err : &local)->code;
    }

    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot make a pipe: %s",
                              strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(pipefd[0]);
        supervisor_main(opt, &l, pipefd[1]);
    }
    close(pipefd[1]);

    /* Read the supervisor's whole answer, then parse it in one go
     * (json_loadfd would read it a byte at a time). */
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    while (text) {
        if (len == cap) {
            char *grown = realloc(text, cap * 2);
            if (!grown) {
                free(text);
                text = NULL;
                break;
            }
            text = grown;
            cap *= 2;
        }
        ssize_t n = read(pipefd[0], text + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(pipefd[0]);
    json_t *msg = text ? json_loadb(text, len, JSON_ALLOW_NUL, NULL) : NULL;
    free(text);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    json_t *res = json_object_get(msg, "result");
    json_t *error = json_object_get(msg, "error");
    if (json_is_object(res)) {
        *result = json_incref(res);
        st = KILN_E_OK;
    } else if (json_is_object(error)) {
        json_int_t code = json_integer_value(json_object_get(error, "code"));
        const char *message = json_string_value(json_object_get(error, "message"));
        st = kiln_error_set(err,
                            code > 0 && code < KILN_E__COUNT ? (kiln_status)code
                                                             : KILN_E_INTERNAL,
                            "", "%s", message ? message : "the runner failed");
    } else {
        st = kiln_error_set(err, KILN_E_INTERNAL, "", "the runner's supervisor ended (%s%d)",
                            WIFSIGNALED(status) ? "signal " : "status ",
                            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
    json_decref(msg);
    return st;
}
