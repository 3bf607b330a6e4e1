/*
 * fdio.h - whole writes to a descriptor, however the kernel splits them.
 */
#ifndef KILN_FDIO_H
#define KILN_FDIO_H

#include <stddef.h>

/* Write all len bytes of buf to fd, again after EINTR and a short write.
 * 0, or -1 with errno. */
int kiln_write_all(int fd, const void *buf, size_t len);

#endif
