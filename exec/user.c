/*
 * user.c - the user namespace: who the job is, and that it can do nothing
 * a plain user cannot.
 *
 * The sandbox's first process starts as uid 0 of a new user namespace (with
 * every capability, but only over the namespaces it owns) so it can build its
 * mounts. Before the job's code runs it becomes uid 1000 with no capabilities
 * at all and no_new_privs set, so neither a setuid binary nor a file
 * capability can give any back.
 *
 * Both inside ids map to host ids that belong to no one: a per-job pair
 * derived from the supervisor's pid. Files the job creates in /mnt/data are
 * owned by that host uid, and RLIMIT_NPROC (counted per host uid) counts
 * this job's processes only.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

/* Far above any uid a distribution hands out (systemd's dynamic users stop
 * at 0x7FFFFFFF but start at 61184; containers commonly use 100000+65536*n
 * well below 2^30). */
#define KILN_HOST_ID_BASE 0x40000000u

void kiln_idmap_for_job(kiln_idmap *map, pid_t supervisor)
{
    map->host_uid_base = KILN_HOST_ID_BASE + 2u * (uid_t)supervisor;
    map->host_gid_base = KILN_HOST_ID_BASE + 2u * (gid_t)supervisor;
}

static kiln_status write_proc_file(pid_t pid, const char *file, const char *text, kiln_error *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot open %s: %s", path,
                              strerror(errno));
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int saved = errno;
    close(fd);
    if (n != (ssize_t)len)
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot write %s: %s", path,
                              n < 0 ? strerror(saved) : "short write");
    return KILN_E_OK;
}

kiln_status kiln_user_write_maps(pid_t child, const kiln_idmap *map, kiln_error *err)
{
    char text[128];
    kiln_status st;

    /* "deny" first: with setgroups allowed, a process could drop a group
     * and so gain access that a negative group permission (mode 0705 owned
     * by its group) denied. The supervisor has already dropped every
     * supplementary group, so there is nothing left to set anyway. */
    st = write_proc_file(child, "setgroups", "deny", err);
    if (st != KILN_E_OK)
        return st;
    snprintf(text, sizeof text, "0 %u 1\n%u %u 1\n", map->host_uid_base, KILN_SANDBOX_UID,
             map->host_uid_base + 1);
    st = write_proc_file(child, "uid_map", text, err);
    if (st != KILN_E_OK)
        return st;
    snprintf(text, sizeof text, "0 %u 1\n%u %u 1\n", map->host_gid_base, KILN_SANDBOX_GID,
             map->host_gid_base + 1);
    return write_proc_file(child, "gid_map", text, err);
}

int kiln_user_drop(const char **what)
{
    /* The bounding set needs CAP_SETPCAP to shrink, so it goes first, while
     * we are still uid 0 of the namespace. */
    for (int cap = 0; cap <= 63; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) {
            *what = "drop the capability bounding set";
            return -1;
        }
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) {
        *what = "clear ambient capabilities";
        return -1;
    }
    if (setresgid(KILN_SANDBOX_GID, KILN_SANDBOX_GID, KILN_SANDBOX_GID) < 0) {
        *what = "set the job's gid";
        return -1;
    }
    /* Leaving uid 0 for a nonzero uid clears the permitted and effective
     * sets (no SECBIT_KEEP_CAPS); the explicit capset below also empties the
     * inheritable set, which setresuid leaves alone. */
    if (setresuid(KILN_SANDBOX_UID, KILN_SANDBOX_UID, KILN_SANDBOX_UID) < 0) {
        *what = "set the job's uid";
        return -1;
    }
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) < 0) {
        *what = "clear every capability";
        return -1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        *what = "set no_new_privs";
        return -1;
    }
    /* A parent that dies (the supervisor killed) must take the job along;
     * setresuid reset this flag, so it is set again here. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) {
        *what = "set the parent-death signal";
        return -1;
    }
    return 0;
}
