/*
 * pid.c - the PID namespace's init.
 *
 * The sandbox's first process is PID 1 of its namespace. It stays behind
 * our own code (it never runs the job's) to do two things only it can: reap
 * orphans the job leaves, and end everything. When PID 1 of a namespace
 * exits, the kernel kills every other process in it, so whatever the job
 * started — daemons, double forks, processes that ignore SIGTERM — cannot
 * outlive the job. The supervisor (outside) also kills this init at a
 * timeout, which has the same effect.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

/*
 * The init is a fork of the supervisor, not an exec: its memory holds the
 * supervisor's command line and environment, which /proc/1/cmdline (and,
 * for whoever may read it, /proc/1/environ) show to the job: kiln run's
 * arguments, the service's data directory. The kernel reads both from the
 * process's own memory, between the addresses /proc/self/stat gives (fields
 * 48 to 51), so zeroing them there leaves the job nothing to read. Nothing
 * of the init reads its arguments or environment after this.
 */
int kiln_pid_init_hide_command_line(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* Fields from the third on follow the command's name, in parentheses
     * (which may itself hold spaces and parentheses): after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long v[52] = {0};
    int field = 3;
    for (p++; field <= 51; field++) {
        char *end;
        while (*p == ' ')
            p++;
        if (!*p)
            return -1;
        v[field] = strtoull(p, &end, 10);
        if (end == p) { /* the state letter */
            while (*p && *p != ' ')
                p++;
            continue;
        }
        p = end;
    }
    unsigned long long ranges[2][2] = {{v[48], v[49]}, {v[50], v[51]}};
    for (int i = 0; i < 2; i++)
        if (ranges[i][0] && ranges[i][1] > ranges[i][0])
            memset((void *)(uintptr_t)ranges[i][0], 0, (size_t)(ranges[i][1] - ranges[i][0]));
    /* What `ps` in the sandbox shows for it instead. */
    static const char name[] = "kiln-init";
    if (ranges[0][0] && ranges[0][1] - ranges[0][0] >= sizeof name)
        memcpy((void *)(uintptr_t)ranges[0][0], name, sizeof name);
    return 0;
}

int kiln_pid_init_wait(pid_t main_child)
{
    int main_status = 0;
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, __WALL);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            break; /* ECHILD: nothing left */
        }
        if (pid == main_child) {
            main_status = status;
            break;
        }
    }
    /* The main process is gone: nothing it left behind may go on running.
     * kill(-1) from PID 1 reaches every process of the namespace but init. */
    kill(-1, SIGKILL);
    while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
        ;
    return main_status;
}
