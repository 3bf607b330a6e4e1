/*
 * session.c - the supervisor of one session (exec/session.h).
 *
 * kiln_session_open builds the sandbox exactly as `kiln run` does (job
 * directory, cgroup, kiln_contain_spawn) but with nothing to run in it: its
 * init reports ready and waits (contain.c's hold). The interpreter comes
 * from the zygote (zygote.c), which enters the sandbox's namespaces; this
 * process puts the zygote's child in the session's cgroup before it may go
 * on, and sends the seccomp filter it will install.
 *
 * After that the supervisor speaks to the interpreter over four pipes: the
 * requests (its fd 3), the events (its fd 4), its stdout and its stderr.
 * Everything on the event pipe is untrusted (user code can write to fd 4
 * as well as the runtime can): frames are read into a buffer of fixed
 * maximum, parsed, checked member by member and counted against the cell's
 * caps, and they can only describe the cell's own outputs. The cell's
 * status, times, memory, files and documents are the supervisor's own
 * observations, never the interpreter's word.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <linux/openat2.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fdio.h"
#include "common/media_type.h"
#include "common/templates.h"
#include "contract/errors.h"
#include "common/line_reader.h"
#include "exec/exec_internal.h"
#include "exec/session.h"
#include "../common/banned.h"

/* What the docs (docs/session.md "Limits") call them. */
#define IDLE_DEFAULT_SECONDS (20.0 * 60)
#define LIFETIME_DEFAULT_SECONDS (12.0 * 3600)
#define INTERRUPT_GRACE_SECONDS 3.0 /* after SIGINT, before the session is killed */
#define START_SECONDS 60.0          /* for a private zygote's imports and the first fork */
#define CPU_POLL_MS 50

typedef enum {
    STOP_NONE,
    STOP_USER,    /* an interrupt request */
    STOP_TIMEOUT, /* the cell's wall or CPU time */
    STOP_OUTPUT,  /* stdout + stderr passed stream_kill_bytes */
} stop_reason;

typedef struct cell {
    uint64_t number;
    json_t *id; /* the request's, or NULL */
    kiln_run_language language;
    double started, deadline, cpu_limit, stop_at;
    uint64_t cpu_start, oom_start;
    stop_reason stop;
    int running;        /* the runtime's "running" frame came: SIGINT reaches the cell */
    int signal_pending; /* a stop waits for it */
    kiln_stream out, err;
    size_t out_emitted, err_emitted;
    json_t *outputs; /* display and result bundles, in order */
    json_t *error;
    const char *runtime_status; /* the runtime's "done" status, when it came */
    uint64_t display_bytes, display_count, dropped_displays, dropped_bytes;
} cell;

/* An execute request waiting for the running cell to end. */
typedef struct queued_cell {
    char *code;
    size_t len;
    kiln_run_language language;
    double timeout;
    json_t *id;
} queued_cell;

struct kiln_session {
    kiln_run_limits limits;
    kiln_run_language language;
    double idle_seconds, lifetime_seconds;
    const kiln_run_render_step *render;
    kiln_idmap map;
    kiln_jobdir jd;
    kiln_cgroup cg;
    kiln_seccomp_program filter;
    pid_t init_pid, zygote_pid, interp_pid;
    int init_report, zygote_sock, interp_pidfd;
    int ctl, ev, out, err; /* our ends */
    kiln_line_reader frames;
    double created, last_active, created_wall;
    uint64_t cells;
    int busy;
    uint64_t oom_seen; /* the cgroup's memory kills when the last cell ended */
    cell c;
    queued_cell queue[KILN_SESSION_QUEUE_MAX];
    size_t queue_len;
    char *pending; /* the control pipe's unwritten bytes */
    size_t pending_len, pending_off;
    json_t *files;   /* the listing after the last cell: [{name, bytes, media_type, sha256}] */
    json_t *refused; /* the last listing's {"refused": [{name, reason}], "refused_more"} */
    json_t *ended;   /* {"reason", "message", "at"} once lost or expired */
    json_t *python;  /* the ready frame's "python" */
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_t *utc_now_json(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char buf[64];
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(ts.tv_nsec / 1000000));
    return json_string(buf);
}

/* ---- building the sandbox --------------------------------------------- */

static kiln_status become_supervisor(kiln_error *err)
{
    /* As run.c's supervisor: no groups the user namespace would keep, and a
     * mount namespace of our own for the job directory. */
    if (setgroups(0, NULL) < 0)
        return kiln_error_set(err, KILN_E_INTERNAL, "",
                              "kiln session needs root: cannot drop "
                              "groups (%s)",
                              strerror(errno));
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return kiln_error_set(err, KILN_E_INTERNAL, "",
                              "kiln session needs root: cannot make a mount namespace (%s)",
                              strerror(errno));
    return KILN_E_OK;
}

/* Read one report from the sandbox's init within `seconds`. */
static kiln_status wait_ready(kiln_session *s, double seconds, kiln_error *err)
{
    struct pollfd p = {.fd = s->init_report, .events = POLLIN};
    int rc = poll(&p, 1, (int)(seconds * 1000));
    kiln_contain_report r;
    memset(&r, 0, sizeof r);
    if (rc == 1 && read(s->init_report, &r, sizeof r) == (ssize_t)sizeof r) {
        if (r.kind == KILN_REPORT_READY)
            return KILN_E_OK;
        if (r.kind == KILN_REPORT_SETUP) {
            r.what[sizeof r.what - 1] = '\0';
            return kiln_error_set(err, KILN_E_INTERNAL, "",
                                  "the session's sandbox could not %s: %s", r.what,
                                  strerror(r.err_no));
        }
    }
    return kiln_error_set(err, KILN_E_INTERNAL, "", "the session's sandbox did not start");
}

static kiln_status build_sandbox(kiln_session *s, const kiln_session_options *opt,
                                 kiln_error *err)
{
    const char *what = NULL;
    if (kiln_seccomp_build(KILN_SECCOMP_CODE, &s->filter, &what) < 0)
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot build the seccomp filter: %s: %s",
                              what ? what : "?", strerror(errno));
    kiln_idmap_for_job(&s->map, getpid());
    uid_t job_uid = s->map.host_uid_base + 1;
    gid_t job_gid = s->map.host_gid_base + 1;
    kiln_status st = kiln_jobdir_create(&s->jd, s->limits.job_dir_bytes, job_uid, job_gid, err);
    if (st != KILN_E_OK)
        return st;
    for (size_t i = 0; i < opt->input_count; i++) {
        st = kiln_jobdir_add_input(&s->jd, &opt->inputs[i], job_uid, job_gid, err);
        if (st != KILN_E_OK)
            return st;
    }
    char cg_name[64];
    snprintf(cg_name, sizeof cg_name, "kiln-%d-session", (int)getpid());
    kiln_cgroup_roots roots = {.fs_root = "/sys/fs/cgroup",
                               .proc_self_cgroup = "/proc/self/cgroup"};
    st = kiln_cgroup_create(&s->cg, &roots, cg_name, &s->limits, err);
    if (st != KILN_E_OK)
        return st;
    /* A subprocess out of memory must not take the interpreter along. */
    if (kiln_cgroup_oom_kills_one(&s->cg) < 0)
        return kiln_error_set(err, KILN_E_INTERNAL, "",
                              "cannot set the session's memory.oom.group");

    size_t lib_len = 0, session_len = 0;
    const char *lib = kiln_python_lib(&lib_len);
    const char *session_lib = kiln_template("python/kiln_session.py", &session_len);
    kiln_file_blob blobs[2] = {
        {KILN_SANDBOX_LIB_DIR "/kiln.py", lib ? lib : "", lib ? lib_len : 0, 0644, 0},
        {KILN_SANDBOX_LIB_DIR "/kiln_session.py", session_lib ? session_lib : "",
         session_lib ? session_len : 0, 0644, 0},
    };
    int report[2], quiet[2];
    if (pipe2(report, O_CLOEXEC) < 0)
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot make a pipe: %s",
                              strerror(errno));
    if (pipe2(quiet, O_CLOEXEC) < 0) {
        close(report[0]);
        close(report[1]);
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot make a pipe: %s",
                              strerror(errno));
    }
    kiln_contain_job job = {
        .mount = {.job_dir_host = s->jd.path,
                  .tmp_bytes = s->limits.tmp_bytes,
                  .files = blobs,
                  .file_count = 2,
                  .job_dir_owner = KILN_SANDBOX_UID},
        .limits = &s->limits,
        .userns_owner = KILN_ZYGOTE_UID,
        .stdout_fd = quiet[1],
        .stderr_fd = quiet[1],
        .report_fd = report[1],
    };
    s->init_pid = kiln_contain_spawn(&job, &s->map, &s->cg, err);
    close(report[1]);
    close(quiet[0]);
    close(quiet[1]);
    s->init_report = report[0];
    if (s->init_pid < 0)
        return err && err->code != KILN_E_OK ? err->code : KILN_E_INTERNAL;
    return wait_ready(s, 10.0, err);
}

/* ---- the interpreter ---------------------------------------------------- */

static kiln_status zygote_connect(kiln_session *s, const char *path, kiln_error *err)
{
    if (!path) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
            return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot make a socket: %s",
                                  strerror(errno));
        pid_t pid = fork();
        if (pid < 0) {
            close(sv[0]);
            close(sv[1]);
            return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot fork the zygote: %s",
                                  strerror(errno));
        }
        if (pid == 0) {
            /* Our standard input and output are the session's requests and
             * events: never the zygote's to read or write. Standard error
             * stays, for what goes wrong. */
            int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
            if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
                _exit(127);
            close(sv[0]);
            _exit(kiln_zygote_main(sv[1], 0));
        }
        close(sv[1]);
        s->zygote_pid = pid;
        s->zygote_sock = sv[0];
        return KILN_E_OK;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path)
        return kiln_error_set(err, KILN_E_USAGE, "", "the zygote's socket path is too long");
    memcpy(addr.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot reach the zygote at %s: %s", path,
                              strerror(saved));
    }
    s->zygote_sock = fd;
    return KILN_E_OK;
}

static int read_within(int fd, void *buf, size_t len, double seconds)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    double end = now_seconds() + seconds;
    size_t got = 0;
    while (got < len) {
        double left = end - now_seconds();
        if (left <= 0)
            return -1;
        int rc = poll(&p, 1, (int)(left * 1000) + 1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return -1;
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

static const char *const ns_names[KILN_SPAWN_NS_COUNT] = {"user", "mnt",    "net", "ipc",
                                                          "uts",  "cgroup", "pid"};

/* Ask the zygote for an interpreter in our sandbox; fill s's channel ends
 * and the interpreter's pid. */
static kiln_status spawn_interpreter(kiln_session *s, kiln_error *err)
{
    int give[KILN_SPAWN_FD_COUNT];
    int keep[KILN_SPAWN_FD_COUNT];
    for (int i = 0; i < KILN_SPAWN_FD_COUNT; i++)
        give[i] = keep[i] = -1;
    kiln_status st = KILN_E_OK;
    for (int i = 0; i < KILN_SPAWN_NS_COUNT; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)s->init_pid, ns_names[i]);
        give[i] = open(path, O_RDONLY | O_CLOEXEC);
        if (give[i] < 0) {
            st = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot open %s: %s", path,
                                strerror(errno));
            goto close_fds;
        }
    }
    /* Pipes: [0] read, [1] write. The interpreter reads CTL and GO, writes
     * EV, OUT, ERR and REPORT. */
    for (int i = KILN_SPAWN_CTL; i < KILN_SPAWN_FD_COUNT; i++) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
            st = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot make a pipe: %s",
                                strerror(errno));
            goto close_fds;
        }
        int reads = i == KILN_SPAWN_CTL || i == KILN_SPAWN_GO;
        give[i] = reads ? p[0] : p[1];
        keep[i] = reads ? p[1] : p[0];
    }
    kiln_spawn_request req;
    memset(&req, 0, sizeof req);
    req.magic = KILN_SPAWN_MAGIC;
    req.limits = s->limits;
    /* RLIMIT_CPU counts the interpreter's whole life; each cell's CPU time
     * is held by the cgroup's count instead (dispatch). */
    req.limits.cpu_seconds = s->lifetime_seconds;
    kiln_spawn_reply reply;
    memset(&reply, 0, sizeof reply);
    if (kiln_spawn_send(s->zygote_sock, &req, give) < 0 ||
        read_within(s->zygote_sock, &reply, sizeof reply, START_SECONDS) < 0 || reply.pid <= 0) {
        st = kiln_error_set(err, KILN_E_INTERNAL, "",
                            "the zygote could not start an "
                            "interpreter%s%s",
                            reply.err_no ? ": " : "", reply.err_no ? strerror(reply.err_no) : "");
        goto close_fds;
    }
    for (int i = 0; i < KILN_SPAWN_FD_COUNT; i++) {
        close(give[i]);
        give[i] = -1;
    }
    /* In the cgroup before it takes a step into the sandbox. */
    st = kiln_cgroup_attach(&s->cg, (pid_t)reply.pid, err);
    if (st != KILN_E_OK)
        goto close_fds;
    if (kiln_write_all(keep[KILN_SPAWN_GO], "g", 1) < 0 ||
        kiln_write_all(keep[KILN_SPAWN_GO], s->filter.bpf, s->filter.len) < 0) {
        st = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot start the interpreter: %s",
                            strerror(errno));
        goto close_fds;
    }
    close(keep[KILN_SPAWN_GO]);
    keep[KILN_SPAWN_GO] = -1;
    int32_t pid = 0;
    if (read_within(keep[KILN_SPAWN_REPORT], &pid, sizeof pid, START_SECONDS) < 0 || pid <= 0) {
        st = kiln_error_set(err, KILN_E_INTERNAL, "", "the interpreter did not start");
        goto close_fds;
    }
    s->interp_pid = (pid_t)pid;
    s->interp_pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (s->interp_pidfd < 0) {
        st = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot watch the interpreter: %s",
                            strerror(errno));
        goto close_fds;
    }
    s->ctl = keep[KILN_SPAWN_CTL];
    s->ev = keep[KILN_SPAWN_EV];
    s->out = keep[KILN_SPAWN_OUT];
    s->err = keep[KILN_SPAWN_ERR];
    keep[KILN_SPAWN_CTL] = keep[KILN_SPAWN_EV] = keep[KILN_SPAWN_OUT] = keep[KILN_SPAWN_ERR] = -1;
    fcntl(s->ev, F_SETFL, O_NONBLOCK);
    fcntl(s->out, F_SETFL, O_NONBLOCK);
    fcntl(s->err, F_SETFL, O_NONBLOCK);
close_fds:
    for (int i = 0; i < KILN_SPAWN_FD_COUNT; i++) {
        if (give[i] >= 0)
            close(give[i]);
        if (keep[i] >= 0)
            close(keep[i]);
    }
    return st;
}

static kiln_status send_request(kiln_session *s, json_t *msg, kiln_error *err)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    size_t len = strlen(text);
    text[len] = '\0';
    /* A dead interpreter's pipe must be an error here, not SIGPIPE. */
    sigset_t pipe_only, old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    int rc = kiln_write_all(s->ctl, text, len);
    if (rc == 0)
        rc = kiln_write_all(s->ctl, "\n", 1);
    int saved = errno;
    if (rc < 0 && saved == EPIPE) {
        static const struct timespec zero = {0, 0};
        sigtimedwait(&pipe_only, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(text);
    if (rc < 0)
        return kiln_error_set(err, KILN_E_INTERNAL, "", "the interpreter is gone: %s",
                              strerror(saved));
    return KILN_E_OK;
}

static json_t *job_env_json(void)
{
    json_t *env = json_object();
    const char *path = NULL;
    const char *const *vars = kiln_job_environment(&path);
    for (size_t i = 0; env && vars[i]; i++) {
        const char *eq = strchr(vars[i], '=');
        if (!eq)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(eq - vars[i]), vars[i]);
        json_object_set_new(env, name, json_string(eq + 1));
    }
    /* Sessions run Python with OpenBLAS on one thread, as the zygote did:
     * the pool it started with has to stay the size it is. */
    json_object_set_new(env, "OPENBLAS_NUM_THREADS", json_string("1"));
    json_object_set_new(env, "OMP_NUM_THREADS", json_string("1"));
    return env;
}

/* Send the init request and wait for "ready". */
static kiln_status start_runtime(kiln_session *s, kiln_error *err)
{
    json_t *init = json_pack("{s:s,s:o,s:{s:I,s:I,s:I,s:I}}", "op", "init", "env", job_env_json(),
                             "caps", "display_bytes", (json_int_t)KILN_SESSION_DISPLAY_BYTES,
                             "display_items", (json_int_t)KILN_SESSION_DISPLAY_ITEMS,
                             "table_rows", (json_int_t)KILN_SESSION_TABLE_ROWS, "frame_bytes",
                             (json_int_t)KILN_SESSION_FRAME_BYTES);
    if (!init)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    kiln_status st = send_request(s, init, err);
    json_decref(init);
    if (st != KILN_E_OK)
        return st;
    /* The ready frame: a short line, before any user code can write. */
    char line[4096];
    size_t len = 0;
    double end = now_seconds() + START_SECONDS;
    while (len < sizeof line - 1) {
        struct pollfd p = {.fd = s->ev, .events = POLLIN};
        double left = end - now_seconds();
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            break;
        ssize_t n = read(s->ev, line + len, sizeof line - 1 - len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        char *nl = memchr(line, '\n', len);
        if (nl) {
            json_t *ready = json_loadb(line, (size_t)(nl - line), 0, NULL);
            const char *ev = json_string_value(json_object_get(ready, "ev"));
            if (ev && strcmp(ev, "ready") == 0) {
                s->python = json_incref(json_object_get(ready, "python"));
                json_decref(ready);
                return KILN_E_OK;
            }
            json_decref(ready);
            break;
        }
    }
    char why[512] = "";
    ssize_t n = read(s->err, why, sizeof why - 1);
    if (n > 0) {
        why[n] = '\0';
        why[strcspn(why, "\n")] = '\0';
    }
    return kiln_error_set(err, KILN_E_INTERNAL, "", "the session's interpreter did not start%s%s",
                          n > 0 ? ": " : "", n > 0 ? why : "");
}

kiln_status kiln_session_open(const kiln_session_options *opt, kiln_session **out,
                              kiln_error *err)
{
    *out = NULL;
    kiln_session *s = calloc(1, sizeof *s);
    if (!s)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    s->jd.fd = -1;
    s->init_report = s->zygote_sock = s->interp_pidfd = -1;
    s->ctl = s->ev = s->out = s->err = -1;
    kiln_line_reader_init(&s->frames, KILN_SESSION_FRAME_BYTES);
    s->limits = opt->limits;
    kiln_job_limits_fill(&s->limits);
    s->idle_seconds = opt->idle_seconds > 0 ? opt->idle_seconds : IDLE_DEFAULT_SECONDS;
    s->lifetime_seconds = opt->lifetime_seconds > 0 ? opt->lifetime_seconds
                                                    : LIFETIME_DEFAULT_SECONDS;
    s->render = opt->render;
    s->language = opt->language;
    s->created = s->last_active = now_seconds();
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    s->created_wall = (double)wall.tv_sec + (double)wall.tv_nsec / 1e9;
    kiln_status st = kiln_job_limits_check(&s->limits, err);
    if (st == KILN_E_OK)
        st = become_supervisor(err);
    /* The zygote first: a private one imports while the sandbox is built. */
    if (st == KILN_E_OK)
        st = zygote_connect(s, opt->zygote_socket, err);
    if (st == KILN_E_OK)
        st = build_sandbox(s, opt, err);
    if (st == KILN_E_OK)
        st = spawn_interpreter(s, err);
    if (st == KILN_E_OK)
        st = start_runtime(s, err);
    /* From now on the control pipe is written as far as it takes
     * (flush_control). */
    if (st == KILN_E_OK)
        fcntl(s->ctl, F_SETFL, O_NONBLOCK);
    if (st == KILN_E_OK)
        s->files = kiln_session_files(s, err);
    if (st == KILN_E_OK && !s->files)
        st = err ? err->code : KILN_E_INTERNAL;
    if (st != KILN_E_OK) {
        kiln_session_close(s);
        return st;
    }
    s->last_active = now_seconds();
    *out = s;
    return KILN_E_OK;
}

json_t *kiln_session_info(const kiln_session *s)
{
    time_t started = (time_t)s->created_wall;
    struct tm tm;
    gmtime_r(&started, &tm);
    char at[80];
    snprintf(at, sizeof at, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    json_t *info = json_pack("{s:s,s:o,s:f,s:f,s:O?,s:I,s:b,s:I,s:s}", "language",
                             s->language == KILN_LANG_BASH ? "bash" : "python", "limits",
                             kiln_job_limits_json(&s->limits), "idle_timeout", s->idle_seconds,
                             "lifetime", s->lifetime_seconds, "python", s->python, "cells",
                             (json_int_t)s->cells, "busy", s->busy, "cells_waiting",
                             (json_int_t)s->queue_len, "started_at", at);
    if (info && s->ended)
        json_object_set(info, "ended", s->ended);
    return info;
}

/* ---- ending ------------------------------------------------------------ */

/* Killing the PID namespace's init makes the kernel kill every process in
 * it, and its end waits for theirs; reaped, it no longer holds the cgroup
 * (a zombie is still listed there on v1), whose kill catches a process
 * caught mid-fork. */
static void kill_sandbox(kiln_session *s)
{
    if (s->init_pid > 0) {
        kill(s->init_pid, SIGKILL);
        while (waitpid(s->init_pid, NULL, 0) < 0 && errno == EINTR)
            ;
        s->init_pid = 0;
    }
    if (s->cg.version)
        kiln_cgroup_kill_all(&s->cg);
}

/* The session is over: record why, kill what is left, tell the caller. */
static void end_session(kiln_session *s, const char *reason, const char *message, json_t *detail,
                        kiln_session_emit emit, void *arg)
{
    if (s->ended) {
        json_decref(detail);
        return;
    }
    s->ended = json_pack("{s:s,s:s,s:o}", "reason", reason, "message", message, "at",
                         utc_now_json());
    if (s->ended && detail)
        json_object_update(s->ended, detail);
    json_decref(detail);
    kill_sandbox(s);
    if (emit && s->ended) {
        json_t *ev = json_pack("{s:s,s:O}", "event", "lost", "session", s->ended);
        if (ev)
            emit(arg, ev);
        json_decref(ev);
    }
}

const json_t *kiln_session_refused(const kiln_session *s)
{
    return s->refused;
}

const json_t *kiln_session_ended(const kiln_session *s)
{
    return s->ended;
}

int kiln_session_busy(const kiln_session *s)
{
    return s->busy || s->queue_len > 0;
}

static void cell_release(cell *c)
{
    json_decref(c->id);
    json_decref(c->outputs);
    json_decref(c->error);
    kiln_stream_release(&c->out);
    kiln_stream_release(&c->err);
    memset(c, 0, sizeof *c);
}

static void queued_release(queued_cell *q)
{
    free(q->code);
    json_decref(q->id);
    memset(q, 0, sizeof *q);
}

void kiln_session_close(kiln_session *s)
{
    if (!s)
        return;
    if (s->ctl >= 0) {
        close(s->ctl); /* the runtime sees end of file and returns */
        s->ctl = -1;
    }
    kill_sandbox(s);
    if (s->zygote_pid > 0) {
        kill(s->zygote_pid, SIGKILL);
        waitpid(s->zygote_pid, NULL, 0);
    }
    int fds[] = {s->init_report, s->zygote_sock, s->interp_pidfd, s->ev, s->out, s->err};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    cell_release(&s->c);
    for (size_t i = 0; i < s->queue_len; i++)
        queued_release(&s->queue[i]);
    free(s->pending);
    kiln_cgroup_release(&s->cg);
    kiln_jobdir_release(&s->jd);
    kiln_seccomp_program_release(&s->filter);
    kiln_line_reader_release(&s->frames);
    json_decref(s->files);
    json_decref(s->refused);
    json_decref(s->ended);
    json_decref(s->python);
    free(s);
}

/* ---- cells ------------------------------------------------------------- */

static json_t *cell_event(const kiln_session *s, const char *name)
{
    json_t *ev = json_pack("{s:s,s:I}", "event", name, "cell", (json_int_t)s->c.number);
    if (ev && s->c.id)
        json_object_set(ev, "id", s->c.id);
    return ev;
}

static void emit_new(kiln_session_emit emit, void *arg, json_t *ev)
{
    if (ev && emit)
        emit(arg, ev);
    json_decref(ev);
}

/* Write what is pending on the control pipe, as far as it goes without
 * blocking: a runtime that does not read (user code holding it) must not
 * stop the supervisor. -1 when the interpreter is gone. */
static int flush_control(kiln_session *s)
{
    while (s->pending_off < s->pending_len) {
        ssize_t n = write(s->ctl, s->pending + s->pending_off, s->pending_len - s->pending_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            return -1;
        s->pending_off += (size_t)n;
    }
    free(s->pending);
    s->pending = NULL;
    s->pending_len = s->pending_off = 0;
    return 0;
}

/* The execute request for the next cell, queued on the control pipe. */
static kiln_status send_execute(kiln_session *s, const queued_cell *q, kiln_error *err)
{
    json_t *msg = json_pack("{s:s,s:I,s:s,s:s%}", "op", "execute", "cell",
                            (json_int_t)(s->cells + 1), "language",
                            q->language == KILN_LANG_BASH ? "bash" : "python", "code", q->code,
                            q->len);
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    if (!text)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    size_t len = strlen(text);
    char *line = realloc(text, len + 2);
    if (!line) {
        free(text);
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    }
    line[len] = '\n';
    free(s->pending);
    s->pending = line;
    s->pending_len = len + 1;
    s->pending_off = 0;
    if (flush_control(s) < 0)
        return kiln_error_set(err, KILN_E_GONE, "", "the interpreter is gone");
    return KILN_E_OK;
}

static kiln_status start_cell(kiln_session *s, const queued_cell *q, kiln_session_emit emit,
                              void *arg, kiln_error *err)
{
    cell_release(&s->c);
    cell *c = &s->c;
    kiln_status st = kiln_stream_init(&c->out, s->limits.stream_keep_bytes, err);
    if (st == KILN_E_OK)
        st = kiln_stream_init(&c->err, s->limits.stream_keep_bytes, err);
    c->outputs = json_array();
    if (st == KILN_E_OK && !c->outputs)
        st = kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    if (st == KILN_E_OK)
        st = send_execute(s, q, err);
    if (st != KILN_E_OK) {
        cell_release(c);
        return st;
    }
    c->number = ++s->cells;
    c->id = json_incref(q->id);
    c->language = q->language;
    c->started = now_seconds();
    c->deadline = c->started + (q->timeout > 0 ? q->timeout : s->limits.wall_seconds);
    c->cpu_limit = s->limits.cpu_seconds;
    kiln_cgroup_usage u;
    memset(&u, 0, sizeof u);
    kiln_cgroup_read_usage(&s->cg, &u);
    c->cpu_start = u.cpu_usec;
    c->oom_start = u.oom_kills;
    s->busy = 1;
    s->last_active = c->started;
    emit_new(emit, arg, cell_event(s, "started"));
    return KILN_E_OK;
}

kiln_status kiln_session_execute(kiln_session *s, const char *code, size_t len,
                                 const kiln_run_language *language, double timeout, json_t *id,
                                 kiln_session_emit emit, void *arg, kiln_error *err)
{
    if (s->ended)
        return kiln_error_set(err, KILN_E_GONE, "", "the session has ended: %s",
                              json_string_value(json_object_get(s->ended, "message")));
    if (timeout > s->limits.wall_seconds) {
        kiln_error_set(err, KILN_E_LIMIT, "/timeout",
                       "a cell's timeout may be at most the session's wall_seconds limit");
        err->limit = s->limits.wall_seconds;
        err->actual = timeout;
        return KILN_E_LIMIT;
    }
    if (s->busy && s->queue_len == KILN_SESSION_QUEUE_MAX)
        return kiln_error_set(err, KILN_E_BUSY, "",
                              "cell %llu is running and %d more are waiting",
                              (unsigned long long)s->c.number, KILN_SESSION_QUEUE_MAX);
    queued_cell q = {.code = malloc(len + 1),
                     .len = len,
                     .language = language ? *language : s->language,
                     .timeout = timeout,
                     .id = json_incref(id)};
    if (!q.code) {
        queued_release(&q);
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    }
    memcpy(q.code, code, len);
    q.code[len] = '\0';
    if (s->busy) {
        /* One at a time, in order, as a notebook's kernel runs them. */
        s->queue[s->queue_len++] = q;
        json_t *ev = json_pack("{s:s,s:i}", "event", "queued", "ahead", (int)s->queue_len);
        if (ev && id)
            json_object_set(ev, "id", id);
        emit_new(emit, arg, ev);
        return KILN_E_OK;
    }
    kiln_status st = start_cell(s, &q, emit, arg, err);
    queued_release(&q);
    return st;
}

/* After a cell: the next one waiting, or, when the session has ended,
 * each waiting one answered with why it cannot run. */
static void next_cell(kiln_session *s, kiln_session_emit emit, void *arg)
{
    while (s->queue_len > 0 && !s->busy) {
        queued_cell q = s->queue[0];
        memmove(s->queue, s->queue + 1, (s->queue_len - 1) * sizeof s->queue[0]);
        s->queue_len--;
        kiln_error err;
        memset(&err, 0, sizeof err);
        if (s->ended)
            kiln_error_set(&err, KILN_E_GONE, "", "the session has ended: %s",
                           json_string_value(json_object_get(s->ended, "message")));
        if (s->ended || start_cell(s, &q, emit, arg, &err) != KILN_E_OK) {
            json_t *ev = json_pack("{s:s}", "event", "rejected");
            json_t *list = kiln_error_list_json(&err);
            if (ev && list)
                json_object_update(ev, list);
            if (ev && q.id)
                json_object_set(ev, "id", q.id);
            if (ev && s->ended)
                json_object_set(ev, "session", s->ended);
            emit_new(emit, arg, ev);
            json_decref(list);
        }
        queued_release(&q);
    }
}

/* SIGINT reaches the cell only once the runtime has said it is running the
 * user's code (its "running" frame): before that, the runtime ignores the
 * signal, and the interrupt would be lost while the cell goes on. So a stop
 * asked for before waits for that frame (take_frame). The grace period
 * runs from the asking either way. */
static void signal_cell(kiln_session *s)
{
    if (s->c.running)
        kill(s->interp_pid, SIGINT);
    else
        s->c.signal_pending = 1;
}

int kiln_session_interrupt(kiln_session *s)
{
    if (!s->busy || s->ended)
        return 0;
    if (s->c.stop == STOP_NONE) {
        s->c.stop = STOP_USER;
        s->c.stop_at = now_seconds() + INTERRUPT_GRACE_SECONDS;
    }
    signal_cell(s);
    return 1;
}

static void stop_cell(kiln_session *s, stop_reason why)
{
    if (s->c.stop != STOP_NONE)
        return;
    s->c.stop = why;
    s->c.stop_at = now_seconds() + INTERRUPT_GRACE_SECONDS;
    signal_cell(s);
}

/* ---- the streams ------------------------------------------------------- */

static void emit_stream_chunk(kiln_session *s, int is_err, int final, kiln_session_emit emit,
                              void *arg)
{
    cell *c = &s->c;
    json_t *text = kiln_stream_take_chunk(is_err ? &c->err : &c->out,
                                          is_err ? &c->err_emitted : &c->out_emitted, final);
    if (!text)
        return;
    json_t *ev = cell_event(s, is_err ? "stderr" : "stdout");
    if (ev)
        json_object_set_new(ev, "text", text);
    else
        json_decref(text);
    emit_new(emit, arg, ev);
}

/* Read what a stream pipe holds. 1 at end of file. */
static int drain_stream(kiln_session *s, int is_err, kiln_session_emit emit, void *arg)
{
    char buf[65536];
    int fd = is_err ? s->err : s->out;
    int eof = 0, got = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            eof = n == 0;
            break;
        }
        got = 1;
        /* Between cells (a thread or a background process still writing)
         * the bytes belong to no cell and are dropped. */
        if (s->busy)
            kiln_stream_feed(is_err ? &s->c.err : &s->c.out, buf, (size_t)n);
    }
    if (got && s->busy) {
        emit_stream_chunk(s, is_err, 0, emit, arg);
        if (s->c.out.total + s->c.err.total > s->limits.stream_kill_bytes)
            stop_cell(s, STOP_OUTPUT);
    }
    return eof;
}

/* ---- frames ------------------------------------------------------------ */

/* A display or result frame: the cell's event, kept for its record, when
 * the cell's caps have room for it. */
static void take_display(kiln_session *s, const kiln_frame *f, size_t frame_len,
                         kiln_session_emit emit, void *arg)
{
    cell *c = &s->c;
    const char *kind = f->kind == KILN_FRAME_DISPLAY ? "display" : "result";
    if (c->display_count >= KILN_SESSION_DISPLAY_ITEMS ||
        c->display_bytes + frame_len > KILN_SESSION_DISPLAY_BYTES) {
        c->dropped_displays++;
        c->dropped_bytes += frame_len;
        return;
    }
    c->display_count++;
    c->display_bytes += frame_len;
    json_t *ev = cell_event(s, kind);
    if (!ev)
        return;
    json_t *metadata = f->metadata ? json_incref(f->metadata) : json_object();
    json_object_set(ev, "data", f->data);
    json_object_set(ev, "metadata", metadata);
    json_t *kept = json_pack("{s:s,s:O,s:O}", "type", kind, "data", f->data, "metadata",
                             metadata);
    json_decref(metadata);
    if (kept)
        json_array_append_new(c->outputs, kept);
    emit_new(emit, arg, ev);
}

/* The cell's exception: the first error frame (a cell raises once). */
static void take_error(kiln_session *s, const kiln_frame *f, kiln_session_emit emit, void *arg)
{
    if (s->c.error)
        return;
    s->c.error = json_pack("{s:s,s:s,s:O}", "ename", f->ename, "evalue", f->evalue, "traceback",
                           f->traceback);
    json_t *ev = cell_event(s, "error");
    if (ev && s->c.error)
        json_object_update(ev, s->c.error);
    emit_new(emit, arg, ev);
}

static void finish_cell(kiln_session *s, kiln_session_emit emit, void *arg);

typedef struct frame_sink {
    kiln_session *s;
    kiln_session_emit emit;
    void *arg;
} frame_sink;

/* One line from the event pipe (frames.c says what counts as a frame). */
static void take_frame(void *arg, const char *line, size_t len)
{
    frame_sink *sink = arg;
    kiln_session *s = sink->s;
    kiln_frame f;
    if (!s->busy || kiln_frame_parse(line, len, s->c.number, &f) == KILN_FRAME_NONE)
        return;
    /* What came before this frame on stdout and stderr came before it. */
    drain_stream(s, 0, sink->emit, sink->arg);
    drain_stream(s, 1, sink->emit, sink->arg);
    switch (f.kind) {
    case KILN_FRAME_RUNNING:
        s->c.running = 1;
        if (s->c.signal_pending) {
            s->c.signal_pending = 0;
            kill(s->interp_pid, SIGINT);
        }
        break;
    case KILN_FRAME_DISPLAY:
    case KILN_FRAME_RESULT:
        take_display(s, &f, len, sink->emit, sink->arg);
        break;
    case KILN_FRAME_ERROR:
        take_error(s, &f, sink->emit, sink->arg);
        break;
    case KILN_FRAME_DONE:
        s->c.runtime_status = f.status;
        s->c.dropped_displays += f.dropped_displays;
        s->c.dropped_bytes += f.dropped_bytes;
        kiln_frame_release(&f);
        finish_cell(s, sink->emit, sink->arg);
        return;
    case KILN_FRAME_NONE:
        break;
    }
    kiln_frame_release(&f);
}

/* Read the event pipe; complete lines go to take_frame. 1 at end of file. */
static int read_frames(kiln_session *s, kiln_session_emit emit, void *arg)
{
    frame_sink sink = {s, emit, arg};
    char buf[65536];
    for (;;) {
        ssize_t n = read(s->ev, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0;
        uint64_t before = s->frames.oversized;
        if (kiln_line_reader_feed(&s->frames, buf, (size_t)n, take_frame, &sink) < 0)
            return 0; /* out of memory: these bytes are lost, the cell's caps stand */
        if (s->busy)
            s->c.dropped_displays += s->frames.oversized - before;
    }
}

/* ---- a cell's end ------------------------------------------------------ */

/* The cell's status from what the supervisor saw. A stop the supervisor
 * asked for names the status only when the cell did stop (the runtime
 * says "interrupted"): a cell that ended on its own as the signal came is
 * what it was. */
static const char *final_status(const kiln_session *s, uint64_t oom_kills)
{
    const cell *c = &s->c;
    int oom = oom_kills > c->oom_start;
    if (s->ended)
        return oom ? "memory_limit" : "session_lost";
    if (strcmp(c->runtime_status, "interrupted") == 0) {
        if (c->stop == STOP_TIMEOUT)
            return "timeout";
        if (c->stop == STOP_OUTPUT)
            return "output_limit";
        return "interrupted";
    }
    if (oom && strcmp(c->runtime_status, "ok") != 0)
        return "memory_limit";
    return c->runtime_status;
}

/* The files the cell made or changed: entries of `now` whose name is new
 * or whose digest differs from `before`. */
static json_t *changed_files(json_t *before, json_t *now, json_t *documents)
{
    json_t *changed = json_array();
    size_t i, j;
    json_t *f, *g;
    json_array_foreach(now, i, f) {
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *sha = json_string_value(json_object_get(f, "sha256"));
        int same = 0;
        json_array_foreach(before, j, g) {
            if (json_equal(json_object_get(g, "name"), json_object_get(f, "name"))) {
                const char *old = json_string_value(json_object_get(g, "sha256"));
                same = old && sha && strcmp(old, sha) == 0;
                break;
            }
        }
        if (same)
            continue;
        json_t *copy = json_deep_copy(f);
        int is_doc = 0;
        json_array_foreach(documents, j, g) {
            const char *doc = json_string_value(json_object_get(g, "name"));
            if (doc && name && strcmp(doc, name) == 0 && json_is_true(json_object_get(g, "ok")))
                is_doc = 1;
        }
        json_object_set_new(copy, "source", json_string(is_doc ? "document" : "output"));
        json_array_append_new(changed, copy);
    }
    return changed;
}

/* Remove the specs the renders read: the next cell renders only what it
 * saves itself. */
static void remove_specs(kiln_session *s, json_t *renders)
{
    struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                      RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
    int dir = (int)syscall(SYS_openat2, s->jd.fd, KILN_SPEC_DIR, &how, sizeof how);
    if (dir < 0)
        return;
    size_t i;
    json_t *r;
    json_array_foreach(renders, i, r) {
        const char *spec = json_string_value(json_object_get(r, "spec"));
        const char *prefix = KILN_SPEC_DIR "/";
        if (spec && strncmp(spec, prefix, strlen(prefix)) == 0 &&
            !strchr(spec + strlen(prefix), '/'))
            unlinkat(dir, spec + strlen(prefix), 0);
    }
    close(dir);
}

static void finish_cell(kiln_session *s, kiln_session_emit emit, void *arg)
{
    cell *c = &s->c;
    if (!c->runtime_status)
        c->runtime_status = "error";
    drain_stream(s, 0, emit, arg);
    drain_stream(s, 1, emit, arg);
    emit_stream_chunk(s, 0, 1, emit, arg);
    emit_stream_chunk(s, 1, 1, emit, arg);
    double wall = now_seconds() - c->started;
    kiln_cgroup_usage u;
    memset(&u, 0, sizeof u);
    kiln_cgroup_read_usage(&s->cg, &u);
    const char *status = final_status(s, u.oom_kills);
    s->oom_seen = u.oom_kills;

    json_t *documents = NULL, *changed = NULL;
    if (!s->ended) {
        json_t *renders = s->render
                              ? kiln_render_job_specs(&s->jd, &s->map, &s->limits,
                                                      s->limits.output_file_bytes, s->render)
                              : NULL;
        documents = renders ? renders : json_array();
        if (renders)
            remove_specs(s, renders);
        kiln_error err;
        memset(&err, 0, sizeof err);
        json_t *now = kiln_session_files(s, &err);
        if (now) {
            changed = changed_files(s->files, now, documents);
            json_decref(s->files);
            s->files = now;
        }
    }
    json_t *rec = cell_event(s, "cell");
    if (rec) {
        json_object_set_new(rec, "status", json_string(status));
        json_object_set_new(rec, "execution_count", json_integer((json_int_t)c->number));
        json_object_set_new(rec, "wall_seconds", json_real(wall));
        json_object_set_new(rec, "cpu_seconds",
                            json_real((double)(u.cpu_usec - c->cpu_start) / 1e6));
        json_object_set_new(rec, "peak_memory_bytes", json_integer((json_int_t)u.peak_bytes));
        json_object_set_new(rec, "stdout", kiln_stream_json(&c->out));
        json_object_set_new(rec, "stderr", kiln_stream_json(&c->err));
        json_object_set(rec, "outputs", c->outputs);
        json_object_set(rec, "error", c->error ? c->error : json_null());
        json_object_set_new(rec, "files", changed ? changed : json_array());
        if (!s->ended && s->refused)
            json_object_update(rec, s->refused);
        json_object_set_new(rec, "documents", documents ? documents : json_array());
        json_object_set_new(rec, "dropped",
                            json_pack("{s:I,s:I}", "displays", (json_int_t)c->dropped_displays,
                                      "bytes", (json_int_t)c->dropped_bytes));
        if (s->ended)
            json_object_set(rec, "session", s->ended);
    } else {
        json_decref(changed);
        json_decref(documents);
    }
    s->busy = 0;
    s->last_active = now_seconds();
    emit_new(emit, arg, rec);
    next_cell(s, emit, arg);
}

/* ---- the loop ---------------------------------------------------------- */

size_t kiln_session_pollfds(kiln_session *s, struct pollfd *fds, size_t cap)
{
    size_t n = 0;
    int want[] = {s->ev, s->out, s->err, s->interp_pidfd};
    if (s->ended)
        return 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0] && n < cap; i++)
        if (want[i] >= 0)
            fds[n++] = (struct pollfd){.fd = want[i], .events = POLLIN};
    if (s->pending && n < cap)
        fds[n++] = (struct pollfd){.fd = s->ctl, .events = POLLOUT};
    return n;
}

int kiln_session_timeout_ms(const kiln_session *s)
{
    if (s->ended)
        return -1;
    double now = now_seconds(), next;
    if (s->busy) {
        next = s->c.stop != STOP_NONE ? s->c.stop_at : s->c.deadline;
        double ms = (next - now) * 1000;
        return ms < 0 ? 0 : ms > CPU_POLL_MS ? CPU_POLL_MS : (int)ms + 1;
    }
    next = s->last_active + s->idle_seconds;
    double life = s->created + s->lifetime_seconds;
    if (life < next)
        next = life;
    double ms = (next - now) * 1000 + 1;
    return ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms;
}

static void check_timers(kiln_session *s, kiln_session_emit emit, void *arg)
{
    double now = now_seconds();
    if (now >= s->created + s->lifetime_seconds) {
        end_session(s, "lifetime", "the session reached its maximum lifetime", NULL, emit, arg);
        return;
    }
    if (!s->busy) {
        if (now >= s->last_active + s->idle_seconds)
            end_session(s, "idle_timeout", "the session was idle for its idle timeout", NULL,
                        emit, arg);
        return;
    }
    cell *c = &s->c;
    if (c->stop != STOP_NONE) {
        if (now >= c->stop_at)
            end_session(s, "unresponsive",
                        "the cell did not stop within the grace period after an interrupt, so "
                        "the session was killed",
                        NULL, emit, arg);
        return;
    }
    kiln_cgroup_usage u;
    memset(&u, 0, sizeof u);
    kiln_cgroup_read_usage(&s->cg, &u);
    if (now >= c->deadline || (double)(u.cpu_usec - c->cpu_start) / 1e6 > c->cpu_limit)
        stop_cell(s, STOP_TIMEOUT);
}

/* The interpreter has gone: out of memory, killed or exited. */
/* How the interpreter ended, from its pidfd (Linux 6.15's PIDFD_GET_INFO
 * with PIDFD_INFO_EXIT, declared here for older headers): the zygote,
 * not we, reaps it. 0 with *wait_status, or -1 where the kernel cannot
 * say. */
struct kiln_pidfd_info {
    uint64_t mask, cgroupid;
    uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
    int32_t exit_code;
};
#define KILN_PIDFD_GET_INFO _IOWR(0xFF, 11, struct kiln_pidfd_info)
#define KILN_PIDFD_INFO_EXIT (1ull << 3)

static int interpreter_status(const kiln_session *s, int *wait_status)
{
    /* The pidfd turns readable when the process exits; its exit status is
     * there once the zygote has reaped it, a moment later. */
    for (int tries = 0; tries < 200; tries++) {
        struct kiln_pidfd_info info;
        memset(&info, 0, sizeof info);
        info.mask = KILN_PIDFD_INFO_EXIT;
        if (ioctl(s->interp_pidfd, KILN_PIDFD_GET_INFO, &info) < 0 && errno != ESRCH)
            return -1; /* a kernel before 6.15 */
        if (info.mask & KILN_PIDFD_INFO_EXIT) {
            *wait_status = info.exit_code;
            return 0;
        }
        struct timespec pause = {0, 500000};
        nanosleep(&pause, NULL);
    }
    return -1;
}

/* The interpreter has gone: out of memory, killed, crashed or exited. */
static void interpreter_gone(kiln_session *s, kiln_session_emit emit, void *arg)
{
    kiln_cgroup_usage u;
    memset(&u, 0, sizeof u);
    kiln_cgroup_read_usage(&s->cg, &u);
    int oom = u.oom_kills > (s->busy ? s->c.oom_start : s->oom_seen), status = 0;
    int known = interpreter_status(s, &status) == 0;
    char message[160];
    const char *reason = "interpreter_exited";
    if (oom) {
        reason = "memory_limit";
        snprintf(message, sizeof message,
                 "the interpreter was killed for using more than the session's memory limit");
    } else if (known && WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
        reason = "seccomp_violation";
        snprintf(message, sizeof message,
                 "the interpreter was killed for a system call the sandbox forbids (SIGSYS)");
    } else if (known && WIFSIGNALED(status)) {
        reason = "interpreter_killed";
        snprintf(message, sizeof message, "the interpreter was killed by SIG%s",
                 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
    } else if (known) {
        snprintf(message, sizeof message, "the interpreter exited with status %d",
                 WEXITSTATUS(status));
    } else {
        snprintf(message, sizeof message, "the interpreter ended");
    }
    json_t *detail = NULL;
    if (known && WIFSIGNALED(status) && sigabbrev_np(WTERMSIG(status))) {
        char name[16];
        snprintf(name, sizeof name, "SIG%s", sigabbrev_np(WTERMSIG(status)));
        detail = json_pack("{s:s}", "signal", name);
    } else if (known && WIFEXITED(status)) {
        detail = json_pack("{s:i}", "exit_code", WEXITSTATUS(status));
    }
    end_session(s, reason, message, detail, emit, arg);
}

void kiln_session_dispatch(kiln_session *s, const struct pollfd *fds, size_t n,
                           kiln_session_emit emit, void *arg)
{
    int gone = 0;
    for (size_t i = 0; i < n && !s->ended; i++) {
        if (!fds[i].revents)
            continue;
        if (fds[i].fd == s->out)
            drain_stream(s, 0, emit, arg);
        else if (fds[i].fd == s->err)
            drain_stream(s, 1, emit, arg);
        else if (fds[i].fd == s->ev)
            gone |= read_frames(s, emit, arg);
        else if (fds[i].fd == s->interp_pidfd)
            gone = 1;
        else if (fds[i].fd == s->ctl && flush_control(s) < 0)
            gone = 1;
    }
    if (gone && !s->ended) {
        /* Whatever it wrote before it went is still read. */
        read_frames(s, emit, arg);
        interpreter_gone(s, emit, arg);
    }
    if (!s->ended)
        check_timers(s, emit, arg);
    if (s->ended && s->busy)
        finish_cell(s, emit, arg);
    if (s->ended && s->queue_len > 0)
        next_cell(s, emit, arg);
}

/* ---- files ------------------------------------------------------------- */

json_t *kiln_session_files(kiln_session *s, kiln_error *err)
{
    kiln_collect_limits cl = {.files = s->limits.output_files,
                              .file_bytes = s->limits.output_file_bytes,
                              .total_bytes = s->limits.output_total_bytes};
    const char *const skip[] = {KILN_SPEC_DIR, NULL};
    kiln_collect_result res;
    memset(&res, 0, sizeof res);
    if (kiln_collect(s->jd.fd, NULL, &cl, skip, &res, err) != KILN_E_OK)
        return NULL;
    json_t *files = json_incref(res.files);
    /* What the caps left out is listed as kiln run lists it, never lost. */
    json_decref(s->refused);
    s->refused = json_pack("{s:O,s:I}", "refused", res.refused, "refused_more",
                           (json_int_t)res.refused_more);
    kiln_collect_result_release(&res);
    return files;
}

static int open_job_dir(const kiln_session *s)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/self/fd/%d", s->jd.fd);
    return open(dir, O_DIRECTORY | O_CLOEXEC);
}

json_t *kiln_session_put(kiln_session *s, const char *name, const void *data, size_t len,
                         kiln_error *err)
{
    if (s->ended) {
        kiln_error_set(err, KILN_E_GONE, "", "the session has ended");
        return NULL;
    }
    if (!kiln_run_input_name_ok(name)) {
        kiln_error_set(err, KILN_E_USAGE, "/name", "\"%s\" must be one file name", name);
        return NULL;
    }
    int dir = open_job_dir(s);
    if (dir < 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "", "cannot open the job directory: %s",
                       strerror(errno));
        return NULL;
    }
    /* An unnamed file renamed over the name at the end: a reader never sees
     * half of it, and a link of the job's at that name is replaced, never
     * followed. */
    char tmp[64];
    snprintf(tmp, sizeof tmp, ".kiln-put-%d", (int)getpid());
    json_t *entry = NULL;
    int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "", "cannot write %s: %s", name, strerror(errno));
        goto close_dir;
    }
    int rc = kiln_write_all(fd, data, len);
    int saved = errno;
    if (rc == 0 && fchown(fd, s->map.host_uid_base + 1, s->map.host_gid_base + 1) < 0) {
        rc = -1;
        saved = errno;
    }
    close(fd);
    if (rc < 0 || renameat(dir, tmp, dir, name) < 0) {
        if (rc == 0)
            saved = errno;
        unlinkat(dir, tmp, 0);
        kiln_error_set(err, saved == ENOSPC ? KILN_E_LIMIT : KILN_E_INTERNAL, "",
                       "cannot put %s in /mnt/data: %s", name,
                       saved == ENOSPC ? "the session's disk is full" : strerror(saved));
        if (saved == ENOSPC)
            err->limit = (double)s->limits.job_dir_bytes;
        goto close_dir;
    }
    /* The listing a cell's changes are judged against takes the put file
     * in: a cell reports what it changed, not what was put. */
    json_t *files = kiln_session_files(s, err);
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) {
        const char *n = json_string_value(json_object_get(f, "name"));
        if (n && strcmp(n, name) == 0)
            entry = json_incref(f);
    }
    if (files) {
        json_decref(s->files);
        s->files = files;
    }
    if (!entry && err)
        kiln_error_set(err, KILN_E_INTERNAL, "", "%s was written but is not listed", name);
close_dir:
    close(dir);
    return entry;
}

kiln_status kiln_session_get(kiln_session *s, const char *name, char **data, size_t *len,
                             kiln_error *err)
{
    *data = NULL;
    *len = 0;
    if (s->ended)
        return kiln_error_set(err, KILN_E_GONE, "", "the session has ended");
    if (!name[0])
        return kiln_error_set(err, KILN_E_USAGE, "/name", "a file name is needed");
    struct open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                      RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
    int fd = (int)syscall(SYS_openat2, s->jd.fd, name, &how, sizeof how);
    if (fd < 0)
        return kiln_error_set(err, errno == ENOENT ? KILN_E_INPUT : KILN_E_USAGE, "/name",
                              "cannot read %s: %s", name,
                              errno == ELOOP || errno == EXDEV ? "a link" : strerror(errno));
    struct stat st;
    kiln_status rc = KILN_E_OK;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        rc = kiln_error_set(err, KILN_E_USAGE, "/name", "%s is not a regular file", name);
        goto close_fd;
    }
    if ((uint64_t)st.st_size > s->limits.output_file_bytes) {
        rc = kiln_error_set(err, KILN_E_LIMIT, "/name", "%s is larger than output_file_bytes",
                            name);
        err->limit = (double)s->limits.output_file_bytes;
        err->actual = (double)st.st_size;
        goto close_fd;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        rc = kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
        goto close_fd;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    *data = buf;
    *len = got;
close_fd:
    close(fd);
    return rc;
}
