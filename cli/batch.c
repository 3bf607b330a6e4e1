/*
 * batch.c - `kiln batch`: many documents from one command (docs/batch.md).
 *
 * A front end over batch/: it reads the command line, checks every job (or
 * every data row) before the first runs, then runs the batch and shows how
 * it goes: a bar on a terminal, a line every few seconds otherwise, JSON
 * lines for programs (--progress json), all on standard error. What each
 * job did is in OUTDIR/results.jsonl, written by the runner.
 *
 * Signals: the first SIGINT or SIGTERM stops new jobs and lets the running
 * ones finish; a second kills them (they leave no journal line and run
 * again next time). The exit status is then 128 + the first signal's
 * number, as a shell reports a process the signal ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "artifacts/render.h"
#include "batch/pool.h"
#include "batch/runner.h"
#include "batch/sources.h"
#include "cli/cli.h"
#include "common/dirs.h"
#include "common/output.h"
#include "common/units.h"
#include "../common/banned.h"

static const char usage[] =
    "usage: kiln batch JOBS.jsonl -o OUTDIR [OPTIONS]\n"
    "       kiln batch --template SPEC --data ROWS.csv|ROWS.jsonl --name PATTERN -o OUTDIR\n"
    "                  [--format FORMAT] [OPTIONS]\n"
    "\n"
    "Make many documents at once (docs/batch.md): one job per line of JOBS.jsonl\n"
    "({\"id\": ..., \"render\": {...}} or {\"id\": ..., \"run\": {...}}), or one document per\n"
    "row of a data file merged into a template spec's {{field}} placeholders. What each\n"
    "job did goes to OUTDIR/results.jsonl; running the same command again skips every\n"
    "job already done.\n"
    "\n"
    "options:\n"
    "  -o, --out DIR          the output directory (made if missing)\n"
    "  -j, --jobs N           jobs at once (default: the number of CPUs)\n"
    "  -b, --base-dir DIR     where relative paths resolve (default: the directory of\n"
    "                         JOBS.jsonl, or of the template)\n"
    "      --retry-failed     run the jobs that failed last time again\n"
    "      --validate-only    check every job (and every row's merged spec) and stop\n"
    "      --progress MODE    auto (default: a bar on a terminal, else a line every 10 s),\n"
    "                         bar, lines, json (JSON lines), none\n"
    "      --job-timeout SECS kill a job that runs longer (default 600; 0: no limit)\n"
    "      --max-bytes SIZE   each document's size ceiling (default 30M)\n"
    "mail merge:\n"
    "  -t, --template SPEC    the spec with {{field}} placeholders\n"
    "  -d, --data FILE        the rows: CSV with a header, or JSON Lines objects\n"
    "  -n, --name PATTERN     each document's file name ({{customer_id}}.pdf)\n"
    "  -f, --format FORMAT    xlsx, docx, pdf or pptx (default: from --name)\n"
    "      --missing MODE     a field a row lacks: error (default) or empty\n"
    "  -h, --help             show this help\n"
    "\n"
    "SIGINT or SIGTERM: no new jobs start and the running ones finish; a second\n"
    "signal kills them. The next run resumes.\n"
    "exit status: 0 every job ok; 1 some jobs failed (results.jsonl says which);\n"
    "2 usage error; 3 a job, the template or a row's file name is invalid (nothing was\n"
    "run); 5 an input cannot be read, or the data file is not valid CSV or JSON Lines;\n"
    "6 the output directory cannot be written (or another batch is using it); 7 out\n"
    "of memory; 70 internal error; 128+N stopped by signal N (130 SIGINT, 143 SIGTERM).\n";

typedef enum { PROGRESS_AUTO, PROGRESS_BAR, PROGRESS_LINES, PROGRESS_JSON, PROGRESS_NONE } mode;

typedef struct batch_cli {
    const char *jobs_path, *out_dir, *base_dir, *template_path, *data_path, *name, *format_name;
    unsigned jobs;
    int retry_failed, validate_only;
    mode progress;
    double job_timeout;
    uint64_t max_bytes;
    kiln_merge_missing missing;
} batch_cli;

/* ---- signals ---- */

static volatile sig_atomic_t signals_seen, first_signal;
static int signal_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    if (!first_signal)
        first_signal = sig;
    signals_seen++;
    if (signal_pipe[1] >= 0) {
        ssize_t rc = write(signal_pipe[1], "s", 1);
        (void)rc;
    }
    errno = saved;
}

static int catch_signals(void)
{
    if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* a progress line is never cut by a signal; poll still wakes */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static kiln_batch_stop stop_asked(void *arg)
{
    (void)arg;
    char drain[64];
    while (read(signal_pipe[0], drain, sizeof drain) > 0)
        ;
    return signals_seen >= 2 ? KILN_BATCH_KILL : signals_seen ? KILN_BATCH_DRAIN : KILN_BATCH_GO;
}

/* ---- progress ---- */

typedef struct display {
    mode how;
    size_t failures_shown;
    double last_draw;
    int drawn; /* a bar is on the line: end it before anything else is printed */
    int told_stop;
} display;

#define FAILURES_SHOWN 20

static void clock_text(double seconds, char *out, size_t cap)
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(out, cap, "-");
        return;
    }
    long s = (long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(out, cap, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(out, cap, "%ld:%02ld", s / 60, s % 60);
}

/* Jobs per second and the seconds left, from the jobs that ran (skipped ones
 * cost nothing and would make the estimate lie). */
static void rate_eta(const kiln_batch_progress *p, double *rate, double *eta)
{
    size_t ran = p->ok + p->failed - p->skipped;
    *rate = p->elapsed > 0 ? ran / p->elapsed : 0;
    size_t left = p->total - (p->ok + p->failed);
    *eta = *rate > 0 ? left / *rate : left ? NAN : 0;
}

static void draw_bar(display *d, const kiln_batch_progress *p)
{
    double rate, eta;
    rate_eta(p, &rate, &eta);
    size_t done = p->ok + p->failed;
    int width = 24, filled = p->total ? (int)((double)done / p->total * width) : width;
    char bar[32], when[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    clock_text(eta, when, sizeof when);
    fprintf(stderr, "\r\033[K[%s] %zu/%zu  ok %zu  failed %zu  %.1f/s  ETA %s%s", bar, done,
            p->total, p->ok, p->failed, rate, when, p->stopping ? "  (stopping)" : "");
    d->drawn = 1;
}

static void end_bar(display *d)
{
    if (d->drawn)
        fputs("\r\033[K", stderr);
    d->drawn = 0;
}

static void print_line(const kiln_batch_progress *p)
{
    double rate, eta;
    rate_eta(p, &rate, &eta);
    char when[64];
    clock_text(eta, when, sizeof when);
    fprintf(stderr,
            "kiln batch: %zu/%zu done (%zu ok, %zu failed, %zu skipped), %.1f jobs/s, "
            "ETA %s%s\n",
            p->ok + p->failed, p->total, p->ok, p->failed, p->skipped, rate, when,
            p->stopping ? ", stopping" : "");
}

static json_t *progress_json(const char *event, const kiln_batch_progress *p)
{
    double rate, eta;
    rate_eta(p, &rate, &eta);
    json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:b}", "event", event,
                          "total", (json_int_t)p->total, "ok", (json_int_t)p->ok, "failed",
                          (json_int_t)p->failed, "skipped", (json_int_t)p->skipped, "running",
                          (json_int_t)p->running, "elapsed_seconds",
                          round(p->elapsed * 1000) / 1000, "jobs_per_second",
                          round(rate * 100) / 100, "stopping", p->stopping);
    if (o)
        json_object_set_new(o, "eta_seconds",
                            isfinite(eta) ? json_real(round(eta)) : json_null());
    return o;
}

static void emit_json(json_t *o)
{
    if (!o)
        return;
    json_dumpf(o, stderr, JSON_COMPACT | JSON_REAL_PRECISION(10));
    fputc('\n', stderr);
    json_decref(o);
}

/* A failed job, said once as it happens (the first FAILURES_SHOWN). */
static void show_failure(display *d, const json_t *entry)
{
    if (d->failures_shown++ >= FAILURES_SHOWN) {
        if (d->failures_shown == FAILURES_SHOWN + 1)
            fprintf(stderr, "kiln batch: more jobs failed: results.jsonl lists them all\n");
        return;
    }
    const json_t *e = json_array_get(json_object_get(entry, "errors"), 0);
    const char *ptr = json_string_value(json_object_get(e, "pointer"));
    json_int_t line = json_integer_value(json_object_get(entry, "line"));
    char where[48] = "";
    if (line)
        snprintf(where, sizeof where, " (line %lld)", (long long)line);
    fprintf(stderr, "kiln batch: failed %s%s: %s%s%s\n",
            json_string_value(json_object_get(entry, "id")), where, ptr && *ptr ? ptr : "",
            ptr && *ptr ? ": " : "",
            e ? json_string_value(json_object_get(e, "message")) : "no error given");
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_progress(void *arg, const kiln_batch_progress *p, const json_t *entry)
{
    display *d = arg;
    int skipped = entry && json_is_true(json_object_get(entry, "skipped"));
    int failed = entry && !skipped &&
                 strcmp(json_string_value(json_object_get(entry, "status")), "ok") != 0;
    if (p->stopping && !d->told_stop && d->how != PROGRESS_NONE && d->how != PROGRESS_JSON) {
        d->told_stop = 1;
        end_bar(d);
        fprintf(stderr,
                "kiln batch: stopping: no new jobs; waiting for the %zu running (a second "
                "signal kills them)\n",
                p->running);
    }
    switch (d->how) {
    case PROGRESS_JSON:
        if (entry)
            emit_json(json_pack("{s:s, s:O, s:O, s:O?, s:b}", "event", "job", "id",
                                json_object_get(entry, "id"), "status",
                                json_object_get(entry, "status"), "line",
                                json_object_get(entry, "line"), "skipped", skipped));
        else if (mono() - d->last_draw >= 1.0 || p->stopping) {
            emit_json(progress_json("progress", p));
            d->last_draw = mono();
        }
        break;
    case PROGRESS_BAR:
        if (failed) {
            end_bar(d);
            show_failure(d, entry);
        }
        if (failed || mono() - d->last_draw >= 0.1) {
            draw_bar(d, p);
            d->last_draw = mono();
        }
        break;
    case PROGRESS_LINES:
        if (failed)
            show_failure(d, entry);
        if (!entry && mono() - d->last_draw >= 10.0) {
            print_line(p);
            d->last_draw = mono();
        }
        break;
    default:
        break;
    }
}

/* ---- the command line ---- */

enum { OPT_RETRY = 256, OPT_VALIDATE, OPT_PROGRESS, OPT_TIMEOUT, OPT_MAX_BYTES, OPT_MISSING };

static int usage_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kiln: error: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n%s", usage);
    return kiln_status_exit(KILN_E_USAGE);
}

static unsigned cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* 0, or the exit status to stop with (help: 0 via *done). */
static int parse_args(int argc, char **argv, batch_cli *c, int *done)
{
    static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                         {"jobs", required_argument, NULL, 'j'},
                                         {"base-dir", required_argument, NULL, 'b'},
                                         {"retry-failed", no_argument, NULL, OPT_RETRY},
                                         {"validate-only", no_argument, NULL, OPT_VALIDATE},
                                         {"progress", required_argument, NULL, OPT_PROGRESS},
                                         {"job-timeout", required_argument, NULL, OPT_TIMEOUT},
                                         {"max-bytes", required_argument, NULL, OPT_MAX_BYTES},
                                         {"template", required_argument, NULL, 't'},
                                         {"data", required_argument, NULL, 'd'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"format", required_argument, NULL, 'f'},
                                         {"missing", required_argument, NULL, OPT_MISSING},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    static const char *const modes[] = {"auto", "bar", "lines", "json", "none"};
    int ch;
    optind = 1;
    opterr = 0;
    c->job_timeout = 600;
    c->jobs = cpu_count();
    if (c->jobs > KILN_POOL_WORKERS_MAX)
        c->jobs = KILN_POOL_WORKERS_MAX;
    while ((ch = getopt_long(argc, argv, ":o:j:b:t:d:n:f:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            c->out_dir = optarg;
            break;
        case 'j': {
            char *end;
            errno = 0;
            unsigned long n = strtoul(optarg, &end, 10);
            if (errno || *end || n < 1 || n > KILN_POOL_WORKERS_MAX || optarg[0] == '-')
                return usage_fail("--jobs takes a number from 1 to 256, not '%s'", optarg);
            c->jobs = (unsigned)n;
            break;
        }
        case 'b':
            c->base_dir = optarg;
            break;
        case OPT_RETRY:
            c->retry_failed = 1;
            break;
        case OPT_VALIDATE:
            c->validate_only = 1;
            break;
        case OPT_PROGRESS: {
            size_t i;
            for (i = 0; i < 5 && strcmp(modes[i], optarg) != 0; i++)
                ;
            if (i == 5)
                return usage_fail("--progress is auto, bar, lines, json or none, not '%s'",
                                  optarg);
            c->progress = (mode)i;
            break;
        }
        case OPT_TIMEOUT: {
            char *end;
            errno = 0;
            double v = strtod(optarg, &end);
            if (errno || *end || !isfinite(v) || v < 0 || v > 30 * 86400)
                return usage_fail("--job-timeout takes seconds (0 to 2592000), not '%s'", optarg);
            c->job_timeout = v;
            break;
        }
        case OPT_MAX_BYTES:
            if (kiln_parse_size(optarg, &c->max_bytes) != 0)
                return usage_fail("invalid --max-bytes '%s'", optarg);
            break;
        case 't':
            c->template_path = optarg;
            break;
        case 'd':
            c->data_path = optarg;
            break;
        case 'n':
            c->name = optarg;
            break;
        case 'f':
            c->format_name = optarg;
            break;
        case OPT_MISSING:
            if (strcmp(optarg, "error") == 0)
                c->missing = KILN_MERGE_MISSING_ERROR;
            else if (strcmp(optarg, "empty") == 0)
                c->missing = KILN_MERGE_MISSING_EMPTY;
            else
                return usage_fail("--missing is error or empty, not '%s'", optarg);
            break;
        case 'h':
            fputs(usage, stdout);
            *done = 1;
            return 0;
        case ':':
            return usage_fail("option '%s' needs a value", argv[optind - 1]);
        default:
            return usage_fail("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        c->jobs_path = argv[optind++];
    if (optind < argc)
        return usage_fail("unexpected argument '%s'", argv[optind]);
    int merge = c->template_path || c->data_path || c->name || c->format_name;
    if (c->jobs_path && merge)
        return usage_fail("%s", "give a jobs file or a mail merge (--template, --data, --name), "
                                "not both");
    if (!c->jobs_path && !merge)
        return usage_fail("%s", "batch needs a jobs file, or --template and --data");
    if (merge && (!c->template_path || !c->data_path || !c->name))
        return usage_fail("%s", "a mail merge needs --template, --data and --name");
    if (c->jobs_path && strcmp(c->jobs_path, "-") == 0)
        return usage_fail("%s", "the jobs file is read twice (checked, then run): give a file, "
                                "not standard input");
    if (!c->out_dir && !c->validate_only)
        return usage_fail("%s", "batch needs -o OUTDIR");
    return 0;
}

/* An absolute directory: the one given, else the directory of file. */
static int absolute_dir(const char *given, const char *file, char out[PATH_MAX])
{
    char copy[PATH_MAX];
    if (!given) {
        snprintf(copy, sizeof copy, "%s", file);
        given = dirname(copy);
    }
    if (!realpath(given, out)) {
        fprintf(stderr, "kiln: error: cannot use %s as the base directory: %s\n", given,
                strerror(errno));
        return kiln_status_exit(KILN_E_INPUT);
    }
    return 0;
}

static int report_check(const kiln_errors *errs, const char *what)
{
    for (size_t i = 0; i < errs->count; i++) {
        const kiln_error *e = &errs->items[i];
        /* A message that names its file already (a data file's "FILE:LINE: ...") is
         * not prefixed again. */
        const char *prefix = strncmp(e->message, what, strlen(what)) == 0 ? "" : what;
        const char *sep = *prefix ? ": " : "";
        if (e->pointer[0])
            fprintf(stderr, "kiln: error: %s%s%s (at %s)\n", prefix, sep, e->message, e->pointer);
        else
            fprintf(stderr, "kiln: error: %s%s%s\n", prefix, sep, e->message);
    }
    if (errs->dropped)
        fprintf(stderr, "kiln: error: %zu more errors not shown\n", errs->dropped);
    kiln_status code = errs->count ? errs->items[0].code : KILN_E_INTERNAL;
    return code == KILN_E_INPUT || code == KILN_E_NOMEM ? kiln_status_exit(code) : 3;
}

static void summary(const batch_cli *c, const kiln_batch_summary *s, mode how)
{
    const kiln_batch_progress *p = &s->progress;
    double rate, eta;
    rate_eta(p, &rate, &eta);
    if (how == PROGRESS_JSON) {
        json_t *o = progress_json("summary", p);
        json_object_set_new(o, "not_run", json_integer((json_int_t)s->not_run));
        json_object_set_new(o, "killed", json_integer((json_int_t)s->killed));
        json_object_set_new(o, "stopped", json_boolean(s->stopped));
        emit_json(o);
        return;
    }
    if (how == PROGRESS_NONE)
        return;
    fprintf(stderr, "kiln batch: %zu jobs in %.1f s: %zu ok, %zu failed", p->total, p->elapsed,
            p->ok, p->failed);
    if (p->skipped)
        fprintf(stderr, " (%zu of them done before, skipped)", p->skipped);
    if (s->not_run)
        fprintf(stderr, ", %zu not run", s->not_run);
    if (s->killed)
        fprintf(stderr, " (%zu killed)", s->killed);
    fprintf(stderr, "; %.1f jobs/s; results in %s/results.jsonl\n", rate, c->out_dir);
    if (s->stopped)
        fprintf(stderr, "kiln batch: stopped by a signal: run the same command again to go on\n");
}

int kiln_batch_main(int argc, char **argv)
{
    batch_cli c;
    memset(&c, 0, sizeof c);
    int done = 0;
    int status = parse_args(argc, argv, &c, &done);
    if (status || done)
        return status;

    /* The ceiling is part of a render's input hash: the default spelled out or left
     * out is the same ceiling. */
    if (c.max_bytes == 0)
        c.max_bytes = KILN_DEFAULT_MAX_BYTES;
    char base[PATH_MAX], out[PATH_MAX];
    const char *anchor = c.jobs_path ? c.jobs_path : c.template_path;
    if ((status = absolute_dir(c.base_dir, anchor, base)) != 0)
        return status;
    kiln_batch_jobs_file jf = {.path = c.jobs_path, .base_dir = base, .max_bytes = c.max_bytes};
    kiln_batch_merge mg = {.template_path = c.template_path,
                           .data_path = c.data_path,
                           .base_dir = base,
                           .name = c.name,
                           .missing = c.missing,
                           .max_bytes = c.max_bytes};
    if (!c.jobs_path) {
        kiln_format by_name;
        if (c.format_name && kiln_format_from_name(c.format_name, &mg.format) != 0)
            return usage_fail("unknown format '%s' (xlsx, docx, pdf, pptx)", c.format_name);
        if (kiln_format_from_path(c.name, &by_name) != 0)
            return usage_fail("--name '%s' must end in .xlsx, .docx, .pdf or .pptx", c.name);
        if (c.format_name && by_name != mg.format)
            return usage_fail("--name '%s' does not end in the extension of --format", c.name);
        mg.format = by_name;
    }

    /* Every job checked before the first runs: a mistake on line 9,000 is
     * found now, not after an hour. */
    kiln_errors errs;
    kiln_errors_init(&errs);
    size_t total = 0;
    kiln_status st = c.jobs_path ? kiln_batch_jobs_check(&jf, c.validate_only, &total, &errs)
                                 : kiln_batch_merge_check(&mg, c.validate_only, &total, &errs);
    if (st != KILN_E_OK)
        return report_check(&errs, c.jobs_path ? c.jobs_path : c.data_path);
    if (c.validate_only) {
        fprintf(stderr, "kiln batch: %zu jobs, all valid\n", total);
        return 0;
    }

    if (kiln_mkdir_p(c.out_dir, 0755, 0755) != 0 || !realpath(c.out_dir, out) ||
        access(out, W_OK | X_OK) != 0) {
        fprintf(stderr, "kiln: error: cannot write to %s: %s\n", c.out_dir, strerror(errno));
        return kiln_status_exit(KILN_E_WRITE);
    }
    jf.out_dir = mg.out_dir = out;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_batch_source src = {0};
    st = c.jobs_path ? kiln_batch_jobs_source(&jf, &src, &err)
                     : kiln_batch_merge_source(&mg, &src, &err);
    if (st != KILN_E_OK) {
        fprintf(stderr, "kiln: error: %s\n", err.message);
        return kiln_status_exit(st);
    }
    if (catch_signals() != 0) {
        fprintf(stderr, "kiln: error: cannot set up signals: %s\n", strerror(errno));
        kiln_batch_source_free(&src);
        return kiln_status_exit(KILN_E_INTERNAL);
    }

    display d = {.how = c.progress};
    if (d.how == PROGRESS_AUTO)
        d.how = isatty(STDERR_FILENO) ? PROGRESS_BAR : PROGRESS_LINES;
    d.last_draw = d.how == PROGRESS_LINES ? mono() : 0;
    kiln_batch_options opt = {.out_dir = out,
                              .workers = c.jobs,
                              .retry_failed = c.retry_failed,
                              .job_timeout = c.job_timeout,
                              .total = total,
                              .on_progress = on_progress,
                              .progress_arg = &d,
                              .progress_interval = d.how == PROGRESS_BAR ? 0.1 : 1.0,
                              .stop = stop_asked,
                              .stop_fd = signal_pipe[0]};
    kiln_batch_summary sum;
    memset(&sum, 0, sizeof sum);
    st = kiln_batch_run(&opt, &src, &sum, &err);
    kiln_batch_source_free(&src);
    end_bar(&d);
    if (st != KILN_E_OK) {
        fprintf(stderr, "kiln: error: %s\n", err.message);
        summary(&c, &sum, d.how);
        return kiln_status_exit(st);
    }
    summary(&c, &sum, d.how);
    if (first_signal)
        return 128 + first_signal;
    return sum.progress.failed ? 1 : 0;
}
