/*
 * net.c - the network namespace.
 *
 * A new network namespace has one interface, loopback, and it is down: the
 * job has no route anywhere, not even to itself. The seccomp filter also
 * refuses every socket family but AF_UNIX, so there is nothing to bring up.
 * This file only checks the namespace really is empty, so a kernel or a
 * clone() that left the job in the host's network would be a setup failure
 * instead of a silent hole.
 */
#include <errno.h>
#include <net/if.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

int kiln_net_check_isolated(const char **what)
{
    struct if_nameindex *list = if_nameindex();
    if (!list) {
        *what = "list network interfaces";
        return -1;
    }
    int foreign = 0;
    for (struct if_nameindex *i = list; i->if_index != 0; i++)
        if (strcmp(i->if_name, "lo") != 0)
            foreign = 1;
    if_freenameindex(list);
    if (foreign) {
        *what = "check the network namespace is empty";
        errno = EEXIST;
        return -1;
    }
    return 0;
}
