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
#include <signal.h>
#include <sys/wait.h>

#include "exec/exec_internal.h"

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
