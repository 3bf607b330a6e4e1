/*
 * writers_dl.c - kiln_writer_write_fn for the kiln executable: the writers
 * live in kiln-writers.so, beside the executable, loaded the first time a
 * document is rendered.
 *
 * Why: the writers bring libxlsxwriter, libzip, libxml2 (with ICU and the
 * C++ runtime), libharu, FreeType, libpng and FriBidi, and the dynamic
 * loader spends about 9 ms on them at every start. `kiln run` for a job
 * that renders nothing (most of them) would pay that each time; loaded on
 * demand, only a render pays it, once. The sandbox runner loads the
 * writers before it forks a render sandbox, whose root holds no Kiln files.
 *
 * The shared object's undefined symbols (kiln_output_*, the spec types'
 * helpers ...) resolve against the executable, which exports its own
 * (-rdynamic): one copy of the core in the process.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "render.h"
#include "../common/banned.h"

#define KILN_WRITERS_SO "kiln-writers.so"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const kiln_write_fn *table;
static char load_error[PATH_MAX + 64]; /* a path and a few words */

/* $KILN_WRITERS, else kiln-writers.so in the executable's directory. */
static void load(void)
{
    char path[PATH_MAX];
    const char *env = getenv("KILN_WRITERS");
    if (env && env[0]) {
        if (strlen(env) >= sizeof path) {
            snprintf(load_error, sizeof load_error, "KILN_WRITERS is too long");
            return;
        }
        snprintf(path, sizeof path, "%s", env);
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - sizeof KILN_WRITERS_SO - 1);
        if (n <= 0 || (size_t)n >= sizeof path - sizeof KILN_WRITERS_SO - 1) {
            snprintf(load_error, sizeof load_error,
                     "cannot find the kiln executable's directory");
            return;
        }
        path[n] = '\0';
        char *slash = strrchr(path, '/');
        char *name = slash ? slash + 1 : path;
        snprintf(name, sizeof path - (size_t)(name - path), "%s", KILN_WRITERS_SO);
    }
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "%s", why ? why : path);
        return;
    }
    table = dlsym(handle, "kiln_write_fns");
    if (!table)
        snprintf(load_error, sizeof load_error, "%s has no kiln_write_fns", path);
}

kiln_write_fn kiln_writer_write_fn(kiln_format format, kiln_error *err)
{
    if ((unsigned)format >= KILN_FORMAT__COUNT) {
        kiln_error_set(err, KILN_E_USAGE, NULL, "unknown output format");
        return NULL;
    }
    pthread_once(&load_once, load);
    if (!table) {
        kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot load the document writers: %s",
                       load_error);
        return NULL;
    }
    return table[format];
}
