/*
 * rlimits.c - the per-process limits under the cgroup's.
 *
 * The cgroup (cgroup.c) is the real limit on memory, processes and CPU
 * time; these are the backstop for what a cgroup does not cover (file
 * size, open files, core dumps, locked memory, message queues) and a second
 * line for what it does. Soft and hard are set equal so the job cannot raise
 * the soft one back up.
 *
 * Left alone on purpose:
 *   RLIMIT_AS    language runtimes reserve large virtual ranges they never
 *                touch (thread stacks, arenas, numpy/OpenBLAS buffers), so
 *                an address-space cap fails ordinary programs long before
 *                they use real memory; the cgroup's memory limit counts
 *                what is actually used.
 *   RLIMIT_STACK the host's default (8 MiB) is what the interpreters expect.
 */
#include <errno.h>
#include <sys/resource.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

/* Set soft = hard = value. A value above the current hard limit cannot be
 * set without CAP_SYS_RESOURCE in the initial user namespace (which the
 * sandbox, inside its own, does not have): the lower current hard limit is
 * kept, which is the stricter of the two anyway. */
static int set_limit(int resource, rlim_t value)
{
    struct rlimit rl;
    if (getrlimit(resource, &rl) != 0)
        return -1;
    if (rl.rlim_max != RLIM_INFINITY && value > rl.rlim_max)
        value = rl.rlim_max;
    rl.rlim_cur = value;
    rl.rlim_max = value;
    return setrlimit(resource, &rl);
}

/* ceil(seconds) + 1: the supervisor polls the cgroup's CPU usage and ends
 * the job at the real limit; this one only fires if the supervisor cannot. */
static rlim_t cpu_backstop(double seconds)
{
    if (seconds > 1e12)
        return RLIM_INFINITY;
    rlim_t whole = (rlim_t)seconds;
    if ((double)whole < seconds)
        whole++;
    return whole + 1;
}

int kiln_rlimits_apply(const kiln_run_limits *limits, const char **what)
{
    /* The limits are the resolved ones (kiln_run fills the defaults): a zero
     * here would be a process that cannot open or write anything, so it is
     * refused rather than applied. */
    static const char *const zero_what[] = {"RLIMIT_FSIZE: file_bytes is 0",
                                            "RLIMIT_NOFILE: open_files is 0",
                                            "RLIMIT_NPROC: processes is 0",
                                            "RLIMIT_CPU: cpu_seconds is not positive"};
    const int zero[] = {limits->file_bytes == 0, limits->open_files == 0, limits->processes == 0,
                        !(limits->cpu_seconds > 0)};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) {
        if (zero[i]) {
            *what = zero_what[i];
            errno = EINVAL;
            return -1;
        }
    }

    static const struct {
        int resource;
        const char *what;
    } names[] = {
        {RLIMIT_CPU, "setrlimit RLIMIT_CPU"},
        {RLIMIT_FSIZE, "setrlimit RLIMIT_FSIZE"},
        {RLIMIT_NOFILE, "setrlimit RLIMIT_NOFILE"},
        {RLIMIT_NPROC, "setrlimit RLIMIT_NPROC"},
        {RLIMIT_CORE, "setrlimit RLIMIT_CORE"},
        {RLIMIT_MEMLOCK, "setrlimit RLIMIT_MEMLOCK"},
        {RLIMIT_MSGQUEUE, "setrlimit RLIMIT_MSGQUEUE"},
    };
    const rlim_t set[] = {
        cpu_backstop(limits->cpu_seconds), (rlim_t)limits->file_bytes, (rlim_t)limits->open_files,
        /* Counted per real uid across the host: each job has its own host
         * uid (user.c), so this is the job's own count. */
        (rlim_t)limits->processes, 0, /* no core dumps: they would land in the job dir */
        64 * 1024,                    /* the usual unprivileged default */
        0,                            /* POSIX message queues are not needed */
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (set_limit(names[i].resource, set[i]) != 0) {
            *what = names[i].what;
            return -1;
        }
    }
    return 0;
}
