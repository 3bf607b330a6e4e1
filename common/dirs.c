/* dirs.c - see dirs.h. */
#include "dirs.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "banned.h"

int kiln_mkdir_p(const char *path, mode_t parents_mode, mode_t mode)
{
    char buf[PATH_MAX];
    int n = snprintf(buf, sizeof buf, "%s", path);
    if (n < 0 || (size_t)n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* Each '/' after the first character ends a parent. */
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, parents_mode) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, mode) == 0 || errno == EEXIST ? 0 : -1;
}

/* nftw's callback has no argument: the first failure of the one walk in
 * flight (callers are single-threaded where they remove trees). */
static __thread int remove_errno;

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int rc = type == FTW_DP ? rmdir(path) : unlink(path);
    if (rc != 0 && errno != ENOENT && remove_errno == 0)
        remove_errno = errno;
    return 0;
}

int kiln_remove_tree(const char *path)
{
    remove_errno = 0;
    /* FTW_PHYS: a link is an entry to unlink, never a way out of the tree. */
    if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        return -1;
    if (remove_errno) {
        errno = remove_errno;
        return -1;
    }
    return 0;
}
