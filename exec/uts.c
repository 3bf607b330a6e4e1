/*
 * uts.c - the UTS namespace: the job sees its own host name, never the
 * host's (which can name a customer or a machine in a fleet).
 */
#include <string.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "../common/banned.h"

int kiln_uts_set(const char **what)
{
    if (sethostname(KILN_SANDBOX_HOSTNAME, strlen(KILN_SANDBOX_HOSTNAME)) < 0 ||
        setdomainname("", 0) < 0) {
        *what = "set the host name";
        return -1;
    }
    return 0;
}
