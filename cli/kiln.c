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
    "  serve [OPTIONS]        run the HTTP service (docs/serve.md)\n"
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

static const char usage_run[] =
    "usage: kiln run [OPTIONS] [FILE | -] [OPTIONS] [-- ARGS...]\n"
    "       kiln run [OPTIONS] -c CODE [-- ARGS...]\n"
    "\n"
    "Run untrusted Python or bash code in Kiln's sandbox and print one JSON\n"
    "result (docs/run.md). The code sees its inputs in /mnt/data, where the\n"
    "files it writes are collected from; no network; nothing of the host.\n"
    "\n"
    "options:\n"
    "  -c, --code CODE        the program text (else FILE, else standard input)\n"
    "  -l, --language LANG    python or bash (default: bash for FILE.sh, else python)\n"
    "  -i, --input PATH[:NAME] copy PATH into /mnt/data (as NAME); repeatable\n"
    "      --ro-bind PATH     show host PATH to the job read-only, at PATH; repeatable\n"
    "  -o, --out DIR          copy the files and documents into DIR (default ./kiln-out)\n"
    "  -n, --no-copy          list the files only\n"
    "  -r, --render           render the specs `import kiln` saved into documents (the\n"
    "                         default)\n"
    "      --no-render        leave the saved specs as files, unrendered\n"
    "      --pretty           indent the JSON\n"
    "limits (SIZE in bytes or with K, M, G):\n"
    "      --timeout SECONDS  wall clock (60)         --cpu SECONDS   CPU time (60)\n"
    "      --memory SIZE      RAM, no swap (1G)       --processes N   (64)\n"
    "      --disk SIZE        /mnt/data (256M)        --tmp SIZE      /tmp (64M)\n"
    "      --file-size SIZE   largest file (256M)     --open-files N  (256)\n"
    "      --stream-keep SIZE stdout/stderr kept, each (1M)\n"
    "      --stream-kill SIZE stdout+stderr that ends the job (256M)\n"
    "      --max-files N (100)  --max-file-bytes SIZE (30M)  --max-total-bytes SIZE (100M)\n"
    "  -h, --help             show this help\n"
    "\n"
    "exit status: 0 the job's status is ok; 1 the job ran and ended otherwise, or a\n"
    "document could not be rendered (the JSON says which); 2 usage error; 3 the\n"
    "inputs do not fit in --disk; 5 unreadable code or input; 6 the output directory\n"
    "cannot be written; 70 the sandbox cannot be set up (kiln run needs root).\n";

/* Set before any command runs when --json / -j is anywhere on the command
 * line, so even a usage error is reported as JSON to a caller that asked. */
static int json_requested;

static json_t *error_json(const kiln_error *e);

__attribute__((format(printf, 2, 3)))
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
        json_t *root = json_pack("{s:b, s:[o]}", "ok", 0, "errors", error_json(&e));
        json_dumpf(root, stdout, JSON_COMPACT);
        fputc('\n', stdout);
        json_decref(root);
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

/* Whether an error is shown with a pointer: a spec's errors always are (""
 * is the whole spec), others when they name a part of it. */
static int error_has_pointer(const kiln_error *e)
{
    return e->pointer[0] || e->code == KILN_E_INVALID_SPEC || e->code == KILN_E_LIMIT;
}

static json_t *error_json(const kiln_error *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "code", json_string(kiln_status_name(e->code)));
    if (error_has_pointer(e))
        json_object_set_new(o, "pointer", json_string(e->pointer));
    json_object_set_new(o, "message", json_string(e->message));
    if (e->code == KILN_E_LIMIT || e->code == KILN_E_TOO_LARGE) {
        json_object_set_new(o, "limit", json_integer((json_int_t)e->limit));
        json_object_set_new(o, "actual", json_integer((json_int_t)e->actual));
    }
    return o;
}

/* The same pointer as --json gives, "(whole spec)" standing for "". */
static void print_error_line(const kiln_error *e)
{
    if (error_has_pointer(e))
        fprintf(stderr, "kiln: error: %s: %s\n", e->pointer[0] ? e->pointer : "(whole spec)",
                e->message);
    else
        fprintf(stderr, "kiln: error: %s\n", e->message);
}

/* Report errors on stderr, and as JSON on stdout when asked. Returns the exit status. */
static int report_errors(const kiln_errors *errs, int as_json)
{
    for (size_t i = 0; i < errs->count; i++)
        print_error_line(&errs->items[i]);
    if (errs->dropped)
        fprintf(stderr, "kiln: error: %zu more errors not shown\n", errs->dropped);
    if (as_json) {
        json_t *root = json_object();
        json_t *list = json_array();
        for (size_t i = 0; i < errs->count; i++)
            json_array_append_new(list, error_json(&errs->items[i]));
        json_object_set_new(root, "ok", json_false());
        json_object_set_new(root, "errors", list);
        if (errs->dropped)
            json_object_set_new(root, "more_errors", json_integer((json_int_t)errs->dropped));
        json_dumpf(root, stdout, JSON_COMPACT);
        fputc('\n', stdout);
        json_decref(root);
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
static int options_end(int argc, char **argv, const char *shortopts, const struct option *longopts)
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
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},   {"format", required_argument, NULL, 'f'},
        {"base-dir", required_argument, NULL, 'b'}, {"max-bytes", required_argument, NULL, 'm'},
        {"json", no_argument, NULL, 'j'},           {"help", no_argument, NULL, 'h'},
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
        case 'b': popt.base_dir = optarg; break;
        case 'm':
            if (kiln_parse_size(optarg, &ropt.max_bytes) != 0)
                return usage_error(usage_render, "invalid --max-bytes '%s'", optarg);
            break;
        case 'j': as_json = 1; break;
        case 'h': fputs(usage_render, stdout); return 0;
        default: return bad_option(usage_render, argv, c);
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
    if (result.missing_glyphs > 0 && !as_json)
        fprintf(stderr,
                "kiln: warning: %llu character%s no glyph in any embedded font (the first is U+%04X); "
                "shown as '?'\n",
                (unsigned long long)result.missing_glyphs,
                result.missing_glyphs == 1 ? " has" : "s have", (unsigned)result.missing_first);
    if (result.overflow_slides > 0 && !as_json)
        fprintf(stderr,
                "kiln: warning: %u slide%s text that does not fit its placeholder or table "
                "even when shrunk (the first is slide %u)\n",
                (unsigned)result.overflow_slides, result.overflow_slides == 1 ? " has" : "s have",
                (unsigned)result.overflow_first);
    if (as_json) {
        json_t *root = json_pack("{s:b, s:s, s:s, s:I}", "ok", 1, "path", output, "format",
                                 kiln_writer_for(format)->name, "bytes",
                                 (json_int_t)result.bytes);
        if (root && result.missing_glyphs > 0) {
            json_object_set_new(root, "missing_glyphs",
                                json_integer((json_int_t)result.missing_glyphs));
            json_object_set_new(root, "missing_first",
                                json_integer((json_int_t)result.missing_first));
        }
        if (root && result.overflow_slides > 0) {
            json_object_set_new(root, "overflow_slides",
                                json_integer((json_int_t)result.overflow_slides));
            json_object_set_new(root, "overflow_first",
                                json_integer((json_int_t)result.overflow_first));
        }
        json_dumpf(root, strcmp(output, "-") == 0 ? stderr : stdout, JSON_COMPACT);
        fputc('\n', strcmp(output, "-") == 0 ? stderr : stdout);
        json_decref(root);
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
        case 'b': popt.base_dir = optarg; break;
        case 's': popt.scan_data_files = 1; break;
        case 'j': as_json = 1; break;
        case 'h': fputs(usage_validate, stdout); return 0;
        default: return bad_option(usage_validate, argv, c);
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
    if (as_json)
        puts("{\"ok\":true,\"errors\":[]}");
    return 0;
}

/* The most program text kiln run takes (a file, stdin or -c). */
#define KILN_RUN_MAX_CODE_BYTES (16u << 20)

/* Read all of path ("-" = stdin) up to the cap. NULL with errno on failure
 * (EFBIG past the cap). */
static char *read_code(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap >= KILN_RUN_MAX_CODE_BYTES) {
                free(buf);
                buf = NULL;
                errno = EFBIG;
                break;
            }
            cap *= 2;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                free(buf);
                buf = NULL;
                errno = EIO;
            }
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

static int parse_count(const char *text, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long n = strtoul(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' || n == 0 || n > KILN_RUN_COUNT_MAX)
        return -1;
    *out = (uint32_t)n;
    return 0;
}

static int parse_seconds(const char *text, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(text, &end);
    if (errno || end == text || *end || !(d > 0) || d > 86400)
        return -1;
    *out = d;
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    enum { OPT_PRETTY = 256, OPT_NO_RENDER, OPT_TIMEOUT, OPT_CPU, OPT_MEMORY, OPT_PROCESSES, OPT_DISK, OPT_TMP,
           OPT_FILE_SIZE, OPT_OPEN_FILES, OPT_STREAM_KEEP, OPT_STREAM_KILL, OPT_MAX_FILES,
           OPT_MAX_FILE_BYTES, OPT_MAX_TOTAL_BYTES, OPT_RO_BIND };
    static const struct option opts[] = {
        {"code", required_argument, NULL, 'c'},     {"language", required_argument, NULL, 'l'},
        {"input", required_argument, NULL, 'i'},    {"out", required_argument, NULL, 'o'},
        {"no-copy", no_argument, NULL, 'n'},        {"render", no_argument, NULL, 'r'},
        {"no-render", no_argument, NULL, OPT_NO_RENDER},
        {"pretty", no_argument, NULL, OPT_PRETTY},  {"help", no_argument, NULL, 'h'},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"cpu", required_argument, NULL, OPT_CPU},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"processes", required_argument, NULL, OPT_PROCESSES},
        {"disk", required_argument, NULL, OPT_DISK},
        {"tmp", required_argument, NULL, OPT_TMP},
        {"file-size", required_argument, NULL, OPT_FILE_SIZE},
        {"open-files", required_argument, NULL, OPT_OPEN_FILES},
        {"stream-keep", required_argument, NULL, OPT_STREAM_KEEP},
        {"stream-kill", required_argument, NULL, OPT_STREAM_KILL},
        {"max-files", required_argument, NULL, OPT_MAX_FILES},
        {"max-file-bytes", required_argument, NULL, OPT_MAX_FILE_BYTES},
        {"max-total-bytes", required_argument, NULL, OPT_MAX_TOTAL_BYTES},
        {"ro-bind", required_argument, NULL, OPT_RO_BIND},
        {NULL, 0, NULL, 0}};
    kiln_run_options opt;
    memset(&opt, 0, sizeof opt);
    const char *code_arg = NULL, *language = NULL, *out_dir = "kiln-out";
    int no_copy = 0, pretty = 0, c, status = 0;
    kiln_run_input *inputs = calloc((size_t)argc, sizeof *inputs);
    char **input_copies = calloc((size_t)argc, sizeof *input_copies);
    if (!inputs || !input_copies) {
        free(inputs);
        free(input_copies);
        fprintf(stderr, "kiln: error: out of memory\n");
        return kiln_status_exit(KILN_E_NOMEM);
    }

    /* Options may come anywhere before "--" (GNU getopt's permutation); what
     * follows it is the program's. Saved specs are rendered unless asked not
     * to be: a job that saves a document wants the document. */
    static const char shortopts[] = ":c:l:i:o:nrh";
    int end = options_end(argc, argv, shortopts, opts);
    opt.render = 1;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(end, argv, shortopts, opts, NULL)) != -1) {
        const char *bad = NULL;
        switch (c) {
        case 'c': code_arg = optarg; break;
        case 'l': language = optarg; break;
        case 'i': {
            char *copy = strdup(optarg);
            if (!copy) {
                bad = "out of memory";
                break;
            }
            input_copies[opt.input_count] = copy;
            /* PATH:NAME; a PATH that itself holds ':' needs the :NAME. */
            char *colon = strrchr(copy, ':');
            if (colon) {
                *colon = '\0';
                inputs[opt.input_count].name = colon + 1;
            }
            inputs[opt.input_count].host_path = copy;
            opt.input_count++;
            break;
        }
        case 'o': out_dir = optarg; break;
        case 'n': no_copy = 1; break;
        case 'r': opt.render = 1; break;
        case OPT_NO_RENDER: opt.render = 0; break;
        case OPT_PRETTY: pretty = 1; break;
        case 'h': fputs(usage_run, stdout); goto free_inputs;
        case OPT_TIMEOUT: if (parse_seconds(optarg, &opt.limits.wall_seconds)) bad = "--timeout"; break;
        case OPT_CPU: if (parse_seconds(optarg, &opt.limits.cpu_seconds)) bad = "--cpu"; break;
        case OPT_MEMORY: if (kiln_parse_size(optarg, &opt.limits.memory_bytes)) bad = "--memory"; break;
        case OPT_PROCESSES: if (parse_count(optarg, &opt.limits.processes)) bad = "--processes"; break;
        case OPT_DISK: if (kiln_parse_size(optarg, &opt.limits.job_dir_bytes)) bad = "--disk"; break;
        case OPT_TMP: if (kiln_parse_size(optarg, &opt.limits.tmp_bytes)) bad = "--tmp"; break;
        case OPT_FILE_SIZE: if (kiln_parse_size(optarg, &opt.limits.file_bytes)) bad = "--file-size"; break;
        case OPT_OPEN_FILES: if (parse_count(optarg, &opt.limits.open_files)) bad = "--open-files"; break;
        case OPT_STREAM_KEEP: if (kiln_parse_size(optarg, &opt.limits.stream_keep_bytes)) bad = "--stream-keep"; break;
        case OPT_STREAM_KILL: if (kiln_parse_size(optarg, &opt.limits.stream_kill_bytes)) bad = "--stream-kill"; break;
        case OPT_MAX_FILES: if (parse_count(optarg, &opt.limits.output_files)) bad = "--max-files"; break;
        case OPT_MAX_FILE_BYTES: if (kiln_parse_size(optarg, &opt.limits.output_file_bytes)) bad = "--max-file-bytes"; break;
        case OPT_MAX_TOTAL_BYTES: if (kiln_parse_size(optarg, &opt.limits.output_total_bytes)) bad = "--max-total-bytes"; break;
        case OPT_RO_BIND: kiln_run_add_ro_bind(&opt, optarg); break; /* checked by kiln_run_job */
        default:
            status = bad_option(usage_run, argv, c);
            goto free_inputs;
        }
        if (bad) {
            status = usage_error(usage_run, "invalid value '%s' for %s", optarg, bad);
            goto free_inputs;
        }
    }

    /* Besides the options: FILE (or "-"), at most one; the program's own
     * arguments are what follows "--". */
    const char *file = NULL;
    if (optind < end)
        file = argv[optind++];
    if (optind < end) {
        status = usage_error(usage_run, "unexpected argument '%s' (program arguments go after --)",
                             argv[optind]);
        goto free_inputs;
    }
    opt.args = (const char *const *)(argv + (end < argc ? end + 1 : argc));
    if (code_arg && file) {
        status = usage_error(usage_run, "give the code with -c or as FILE, not both");
        goto free_inputs;
    }
    if (!language) {
        size_t n = file ? strlen(file) : 0;
        opt.language = n > 3 && strcmp(file + n - 3, ".sh") == 0 ? KILN_LANG_BASH : KILN_LANG_PYTHON;
    } else if (strcmp(language, "python") == 0 || strcmp(language, "python3") == 0) {
        opt.language = KILN_LANG_PYTHON;
    } else if (strcmp(language, "bash") == 0 || strcmp(language, "sh") == 0) {
        opt.language = KILN_LANG_BASH;
    } else {
        status = usage_error(usage_run, "unknown language '%s' (python or bash)", language);
        goto free_inputs;
    }

    char *code = NULL;
    if (code_arg) {
        opt.code = code_arg;
        opt.code_len = strlen(code_arg);
    } else {
        code = read_code(file ? file : "-", &opt.code_len);
        if (!code) {
            fprintf(stderr, "kiln: error: cannot read the program %s: %s\n",
                    file ? file : "from standard input",
                    errno == EFBIG ? "larger than 16 MiB" : strerror(errno));
            status = kiln_status_exit(KILN_E_INPUT);
            goto free_inputs;
        }
        opt.code = code;
    }
    opt.inputs = inputs;

    /* The output directory, made absolute: the supervisor works from its
     * own mount namespace and needs a path that does not depend on cwd. */
    char out_abs[PATH_MAX];
    if (!no_copy) {
        if (kiln_mkdir_p(out_dir, 0755, 0755) < 0) {
            fprintf(stderr, "kiln: error: cannot create %s: %s\n", out_dir, strerror(errno));
            status = kiln_status_exit(KILN_E_WRITE);
            goto free_code;
        }
        if (!realpath(out_dir, out_abs) || access(out_abs, W_OK | X_OK) < 0) {
            fprintf(stderr, "kiln: error: cannot write to %s: %s\n", out_dir, strerror(errno));
            status = kiln_status_exit(KILN_E_WRITE);
            goto free_code;
        }
        opt.out_dir = out_abs;
    }

    kiln_error err;
    memset(&err, 0, sizeof err);
    json_t *result = NULL;
    /* This process does nothing else: let it be the supervisor. */
    opt.in_process = 1;
    kiln_status st = kiln_run_job(&opt, &result, &err);
    if (st != KILN_E_OK) {
        fprintf(stderr, "kiln: error: %s\n", err.message);
        status = kiln_status_exit(st);
        goto free_code;
    }
    json_dumpf(result, stdout, pretty ? JSON_INDENT(2) : JSON_COMPACT);
    fputc('\n', stdout);
    const char *job_status = json_string_value(json_object_get(result, "status"));
    if (job_status && strcmp(job_status, "setup_failure") == 0)
        status = kiln_status_exit(KILN_E_INTERNAL);
    else if (!job_status || strcmp(job_status, "ok") != 0 ||
             json_array_size(json_object_get(result, "render_errors")) > 0)
        status = 1;
    json_decref(result);

free_code:
    free(code);
free_inputs:
    for (int i = 0; i < argc; i++)
        free(input_copies[i]);
    free(input_copies);
    free(inputs);
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
        fputs(usage_run, stdout);
    else if (strcmp(argv[1], "serve") == 0) {
        char *help_argv[] = {"serve", "--help", NULL};
        return cmd_serve(2, help_argv);
    }
    else if (strcmp(argv[1], "help") == 0)
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
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0)
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
    if (strcmp(cmd, "help") == 0)
        return cmd_help(argc - 1, argv + 1);
    return usage_error(usage_main, "unknown command '%s'", cmd);
}
