/*
 * allow_read.c - load_file's reads: a host file, only from below a
 * directory the operator named with --allow-read (mcp_internal.h).
 *
 * The path a model sends is untrusted. It is matched against each
 * directory as text, and the rest of it is then opened with openat2()
 * relative to the directory with RESOLVE_BENEATH: the kernel resolves every
 * component and refuses "..", an absolute symlink, or a symlink whose
 * target lies outside, at the moment of the open, so a link swapped in
 * after a check cannot lead out. A link that stays inside is followed, as
 * a user would expect of a directory they shared. Only regular files are
 * read (a FIFO would block, a device could be anything).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mcp/mcp_internal.h"
#include "common/banned.h"

kiln_status mcp_allow_open(const char *const *dirs, size_t n, mcp_allow **out, kiln_error *err)
{
    *out = NULL;
    if (!n)
        return KILN_E_OK;
    mcp_allow *a = calloc(n, sizeof *a);
    if (!a)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    for (size_t i = 0; i < n; i++)
        a[i].fd = -1;
    for (size_t i = 0; i < n; i++) {
        a[i].path = realpath(dirs[i], NULL);
        if (a[i].path)
            a[i].fd = open(a[i].path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (!a[i].path || a[i].fd < 0) {
            kiln_error_set(err, KILN_E_USAGE, "", "--allow-read %s: %s", dirs[i],
                           a[i].path ? strerror(errno) : "not a directory Kiln can open");
            mcp_allow_close(a, n);
            return err->code;
        }
    }
    *out = a;
    return KILN_E_OK;
}

void mcp_allow_close(mcp_allow *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++) {
        free(a[i].path);
        if (a[i].fd >= 0)
            close(a[i].fd);
    }
    free(a);
}

/* The part of path below dir ("" for dir itself), or NULL. */
static const char *below(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return path + 1;
    if (strncmp(path, dir, n) != 0)
        return NULL;
    if (path[n] == '\0')
        return path + n;
    return path[n] == '/' ? path + n + 1 : NULL;
}

static int open_beneath(int dir_fd, const char *rest)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd;
    do
        fd = syscall(SYS_openat2, dir_fd, rest, &how, sizeof how);
    while (fd < 0 && errno == EINTR);
    return (int)fd;
}

static kiln_status read_fd(int fd, const char *path, uint64_t max, void **data, size_t *len,
                           kiln_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return kiln_error_set(err, KILN_E_INPUT, "/path", "%s is not a regular file", path);
    if ((uint64_t)st.st_size > max) {
        kiln_error_set(err, KILN_E_LIMIT, "/path",
                       "%s has %lld bytes: a file loaded has at most %llu", path,
                       (long long)st.st_size, (unsigned long long)max);
        err->limit = (double)max;
        err->actual = (double)st.st_size;
        return err->code;
    }
    /* Read to max + 1: a file growing under us is caught, not truncated. */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                free(buf);
                return kiln_error_limit(err, KILN_E_LIMIT, "/path", (double)max, (double)n,
                                        "%s grew past %llu bytes while it was read", path,
                                        (unsigned long long)max);
            }
            size_t next = cap * 2 > max + 1 ? (size_t)max + 1 : cap * 2;
            char *more = realloc(buf, next);
            if (!more) {
                free(buf);
                return kiln_error_set(err, KILN_E_NOMEM, "", "out of memory");
            }
            buf = more;
            cap = next;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            free(buf);
            return kiln_error_set(err, KILN_E_INPUT, "/path", "%s: %s", path, strerror(errno));
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    *data = buf;
    *len = n;
    return KILN_E_OK;
}

kiln_status mcp_allow_read(const mcp_allow *a, size_t n, const char *path, uint64_t max,
                           void **data, size_t *len, kiln_error *err)
{
    *data = NULL;
    *len = 0;
    if (!n)
        return kiln_error_set(err, KILN_E_USAGE, "/path",
                              "this server reads no host files: its operator allowed no "
                              "directory (kiln mcp --allow-read DIR)");
    if (!*path || strlen(path) >= PATH_MAX)
        return kiln_error_set(err, KILN_E_USAGE, "/path", "is not a path");
    /* A relative path is taken from the working directory when that puts
     * it below an allowed directory, else from each directory in turn. */
    char abs[PATH_MAX + 1];
    const char *full = path;
    if (path[0] != '/' && getcwd(abs, sizeof abs - strlen(path) - 1)) {
        size_t cwd_len = strlen(abs);
        snprintf(abs + cwd_len, sizeof abs - cwd_len, "/%s", path);
        full = abs;
    }
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            const char *rest = pass == 0 ? below(a[i].path, full)
                                         : (path[0] != '/' ? path : NULL);
            if (!rest || !*rest)
                continue;
            int fd = open_beneath(a[i].fd, rest);
            if (fd < 0) {
                int e = errno;
                /* Taken from each directory in turn: the next may have it. */
                if (pass == 1 && (e == ENOENT || e == ENOTDIR) && i + 1 < n)
                    continue;
                if (e == EXDEV || e == ELOOP)
                    return kiln_error_set(err, KILN_E_INPUT, "/path",
                                          "%s leads out of the allowed directory %s", path,
                                          a[i].path);
                if (e == ENOENT || e == ENOTDIR)
                    return kiln_error_set(err, KILN_E_INPUT, "/path", "%s does not exist", path);
                return kiln_error_set(err, KILN_E_INPUT, "/path", "%s: %s", path, strerror(e));
            }
            kiln_status st = read_fd(fd, path, max, data, len, err);
            close(fd);
            return st;
        }
    return kiln_error_set(err, KILN_E_INPUT, "/path",
                          "%s is not below a directory this server may read (%s%s)", path,
                          a[0].path, n > 1 ? ", ..." : "");
}
