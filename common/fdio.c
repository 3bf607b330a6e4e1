/*
 * fdio.c - whole writes to a descriptor (fdio.h).
 */
#include <errno.h>
#include <unistd.h>

#include "fdio.h"
#include "banned.h"

int kiln_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}
