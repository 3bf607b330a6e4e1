/* dirs.c - see dirs.h. */
#include "dirs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
