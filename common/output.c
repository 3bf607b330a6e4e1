/* output.c - see output.h for the guarantees this file keeps. */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "banned.h"

static void output_reset(kiln_output *out)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    out->dir_fd = -1;
}

/* Split target into a directory we hold open and a last component. */
static kiln_status open_target_dir(kiln_output *out, const char *target, kiln_error *err)
{
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return kiln_error_set(err, KILN_E_USAGE, NULL, "output path '%s' names a directory",
                              target);
    char *dir = slash ? strndup(target, (size_t)(slash - target) + (slash == target))
                      : strdup(".");
    out->base = strdup(base);
    out->target = strdup(target);
    if (!dir || !out->base || !out->target) {
        free(dir);
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    }
    out->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (out->dir_fd < 0) {
        kiln_status st = kiln_error_set(err, KILN_E_WRITE, NULL,
                                        "cannot open output directory '%s': %s", dir,
                                        strerror(errno));
        free(dir);
        return st;
    }
    free(dir);
    return KILN_E_OK;
}

/* An unnamed file in the directory; the named fallback where O_TMPFILE is refused. */
static kiln_status create_temp(kiln_output *out, kiln_error *err)
{
    out->fd = openat(out->dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
    if (out->fd >= 0)
        return KILN_E_OK;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT)
        return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create a file beside '%s': %s",
                              out->target, strerror(errno));
    for (int attempt = 0; attempt < 100; attempt++) {
        char name[PATH_MAX];
        snprintf(name, sizeof name, ".%.200s.kiln-%06x", out->base,
                 (unsigned)(random() & 0xffffff));
        out->fd = openat(out->dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (out->fd >= 0) {
            out->temp_name = strdup(name);
            if (!out->temp_name)
                return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
            return KILN_E_OK;
        }
        if (errno != EEXIST)
            break;
    }
    return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create a file beside '%s': %s",
                          out->target, strerror(errno));
}

kiln_status kiln_output_open(kiln_output *out, const char *target_path, uint64_t max_bytes,
                             kiln_error *err)
{
    kiln_status st;
    output_reset(out);
    out->max_bytes = max_bytes ? max_bytes : KILN_DEFAULT_MAX_BYTES;
    if (strcmp(target_path, "-") == 0) {
        const char *tmp = getenv("TMPDIR");
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/stdout", tmp && *tmp ? tmp : "/tmp");
        out->to_stdout = 1;
        st = open_target_dir(out, path, err);
    } else {
        st = open_target_dir(out, target_path, err);
    }
    if (st != KILN_E_OK)
        goto fail_release;
    st = create_temp(out, err);
    if (st != KILN_E_OK)
        goto fail_release;
    snprintf(out->path, sizeof out->path, "/proc/self/fd/%d", out->fd);
    snprintf(out->dir_path, sizeof out->dir_path, "/proc/self/fd/%d", out->dir_fd);
    return KILN_E_OK;

fail_release:
    kiln_output_abort(out);
    return st;
}

kiln_status kiln_output_open_fd(kiln_output *out, int fd, const char *name, uint64_t max_bytes,
                                kiln_error *err)
{
    output_reset(out);
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size != 0)
        return kiln_error_set(err, KILN_E_USAGE, NULL,
                              "an output over a file needs an empty regular file");
    out->max_bytes = max_bytes ? max_bytes : KILN_DEFAULT_MAX_BYTES;
    out->target = strdup(name ? name : "the output");
    if (!out->target)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    out->fd = fd;
    out->borrowed = 1;
    const char *tmp = getenv("TMPDIR");
    snprintf(out->path, sizeof out->path, "/proc/self/fd/%d", fd);
    snprintf(out->dir_path, sizeof out->dir_path, "%s",
             tmp && *tmp && strlen(tmp) < sizeof out->dir_path ? tmp : "/tmp");
    return KILN_E_OK;
}

const char *kiln_output_path(const kiln_output *out)
{
    return out->path;
}

const char *kiln_output_dir_path(const kiln_output *out)
{
    return out->dir_path;
}

kiln_status kiln_output_write(kiln_output *out, const void *data, size_t len, kiln_error *err)
{
    if (len > out->max_bytes || out->written > out->max_bytes - len)
        return kiln_error_limit(err, KILN_E_TOO_LARGE, NULL, out->max_bytes, out->written + len,
                                "output is larger than the size ceiling of %llu bytes "
                                "(reached %llu bytes)",
                                (unsigned long long)out->max_bytes,
                                (unsigned long long)(out->written + len));
    const unsigned char *p = data;
    while (len > 0) {
        ssize_t n = pwrite(out->fd, p, len, (off_t)out->written);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot write '%s': %s", out->target,
                                  strerror(errno));
        }
        p += n;
        len -= (size_t)n;
        out->written += (uint64_t)n;
    }
    return KILN_E_OK;
}

uint64_t kiln_output_size(const kiln_output *out)
{
    struct stat st;
    if (out->fd < 0 || fstat(out->fd, &st) != 0)
        return 0;
    return (uint64_t)st.st_size;
}

static kiln_status copy_to_stdout(kiln_output *out, kiln_error *err)
{
    char buf[1 << 16];
    off_t offset = 0;
    for (;;) {
        ssize_t n = pread(out->fd, buf, sizeof buf, offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot read back output: %s",
                                  strerror(errno));
        if (n == 0)
            return KILN_E_OK;
        offset += n;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(STDOUT_FILENO, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return kiln_error_set(err, KILN_E_WRITE, NULL,
                                      "cannot write to standard output: %s", strerror(errno));
            done += w;
        }
    }
}

/*
 * Give the unnamed file a name. When the target does not exist, linkat()
 * gives it its final name in one step. linkat() cannot replace an existing
 * file, so then the file is linked under a unique hidden name and rename()d
 * over the target: rename is atomic, so readers see the old file or the new
 * one (a kill between those two calls is the one moment that could leave the
 * hidden name behind). An existing symbolic link at the target is replaced,
 * never written through.
 */
static kiln_status link_into_place(kiln_output *out, kiln_error *err)
{
    if (out->temp_name) {
        if (renameat(out->dir_fd, out->temp_name, out->dir_fd, out->base) != 0)
            return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot rename into '%s': %s",
                                  out->target, strerror(errno));
        free(out->temp_name);
        out->temp_name = NULL;
        return KILN_E_OK;
    }
    if (linkat(AT_FDCWD, out->path, out->dir_fd, out->base, AT_SYMLINK_FOLLOW) == 0)
        return KILN_E_OK;
    if (errno != EEXIST)
        return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create '%s': %s", out->target,
                              strerror(errno));
    for (int attempt = 0; attempt < 100; attempt++) {
        char name[PATH_MAX];
        snprintf(name, sizeof name, ".%.200s.kiln-%06x", out->base,
                 (unsigned)(random() & 0xffffff));
        if (linkat(AT_FDCWD, out->path, out->dir_fd, name, AT_SYMLINK_FOLLOW) != 0) {
            if (errno == EEXIST)
                continue;
            return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create '%s': %s", out->target,
                                  strerror(errno));
        }
        if (renameat(out->dir_fd, name, out->dir_fd, out->base) != 0) {
            int saved = errno;
            unlinkat(out->dir_fd, name, 0);
            return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot rename into '%s': %s",
                                  out->target, strerror(saved));
        }
        return KILN_E_OK;
    }
    return kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create '%s': no free temporary name",
                          out->target);
}

kiln_status kiln_output_commit(kiln_output *out, uint64_t *final_bytes, kiln_error *err)
{
    kiln_status st;
    uint64_t size = kiln_output_size(out);
    if (size > out->max_bytes) {
        st = kiln_error_limit(err, KILN_E_TOO_LARGE, NULL, out->max_bytes, size,
                              "output is larger than the size ceiling of %llu bytes "
                              "(reached %llu bytes)",
                              (unsigned long long)out->max_bytes, (unsigned long long)size);
        goto fail_abort;
    }
    if (out->borrowed) {
        /* The file's owner names it and makes it durable. */
    } else if (out->to_stdout) {
        st = copy_to_stdout(out, err);
        if (st != KILN_E_OK)
            goto fail_abort;
    } else {
        /* Durable before visible: a crash after the rename must not expose
         * a file whose blocks never reached the disk. */
        if (!out->defer_sync && fsync(out->fd) != 0) {
            st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot write '%s': %s", out->target,
                                strerror(errno));
            goto fail_abort;
        }
        st = link_into_place(out, err);
        if (st != KILN_E_OK)
            goto fail_abort;
    }
    if (final_bytes)
        *final_bytes = size;
    if (out->borrowed)
        out->fd = -1;       /* committed: abort below must not empty it */
    kiln_output_abort(out); /* closes and frees; the file now has its real name */
    return KILN_E_OK;

fail_abort:
    kiln_output_abort(out);
    return st;
}

void kiln_output_abort(kiln_output *out)
{
    if (out->temp_name && out->dir_fd >= 0)
        unlinkat(out->dir_fd, out->temp_name, 0);
    if (out->fd >= 0 && out->borrowed) {
        /* Nothing written stays, and the descriptor stays the caller's
         * (should emptying fail, the owner drops the file whatever it holds). */
        int rc = ftruncate(out->fd, 0);
        (void)rc;
    } else if (out->fd >= 0) {
        close(out->fd);
    }
    if (out->dir_fd >= 0)
        close(out->dir_fd);
    free(out->temp_name);
    free(out->target);
    free(out->base);
    output_reset(out);
}
