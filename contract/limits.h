/*
 * limits.h - the one table of a job's limits.
 *
 * Every limit a job runs under is one row here: its name in JSON (a run
 * request's "limits" and the result's), its `kiln run` flag (and so
 * `kiln serve`'s --run-FLAG), its kind and unit, its bounds and its
 * default. `kiln run` builds its options from the table, `kiln serve` its
 * --run-* settings, the API its validation of a request's "limits", the
 * runner its defaults and checks; docs/run.md and docs/serve.md list the
 * same rows, and a unit test (tests/unit/test_contract.c) holds them to it.
 * Nothing else in Kiln spells a limit's name, flag or bound. With errors.h,
 * the bottom of the contract: it needs nothing but common/, and the sandbox
 * (exec/) is built on it.
 */
#ifndef KILN_CONTRACT_LIMITS_H
#define KILN_CONTRACT_LIMITS_H

#include <jansson.h>
#include <stddef.h>

#include <stdint.h>

#include "../common/error.h"

/* Every limit a job runs under (exec/run.h's kiln_run_job takes them):
 * what each is, its bounds and its default are the table below. A zero in a
 * field passed to kiln_run_job means "the default". */
typedef struct kiln_run_limits {
    uint64_t memory_bytes;       /* cgroup memory (RAM + swap), default 1 GiB */
    uint32_t processes;          /* cgroup pids.max, default 64 */
    double cpu_seconds;          /* CPU time of all the job's processes, default 60 */
    double wall_seconds;         /* wall clock, default 60 */
    uint64_t file_bytes;         /* RLIMIT_FSIZE: largest file written, default 256 MiB */
    uint32_t open_files;         /* RLIMIT_NOFILE, default 256 */
    uint64_t job_dir_bytes;      /* size of /mnt/data (tmpfs), default 256 MiB */
    uint64_t tmp_bytes;          /* size of /tmp (tmpfs), default 64 MiB */
    uint64_t stream_keep_bytes;  /* stdout and stderr kept each, default 1 MiB */
    uint64_t stream_kill_bytes;  /* stdout + stderr past this ends the job, default 256 MiB */
    uint32_t output_files;       /* files collected, default 100 */
    uint64_t output_file_bytes;  /* one collected file, default 30 MiB (the ceiling) */
    uint64_t output_total_bytes; /* all collected files, default 100 MiB */
} kiln_run_limits;

typedef enum {
    KILN_LIMIT_SECONDS, /* a positive number of seconds, fractions allowed */
    KILN_LIMIT_BYTES,   /* a whole number of bytes */
    KILN_LIMIT_COUNT,   /* a whole number */
} kiln_limit_kind;

typedef struct kiln_limit_def {
    const char *member; /* "wall_seconds": the JSON member */
    const char *flag;   /* "timeout": kiln run's --timeout, kiln serve's --run-timeout */
    kiln_limit_kind kind;
    double min;          /* the least value; for seconds, values must be above it */
    double max;          /* the most */
    double def;          /* what a job gets when nothing asks for more or less */
    size_t offset;       /* of the field in kiln_run_limits */
    const char *meaning; /* a few words, for --help */
} kiln_limit_def;

/* The rows, in the order the docs list them. */
#define KILN_JOB_LIMIT_COUNT 13
extern const kiln_limit_def kiln_limit_defs[KILN_JOB_LIMIT_COUNT];

/* "seconds", "bytes" or "count": the unit of a kind. */
const char *kiln_limit_unit(kiln_limit_kind kind);

/* The row whose JSON member is `member`, or NULL. */
const kiln_limit_def *kiln_limit_by_member(const char *member);

double kiln_limit_get(const kiln_run_limits *limits, const kiln_limit_def *def);
void kiln_limit_set(kiln_run_limits *limits, const kiln_limit_def *def, double value);

/* Every field its default. */
void kiln_job_limits_default(kiln_run_limits *limits);
/* Every field that is 0 ("not set") its default. */
void kiln_job_limits_fill(kiln_run_limits *limits);

/* Is value within def's bounds (and whole, for bytes and counts)? 0, or -1
 * with why (a sentence without its subject: "must be at least 16M") in
 * why[cap]. */
int kiln_limit_check(const kiln_limit_def *def, double value, char *why, size_t cap);

/* Every field within bounds: KILN_E_OK, or KILN_E_USAGE naming the first
 * that is not by its member and flag. */
kiln_status kiln_job_limits_check(const kiln_run_limits *limits, kiln_error *err);

/* A value as a person writes it (a flag, a config file, an environment
 * variable): seconds as a number, optionally with s, m, h or d ("90",
 * "1.5", "90s", "24h"); sizes as bytes or with K, M or G (common/units.h);
 * counts as a whole number. Then held to the bounds. 0, or -1 with why. */
int kiln_limit_parse(const kiln_limit_def *def, const char *text, double *out, char *why,
                     size_t cap);

/* A value as the docs and --help show it: "60", "1G", "256M", "64". */
void kiln_limit_format(const kiln_limit_def *def, double value, char *out, size_t cap);

/* The limits as one JSON object, a member per row (the result's "limits",
 * a job request's). A new reference; NULL when out of memory. */
json_t *kiln_job_limits_json(const kiln_run_limits *limits);

#endif
