/*
 * jobdir.c - the job directory, /mnt/data inside the sandbox.
 *
 * A tmpfs of the job's disk size, mounted on a fresh directory under $TMPDIR
 * (or /tmp) in the supervisor's private mount namespace: the host never sees
 * its contents, the job cannot fill the host's disk, and when the supervisor
 * ends the mount goes with it. Only the empty mount-point directory is ever
 * on the host, and release removes it.
 *
 * Because the job directory is a file system of its own, a job cannot make
 * a hard link to a host file in it (link() across file systems fails with
 * EXDEV), which is what makes collecting its files by name safe.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

/* Mount points a killed supervisor left: "kiln-job-PID-XXXXXX" whose PID
 * is gone. The tmpfs went with the supervisor's mount namespace, so the
 * host sees an empty directory, and rmdir removes only an empty one. */
static void sweep_stale(const char *tmp)
{
    DIR *dir = opendir(tmp);
    if (!dir)
        return;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (strncmp(de->d_name, "kiln-job-", 9) != 0 || !isdigit((unsigned char)de->d_name[9]))
            continue;
        char *end;
        long pid = strtol(de->d_name + 9, &end, 10);
        if (*end != '-' || pid <= 0 || pid > INT_MAX)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        unlinkat(dirfd(dir), de->d_name, AT_REMOVEDIR);
    }
    closedir(dir);
}

kiln_status kiln_jobdir_create(kiln_jobdir *jd, uint64_t size_bytes, uid_t owner, gid_t group,
                               kiln_error *err)
{
    memset(jd, 0, sizeof *jd);
    jd->fd = -1;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/' || strlen(tmp) > 200)
        tmp = "/tmp";
    sweep_stale(tmp);
    snprintf(jd->path, sizeof jd->path, "%s/kiln-job-%d-XXXXXX", tmp, (int)getpid());
    if (!mkdtemp(jd->path)) {
        jd->path[0] = '\0';
        return kiln_error_set(err, KILN_E_INTERNAL, "",
                              "cannot create the job directory in %s: %s", tmp, strerror(errno));
    }
    char opts[128];
    snprintf(opts, sizeof opts, "size=%llu,mode=0700,uid=%u,gid=%u",
             (unsigned long long)size_bytes, (unsigned)owner, (unsigned)group);
    if (mount("tmpfs", jd->path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
        int saved = errno;
        rmdir(jd->path);
        jd->path[0] = '\0';
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot mount the job directory: %s",
                              strerror(saved));
    }
    jd->mounted = 1;
    jd->fd = open(jd->path, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (jd->fd < 0) {
        int saved = errno;
        kiln_jobdir_release(jd);
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot open the job directory: %s",
                              strerror(saved));
    }
    return KILN_E_OK;
}

const char *kiln_run_input_name(const char *host_path, const char *name)
{
    if (name)
        return name;
    const char *slash = strrchr(host_path, '/');
    return slash ? slash + 1 : host_path;
}

int kiln_run_input_name_ok(const char *name)
{
    return name[0] != '\0' && strchr(name, '/') == NULL && strcmp(name, ".") != 0 &&
           strcmp(name, "..") != 0 && strcmp(name, KILN_SPEC_DIR) != 0 && strlen(name) < 256;
}

kiln_status kiln_jobdir_add_input(kiln_jobdir *jd, const kiln_run_input *in, uid_t owner,
                                  gid_t group, kiln_error *err)
{
    const char *name = kiln_run_input_name(in->host_path, in->name);
    if (!kiln_run_input_name_ok(name))
        return kiln_error_set(err, KILN_E_USAGE, "", "input name \"%s\" must be one file name",
                              name);
    int src = open(in->host_path, O_RDONLY | O_CLOEXEC);
    if (src < 0)
        return kiln_error_set(err, KILN_E_INPUT, "", "cannot read input %s: %s", in->host_path,
                              strerror(errno));
    struct stat st;
    if (fstat(src, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(src);
        return kiln_error_set(err, KILN_E_INPUT, "", "input %s is not a regular file",
                              in->host_path);
    }
    char dir[300];
    snprintf(dir, sizeof dir, "/proc/self/fd/%d", jd->fd);
    int dir_fd = open(dir, O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        close(src);
        return kiln_error_set(err, KILN_E_INTERNAL, "", "cannot open the job directory: %s",
                              strerror(errno));
    }
    int dst = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    close(dir_fd);
    if (dst < 0) {
        int saved = errno;
        close(src);
        return kiln_error_set(err, saved == EEXIST ? KILN_E_USAGE : KILN_E_INTERNAL, "",
                              "cannot add input %s to the job directory: %s", name,
                              saved == EEXIST ? "two inputs have that name" : strerror(saved));
    }
    kiln_status st_out = KILN_E_OK;
    char buf[65536];
    for (;;) {
        ssize_t n = read(src, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            st_out = kiln_error_set(err, KILN_E_INPUT, "", "cannot read input %s: %s",
                                    in->host_path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        ssize_t off = 0;
        while (off < n) {
            ssize_t w = write(dst, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                st_out = kiln_error_set(err, errno == ENOSPC ? KILN_E_LIMIT : KILN_E_INTERNAL, "",
                                        "input %s does not fit in the job directory: %s", name,
                                        strerror(errno));
                break;
            }
            off += w;
        }
        if (st_out != KILN_E_OK)
            break;
    }
    if (st_out == KILN_E_OK && fchown(dst, owner, group) < 0)
        st_out = kiln_error_set(err, KILN_E_INTERNAL, "", "cannot hand input %s to the job: %s",
                                name, strerror(errno));
    close(src);
    close(dst);
    return st_out;
}

void kiln_jobdir_release(kiln_jobdir *jd)
{
    if (jd->fd >= 0)
        close(jd->fd);
    jd->fd = -1;
    if (jd->mounted)
        umount2(jd->path, MNT_DETACH);
    jd->mounted = 0;
    if (jd->path[0])
        rmdir(jd->path);
    jd->path[0] = '\0';
}
