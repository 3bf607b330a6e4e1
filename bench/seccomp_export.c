/*
 * seccomp_export.c - write Kiln's own seccomp program (the KILN_SECCOMP_CODE
 * profile of exec/seccomp.c) as raw BPF to a file, for `bwrap --seccomp FD`
 * in the `run` benchmark, so bubblewrap filters system calls with exactly
 * the program Kiln's sandbox installs (kiln_seccomp_export is what the
 * supervisor itself sends each job).
 *
 * Build (bench/run.py does it): cc ... bench/seccomp_export.c BUILD/libkiln.a -lseccomp
 * Usage: seccomp_export OUT.bpf
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT.bpf\n", argv[0]);
        return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "seccomp_export: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    const char *what = "";
    if (kiln_seccomp_export(KILN_SECCOMP_CODE, fd, &what) != 0) {
        fprintf(stderr, "seccomp_export: %s: %s\n", what, strerror(errno));
        close(fd);
        unlink(argv[1]);
        return 1;
    }
    if (close(fd) != 0) {
        fprintf(stderr, "seccomp_export: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    return 0;
}
