/*
 * writers_static.c - kiln_writer_write_fn for a program that links the
 * writers in (the unit tests, the fuzzers, libkiln.a). The kiln executable
 * uses writers_dl.c instead.
 */
#include "render.h"
#include "../common/banned.h"

extern const kiln_write_fn kiln_write_fns[KILN_FORMAT__COUNT];

kiln_write_fn kiln_writer_write_fn(kiln_format format, kiln_error *err)
{
    if ((unsigned)format >= KILN_FORMAT__COUNT) {
        kiln_error_set(err, KILN_E_USAGE, NULL, "unknown output format");
        return NULL;
    }
    return kiln_write_fns[format];
}
