/*
 * fontcache.c - matplotlib's font list, made once per host and given to
 * every job.
 *
 * matplotlib scans every font on the system the first time it draws, and
 * writes the result to fontlist-vNNN.json in MPLCONFIGDIR. Each job starts
 * with an empty /tmp, so without help every job that plots spends a second
 * or more on that scan. Kiln makes the list once, with its own fixed code
 * (`import matplotlib.font_manager`) in a sandbox, keeps it in the cache
 * directory ($KILN_CACHE_DIR, default /var/cache/kiln), and copies it into
 * each job's /tmp/.matplotlib, owned by the job (matplotlib wants to be able
 * to rewrite it).
 *
 * Nothing a job writes ever goes into the cache: the list comes from the
 * warm-up sandbox, which runs before the job's code and only Kiln's. The
 * cache key is the modification time of matplotlib's package and of the
 * system font directory, so an upgrade or a new font makes a new list.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/output.h"
#include "exec/exec_internal.h"
#include "../common/banned.h"

#define KILN_FONTCACHE_MAX_BYTES (8u << 20)
#define KILN_FONTCACHE_JOB_SUBDIR ".kiln-fontcache" /* under /mnt/data, during warm-up only */
#define KILN_MATPLOTLIB_PACKAGE "/usr/lib/python3/dist-packages/matplotlib/__init__.py"

/* <cache>/matplotlib-<package mtime>-<fonts mtime>; 0 when there is no
 * matplotlib to cache for. */
static int cache_path(char *out, size_t cap)
{
    struct stat pkg, fonts;
    if (stat(KILN_MATPLOTLIB_PACKAGE, &pkg) < 0)
        return -1;
    if (stat("/usr/share/fonts", &fonts) < 0)
        memset(&fonts, 0, sizeof fonts);
    const char *base = getenv("KILN_CACHE_DIR");
    if (!base || base[0] != '/')
        base = "/var/cache/kiln";
    int n = snprintf(out, cap, "%s/matplotlib-%lld-%lld", base, (long long)pkg.st_mtime,
                     (long long)fonts.st_mtime);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Read the one fontlist-*.json in dir_fd into a blob. */
static int load_from(int dir_fd, kiln_file_blob *blob)
{
    int dup_fd = dup(dir_fd);
    if (dup_fd < 0)
        return 0;
    DIR *dir = fdopendir(dup_fd);
    if (!dir) {
        close(dup_fd);
        return 0;
    }
    int found = 0;
    struct dirent *de;
    while (!found && (de = readdir(dir)) != NULL) {
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, "fontlist-", 9) != 0 || len < 14 || len > 64 ||
            strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        struct open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                          RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
        int fd = (int)syscall(SYS_openat2, dirfd(dir), de->d_name, &how, sizeof how);
        if (fd < 0)
            continue;
        struct stat st;
        char *data = NULL;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
            st.st_size <= KILN_FONTCACHE_MAX_BYTES && (data = malloc((size_t)st.st_size)) &&
            read(fd, data, (size_t)st.st_size) == st.st_size) {
            static char path[128];
            snprintf(path, sizeof path, "/tmp/.matplotlib/%s", de->d_name);
            blob->path = path;
            blob->data = data;
            blob->len = (size_t)st.st_size;
            blob->mode = 0644;
            blob->job_owned = 1;
            found = 1;
        } else {
            free(data);
        }
        close(fd);
    }
    closedir(dir);
    return found;
}

static int load_cached(const char *path, kiln_file_blob *blob)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    int ok = load_from(fd, blob);
    close(fd);
    return ok;
}

/* Write blob into the cache directory under its own name, through Kiln's
 * one output path (common/output.h: an unnamed file, fsynced, linked into
 * place atomically). A cache that cannot be written is not an error: the
 * next Python job makes the list again. */
static void store(const char *path, const kiln_file_blob *blob)
{
    char parent[512];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = '\0';
        mkdir(parent, 0755);
    }
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return;
    char final[600];
    snprintf(final, sizeof final, "%s/%s", path, strrchr(blob->path, '/') + 1);
    kiln_output out;
    if (kiln_output_open(&out, final, KILN_FONTCACHE_MAX_BYTES, NULL) != KILN_E_OK)
        return;
    if (kiln_output_write(&out, blob->data, blob->len, NULL) != KILN_E_OK) {
        kiln_output_abort(&out);
        return;
    }
    kiln_output_commit(&out, NULL, NULL); /* frees out, whatever it returns */
}

/* Run Kiln's own warm-up in a sandbox over the job directory: matplotlib
 * writes its list to /mnt/data/.kiln-fontcache. */
static int warm_up(const kiln_jobdir *jd, const kiln_idmap *map, const kiln_run_limits *limits,
                   const kiln_seccomp_program *filter)
{
    /* -I: isolated mode, so nothing in the working directory (/mnt/data)
     * or the environment can stand in for a module; the supervisor also
     * runs this before any input is copied into the job directory. */
    static char *const argv[] = {"/usr/bin/python3", "-I", "-c", "import matplotlib.font_manager",
                                 NULL};
    static char *const envp[] = {"PATH=/usr/bin:/bin",
                                 "HOME=/tmp",
                                 "LANG=C.UTF-8",
                                 "MPLBACKEND=Agg",
                                 "MPLCONFIGDIR=" KILN_JOB_DIR "/" KILN_FONTCACHE_JOB_SUBDIR,
                                 NULL};
    kiln_run_limits l = *limits;
    if (l.wall_seconds > 30)
        l.wall_seconds = 30;
    kiln_stream out, err;
    kiln_error e;
    int ok = 0;
    memset(&out, 0, sizeof out);
    memset(&err, 0, sizeof err);
    /* Under the job's limits, in a cgroup of its own, like any sandbox. */
    kiln_cgroup cg;
    char cg_name[64];
    snprintf(cg_name, sizeof cg_name, "kiln-%d-fonts", (int)getpid());
    kiln_cgroup_roots roots = {.fs_root = "/sys/fs/cgroup",
                               .proc_self_cgroup = "/proc/self/cgroup"};
    if (kiln_cgroup_create(&cg, &roots, cg_name, &l, &e) != KILN_E_OK)
        goto release;
    if (kiln_stream_init(&out, 4096, &e) != KILN_E_OK ||
        kiln_stream_init(&err, 4096, &e) != KILN_E_OK)
        goto release;
    kiln_contain_job job = {
        .mount = {.job_dir_host = jd->path,
                  .tmp_bytes = l.tmp_bytes,
                  .job_dir_owner = KILN_SANDBOX_UID},
        .limits = &l,
        .filter = filter,
        .argv = argv,
        .envp = envp,
    };
    kiln_watch w;
    if (kiln_sandbox_run(&job, map, &cg, &out, &err, &w, &e) == KILN_E_OK)
        ok = w.exited && WIFEXITED(w.wait_status) && WEXITSTATUS(w.wait_status) == 0;
release:
    kiln_stream_release(&out);
    kiln_stream_release(&err);
    kiln_cgroup_release(&cg);
    return ok;
}

/* Remove the warm-up's directory from the job directory. */
static void remove_warm_up_dir(int job_fd)
{
    struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                      RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
    int fd = (int)syscall(SYS_openat2, job_fd, KILN_FONTCACHE_JOB_SUBDIR, &how, sizeof how);
    if (fd >= 0) {
        DIR *dir = fdopendir(fd);
        if (dir) {
            struct dirent *de;
            while ((de = readdir(dir)) != NULL)
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                    unlinkat(dirfd(dir), de->d_name, 0);
            closedir(dir);
        } else {
            close(fd);
        }
    }
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", job_fd);
    int dir_fd = open(self, O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        unlinkat(dir_fd, KILN_FONTCACHE_JOB_SUBDIR, AT_REMOVEDIR);
        close(dir_fd);
    }
}

int kiln_fontcache_load(kiln_file_blob *blob)
{
    char path[512];
    memset(blob, 0, sizeof *blob);
    return cache_path(path, sizeof path) == 0 && load_cached(path, blob);
}

int kiln_fontcache_make(const kiln_jobdir *jd, const kiln_idmap *map,
                        const kiln_run_limits *limits, const kiln_seccomp_program *filter,
                        kiln_file_blob *blob)
{
    char path[512];
    memset(blob, 0, sizeof *blob);
    if (cache_path(path, sizeof path) < 0)
        return 0;
    int ok = 0;
    if (warm_up(jd, map, limits, filter)) {
        struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                          RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
        int fd = (int)syscall(SYS_openat2, jd->fd, KILN_FONTCACHE_JOB_SUBDIR, &how, sizeof how);
        if (fd >= 0) {
            ok = load_from(fd, blob);
            close(fd);
        }
        /* Only a list that parses is kept: matplotlib would rebuild a bad
         * one in every job. */
        if (ok) {
            json_t *check = json_loadb(blob->data, blob->len, 0, NULL);
            if (json_is_object(check))
                store(path, blob);
            else {
                free((char *)blob->data);
                memset(blob, 0, sizeof *blob);
                ok = 0;
            }
            json_decref(check);
        }
    }
    remove_warm_up_dir(jd->fd);
    return ok;
}
