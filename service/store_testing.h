/*
 * store_testing.h - hooks into service/store.c for its unit tests only.
 *
 * The expiry rules depend on the time, and a test cannot wait 7 days; the
 * named-temporary fallback is only taken on file systems without O_TMPFILE,
 * which a test machine may not have. Production code never calls these.
 */
#ifndef KILN_SERVICE_STORE_TESTING_H
#define KILN_SERVICE_STORE_TESTING_H

#include <stdint.h>

#include "service/store.h"

/* Replace time(NULL) as the store's clock (NULL restores it). */
void kiln_store_set_clock(kiln_store *store, int64_t (*now)(void *arg), void *arg);

/* Write bodies through named ".tmp-" files even where O_TMPFILE works. */
void kiln_store_force_named_temp(kiln_store *store, int on);

#endif
