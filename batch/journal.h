/*
 * journal.h - a batch's results journal, OUTDIR/results.jsonl: one JSON line
 * per finished job (docs/batch.md, "The results journal"):
 *
 *   {"id": "inv-1", "status": "ok", "kind": "render", "input_sha256": "...",
 *    "files": [{"name": "inv-1.pdf", "bytes": 5120, "sha256": "...",
 *               "mtime_ns": ..., "inode": ...}],
 *    "errors": [], "warnings": [], "wall_seconds": 0.012, "finished_at": "..."}
 *
 * Why it can be trusted after a crash: a line is appended with one write(2)
 * only after every file it names is complete and durable in its place (the
 * writers' outputs are linked only when whole, common/output.h, and the
 * runner syncs the file system before it journals them, runner.c); a
 * kill at any moment leaves at most a torn last line, which opening the
 * journal cuts off. The journal itself is fdatasync'd every second and at the
 * end (kiln_journal_sync), so a power loss loses at most the last second's
 * lines: those jobs run again, their files replaced whole.
 *
 * A job run again appends a new line; the last line of an id is its result.
 * Opening a journal that holds superseded or unreadable lines rewrites it
 * (atomically: a new file renamed over the old) with the last line of each id,
 * in the order they were written.
 *
 * mtime_ns and inode let a resumed batch trust a file without reading it
 * again (as git's index and make do): a file whose size, mtime and inode are
 * unchanged is taken to hold the hash recorded; any other is hashed again.
 */
#ifndef KILN_BATCH_JOURNAL_H
#define KILN_BATCH_JOURNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/error.h"

/* The longest journal line read back (a job with many files and errors). */
#define KILN_JOURNAL_LINE_MAX (4u << 20)

typedef struct kiln_journal_file {
    char *name; /* relative to the output directory */
    uint64_t bytes;
    unsigned char sha256[32];
    int64_t mtime_ns;
    uint64_t inode;
} kiln_journal_file;

typedef struct kiln_journal_entry {
    char *id;
    int ok; /* status "ok" */
    int has_input_sha256;
    unsigned char input_sha256[32];
    size_t file_count;
    kiln_journal_file *files;
    int timed_out;      /* failed past the batch's job timeout (errors[0].code "timeout") */
    double job_timeout; /* the job timeout it ran under (0: none) */
} kiln_journal_entry;

typedef struct kiln_journal kiln_journal;

/* Open (creating it) out_dir/results.jsonl, read what it holds, cut a torn
 * last line and compact it as above. NULL with err set: a journal that
 * cannot be read or written (KILN_E_WRITE, KILN_E_INPUT), a line longer than
 * KILN_JOURNAL_LINE_MAX (KILN_E_INPUT), out of memory. */
kiln_journal *kiln_journal_open(const char *out_dir, kiln_error *err);

/* The last result recorded for id, or NULL. Borrowed: valid until the next
 * append or the journal's end. */
const kiln_journal_entry *kiln_journal_find(const kiln_journal *j, const char *id);

/* How many ids the journal holds a result for. */
size_t kiln_journal_count(const kiln_journal *j);

/* Append entry (borrowed) as one line, and remember it as its id's result. */
kiln_status kiln_journal_append(kiln_journal *j, const json_t *entry, kiln_error *err);

/* fdatasync the journal when a second has passed since the last (force:
 * now). */
kiln_status kiln_journal_sync(kiln_journal *j, int force, kiln_error *err);

void kiln_journal_free(kiln_journal *j);

/* sha256 as 64 lowercase hex digits into hex[65]; and back (0 / -1). */
void kiln_sha256_hex(const unsigned char sha256[32], char hex[65]);
int kiln_sha256_unhex(const char *hex, unsigned char sha256[32]);

/* The SHA-256 of the regular file name under dir_fd (never following a
 * link) and its size, mtime and inode. 0, or -1 with errno. */
int kiln_file_sha256(int dir_fd, const char *name, unsigned char sha256[32], uint64_t *bytes,
                     int64_t *mtime_ns, uint64_t *inode);

#endif
