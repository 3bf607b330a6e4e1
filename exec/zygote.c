/*
 * zygote.c - a warm Python interpreter that forks one process per session.
 *
 * Importing numpy, pandas and matplotlib takes a Python process 1.5 s; a
 * session must answer its first cell in milliseconds. So one process, the
 * zygote, does the imports once (with the interpreter embedded: libpython
 * is loaded with dlopen, only here) and then forks. Each fork enters a
 * session's sandbox, which the session's supervisor has already built with
 * the same containment as `kiln run` (its own user, mount, PID, network,
 * IPC, UTS and cgroup namespaces, its cgroup, its /mnt/data): the child
 * joins those namespaces with setns(), forks once more to be inside the
 * PID namespace, and that grandchild drops to the job's uid, applies the
 * rlimits and the seccomp filter and runs kiln_session.serve(). The pages
 * the imports made are shared copy-on-write with every session (the
 * garbage collector is frozen first, or its first pass would touch and so
 * copy them all).
 *
 * The zygote never runs user code and holds no privilege on the host: it is
 * an unprivileged uid of its own (KILN_ZYGOTE_UID) with no capabilities,
 * no_new_privs and a private /tmp. It can enter a session's namespaces
 * because the supervisor creates each session's user namespace as that uid
 * (the kernel gives the owner of a user namespace every capability in it),
 * and it can enter nothing else. BLAS is held to one thread: a fork keeps
 * only the forking thread, and a thread pool the child believes it has
 * would deadlock it; setns() into a user namespace also refuses a process
 * with threads.
 *
 * Requests arrive on a SOCK_SEQPACKET socket (a socketpair for a session's
 * private zygote, a listening socket for a server's shared one): one
 * kiln_spawn_request with the session's descriptors, answered by one
 * kiln_spawn_reply.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/dirs.h"
#include "common/fdio.h"
#include "common/templates.h"
#include "exec/exec_internal.h"
#include "exec/session.h"
#include "../common/banned.h"

#ifndef KILN_LIBPYTHON
#define KILN_LIBPYTHON "libpython3.11.so.1.0"
#endif

/* The zygote's environment: what the imports see, and so what the
 * sessions inherit until kiln_session.serve() sets the job's own. */
static const char *const zygote_env[] = {
    "PATH=/usr/bin:/bin",
    "HOME=/tmp",
    "TMPDIR=/tmp",
    "LANG=C.UTF-8",
    "LC_ALL=C.UTF-8",
    "MPLBACKEND=Agg",
    "MPLCONFIGDIR=/tmp/.matplotlib",
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONNOUSERSITE=1",
    "OPENBLAS_NUM_THREADS=1",
    "OMP_NUM_THREADS=1",
    "MKL_NUM_THREADS=1",
    "KILN_JOB_DIR=" KILN_JOB_DIR,
    NULL,
};

/* What the zygote imports before it forks. Each import may be missing on a
 * host (a plain Python works without them); the session module is not
 * optional. */
static const char zygote_prelude[] =
    "import sys, gc\n"
    "sys.argv = ['']\n"
    "sys.path.insert(0, '" KILN_SANDBOX_LIB_DIR "')\n"
    "for _name in ('numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot', 'PIL.Image'):\n"
    "    try:\n"
    "        __import__(_name)\n"
    "    except Exception:\n"
    "        pass\n"
    "del _name\n"
    "import kiln, kiln_session\n"
    "gc.collect()\n"
    "gc.freeze()\n";

static const char session_main[] = "import kiln_session\n"
                                   "kiln_session.serve(3, 4)\n";

/* The handful of libpython functions the zygote calls (the stable ABI,
 * declared here so that nothing else of Python's headers is needed). */
typedef struct python_api {
    void (*initialize_ex)(int install_signal_handlers);
    int (*run_simple_string_flags)(const char *command, void *flags);
    void (*before_fork)(void);
    void (*after_fork_parent)(void);
    void (*after_fork_child)(void);
} python_api;

static int python_load(python_api *py, const char **what)
{
    void *lib = dlopen(KILN_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        *what = "load " KILN_LIBPYTHON;
        errno = ENOENT;
        return -1;
    }
    /* dlsym returns void *; the casts through a union keep -Wpedantic
     * quiet about object-to-function pointer conversion. */
    union {
        void *p;
        void (*init)(int);
        int (*run)(const char *, void *);
        void (*v)(void);
    } u;
    if (!(u.p = dlsym(lib, "Py_InitializeEx")))
        goto missing;
    py->initialize_ex = u.init;
    if (!(u.p = dlsym(lib, "PyRun_SimpleStringFlags")))
        goto missing;
    py->run_simple_string_flags = u.run;
    if (!(u.p = dlsym(lib, "PyOS_BeforeFork")))
        goto missing;
    py->before_fork = u.v;
    if (!(u.p = dlsym(lib, "PyOS_AfterFork_Parent")))
        goto missing;
    py->after_fork_parent = u.v;
    if (!(u.p = dlsym(lib, "PyOS_AfterFork_Child")))
        goto missing;
    py->after_fork_child = u.v;
    return 0;
missing:
    *what = "find the embedding functions in " KILN_LIBPYTHON;
    errno = ENOSYS;
    return -1;
}

/* ---- the zygote's own setup ------------------------------------------- */

static int write_lib_file(const char *dir, const char *name, const char *template_name)
{
    size_t len = 0;
    const char *data = kiln_template(template_name, &len);
    if (!data) {
        errno = ENOENT;
        return -1;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int rc = kiln_write_all(fd, data, len);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* A private mount namespace with a tmpfs on /tmp (matplotlib's font list
 * and config, the imports' scratch files) and on /opt (the session modules
 * at the path they have in every sandbox, so tracebacks and `inspect` find
 * their source there). The host's /tmp and /opt are not the zygote's
 * business. */
static int private_mounts(const char **what)
{
    *what = "make the zygote's mount namespace";
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return -1;
    *what = "mount the zygote's /tmp";
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777") < 0)
        return -1;
    *what = "mount the zygote's /opt";
    if (mount("tmpfs", "/opt", "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0755") < 0)
        return -1;
    *what = "write the session modules";
    if (kiln_mkdir_p(KILN_SANDBOX_LIB_DIR, 0755, 0755) < 0 ||
        write_lib_file(KILN_SANDBOX_LIB_DIR, "kiln.py", "python/kiln.py") < 0 ||
        write_lib_file(KILN_SANDBOX_LIB_DIR, "kiln_session.py", "python/kiln_session.py") < 0)
        return -1;
    /* matplotlib's font list, when Kiln has made it already: a zygote
     * started on a fresh host builds its own (a second, once). */
    kiln_file_blob fonts;
    if (kiln_fontcache_load(&fonts)) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s", fonts.path);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            if (kiln_mkdir_p(dir, 0755, 0755) == 0) {
                int fd = open(fonts.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd >= 0) {
                    (void)kiln_write_all(fd, fonts.data, fonts.len);
                    close(fd);
                }
                (void)chown(dir, KILN_ZYGOTE_UID, KILN_ZYGOTE_GID);
                (void)chown(fonts.path, KILN_ZYGOTE_UID, KILN_ZYGOTE_GID);
            }
        }
        free((char *)fonts.data);
    }
    return 0;
}

/* No privilege left on the host: the zygote's own uid and gid, no groups,
 * no capabilities (leaving uid 0 clears them), no_new_privs, and not
 * dumpable, so no process of its uid could read its memory. */
static int drop_privileges(const char **what)
{
    *what = "drop the zygote's privileges";
    if (setgroups(0, NULL) < 0 ||
        setresgid(KILN_ZYGOTE_GID, KILN_ZYGOTE_GID, KILN_ZYGOTE_GID) < 0 ||
        setresuid(KILN_ZYGOTE_UID, KILN_ZYGOTE_UID, KILN_ZYGOTE_UID) < 0)
        return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return -1;
    return 0;
}

/* 1 when this process has one thread: the precondition of every fork
 * below (see the top of the file). */
static int single_threaded(void)
{
    DIR *dir = opendir("/proc/self/task");
    if (!dir)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL)
        if (de->d_name[0] != '.')
            n++;
    closedir(dir);
    return n == 1;
}

/* ---- one session's interpreter ----------------------------------------- */

/* The namespace types of the request's first descriptors, in the order
 * they are entered: the user namespace first (it gives the capabilities
 * the others need), the PID namespace last (it applies to children only). */
static const int spawn_ns_types[KILN_SPAWN_NS_COUNT] = {
    CLONE_NEWUSER, CLONE_NEWNS,     CLONE_NEWNET, CLONE_NEWIPC,
    CLONE_NEWUTS,  CLONE_NEWCGROUP, CLONE_NEWPID,
};

/* Renumber the request's descriptors to 3.. (their index + 3), close
 * everything else the zygote had. */
static int keep_only_request_fds(int *fds)
{
    enum { FIRST = 3, PARK = 64 };
    for (int i = 0; i < KILN_SPAWN_FD_COUNT; i++) {
        int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, PARK);
        if (moved < 0)
            return -1;
        fds[i] = moved;
    }
    for (int i = 0; i < KILN_SPAWN_FD_COUNT; i++) {
        if (dup3(fds[i], FIRST + i, O_CLOEXEC) < 0)
            return -1;
        fds[i] = FIRST + i;
    }
    return (int)syscall(SYS_close_range, FIRST + KILN_SPAWN_FD_COUNT, ~0u, 0);
}

/* The interpreter, inside every namespace: from here to the user's code
 * is the same order as contain.c's become_job. Never returns. */
static _Noreturn void become_interpreter(const python_api *py, const int *fds,
                                         const kiln_run_limits *limits, int ack_fd)
{
    const char *what = "start the interpreter";
    int devnull = -1;
    if (setsid() < 0)
        goto failed;
    devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    /* fd 3 the control channel, fd 4 the events: kiln_session.serve(3, 4). */
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(fds[KILN_SPAWN_OUT], 1) < 0 ||
        dup2(fds[KILN_SPAWN_ERR], 2) < 0)
        goto failed;
    int ctl = fcntl(fds[KILN_SPAWN_CTL], F_DUPFD_CLOEXEC, 100);
    int ev = fcntl(fds[KILN_SPAWN_EV], F_DUPFD_CLOEXEC, 100);
    int go = fcntl(fds[KILN_SPAWN_GO], F_DUPFD_CLOEXEC, 100);
    int ack = fcntl(ack_fd, F_DUPFD_CLOEXEC, 100);
    if (ctl < 0 || ev < 0 || go < 0 || ack < 0 || dup3(ctl, 3, O_CLOEXEC) < 0 ||
        dup3(ev, 4, O_CLOEXEC) < 0 || dup3(go, 5, O_CLOEXEC) < 0 || dup3(ack, 6, O_CLOEXEC) < 0)
        goto failed;
    ack_fd = 6;
    if (syscall(SYS_close_range, 7, ~0u, 0) < 0)
        goto failed;
    if (chdir(KILN_JOB_DIR) < 0) {
        what = "enter the job directory";
        goto failed;
    }
    if (kiln_rlimits_apply(limits, &what) < 0 || kiln_user_drop(&what) < 0)
        goto failed;
    /* kiln_user_drop ties us to our parent's death, but our parent (the
     * zygote's child) ends now on purpose: the zygote adopts us, and the
     * death of the session's init takes its whole PID namespace anyway.
     * Our parent waits for this byte before it ends. */
    if (prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0) < 0 || write(ack_fd, "a", 1) != 1) {
        what = "leave the zygote";
        goto failed;
    }
    close(ack_fd);
    if (kiln_seccomp_install(5, &what) < 0)
        goto failed;
    close(5);
    py->after_fork_child();
    _exit(py->run_simple_string_flags(session_main, NULL) == 0 ? 0 : 1);
failed:
    /* stderr is the session's: the supervisor shows what failed. */
    dprintf(2, "kiln: the session's interpreter could not %s: %s\n", what, strerror(errno));
    _exit(127);
}

/* The zygote's child: wait until the supervisor has put us in the
 * session's cgroup, enter the namespaces, fork the interpreter into the
 * PID namespace, tell the supervisor its pid, end. */
static _Noreturn void enter_session(const python_api *py, int *fds, const kiln_run_limits *limits)
{
    signal(SIGCHLD, SIG_DFL);
    if (keep_only_request_fds(fds) < 0)
        _exit(127);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        _exit(127);
    char go;
    if (read(fds[KILN_SPAWN_GO], &go, 1) != 1 || go != 'g')
        _exit(127);
    for (int i = 0; i < KILN_SPAWN_NS_COUNT; i++) {
        if (setns(fds[i], spawn_ns_types[i]) < 0) {
            dprintf(fds[KILN_SPAWN_ERR],
                    "kiln: the session's interpreter could not enter "
                    "its namespaces: %s\n",
                    strerror(errno));
            _exit(127);
        }
        close(fds[i]);
    }
    int ack[2];
    if (pipe2(ack, O_CLOEXEC) < 0)
        _exit(127);
    pid_t child = fork();
    if (child < 0)
        _exit(127);
    if (child == 0) {
        close(ack[0]);
        become_interpreter(py, fds, limits, ack[1]);
    }
    close(ack[1]);
    char a;
    if (read(ack[0], &a, 1) != 1)
        _exit(127); /* it failed, and said why on its stderr */
    int32_t pid = (int32_t)child;
    ssize_t n = write(fds[KILN_SPAWN_REPORT], &pid, sizeof pid);
    _exit(n == (ssize_t)sizeof pid ? 0 : 127);
}

/* One request on a connected socket: 1 served, 0 the peer is gone, -1 an
 * error. */
static int serve_one(const python_api *py, int conn)
{
    kiln_spawn_request req;
    int fds[KILN_SPAWN_FD_COUNT];
    int got = kiln_spawn_recv(conn, &req, fds);
    if (got <= 0)
        return got;
    kiln_spawn_reply reply;
    memset(&reply, 0, sizeof reply);
    py->before_fork();
    pid_t pid = fork();
    if (pid == 0) {
        close(conn);
        enter_session(py, fds, &req.limits);
    }
    int saved = errno;
    py->after_fork_parent();
    for (int i = 0; i < KILN_SPAWN_FD_COUNT; i++)
        close(fds[i]);
    reply.pid = pid > 0 ? (int32_t)pid : -1;
    reply.err_no = pid > 0 ? 0 : saved;
    ssize_t n = send(conn, &reply, sizeof reply, MSG_NOSIGNAL);
    return n == (ssize_t)sizeof reply ? 1 : -1;
}

/* Only root (a session's supervisor) may ask for an interpreter: the
 * socket's directory is root's alone, and the peer's credentials say so
 * again. */
static int peer_is_root(int conn)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == 0;
}

int kiln_zygote_listen(const char *path, kiln_error *err)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        kiln_error_set(err, KILN_E_USAGE, "", "the socket path %s is too long", path);
        return -1;
    }
    memcpy(addr.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "", "cannot make a socket: %s", strerror(errno));
        return -1;
    }
    unlink(path); /* a zygote that died left its socket */
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&addr, sizeof addr);
    umask(old);
    if (rc < 0 || listen(fd, 64) < 0) {
        kiln_error_set(err, KILN_E_INTERNAL, "", "cannot listen at %s: %s", path,
                       strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int kiln_zygote_main(int sock, int listening)
{
    const char *what = NULL;
    python_api py;
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if ((sock != 3 && dup3(sock, 3, O_CLOEXEC) < 0) || syscall(SYS_close_range, 4, ~0u, 0) < 0)
        return 127;

    sock = 3;
    clearenv();
    for (size_t i = 0; zygote_env[i]; i++)
        putenv((char *)zygote_env[i]);
    pid_t parent = getppid();
    if (private_mounts(&what) < 0 || drop_privileges(&what) < 0 || python_load(&py, &what) < 0)
        goto failed;
    /* Dropping the ids cleared the parent-death signal: the zygote ends
     * with whoever started it (a server killed with SIGKILL included). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
        return 127;
    py.initialize_ex(1);
    if (py.run_simple_string_flags(zygote_prelude, NULL) != 0) {
        what = "import the session modules";
        errno = EINVAL;
        goto failed;
    }
    if (!single_threaded()) {
        what = "stay single-threaded after the imports";
        errno = EBUSY;
        goto failed;
    }
    /* The zygote's children end as soon as they have forked an
     * interpreter, which the kernel then gives to the nearest subreaper
     * among its ancestors (not to the session's init: the orphan goes by
     * its parent's PID namespace, the host's). Let that be the zygote, and
     * let it reap at once: a zombie interpreter would hold its session's
     * PID namespace open, and its init's end, for as long as no one reaped
     * it. The interpreter gets SIGCHLD back (enter_session). */
    signal(SIGCHLD, SIG_IGN);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        what = "become the interpreters' reaper";
        goto failed;
    }
    for (;;) {
        int conn = listening ? accept4(sock, NULL, NULL, SOCK_CLOEXEC) : sock;
        if (conn < 0 && errno == EINTR)
            continue;
        if (conn < 0)
            return 1;
        if (listening && !peer_is_root(conn)) {
            close(conn);
            continue;
        }
        int rc;
        do
            rc = serve_one(&py, conn);
        while (rc == 1 && !listening);
        if (!listening)
            return rc < 0 ? 1 : 0;
        close(conn);
    }
failed:
    dprintf(2, "kiln zygote: cannot %s: %s\n", what, strerror(errno));
    return 127;
}

int kiln_zygote_run(int listen_fd)
{
    return kiln_zygote_main(listen_fd, 1);
}

/* ---- the request, both sides ------------------------------------------- */

int kiln_spawn_send(int sock, const kiln_spawn_request *req, const int *fds)
{
    char control[CMSG_SPACE(sizeof(int) * KILN_SPAWN_FD_COUNT)];
    memset(control, 0, sizeof control);
    struct iovec iov = {.iov_base = (void *)req, .iov_len = sizeof *req};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control,
                         .msg_controllen = sizeof control};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * KILN_SPAWN_FD_COUNT);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * KILN_SPAWN_FD_COUNT);
    ssize_t n;
    do
        n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof *req ? 0 : -1;
}

int kiln_spawn_recv(int sock, kiln_spawn_request *req, int *fds)
{
    char control[CMSG_SPACE(sizeof(int) * KILN_SPAWN_FD_COUNT)];
    struct iovec iov = {.iov_base = req, .iov_len = sizeof *req};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control,
                         .msg_controllen = sizeof control};
    ssize_t n;
    do
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return n == 0 ? 0 : -1;
    int count = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *got = (int *)CMSG_DATA(c);
        for (size_t i = 0; i < k; i++) {
            if (count < KILN_SPAWN_FD_COUNT)
                fds[count++] = got[i];
            else
                close(got[i]);
        }
    }
    /* Only root (the session supervisors) sends requests; anything short
     * or truncated is dropped, with whatever descriptors it brought. */
    if (n != (ssize_t)sizeof *req || count != KILN_SPAWN_FD_COUNT ||
        (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || req->magic != KILN_SPAWN_MAGIC) {
        for (int i = 0; i < count; i++)
            close(fds[i]);
        errno = EPROTO;
        return -1;
    }
    return 1;
}
