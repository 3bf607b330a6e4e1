/*
 * kiln.c - the `kiln` command: a thin front end over the library.
 *
 * It parses arguments, calls kiln_doc_load / kiln_render, and turns the
 * library's kiln_error values into messages and the documented exit
 * statuses (docs/cli.md). It knows nothing about any file format.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifacts/render.h"
#include "artifacts/spec/spec.h"
#include "common/dirs.h"
#include "common/error.h"
#include "common/units.h"
#include "common/version.h"
#include "contract/job.h"
#include "contract/limits.h"
#include "cli/cli.h"
#include "contract/render_step.h"
#include "contract/report.h"
#include "exec/run.h"

#include <xlsxwriter.h> /* LXW_VERSION, for --version */
#include "../common/banned.h"

static const char usage_main[] =
    "usage: kiln COMMAND [OPTIONS]\n"
    "\n"
    "Render a Kiln document spec (JSON, see docs/spec.md) into a real file.\n"
    "\n"
    "commands:\n"
    "  render SPEC -o OUT     render SPEC to OUT (.xlsx, .docx, .pdf or .pptx)\n"
    "  validate SPEC          check SPEC and report every error\n"
    "  run [FILE]             run Python or bash code in the sandbox (docs/run.md)\n"
    "  batch JOBS.jsonl -o DIR  make many documents at once, resumably; or one per\n"
    "                         data row with --template and --data (docs/batch.md)\n"
    "  serve [OPTIONS]        run the HTTP service (docs/serve.md)\n"
    "  session [OPTIONS]      a live sandboxed interpreter over JSON lines on stdin and\n"
    "                         stdout (docs/session.md)\n"
    "  mcp [OPTIONS]          the Model Context Protocol server on stdio, for assistant\n"
    "                         hosts (docs/mcp.md)\n"
    "  help [COMMAND]         show help for a command\n"
    "\n"
    "options:\n"
    "  -h, --help             show this help\n"
    "  -V, --version          show the version\n"
    "\n"
    "exit status: 0 ok, 2 usage error, 3 invalid spec, 4 output over the size ceiling,\n"
    "5 unreadable input, 6 write failure, 7 out of memory, 70 internal error.\n";

static const char usage_render[] =
    "usage: kiln render SPEC -o OUT [OPTIONS]\n"
    "\n"
    "Render the spec in SPEC (\"-\" for standard input) to OUT (\"-\" for standard\n"
    "output). Nothing appears at OUT unless the whole file was written within the\n"
    "size ceiling; an existing OUT is replaced atomically or left untouched.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT       where to write (required)\n"
    "  -f, --format FORMAT    xlsx, docx, pdf or pptx (default: OUT's extension)\n"
    "  -b, --base-dir DIR     directory for relative image and data paths\n"
    "                         (default: the spec's directory; . for stdin)\n"
    "  -m, --max-bytes SIZE   size ceiling, bytes or with K, M, G (KiB-based);\n"
    "                         default 30M\n"
    "  -j, --json             print the outcome as one JSON object on stdout\n"
    "  -h, --help             show this help\n";

static const char usage_validate[] =
    "usage: kiln validate SPEC [OPTIONS]\n"
    "\n"
    "Check SPEC (\"-\" for standard input) and print every error found, each with\n"
    "the JSON Pointer of the offending member. Prints nothing and exits 0 when\n"
    "the spec is valid.\n"
    "\n"
    "options:\n"
    "  -b, --base-dir DIR     directory for relative image and data paths\n"
    "  -s, --scan-data        also read every CSV / JSON Lines data file through\n"
    "  -j, --json             print the outcome as one JSON object on stdout\n"
    "  -h, --help             show this help\n";

static const char usage_run_options[] =
    "usage: kiln run [OPTIONS] [FILE | -] [OPTIONS] [-- ARGS...]\n"
    "       kiln run [OPTIONS] -c CODE [-- ARGS...]\n"
    "       kiln run [OPTIONS] --request FILE\n"
    "\n"
    "Run untrusted Python or bash code in Kiln's sandbox and print one JSON\n"
    "result (docs/run.md). The code sees its inputs in /mnt/data, where the\n"
    "files it writes are collected from; no network; nothing of the host.\n"
    "\n"
    "options:\n"
    "  -c, --code CODE        the program text (else FILE, else standard input)\n"
    "  -l, --language LANG    python or bash (default: bash for FILE.sh, else python)\n"
    "  -i, --input PATH[:NAME] copy PATH into /mnt/data (as NAME); repeatable\n"
    "      --request FILE     the whole job as one JSON document (docs/run.md, \"Job\n"
    "                         requests\"; \"-\" for standard input), instead of the code,\n"
    "                         language, input, render and limit options\n"
    "      --ro-bind PATH     show host PATH to the job read-only, at PATH; repeatable\n"
    "  -o, --out DIR          copy the files and documents into DIR (default ./kiln-out)\n"
    "  -n, --no-copy          list the files only\n"
    "  -r, --render           render the specs `import kiln` saved into documents (the\n"
    "                         default)\n"
    "      --no-render        leave the saved specs as files, unrendered\n"
    "      --pretty           indent the JSON\n"
    "limits (SECONDS: a number, or with s, m, h, d; SIZE: bytes, or with K, M, G):\n";
static const char usage_run_tail[] =
    "  -h, --help             show this help\n"
    "\n"
    "exit status: 0 the job's status is ok; 1 the job ran and ended otherwise, or a\n"
    "document could not be rendered (the JSON says which); 2 usage error or an invalid\n"
    "request; 3 the inputs do not fit in --disk; 5 unreadable code or input; 6 the\n"
    "output directory cannot be written; 70 the sandbox cannot be set up (kiln run\n"
    "needs root).\n";

/* kiln run's help: the options, then one line per limit from the table
 * (contract/limits.h), then the exit statuses. Built once. */
static const char *usage_run(void)
{
    static char text[8192];
    if (text[0])
        return text;
    size_t o = (size_t)snprintf(text, sizeof text, "%s", usage_run_options);
    if (o < sizeof text)
        o += kiln_cli_limit_help(text + o, sizeof text - o);
    if (o < sizeof text)
        snprintf(text + o, sizeof text - o, "%s", usage_run_tail);
    return text;
}

/* root, compact, on a line of its own; root is freed. */
static void print_json(json_t *root, FILE *to)
{
    json_dumpf(root, to, JSON_COMPACT);
    fputc('\n', to);
    json_decref(root);
}

/* Set before any command runs when --json / -j is anywhere on the command
 * line, so even a usage error is reported as JSON to a caller that asked. */
static int json_requested;

static int usage_error(const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int usage_error(const char *usage, const char *fmt, ...)
{
    kiln_error e;
    va_list ap;
    memset(&e, 0, sizeof e);
    e.code = KILN_E_USAGE;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kiln: error: %s\n", e.message);
    if (usage)
        fprintf(stderr, "\n%s", usage);
    if (json_requested) {
        json_t *root = kiln_error_list_json(&e);
        json_object_set_new(root, "ok", json_false());
        print_json(root, stdout);
    }
    return kiln_status_exit(KILN_E_USAGE);
}

/* getopt's own messages are off (opterr = 0) so every error has one form. */
static int bad_option(const char *usage, char **argv, int c)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        return usage_error(usage, "option '%s' needs a value", arg);
    return usage_error(usage, "unknown option '%s'", arg);
}

/* The same pointer as --json gives, "(whole spec)" standing for "". */
static void print_error_line(const kiln_error *e)
{
    if (kiln_error_has_pointer(e))
        fprintf(stderr, "kiln: error: %s: %s\n",
                e->pointer[0]                   ? e->pointer
                : e->code == KILN_E_INVALID_JOB ? "(whole request)"
                                                : "(whole spec)",
                e->message);
    else
        fprintf(stderr, "kiln: error: %s\n", e->message);
}

/* What --json prints an outcome as: an error list (validate, a usage
 * error), or a render's whole outcome (render: contract/report.h). */
enum { JSON_OFF, JSON_ERRORS, JSON_RENDER };

/* Report errors on stderr, and as JSON on stdout when asked (as_json: how).
 * Returns the exit status. */
static int report_errors(const kiln_errors *errs, int as_json)
{
    for (size_t i = 0; i < errs->count; i++)
        print_error_line(&errs->items[i]);
    if (errs->dropped)
        fprintf(stderr, "kiln: error: %zu more errors not shown\n", errs->dropped);
    if (as_json) {
        json_t *root = as_json == JSON_RENDER ? kiln_render_outcome_json(NULL, errs, NULL)
                                              : kiln_errors_json(errs);
        json_object_set_new(root, "ok", json_false());
        print_json(root, stdout);
    }
    return kiln_status_exit(errs->count ? errs->items[0].code : KILN_E_INTERNAL);
}

static int report_error(const kiln_error *e, int as_json)
{
    kiln_errors one;
    kiln_errors_init(&one);
    kiln_errors_add(&one, e);
    return report_errors(&one, as_json);
}

/*
 * Where the options end: the index of the first "--" that is not an option's
 * value, else argc. getopt_long permutes (options may come after FILE, as
 * GNU tools allow), and then moves the "--" before the words it skipped,
 * so after it runs nothing tells FILE from the program's arguments; the
 * split is found first, reading argv as getopt will (a value attached or
 * the next word, long options by unique prefix).
 */
static int options_end(int argc, char **argv, const char *shortopts,
                       const struct option *longopts)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return i;
        if (a[0] != '-' || a[1] == '\0')
            continue;
        if (a[1] == '-') {
            const char *name = a + 2;
            if (strchr(name, '='))
                continue;
            size_t n = strlen(name);
            const struct option *found = NULL;
            int matches = 0;
            for (const struct option *o = longopts; o->name; o++) {
                if (strncmp(o->name, name, n) != 0)
                    continue;
                if (strlen(o->name) == n) {
                    found = o;
                    matches = 1;
                    break;
                }
                found = o;
                matches++;
            }
            if (matches == 1 && found->has_arg == required_argument)
                i++;
            continue;
        }
        for (const char *p = a + 1; *p; p++) {
            const char *spec = strchr(shortopts, *p);
            if (*p != ':' && spec && spec[1] == ':') {
                if (p[1] == '\0')
                    i++;
                break;
            }
        }
    }
    return argc;
}

static int cmd_render(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"format", required_argument, NULL, 'f'},
                                         {"base-dir", required_argument, NULL, 'b'},
                                         {"max-bytes", required_argument, NULL, 'm'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *output = NULL, *format_name = NULL;
    kiln_parse_options popt;
    kiln_render_options ropt = {0, NULL};
    int as_json = 0, c;

    kiln_parse_options_init(&popt);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:f:b:m:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (output)
                return usage_error(usage_render, "%s", "-o given more than once");
            output = optarg;
            break;
        case 'f':
            if (format_name)
                return usage_error(usage_render, "%s", "--format given more than once");
            format_name = optarg;
            break;
        case 'b':
            popt.base_dir = optarg;
            break;
        case 'm':
            if (kiln_parse_size(optarg, &ropt.max_bytes) != 0)
                return usage_error(usage_render, "invalid --max-bytes '%s'", optarg);
            break;
        case 'j':
            as_json = JSON_RENDER;
            break;
        case 'h':
            fputs(usage_render, stdout);
            return 0;
        default:
            return bad_option(usage_render, argv, c);
        }
    }
    if (optind >= argc)
        return usage_error(usage_render, "%s", "render needs a SPEC");
    if (optind + 1 < argc)
        return usage_error(usage_render, "unexpected argument '%s'", argv[optind + 1]);
    if (!output)
        return usage_error(usage_render, "%s", "render needs -o OUT");
    const char *spec_path = argv[optind];

    kiln_format format;
    if (format_name) {
        if (kiln_format_from_name(format_name, &format) != 0)
            return usage_error(usage_render, "unknown format '%s' (xlsx, docx, pdf, pptx)",
                               format_name);
    } else if (strcmp(output, "-") == 0) {
        return usage_error(usage_render, "%s", "writing to standard output needs --format");
    } else if (kiln_format_from_path(output, &format) != 0) {
        return usage_error(usage_render,
                           "cannot tell the format of '%s': name it .xlsx, .docx, .pdf or "
                           ".pptx, or use --format",
                           output);
    }

    /* A format this build cannot write is a usage error whatever the spec
     * holds, so say it before reading the spec. */
    {
        /* The writers load on demand (artifacts/writers_dl.c): a broken
         * installation is reported before the spec is read. */
        kiln_error load_err;
        memset(&load_err, 0, sizeof load_err);
        if (!kiln_writer_write_fn(format, &load_err))
            return report_error(&load_err, as_json);
    }

    kiln_errors errs;
    kiln_doc *doc = NULL;
    kiln_errors_init(&errs);
    if (kiln_doc_load(spec_path, &popt, &doc, &errs) != KILN_E_OK)
        return report_errors(&errs, as_json);

    kiln_error err;
    kiln_render_result result;
    memset(&err, 0, sizeof err);
    kiln_status st = kiln_render(doc, format, output, &ropt, &result, &err);
    kiln_doc_free(doc);
    if (st != KILN_E_OK)
        return report_error(&err, as_json);
    if (!as_json) {
        kiln_warning warnings[KILN_WARNINGS_MAX];
        size_t n = kiln_render_warnings(&result, warnings);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, "kiln: warning: %s\n", warnings[i].message);
    } else {
        /* The outcome goes where the document does not. */
        FILE *to = strcmp(output, "-") == 0 ? stderr : stdout;
        json_t *root = kiln_render_outcome_json(&result, NULL, NULL);
        json_object_set_new(root, "path", json_string(output));
        print_json(root, to);
    }
    return 0;
}

static int cmd_validate(int argc, char **argv)
{
    static const struct option opts[] = {{"base-dir", required_argument, NULL, 'b'},
                                         {"scan-data", no_argument, NULL, 's'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    kiln_parse_options popt;
    int as_json = 0, c;

    kiln_parse_options_init(&popt);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:sjh", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            popt.base_dir = optarg;
            break;
        case 's':
            popt.scan_data_files = 1;
            break;
        case 'j':
            as_json = JSON_ERRORS;
            break;
        case 'h':
            fputs(usage_validate, stdout);
            return 0;
        default:
            return bad_option(usage_validate, argv, c);
        }
    }
    if (optind >= argc)
        return usage_error(usage_validate, "%s", "validate needs a SPEC");
    if (optind + 1 < argc)
        return usage_error(usage_validate, "unexpected argument '%s'", argv[optind + 1]);

    kiln_errors errs;
    kiln_doc *doc = NULL;
    kiln_errors_init(&errs);
    if (kiln_doc_load(argv[optind], &popt, &doc, &errs) != KILN_E_OK)
        return report_errors(&errs, as_json);
    kiln_doc_free(doc);
    if (as_json) {
        json_t *root = kiln_error_list_json(NULL);
        json_object_set_new(root, "ok", json_true());
        print_json(root, stdout);
    }
    return 0;
}

/* The largest job request document --request reads: the code at its
 * limit, escaped, with room for the rest. */
#define KILN_RUN_MAX_REQUEST_BYTES (4 * KILN_JOB_CODE_MAX)

/* Read all of path ("-" = stdin) up to max bytes. NULL with errno on
 * failure (EFBIG past max). */
static char *read_bounded(const char *path, size_t max, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap >= max) {
                free(buf);
                buf = NULL;
                errno = EFBIG;
                break;
            }
            cap = cap * 2 < max ? cap * 2 : max;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
        }
        errno = 0;
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                int why = errno ? errno : EIO; /* EISDIR for a directory */
                free(buf);
                buf = NULL;
                errno = why;
            }
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

/* What kiln run's command line asks for, before the job is run. */
typedef struct run_cli {
    kiln_run_options opt;
    const char *code_arg, *language, *file, *request, *out_dir;
    int no_copy, pretty, job_flags; /* job_flags: a flag --request replaces was given */
    kiln_run_input *inputs;         /* argc of them at most */
    char **input_copies;
    const char **args; /* from a request: NULL-terminated, the request's strings */
    char *code;        /* read from FILE or stdin */
    json_t *request_doc;
} run_cli;

static void run_cli_release(run_cli *r, int argc)
{
    for (int i = 0; r->input_copies && i < argc; i++)
        free(r->input_copies[i]);
    free(r->input_copies);
    free(r->inputs);
    free(r->args);
    free(r->code);
    json_decref(r->request_doc);
}

enum { OPT_PRETTY = 256, OPT_NO_RENDER, OPT_RO_BIND, OPT_REQUEST, OPT_LIMIT = 512 };

/* kiln run's options: the fixed ones, then one per limit of the table. */
static const struct option *run_options(void)
{
    static const struct option fixed[] = {{"code", required_argument, NULL, 'c'},
                                          {"language", required_argument, NULL, 'l'},
                                          {"input", required_argument, NULL, 'i'},
                                          {"out", required_argument, NULL, 'o'},
                                          {"no-copy", no_argument, NULL, 'n'},
                                          {"render", no_argument, NULL, 'r'},
                                          {"no-render", no_argument, NULL, OPT_NO_RENDER},
                                          {"pretty", no_argument, NULL, OPT_PRETTY},
                                          {"help", no_argument, NULL, 'h'},
                                          {"ro-bind", required_argument, NULL, OPT_RO_BIND},
                                          {"request", required_argument, NULL, OPT_REQUEST}};
#define FIXED_COUNT (sizeof fixed / sizeof fixed[0])
    static struct option all[FIXED_COUNT + KILN_JOB_LIMIT_COUNT + 1];
    if (!all[0].name) {
        memcpy(all, fixed, sizeof fixed);
        for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT; i++)
            all[FIXED_COUNT + i] = (struct option){kiln_limit_defs[i].flag, required_argument,
                                                   NULL, OPT_LIMIT + (int)i};
    }
#undef FIXED_COUNT
    return all;
}

/* Parse argv into r. 0, -1 to stop with *status (help shown: 0; a usage
 * error: 2). */
static int parse_run_args(int argc, char **argv, run_cli *r, int *status)
{
    /* Options may come anywhere before "--" (GNU getopt's permutation); what
     * follows it is the program's. */
    static const char shortopts[] = ":c:l:i:o:nrh";
    const struct option *opts = run_options();
    int end = options_end(argc, argv, shortopts, opts), c;
    r->opt.render = &kiln_render_step;
    r->out_dir = "kiln-out";
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(end, argv, shortopts, opts, NULL)) != -1) {
        if (c >= OPT_LIMIT && c < OPT_LIMIT + KILN_JOB_LIMIT_COUNT) {
            const kiln_limit_def *d = &kiln_limit_defs[c - OPT_LIMIT];
            char why[128];
            double v;
            if (kiln_limit_parse(d, optarg, &v, why, sizeof why) != 0) {
                *status = usage_error(usage_run(), "invalid value '%s' for --%s: %s", optarg,
                                      d->flag, why);
                return -1;
            }
            kiln_limit_set(&r->opt.limits, d, v);
            r->job_flags = 1;
            continue;
        }
        switch (c) {
        case 'c':
            r->code_arg = optarg;
            r->job_flags = 1;
            break;
        case 'l':
            r->language = optarg;
            r->job_flags = 1;
            break;
        case 'i': {
            char *copy = strdup(optarg);
            if (!copy) {
                *status = usage_error(NULL, "out of memory");
                return -1;
            }
            kiln_run_input *in = &r->inputs[r->opt.input_count];
            r->input_copies[r->opt.input_count++] = copy;
            /* PATH:NAME; a PATH that itself holds ':' needs the :NAME. */
            char *colon = strrchr(copy, ':');
            if (colon) {
                *colon = '\0';
                in->name = colon + 1;
            }
            in->host_path = copy;
            r->job_flags = 1;
            break;
        }
        case 'o':
            r->out_dir = optarg;
            break;
        case 'n':
            r->no_copy = 1;
            break;
        case 'r':
            r->opt.render = &kiln_render_step;
            r->job_flags = 1;
            break;
        case OPT_NO_RENDER:
            r->opt.render = NULL;
            r->job_flags = 1;
            break;
        case OPT_PRETTY:
            r->pretty = 1;
            break;
        case OPT_RO_BIND:
            kiln_run_add_ro_bind(&r->opt, optarg);
            break; /* checked by kiln_run_job */
        case OPT_REQUEST:
            r->request = optarg;
            break;
        case 'h':
            fputs(usage_run(), stdout);
            *status = 0;
            return -1;
        default:
            *status = bad_option(usage_run(), argv, c);
            return -1;
        }
    }
    /* Besides the options: FILE (or "-"), at most one; the program's own
     * arguments are what follows "--". */
    if (optind < end)
        r->file = argv[optind++];
    if (optind < end) {
        *status = usage_error(usage_run(),
                              "unexpected argument '%s' (program arguments go after --)",
                              argv[optind]);
        return -1;
    }
    r->opt.args = (const char *const *)(argv + (end < argc ? end + 1 : argc));
    if (r->request && (r->job_flags || r->file || end < argc)) {
        *status = usage_error(usage_run(),
                              "--request gives the whole job: the code, FILE, "
                              "--language, --input, --render, the limits and the program's "
                              "arguments go in it, not on the command line");
        return -1;
    }
    if (r->code_arg && r->file) {
        *status = usage_error(usage_run(), "give the code with -c or as FILE, not both");
        return -1;
    }
    return 0;
}

/* The job from the command line's own options: the language, the code. */
static int job_from_flags(run_cli *r, int *status)
{
    if (!r->language) {
        size_t n = r->file ? strlen(r->file) : 0;
        r->opt.language = n > 3 && strcmp(r->file + n - 3, ".sh") == 0 ? KILN_LANG_BASH
                                                                       : KILN_LANG_PYTHON;
    } else if (strcmp(r->language, "python") == 0 || strcmp(r->language, "python3") == 0) {
        r->opt.language = KILN_LANG_PYTHON;
    } else if (strcmp(r->language, "bash") == 0 || strcmp(r->language, "sh") == 0) {
        r->opt.language = KILN_LANG_BASH;
    } else {
        *status = usage_error(usage_run(), "unknown language '%s' (python or bash)", r->language);
        return -1;
    }
    if (r->code_arg) {
        r->opt.code = r->code_arg;
        r->opt.code_len = strlen(r->code_arg);
        return 0;
    }
    r->code = read_bounded(r->file ? r->file : "-", KILN_JOB_CODE_MAX, &r->opt.code_len);
    if (!r->code) {
        if (errno == EFBIG)
            fprintf(stderr, "kiln: error: cannot read the program %s: larger than %u MiB\n",
                    r->file ? r->file : "from standard input", KILN_JOB_CODE_MAX >> 20);
        else
            fprintf(stderr, "kiln: error: cannot read the program %s: %s\n",
                    r->file ? r->file : "from standard input", strerror(errno));
        *status = kiln_status_exit(KILN_E_INPUT);
        return -1;
    }
    r->opt.code = r->code;
    return 0;
}

/* The job from a request document (contract/job.h), inputs as host paths. */
static int job_from_request(run_cli *r, int *status)
{
    size_t len;
    char *text = read_bounded(r->request, KILN_RUN_MAX_REQUEST_BYTES, &len);
    if (!text) {
        if (errno == EFBIG)
            fprintf(stderr, "kiln: error: cannot read the request %s: larger than %u MiB\n",
                    r->request, KILN_RUN_MAX_REQUEST_BYTES >> 20);
        else
            fprintf(stderr, "kiln: error: cannot read the request %s: %s\n", r->request,
                    strerror(errno));
        *status = kiln_status_exit(KILN_E_INPUT);
        return -1;
    }
    json_error_t je;
    /* Any JSON value: one that is not an object is the contract's error to
     * name ("a job request is a JSON object"), not a syntax error. */
    r->request_doc = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    free(text);
    kiln_errors errs;
    kiln_errors_init(&errs);
    if (!r->request_doc) {
        kiln_errors_addf(&errs, KILN_E_INVALID_JOB, "",
                         "the request is not valid JSON at line %d, column %d: %s", je.line,
                         je.column, je.text);
        *status = report_errors(&errs, 0);
        return -1;
    }
    kiln_job_request rq;
    kiln_job_parse_options popt = {.inputs = KILN_JOB_INPUT_PATHS};
    if (kiln_job_request_parse(r->request_doc, &popt, &rq, &errs) != KILN_E_OK) {
        *status = report_errors(&errs, 0);
        return -1;
    }
    r->args = calloc(json_array_size(rq.args) + 1, sizeof *r->args);
    free(r->inputs);
    r->inputs = calloc(json_array_size(rq.inputs) + 1, sizeof *r->inputs);
    if (!r->args || !r->inputs) {
        fprintf(stderr, "kiln: error: out of memory\n");
        *status = kiln_status_exit(KILN_E_NOMEM);
        return -1;
    }
    kiln_job_run_options(&rq, &r->opt, r->inputs, r->args);
    return 0;
}

/* The output directory, made absolute: the supervisor works from its own
 * mount namespace and needs a path that does not depend on cwd. */
static int prepare_out_dir(const char *out_dir, char out_abs[PATH_MAX], int *status)
{
    if (kiln_mkdir_p(out_dir, 0755, 0755) < 0) {
        fprintf(stderr, "kiln: error: cannot create %s: %s\n", out_dir, strerror(errno));
        *status = kiln_status_exit(KILN_E_WRITE);
        return -1;
    }
    if (!realpath(out_dir, out_abs) || access(out_abs, W_OK | X_OK) < 0) {
        fprintf(stderr, "kiln: error: cannot write to %s: %s\n", out_dir, strerror(errno));
        *status = kiln_status_exit(KILN_E_WRITE);
        return -1;
    }
    return 0;
}

/* Run the job, print its result; the exit status (docs/run.md). */
static int run_and_report(kiln_run_options *opt, int pretty)
{
    kiln_error err;
    memset(&err, 0, sizeof err);
    json_t *result = NULL;
    /* This process does nothing else: let it be the supervisor. */
    opt->in_process = 1;
    kiln_status st = kiln_run_job(opt, &result, &err);
    if (st != KILN_E_OK) {
        fprintf(stderr, "kiln: error: %s\n", err.message);
        return kiln_status_exit(st);
    }
    json_dumpf(result, stdout, pretty ? JSON_INDENT(2) : JSON_COMPACT);
    fputc('\n', stdout);
    int status = 0;
    const char *job_status = json_string_value(json_object_get(result, "status"));
    if (job_status && strcmp(job_status, "setup_failure") == 0)
        status = kiln_status_exit(KILN_E_INTERNAL);
    else if (!job_status || strcmp(job_status, "ok") != 0 ||
             json_array_size(json_object_get(result, "render_errors")) > 0)
        status = 1;
    json_decref(result);
    return status;
}

static int cmd_run(int argc, char **argv)
{
    run_cli r;
    memset(&r, 0, sizeof r);
    int status = 0;
    r.inputs = calloc((size_t)argc, sizeof *r.inputs);
    r.input_copies = calloc((size_t)argc, sizeof *r.input_copies);
    if (!r.inputs || !r.input_copies) {
        fprintf(stderr, "kiln: error: out of memory\n");
        status = kiln_status_exit(KILN_E_NOMEM);
        goto release;
    }
    r.opt.inputs = r.inputs;
    if (parse_run_args(argc, argv, &r, &status) != 0)
        goto release;
    if ((r.request ? job_from_request(&r, &status) : job_from_flags(&r, &status)) != 0)
        goto release;
    char out_abs[PATH_MAX];
    if (!r.no_copy) {
        if (prepare_out_dir(r.out_dir, out_abs, &status) != 0)
            goto release;
        r.opt.out_dir = out_abs;
    }
    status = run_and_report(&r.opt, r.pretty);
release:
    run_cli_release(&r, argc);
    return status;
}

/* The HTTP service lives in kiln-service.so beside the executable (or
 * $KILN_SERVICE): libmicrohttpd brings GnuTLS and SQLite, whose loading
 * every `kiln run` would otherwise pay at start-up. Its calls into the
 * core resolve against this executable (-rdynamic). */
#define KILN_SERVICE_SO "kiln-service.so"

static int cmd_serve(int argc, char **argv)
{
    char path[PATH_MAX];
    const char *env = getenv("KILN_SERVICE");
    if (env && env[0]) {
        int n = snprintf(path, sizeof path, "%s", env);
        if (n < 0 || (size_t)n >= sizeof path) {
            fprintf(stderr, "kiln: error: KILN_SERVICE is too long\n");
            return kiln_status_exit(KILN_E_INTERNAL);
        }
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path);
        if (n <= 0 || (size_t)n >= sizeof path) {
            fprintf(stderr, "kiln: error: cannot find the kiln executable's directory\n");
            return kiln_status_exit(KILN_E_INTERNAL);
        }
        path[n] = '\0';
        /* The library's name in place of the executable's, in the same
         * directory; a path with no room for it is refused, never cut. */
        char *slash = strrchr(path, '/');
        size_t dir_len = slash ? (size_t)(slash + 1 - path) : 0;
        if (dir_len + sizeof KILN_SERVICE_SO > sizeof path) {
            fprintf(stderr, "kiln: error: cannot find the kiln executable's directory\n");
            return kiln_status_exit(KILN_E_INTERNAL);
        }
        memcpy(path + dir_len, KILN_SERVICE_SO, sizeof KILN_SERVICE_SO);
    }
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        fprintf(stderr, "kiln: error: cannot load the HTTP service: %s\n", why ? why : path);
        return kiln_status_exit(KILN_E_INTERNAL);
    }
    int (*serve_main)(int, char **);
    *(void **)&serve_main = dlsym(handle, "kiln_serve_main");
    if (!serve_main) {
        fprintf(stderr, "kiln: error: cannot load the HTTP service: %s has no kiln_serve_main\n",
                path);
        return kiln_status_exit(KILN_E_INTERNAL);
    }
    /* The library stays loaded until exit: its threads are gone by then. */
    return serve_main(argc, argv);
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (strcmp(argv[1], "render") == 0)
        fputs(usage_render, stdout);
    else if (strcmp(argv[1], "validate") == 0)
        fputs(usage_validate, stdout);
    else if (strcmp(argv[1], "run") == 0)
        fputs(usage_run(), stdout);
    else if (strcmp(argv[1], "serve") == 0) {
        char *help_argv[] = {"serve", "--help", NULL};
        return cmd_serve(2, help_argv);
    } else if (strcmp(argv[1], "session") == 0) {
        char *help_argv[] = {"session", "--help", NULL};
        return kiln_session_main(2, help_argv);
    } else if (strcmp(argv[1], "batch") == 0) {
        char *help_argv[] = {"batch", "--help", NULL};
        return kiln_batch_main(2, help_argv);
    } else if (strcmp(argv[1], "mcp") == 0) {
        char *help_argv[] = {"mcp", "--help", NULL};
        return kiln_mcp_main(2, help_argv);
    } else if (strcmp(argv[1], "help") == 0)
        fputs(usage_main, stdout);
    else
        return usage_error(usage_main, "unknown command '%s'", argv[1]);
    return 0;
}

/* What went to stdout must have arrived: a full disk or a closed pipe is a
 * write failure, not a success. */
static int finish(int status)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "kiln: error: cannot write to standard output: %s\n", strerror(errno));
        return status ? status : kiln_status_exit(KILN_E_WRITE);
    }
    return status;
}

static int run(int argc, char **argv);

int main(int argc, char **argv)
{
    /* -j is --json for render and validate only (kiln batch's -j is --jobs). */
    int short_json = argc > 1 &&
                     (strcmp(argv[1], "render") == 0 || strcmp(argv[1], "validate") == 0);
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0 || (short_json && strcmp(argv[i], "-j") == 0))
            json_requested = 1;
    return finish(run(argc, argv));
}

static int run(int argc, char **argv)
{
    if (argc < 2)
        return usage_error(usage_main, "%s", "missing command");
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0)
        return cmd_help(1, argv);
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("kiln %s (jansson %s, libxlsxwriter %s)\n", KILN_VERSION, JANSSON_VERSION,
               LXW_VERSION);
        return 0;
    }
    if (strcmp(cmd, "render") == 0)
        return cmd_render(argc - 1, argv + 1);
    if (strcmp(cmd, "validate") == 0)
        return cmd_validate(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "session") == 0)
        return kiln_session_main(argc - 1, argv + 1);
    if (strcmp(cmd, "mcp") == 0)
        return kiln_mcp_main(argc - 1, argv + 1);
    if (strcmp(cmd, "batch") == 0)
        return kiln_batch_main(argc - 1, argv + 1);
    if (strcmp(cmd, "zygote") == 0)
        return kiln_zygote_command(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0)
        return cmd_help(argc - 1, argv + 1);
    return usage_error(usage_main, "unknown command '%s'", cmd);
}
