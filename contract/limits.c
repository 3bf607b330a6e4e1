/*
 * limits.c - the table of a job's limits and what is done with a row
 * (limits.h).
 */
#include "limits.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/units.h"
#include "../common/banned.h"

#define KIB 1024.0
#define MIB (1024.0 * KIB)
#define GIB (1024.0 * MIB)
/* The most any size may be: 1 PiB, far past any real machine, and exact
 * as a double (JSON numbers are read as doubles). */
#define SIZE_MAX_BYTES (1024.0 * 1024.0 * GIB)
#define SECONDS_MAX 86400.0
#define COUNT_MAX 1000000.0

#define ROW(member, flag, kind, min, max, def, field, meaning)                       \
    {                                                                                \
        member, flag, kind, min, max, def, offsetof(kiln_run_limits, field), meaning \
    }
const kiln_limit_def kiln_limit_defs[KILN_JOB_LIMIT_COUNT] = {
    ROW("wall_seconds", "timeout", KILN_LIMIT_SECONDS, 0, SECONDS_MAX, 60, wall_seconds,
        "wall clock"),
    ROW("cpu_seconds", "cpu", KILN_LIMIT_SECONDS, 0, SECONDS_MAX, 60, cpu_seconds,
        "CPU time of all the job's processes"),
    ROW("memory_bytes", "memory", KILN_LIMIT_BYTES, 16 * MIB, SIZE_MAX_BYTES, GIB, memory_bytes,
        "RAM, no swap"),
    ROW("processes", "processes", KILN_LIMIT_COUNT, 2, COUNT_MAX, 64, processes,
        "processes and threads at once"),
    ROW("disk_bytes", "disk", KILN_LIMIT_BYTES, 1, SIZE_MAX_BYTES, 256 * MIB, job_dir_bytes,
        "the /mnt/data tmpfs"),
    ROW("tmp_bytes", "tmp", KILN_LIMIT_BYTES, 1, SIZE_MAX_BYTES, 64 * MIB, tmp_bytes,
        "the /tmp tmpfs"),
    ROW("file_bytes", "file-size", KILN_LIMIT_BYTES, 1, SIZE_MAX_BYTES, 256 * MIB, file_bytes,
        "largest file written"),
    ROW("open_files", "open-files", KILN_LIMIT_COUNT, 16, COUNT_MAX, 256, open_files,
        "open files"),
    ROW("stream_keep_bytes", "stream-keep", KILN_LIMIT_BYTES, 1, 64 * MIB, MIB, stream_keep_bytes,
        "stdout and stderr kept, each"),
    ROW("stream_kill_bytes", "stream-kill", KILN_LIMIT_BYTES, 1, SIZE_MAX_BYTES, 256 * MIB,
        stream_kill_bytes, "stdout + stderr that ends the job"),
    ROW("output_files", "max-files", KILN_LIMIT_COUNT, 1, COUNT_MAX, 100, output_files,
        "files collected"),
    ROW("output_file_bytes", "max-file-bytes", KILN_LIMIT_BYTES, 1, SIZE_MAX_BYTES, 30 * MIB,
        output_file_bytes, "one collected file"),
    ROW("output_total_bytes", "max-total-bytes", KILN_LIMIT_BYTES, 1, SIZE_MAX_BYTES, 100 * MIB,
        output_total_bytes, "all collected files"),
};

const char *kiln_limit_unit(kiln_limit_kind kind)
{
    switch (kind) {
    case KILN_LIMIT_SECONDS:
        return "seconds";
    case KILN_LIMIT_BYTES:
        return "bytes";
    case KILN_LIMIT_COUNT:
        return "count";
    }
    return "count";
}

const kiln_limit_def *kiln_limit_by_member(const char *member)
{
    for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT; i++)
        if (strcmp(kiln_limit_defs[i].member, member) == 0)
            return &kiln_limit_defs[i];
    return NULL;
}

/* Which C type a row's field has: seconds are doubles, counts uint32_t,
 * sizes uint64_t (exec/run.h). */
double kiln_limit_get(const kiln_run_limits *limits, const kiln_limit_def *def)
{
    const char *p = (const char *)limits + def->offset;
    switch (def->kind) {
    case KILN_LIMIT_SECONDS:
        return *(const double *)p;
    case KILN_LIMIT_BYTES:
        return (double)*(const uint64_t *)p;
    case KILN_LIMIT_COUNT:
        break;
    }
    return (double)*(const uint32_t *)p;
}

void kiln_limit_set(kiln_run_limits *limits, const kiln_limit_def *def, double value)
{
    char *p = (char *)limits + def->offset;
    switch (def->kind) {
    case KILN_LIMIT_SECONDS:
        *(double *)p = value;
        return;
    case KILN_LIMIT_BYTES:
        *(uint64_t *)p = (uint64_t)value;
        return;
    case KILN_LIMIT_COUNT:
        break;
    }
    *(uint32_t *)p = (uint32_t)value;
}

void kiln_job_limits_default(kiln_run_limits *limits)
{
    memset(limits, 0, sizeof *limits);
    kiln_job_limits_fill(limits);
}

void kiln_job_limits_fill(kiln_run_limits *limits)
{
    for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT; i++)
        if (kiln_limit_get(limits, &kiln_limit_defs[i]) == 0)
            kiln_limit_set(limits, &kiln_limit_defs[i], kiln_limit_defs[i].def);
}

int kiln_limit_check(const kiln_limit_def *def, double value, char *why, size_t cap)
{
    char lo[32], hi[32];
    kiln_limit_format(def, def->min, lo, sizeof lo);
    kiln_limit_format(def, def->max, hi, sizeof hi);
    if (!isfinite(value) || (def->kind != KILN_LIMIT_SECONDS && floor(value) != value)) {
        snprintf(why, cap, "must be a %s",
                 def->kind == KILN_LIMIT_SECONDS ? "number" : "whole number");
        return -1;
    }
    if (def->kind == KILN_LIMIT_SECONDS ? !(value > def->min) : value < def->min) {
        if (def->kind == KILN_LIMIT_SECONDS)
            snprintf(why, cap, "must be more than %s", lo);
        else
            snprintf(why, cap, "must be at least %s", lo);
        return -1;
    }
    if (value > def->max) {
        snprintf(why, cap, "may be at most %s", hi);
        return -1;
    }
    return 0;
}

kiln_status kiln_job_limits_check(const kiln_run_limits *limits, kiln_error *err)
{
    for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT; i++) {
        const kiln_limit_def *d = &kiln_limit_defs[i];
        char why[96];
        if (kiln_limit_check(d, kiln_limit_get(limits, d), why, sizeof why) != 0)
            return kiln_error_set(err, KILN_E_USAGE, "", "limits.%s (--%s) %s", d->member,
                                  d->flag, why);
    }
    return KILN_E_OK;
}

static int parse_count(const char *text, double *out)
{
    char *end;
    if (text[0] < '0' || text[0] > '9')
        return -1;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno || *end)
        return -1;
    *out = (double)n;
    return 0;
}

int kiln_limit_parse(const kiln_limit_def *def, const char *text, double *out, char *why,
                     size_t cap)
{
    double v = 0;
    int rc;
    uint64_t bytes;
    switch (def->kind) {
    case KILN_LIMIT_SECONDS:
        rc = kiln_parse_seconds(text, &v);
        if (rc != 0)
            snprintf(why, cap, "expected seconds: a number, or one with s, m, h or d");
        break;
    case KILN_LIMIT_BYTES:
        rc = kiln_parse_size(text, &bytes);
        v = (double)bytes;
        if (rc != 0)
            snprintf(why, cap, "expected a size: bytes, or a number with K, M or G");
        break;
    default:
        rc = parse_count(text, &v);
        if (rc != 0)
            snprintf(why, cap, "expected a whole number");
        break;
    }
    if (rc != 0)
        return -1;
    if (kiln_limit_check(def, v, why, cap) != 0)
        return -1;
    *out = v;
    return 0;
}

void kiln_limit_format(const kiln_limit_def *def, double value, char *out, size_t cap)
{
    if (def->kind == KILN_LIMIT_BYTES && value >= 1)
        kiln_format_size((uint64_t)value, out, cap);
    else
        snprintf(out, cap, "%.15g", value);
}

json_t *kiln_job_limits_json(const kiln_run_limits *limits)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < KILN_JOB_LIMIT_COUNT; i++) {
        const kiln_limit_def *d = &kiln_limit_defs[i];
        double v = kiln_limit_get(limits, d);
        json_t *value = d->kind == KILN_LIMIT_SECONDS ? json_real(v)
                                                      : json_integer((json_int_t)v);
        if (json_object_set_new(o, d->member, value) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}
