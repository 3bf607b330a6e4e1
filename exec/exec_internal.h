/*
 * exec_internal.h - the pieces of the sandbox, one file per concern.
 *
 * Read contain.c first: contain() is the ordered list of steps the sandbox's
 * first process takes between clone() and exec(). run.c is the supervisor
 * around it (job directory, cgroup, clone, collection, the render step);
 * watch.c follows a contained process to its end (streams, timers); result.c
 * is the only place that builds the JSON result. Nothing here knows what a
 * job's saved specs are: the render step is handed in (exec/run.h).
 *
 *   user.c     user namespace: uid/gid maps, dropping to the job's uid, caps
 *   mount.c    mount namespace: the minimal read-only root, pivot_root
 *   net.c      network namespace: check that it holds nothing but loopback
 *   uts.c      UTS namespace: the sandbox's host name
 *   pid.c      PID namespace: the init that reaps and outlives the job
 *   cgroup.c   cgroups v2 (v1 where that is all there is): limits, usage, kill
 *   rlimits.c  rlimits, the backstop under the cgroup limits
 *   seccomp.c  the libseccomp allow-list
 *   streams.c  stdout/stderr kept up to a cap while counting every byte
 *   collect.c  output files, found without following a symlink
 *   jobdir.c   the job directory (/mnt/data), a size-limited tmpfs
 *   watch.c    a contained process watched to its end: streams, wall and CPU time
 *   render_job.c  the specs a job saved, each handed to the render step in a
 *                 sandbox of its own
 *   fontcache.c   matplotlib's font list, made once by Kiln's own code
 *   zygote.c   the warm interpreter sessions are forked from (session.c is
 *              the supervisor of one session, exec/session.h its face)
 *   frames.c   a session's event channel, read as untrusted input
 *   result.c   the JSON result
 *
 * None of these print. Functions that run inside the sandbox before exec
 * return -1 with errno set and a static description in *what, so contain()
 * can report the failing step to the supervisor as a "setup_failure".
 */
#ifndef KILN_EXEC_INTERNAL_H
#define KILN_EXEC_INTERNAL_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "exec/run.h"

/* Ids inside the sandbox. The job's code runs as KILN_SANDBOX_UID; uid 0
 * inside exists only while contain() sets the sandbox up. */
#define KILN_SANDBOX_UID 1000
#define KILN_SANDBOX_GID 1000
#define KILN_SANDBOX_HOSTNAME "kiln"
#define KILN_JOB_DIR "/mnt/data"              /* inside the sandbox */
#define KILN_SPEC_DIR ".kiln"                 /* under the job dir: specs `import kiln` saved */
#define KILN_SPEC_SUFFIX ".spec.json"         /* .kiln/OUT.spec.json renders to OUT */
#define KILN_SANDBOX_LIB_DIR "/opt/kiln/lib"  /* kiln.py, on PYTHONPATH */
#define KILN_SANDBOX_CODE_DIR "/opt/kiln/job" /* the job's program (main.py / main.sh) */

/* ---- user.c ------------------------------------------------------------ */

/* Host ids a job's sandbox maps to: inside 0 -> base, inside 1000 -> base+1.
 * Derived from the supervisor's pid, so two live jobs never share one (which
 * RLIMIT_NPROC, counted per host uid, relies on). */
typedef struct kiln_idmap {
    uid_t host_uid_base;
    gid_t host_gid_base;
} kiln_idmap;

void kiln_idmap_for_job(kiln_idmap *map, pid_t supervisor);
/* From the supervisor, for the child it cloned: setgroups "deny", uid_map, gid_map. */
kiln_status kiln_user_write_maps(pid_t child, const kiln_idmap *map, kiln_error *err);
/* Inside, after setup: become KILN_SANDBOX_UID/GID with no capabilities
 * (bounding, ambient, effective, permitted, inheritable all empty),
 * no_new_privs set. */
int kiln_user_drop(const char **what);

/* ---- mount.c ----------------------------------------------------------- */

typedef struct kiln_file_blob {
    const char *path; /* absolute path inside the sandbox */
    const char *data;
    size_t len;
    unsigned mode;
    int job_owned; /* file and its directory belong to the job's uid (under /tmp:
                      a cache the job's program must be able to update) */
} kiln_file_blob;

typedef struct kiln_mount_plan {
    const char *job_dir_host;    /* the job directory, bound rw at /mnt/data */
    uint64_t tmp_bytes;          /* size of /tmp, and of /dev/shm */
    const kiln_file_blob *files; /* written into the root before it goes read-only */
    size_t file_count;
    uid_t job_dir_owner;         /* inside uid that owns /mnt/data (KILN_SANDBOX_UID) */
    const char *const *ro_binds; /* host paths bound read-only at the same path (--ro-bind),
                                    checked by kiln_run_job */
    size_t ro_bind_count;
} kiln_mount_plan;

/* Inside, as uid 0 of the new user namespace, in the new mount namespace
 * (and new PID namespace, for /proc): build the root and pivot into it. */
int kiln_mount_root(const kiln_mount_plan *plan, const char **what);

/* ---- net.c, uts.c ------------------------------------------------------ */

/* Checks the network namespace has no interface but "lo". */
int kiln_net_check_isolated(const char **what);
int kiln_uts_set(const char **what);

/* ---- pid.c ------------------------------------------------------------- */

/* As PID 1 of the sandbox: reap every child until `main_child` has ended,
 * then kill everything left in the namespace and reap it. Returns main's
 * wait status. */
int kiln_pid_init_wait(pid_t main_child);
/* Zero the init's copy of the supervisor's command line and environment, so
 * /proc/1/cmdline and /proc/1/environ show the job nothing of the host's
 * command. 0, or -1 when /proc/self/stat cannot be read (nothing changed). */
int kiln_pid_init_hide_command_line(void);

/* ---- cgroup.c ---------------------------------------------------------- */

typedef struct kiln_cgroup_usage {
    uint64_t cpu_usec;   /* CPU time of every process in the group */
    uint64_t peak_bytes; /* memory high-water mark; 0 if unknown */
    uint64_t oom_kills;  /* processes the OOM killer ended for the limit */
    int pids_limit_hit;  /* a fork failed on pids.max */
} kiln_cgroup_usage;

typedef struct kiln_cgroup {
    int version;         /* 2 or 1; 0 = not created */
    char v2_path[512];   /* v2: the job's group */
    char v1_memory[512]; /* v1: one group per controller */
    char v1_pids[512];
    char v1_cpuacct[512];
} kiln_cgroup;

/* Roots to look for cgroup file systems under: "/sys/fs/cgroup" in
 * production; the unit tests point it at a fake tree. */
typedef struct kiln_cgroup_roots {
    const char *fs_root;          /* "/sys/fs/cgroup" */
    const char *proc_self_cgroup; /* "/proc/self/cgroup" */
} kiln_cgroup_roots;

/* Create the job's group(s) under this process's own, with the limits set.
 * v2 when the unified hierarchy has the memory and pids controllers,
 * else v1's memory, pids and cpuacct hierarchies. */
kiln_status kiln_cgroup_create(kiln_cgroup *cg, const kiln_cgroup_roots *roots, const char *name,
                               const kiln_run_limits *limits, kiln_error *err);
kiln_status kiln_cgroup_attach(const kiln_cgroup *cg, pid_t pid, kiln_error *err);
/* A job's group is killed whole when one of its processes runs out of memory
 * (memory.oom.group on v2); a session's may lose a cell's subprocess and
 * keep its interpreter: the kernel then kills the one task it picks. 0, or
 * -1 when the file cannot be written. */
int kiln_cgroup_oom_kills_one(const kiln_cgroup *cg);
void kiln_cgroup_read_usage(const kiln_cgroup *cg, kiln_cgroup_usage *usage);
/* SIGKILL every process in the group (cgroup.kill on v2) and wait until
 * the group is empty or a second has passed. */
void kiln_cgroup_kill_all(const kiln_cgroup *cg);
/* Remove the group(s); safe on a zeroed or half-created kiln_cgroup. */
void kiln_cgroup_release(kiln_cgroup *cg);

/* ---- rlimits.c --------------------------------------------------------- */

int kiln_rlimits_apply(const kiln_run_limits *limits, const char **what);

/* ---- seccomp.c --------------------------------------------------------- */

typedef enum {
    KILN_SECCOMP_CODE,   /* python / bash and what they start */
    KILN_SECCOMP_RENDER, /* the writers, in-process: no exec, no new processes */
} kiln_seccomp_profile;

/* Build the allow-list for a profile and write it to fd as a BPF program.
 * Forbidden calls (ptrace, mount, namespaces, keyring, bpf, ...) kill the
 * process with SIGSYS; other calls not on the list fail with ENOSYS;
 * socket() works for AF_UNIX only (EAFNOSUPPORT otherwise). The supervisor
 * builds it while the sandbox sets up its mounts, which takes the
 * filter's compile time off the job's start. */
int kiln_seccomp_export(kiln_seccomp_profile profile, int fd, const char **what);
/* A built filter, in memory: the supervisor builds each profile's once
 * (on a thread of its own while it prepares the job) and sends the bytes to
 * every sandbox it spawns. */
typedef struct kiln_seccomp_program {
    char *bpf;
    size_t len;
} kiln_seccomp_program;
int kiln_seccomp_build(kiln_seccomp_profile profile, kiln_seccomp_program *prog,
                       const char **what);
void kiln_seccomp_program_release(kiln_seccomp_program *prog);
/* Read a BPF program from fd to its end and install it (TSYNC). Fails when
 * nothing arrives: a job never runs without its filter. */
int kiln_seccomp_install(int fd, const char **what);

/* ---- streams.c --------------------------------------------------------- */

typedef struct kiln_stream {
    char *buf; /* allocated once, keep_max bytes */
    size_t keep_max;
    size_t kept;
    uint64_t total; /* every byte the job wrote */
} kiln_stream;

kiln_status kiln_stream_init(kiln_stream *s, size_t keep_max, kiln_error *err);
void kiln_stream_feed(kiln_stream *s, const char *data, size_t len);
/* {"text": ..., "bytes": total, "truncated": bool}; text is the kept bytes
 * as valid UTF-8 (invalid sequences become U+FFFD, a character cut by the
 * cap is dropped). New reference. */
json_t *kiln_stream_json(const kiln_stream *s);
/* The kept bytes from *emitted on, as a JSON string of valid UTF-8, and
 * *emitted moved past them; NULL when there is nothing (new). Unless
 * `final`, a character whose rest has not arrived waits for the next. */
json_t *kiln_stream_take_chunk(const kiln_stream *s, size_t *emitted, int final);
void kiln_stream_release(kiln_stream *s);

/* ---- collect.c --------------------------------------------------------- */

typedef struct kiln_collect_limits {
    uint32_t files;
    uint64_t file_bytes;
    uint64_t total_bytes;
    uint32_t max_depth;   /* directories below the job dir, default 16 */
    uint32_t max_entries; /* directory entries examined in all, default 10000 */
    uint32_t max_refused; /* refused entries listed; the rest counted */
} kiln_collect_limits;

/* What a collection found. Everything the job left is in exactly one
 * place: files, refused, or counted in refused_more (which includes the
 * not_examined entries). */
typedef struct kiln_collect_result {
    json_t *files;             /* [{"name","bytes","media_type","sha256"}], by name */
    json_t *refused;           /* [{"name","reason"}], by name, at most max_refused; refusals
                                  for the count and total caps give way to any other */
    json_t *refused_by_reason; /* {reason: every refusal of it, listed or not} */
    uint64_t refused_more;     /* refused entries not listed, not_examined included */
    int cap_hit;               /* a count or size cap, or max_entries, refused something */
    uint64_t not_examined;     /* entries past max_entries: counted, never opened */
    uint32_t max_entries;      /* the cap in force */
    char *stopped_in;          /* not_examined > 0: the directory ("." the top, else
                                  relative) the first entry left unexamined was in */
} kiln_collect_result;

/* Walk the job directory (job_dir_fd, opened by the supervisor) and copy
 * every regular file to out_dir (NULL: hash only) through kiln_output.
 * Every open is openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV with O_NOFOLLOW | O_NONBLOCK; a
 * symlink, device, FIFO, socket, over-cap, too deep, too long a path or
 * unreadable entry is refused. At most max_entries entries are examined,
 * each directory's names in sorted order (its own before its
 * subdirectories'); the rest are counted in not_examined. Entries named in
 * `skip` (top-level names, e.g. ".kiln") are passed over. On success *res
 * holds new references: kiln_collect_result_release() it. */
kiln_status kiln_collect(int job_dir_fd, const char *out_dir, const kiln_collect_limits *limits,
                         const char *const *skip, kiln_collect_result *res, kiln_error *err);
void kiln_collect_result_release(kiln_collect_result *res);

/* ---- jobdir.c ---------------------------------------------------------- */

typedef struct kiln_jobdir {
    char path[256]; /* host path of the mount point */
    int fd;         /* O_PATH|O_DIRECTORY of it, -1 when closed */
    int mounted;
} kiln_jobdir;

/* In the supervisor's private mount namespace: a fresh directory with a
 * tmpfs of size_bytes mounted on it, owned by host uid `owner`. */
kiln_status kiln_jobdir_create(kiln_jobdir *jd, uint64_t size_bytes, uid_t owner, gid_t group,
                               kiln_error *err);
kiln_status kiln_jobdir_add_input(kiln_jobdir *jd, const kiln_run_input *in, uid_t owner,
                                  gid_t group, kiln_error *err);
void kiln_jobdir_release(kiln_jobdir *jd);

/* ---- contain.c --------------------------------------------------------- */

/* What the sandbox's PID 1 is asked to do after containment. */
typedef struct kiln_contain_job {
    kiln_mount_plan mount;
    const kiln_run_limits *limits;
    const kiln_seccomp_program *filter; /* the seccomp program (KILN_SECCOMP_CODE or
                                           _RENDER), built by the supervisor */
    /* CODE: exec this argv/envp as the job's main process. */
    char *const *argv;
    char *const *envp;
    /* RENDER: call this in the contained process instead of exec; its
     * return value is the process's exit status. */
    int (*payload)(void *arg);
    void *payload_arg;
    /* HOLD (argv and payload NULL): a session's sandbox. Its init reports
     * KILN_REPORT_READY once contained and then only reaps: the session's
     * interpreter joins it from the zygote (zygote.c). */
    uid_t userns_owner;       /* host euid the user namespace is created as (the
                                 zygote's, for a session, so it may enter); 0 = root */
    int stdout_fd, stderr_fd; /* the job's streams (pipes to the supervisor) */
    int go_fd;                /* read end: 'g' the maps are written, 'c' we are in the cgroup */
    int filter_fd;            /* read end: the seccomp filter (BPF) from the supervisor */
    int report_fd;            /* write end: setup failures and main's status */
} kiln_contain_job;

/* The report PID 1 sends the supervisor on report_fd. */
typedef struct kiln_contain_report {
    int kind;        /* KILN_REPORT_* */
    int wait_status; /* EXITED: main's wait status */
    int err_no;      /* SETUP: errno of the failing step */
    char what[160];  /* SETUP: the failing step */
} kiln_contain_report;
enum { KILN_REPORT_SETUP = 1, KILN_REPORT_EXITED = 2, KILN_REPORT_READY = 3 };

/* Entry point of the cloned child (new user, PID, mount, net, IPC, UTS
 * namespaces). Never returns. */
int kiln_contain(void *job);

/* Spawn kiln_contain in a new set of namespaces under the cgroup and with
 * the maps written. Returns the child's pid (in the supervisor's
 * namespace) or -1 with err set. Used by run.c for the job and by
 * render_job.c for each render. */
pid_t kiln_contain_spawn(kiln_contain_job *job, const kiln_idmap *map, const kiln_cgroup *cg,
                         kiln_error *err);

enum { KILN_TIMEOUT_NONE = 0, KILN_TIMEOUT_WALL = 1, KILN_TIMEOUT_CPU = 2 };

/* ---- watch.c ----------------------------------------------------------- */

/* Watching a contained process from the supervisor: its streams, its
 * report, its wall and CPU time. Used for the job and for each render. */
typedef struct kiln_watch {
    /* in */
    int out_fd, err_fd, report_fd; /* read ends; closed by kiln_watch_run */
    kiln_stream *out, *err;        /* where the streams go */
    const kiln_run_limits *limits;
    const kiln_cgroup *cg;
    /* out */
    int setup_failed;
    char setup_what[160];
    int setup_errno;
    int exited;
    int wait_status;
    int timeout; /* KILN_TIMEOUT_* */
    int stream_killed;
    double wall_seconds;
} kiln_watch;

/* Follow init_pid (from kiln_contain_spawn) until it and every process of
 * its sandbox have ended, killing it at a limit. */
void kiln_watch_run(kiln_watch *w, pid_t init_pid);

/* ---- fontcache.c ------------------------------------------------------- */

/* matplotlib's font list, built once per host by Kiln's own code in a
 * sandbox and handed to every Python job, so a job that plots does not
 * spend a second scanning fonts. kiln_fontcache_load fills *blob (a path
 * under /tmp/.matplotlib, data malloc'ed: free blob->data) from the cache
 * and returns 1, or returns 0. kiln_fontcache_make runs the warm-up
 * sandbox over the job directory, which must still be empty (no input
 * copied yet), stores the list in the cache when it can, and fills *blob
 * the same way. */
int kiln_fontcache_load(kiln_file_blob *blob);
int kiln_fontcache_make(const kiln_jobdir *jd, const kiln_idmap *map,
                        const kiln_run_limits *limits, const kiln_seccomp_program *filter,
                        kiln_file_blob *blob);

/* (watch.c) Spawn job (kiln_contain_spawn) with its stdout and stderr captured into
 * out and err_stream, and watch it to its end (kiln_watch_run): *w says
 * how it ended. Not OK only when it could not be spawned (err set). */
kiln_status kiln_sandbox_run(kiln_contain_job *job, const kiln_idmap *map, const kiln_cgroup *cg,
                             kiln_stream *out, kiln_stream *err_stream, kiln_watch *w,
                             kiln_error *err);

/* The embedded exec/python/kiln.py. */
const char *kiln_python_lib(size_t *len);
/* The environment of a job's program (NULL-terminated, static); `path` is
 * its PATH entry (run.c's job_path), NULL for the default. */
const char *const *kiln_job_environment(const char **path);

/* ---- frames.c ---------------------------------------------------------- */

typedef enum {
    KILN_FRAME_NONE,    /* not a frame of the cell: ignored */
    KILN_FRAME_RUNNING, /* the runtime runs the user's code now */
    KILN_FRAME_DISPLAY,
    KILN_FRAME_RESULT,
    KILN_FRAME_ERROR,
    KILN_FRAME_DONE,
} kiln_frame_kind;

/* A checked frame. Every pointer is borrowed from root. */
typedef struct kiln_frame {
    kiln_frame_kind kind;
    json_t *root;                             /* owned: kiln_frame_release */
    json_t *data, *metadata;                  /* DISPLAY, RESULT: a bundle; an object or NULL */
    const char *ename, *evalue;               /* ERROR */
    json_t *traceback;                        /* ERROR: an array of strings */
    const char *status;                       /* DONE: "ok", "error" or "interrupted" (static) */
    uint64_t dropped_displays, dropped_bytes; /* DONE: what the runtime left out */
} kiln_frame;

/* One line as a frame of cell `cell`; KILN_FRAME_NONE (nothing held) for
 * anything else. */
kiln_frame_kind kiln_frame_parse(const char *line, size_t len, uint64_t cell, kiln_frame *f);
void kiln_frame_release(kiln_frame *f);

/* ---- zygote.c ---------------------------------------------------------- */

/* The zygote's host ids: below KILN_HOST_ID_BASE (user.c), owned by no one.
 * Every session's user namespace is created as this uid, which is what
 * lets the zygote's children enter it. */
#define KILN_ZYGOTE_UID 0x3ffffffeu
#define KILN_ZYGOTE_GID 0x3ffffffeu

/* The descriptors of a spawn request, in order: the session's namespaces
 * (entered in this order), then the interpreter's channels. */
enum {
    KILN_SPAWN_NS_USER,
    KILN_SPAWN_NS_MNT,
    KILN_SPAWN_NS_NET,
    KILN_SPAWN_NS_IPC,
    KILN_SPAWN_NS_UTS,
    KILN_SPAWN_NS_CGROUP,
    KILN_SPAWN_NS_PID,
    KILN_SPAWN_NS_COUNT,
    KILN_SPAWN_CTL = KILN_SPAWN_NS_COUNT, /* read end: requests, the interpreter's fd 3 */
    KILN_SPAWN_EV,                        /* write end: events, its fd 4 */
    KILN_SPAWN_OUT,                       /* write end: its stdout */
    KILN_SPAWN_ERR,                       /* write end: its stderr */
    KILN_SPAWN_GO,     /* read end: 'g' once in the cgroup, then the seccomp filter */
    KILN_SPAWN_REPORT, /* write end: the interpreter's host pid (int32) */
    KILN_SPAWN_FD_COUNT
};

#define KILN_SPAWN_MAGIC 0x6b7a7931u /* "kzy1" */

typedef struct kiln_spawn_request {
    uint32_t magic;
    uint32_t reserved;
    kiln_run_limits limits; /* the interpreter's rlimits */
} kiln_spawn_request;

typedef struct kiln_spawn_reply {
    int32_t pid; /* the zygote's child (to be put in the cgroup), or -1 */
    int32_t err_no;
} kiln_spawn_reply;

/* The zygote's body, in a process forked for it by root: sock is a
 * SOCK_SEQPACKET socketpair end (listening 0; the zygote ends when its
 * peer does) or a listening socket (1). Returns an exit status. */
int kiln_zygote_main(int sock, int listening);
/* One request with its KILN_SPAWN_FD_COUNT descriptors: 0 sent / -1. */
int kiln_spawn_send(int sock, const kiln_spawn_request *req, const int *fds);
/* 1 received (fds filled, close-on-exec), 0 end of file, -1 error or a
 * malformed request (EPROTO; its descriptors closed). */
int kiln_spawn_recv(int sock, kiln_spawn_request *req, int *fds);

/* ---- render_job.c ------------------------------------------------------ */

/* Hand every KILN_SPEC_DIR/OUT.spec.json in the job directory to the
 * render step, to make OUT in the job directory, each in a fresh sandbox
 * (KILN_SECCOMP_RENDER). Returns [{"name": OUT, "spec":
 * ".kiln/OUT.spec.json", "ok": bool, "errors": [...], and what the step
 * adds}]. */
json_t *kiln_render_job_specs(const kiln_jobdir *jd, const kiln_idmap *map,
                              const kiln_run_limits *limits, uint64_t max_bytes,
                              const kiln_run_render_step *step);

/* ---- result.c ---------------------------------------------------------- */

/* Everything the supervisor observed; result.c turns it into the JSON. */
typedef struct kiln_run_report {
    kiln_run_language language;
    const kiln_run_limits *limits;
    int setup_failed; /* a contain step failed: setup_what, setup_errno */
    char setup_what[160];
    int setup_errno;
    int exited; /* wait_status is the main process's */
    int wait_status;
    int timeout;       /* KILN_TIMEOUT_* */
    int stream_killed; /* stdout+stderr passed stream_kill_bytes */
    double wall_seconds;
    kiln_cgroup_usage usage;
    const kiln_stream *out, *err;
    const kiln_collect_result *collected; /* borrowed; NULL when nothing was collected */
    json_t *renders;                      /* borrowed: kiln_render_job_specs's, or NULL */
    const char *out_dir;                  /* absolute, or NULL */
} kiln_run_report;

/* The JSON result (docs/run.md). New reference, NULL only when out of memory. */
json_t *kiln_result_build(const kiln_run_report *r);

#endif
