/*
 * dirs.h - directories made with their parents (mkdir -p), for the CLI's
 * output directory, the service's store and the sandbox's root.
 */
#ifndef KILN_DIRS_H
#define KILN_DIRS_H

#include <sys/types.h>

/* Make path and every missing directory above it: the parents with
 * parents_mode, path itself with mode; an existing one is left as it is.
 * 0, or -1 with errno (ENAMETOOLONG past PATH_MAX). */
int kiln_mkdir_p(const char *path, mode_t parents_mode, mode_t mode);

/* Remove path and, when it is a directory, everything under it, never
 * following a symbolic link (a link is removed, not what it names). 0, or
 * -1 with errno of the first failure (the rest is still tried). */
int kiln_remove_tree(const char *path);

#endif
