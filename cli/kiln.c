/*
 * kiln.c - the `kiln` command: a thin front end over the library.
 *
 * It parses arguments, calls kiln_doc_load / kiln_render, and turns the
 * library's kiln_error values into messages and the documented exit
 * statuses (docs/cli.md). It knows nothing about any file format.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "artifacts/render.h"
#include "artifacts/spec.h"
#include "common/error.h"
#include "common/version.h"

#include <xlsxwriter.h> /* LXW_VERSION, for --version */

static const char usage_main[] =
    "usage: kiln COMMAND [OPTIONS]\n"
    "\n"
    "Render a Kiln document spec (JSON, see docs/spec.md) into a real file.\n"
    "\n"
    "commands:\n"
    "  render SPEC -o OUT     render SPEC to OUT (.xlsx; .docx, .pdf, .pptx to come)\n"
    "  validate SPEC          check SPEC and report every error\n"
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

/* "30M" -> 31457280. Returns 0 on success. */
static int parse_size(const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno || end == text || text[0] == '-')
        return -1;
    unsigned shift = 0;
    if (*end) {
        switch (*end == 'k' || *end == 'K' ? 'K' : *end == 'm' || *end == 'M' ? 'M'
                : *end == 'g' || *end == 'G' ? 'G' : 0) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        default: return -1;
        }
        end++;
        if (strcasecmp(end, "") != 0 && strcasecmp(end, "B") != 0 && strcasecmp(end, "iB") != 0)
            return -1;
    }
    if (n == 0 || n > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)n << shift;
    return 0;
}

static json_t *error_json(const kiln_error *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "code", json_string(kiln_status_name(e->code)));
    if (e->pointer[0] || e->code == KILN_E_INVALID_SPEC || e->code == KILN_E_LIMIT)
        json_object_set_new(o, "pointer", json_string(e->pointer));
    json_object_set_new(o, "message", json_string(e->message));
    if (e->code == KILN_E_LIMIT || e->code == KILN_E_TOO_LARGE) {
        json_object_set_new(o, "limit", json_integer((json_int_t)e->limit));
        json_object_set_new(o, "actual", json_integer((json_int_t)e->actual));
    }
    return o;
}

static void print_error_line(const kiln_error *e)
{
    if (e->pointer[0])
        fprintf(stderr, "kiln: error: %s: %s\n", e->pointer, e->message);
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
            if (parse_size(optarg, &ropt.max_bytes) != 0)
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
    if (!kiln_writer_for(format)->write)
        return usage_error(NULL, "this build of Kiln cannot write %s files yet",
                           kiln_writer_for(format)->name);

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
    if (strcmp(cmd, "help") == 0)
        return cmd_help(argc - 1, argv + 1);
    return usage_error(usage_main, "unknown command '%s'", cmd);
}
