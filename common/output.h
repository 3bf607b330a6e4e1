/*
 * output.h - the one path every byte of an artifact goes out through.
 *
 * A writer never opens its target. It gets a kiln_output, writes into it
 * (through kiln_output_write, or by opening kiln_output_path() when a library
 * insists on a file name), and the caller commits or aborts:
 *
 *   - the bytes go to an unnamed temporary file (O_TMPFILE) in the target's
 *     directory, so a crash, a kill or a full disk leaves nothing behind and
 *     nothing partial is ever visible at the target path;
 *   - kiln_output_write counts bytes and fails with KILN_E_TOO_LARGE as soon
 *     as the ceiling would be passed (the early stop);
 *   - kiln_output_commit checks the final size against the ceiling, flushes,
 *     and only then links the file into place, atomically replacing any
 *     existing file.
 * Where the filesystem has no O_TMPFILE, a named temporary file
 * (".NAME.kiln-XXXXXX") in the same directory is used and removed on abort.
 * The target "-" means standard output: the file is built in $TMPDIR and
 * copied out on commit.
 *
 * kiln_output_open_fd makes an output over a file the caller already holds
 * open and owns (the service's store upload: the document is written
 * straight into the store's own temporary file). The ceiling is kept the
 * same way (the early stop, the size check at commit); commit links nothing
 * and does not sync (the file's owner names it and makes it durable), abort
 * empties the file; neither closes it.
 */
#ifndef KILN_OUTPUT_H
#define KILN_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"

#define KILN_DEFAULT_MAX_BYTES (30ull << 20) /* hosted interpreters' figure */

typedef struct kiln_output {
    int fd;          /* the temporary file, -1 when closed */
    int dir_fd;      /* the target's directory */
    char *target;    /* full target path as given */
    char *base;      /* target's last component */
    char *temp_name; /* fallback only: the named temporary file, else NULL */
    int to_stdout;
    int borrowed; /* kiln_output_open_fd: fd is the caller's */
    /* Commit links without an fsync first: the caller makes the file
     * durable later, for many files at once (syncfs), before it tells anyone
     * the file is there (the batch runner's journal). */
    int defer_sync;
    uint64_t max_bytes;
    uint64_t written;  /* bytes written through kiln_output_write */
    char path[64];     /* "/proc/self/fd/N": a name a library can open */
    char dir_path[64]; /* "/proc/self/fd/N" of the target's directory */
} kiln_output;

/* Prepare to write target_path with the given ceiling (0 = default). */
kiln_status kiln_output_open(kiln_output *out, const char *target_path, uint64_t max_bytes,
                             kiln_error *err);
/* An output over fd, an empty regular file open for reading and writing
 * that the caller owns and keeps open until the output is committed or
 * aborted (name: what messages call it). Its directory
 * (kiln_output_dir_path) is $TMPDIR, else /tmp: a render into it names its
 * scratch directory in kiln_render_options.tmp_dir. */
kiln_status kiln_output_open_fd(kiln_output *out, int fd, const char *name, uint64_t max_bytes,
                                kiln_error *err);
/* A path naming the temporary file, for libraries that take a file name. */
const char *kiln_output_path(const kiln_output *out);
/* A path naming the target's directory: where a library's scratch files
 * belong, because they then share the output's filesystem. A disk that fills
 * up while a library writes scratch data (which libxlsxwriter does not check)
 * is still full when the output itself is written, and that error is seen. */
const char *kiln_output_dir_path(const kiln_output *out);
/* Append bytes; KILN_E_TOO_LARGE before writing anything past the ceiling. */
kiln_status kiln_output_write(kiln_output *out, const void *data, size_t len, kiln_error *err);
/* Current size of the temporary file (whoever wrote it). */
uint64_t kiln_output_size(const kiln_output *out);
/* Check the ceiling, make the file durable, move it into place. Frees out.
 * On failure the target is untouched and nothing is left behind. (Over a
 * caller's file: the ceiling checked only; on failure the file emptied.) */
kiln_status kiln_output_commit(kiln_output *out, uint64_t *final_bytes, kiln_error *err);
/* Discard everything (a caller's file is emptied, not closed). Safe to call
 * on a committed or never-opened output. */
void kiln_output_abort(kiln_output *out);

#endif
