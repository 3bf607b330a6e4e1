/*
 * thread_time.c - gmtime() and ctime() that threads can call at once.
 *
 * libxlsxwriter formats a workbook's dcterms:created with gmtime(), and
 * libharu calls ctime(); both return one static buffer per process, so two
 * documents rendered at the same moment on two of the server's worker
 * threads (service/jobs.c) can read each other's time half-written
 * (ThreadSanitizer reports it). The kiln executable exports every core
 * symbol (-rdynamic), and the dynamic linker binds the libraries'
 * references to the executable's definitions before libc's: these, which
 * keep the buffer per thread. POSIX allows that (the result need only stay
 * valid until the calling thread's next call).
 */
#include <time.h>

struct tm *gmtime(const time_t *t)
{
    static _Thread_local struct tm tm;
    return gmtime_r(t, &tm);
}

char *ctime(const time_t *t)
{
    static _Thread_local char text[26]; /* "Wed Jun 30 21:49:08 1993\n" */
    struct tm tm;
    if (!localtime_r(t, &tm))
        return NULL;
    return asctime_r(&tm, text);
}
