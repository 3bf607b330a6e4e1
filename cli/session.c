/*
 * session.c - `kiln session`: one live session over newline-delimited JSON
 * (docs/session.md).
 *
 * Requests are read from standard input, one JSON object per line, while
 * a cell runs (so an interrupt reaches it); every reply and event goes to
 * standard output, one JSON object per line, and nothing else ever does.
 * The messages are the contract's (contract/session.h): this file only
 * reads lines, writes lines and turns signals into requests.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/fdio.h"
#include "contract/errors.h"
#include "contract/job.h"
#include "contract/limits.h"
#include "contract/render_step.h"
#include "contract/session.h"
#include "exec/session.h"
#include "../common/banned.h"

static const char usage_head[] =
    "usage: kiln session [OPTIONS]\n"
    "\n"
    "Start a sandboxed Python interpreter whose variables and files in /mnt/data\n"
    "last from one cell to the next, and drive it with JSON lines: requests on\n"
    "standard input ({\"op\": \"execute\", \"code\": \"x = 1\"}, interrupt, files, put, get,\n"
    "info, close), events and results on standard output (docs/session.md).\n"
    "\n"
    "options:\n"
    "  -i, --input PATH[:NAME] copy PATH into /mnt/data (as NAME); repeatable\n"
    "      --idle-timeout SECONDS  end the session after this long without a cell\n"
    "                         (default 20m)\n"
    "      --lifetime SECONDS end the session this long after it started (default 12h)\n"
    "      --no-render        leave the specs `import kiln` saves as files, unrendered\n"
    "      --zygote SOCKET    fork the interpreter from a server's warm zygote (kiln\n"
    "                         serve starts one) instead of starting a private one\n"
    "      --request FILE     the session request as one JSON document (docs/session.md,\n"
    "                         \"Session requests\") instead of the inputs, timeouts, render\n"
    "                         and limit options\n"
    "limits (the sandbox's for the whole session; --timeout and --cpu each cell's):\n";
static const char usage_tail[] =
    "  -h, --help             show this help\n"
    "\n"
    "SIGINT interrupts the running cell; SIGTERM and SIGHUP close the session.\n"
    "exit status: 0 closed (a close request or the end of standard input); 2 usage\n"
    "error; 5 an unreadable input; 8 the session was lost or expired before it was\n"
    "closed; 70 the session could not start (kiln session needs root).\n";

static const char *usage(void)
{
    static char text[8192];
    if (text[0])
        return text;
    size_t o = (size_t)snprintf(text, sizeof text, "%s", usage_head);
    if (o < sizeof text)
        o += kiln_cli_limit_help(text + o, sizeof text - o);
    if (o < sizeof text)
        snprintf(text + o, sizeof text - o, "%s", usage_tail);
    return text;
}

enum { OPT_IDLE = 256, OPT_LIFETIME, OPT_NO_RENDER, OPT_ZYGOTE, OPT_REQUEST, OPT_LIMIT = 512 };

/* The largest session request file: limits, a few paths. */
#define REQUEST_FILE_MAX (1u << 20)

#define INPUTS_MAX 64

typedef struct session_cli {
    kiln_session_options opt;
    kiln_run_input inputs[INPUTS_MAX];
    char *input_copies[INPUTS_MAX];
    const char *request_path;
    json_t *request; /* the --request document, which the inputs borrow from */
    int flags_given; /* an option --request replaces */
    int stdout_broken;
} session_cli;

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "kiln session: %s%s\n(kiln session --help for the options)\n", what, arg);
    return 2;
}

static int parse_seconds_flag(const char *flag, const char *text, double *out)
{
    /* Parsed as the wall_seconds limit is: "90", "1.5", "20m", "12h". */
    const kiln_limit_def *d = kiln_limit_by_member("wall_seconds");
    kiln_limit_def any = *d;
    any.max = 365.0 * 86400;
    char why[128];
    if (kiln_limit_parse(&any, text, out, why, sizeof why) != 0) {
        fprintf(stderr, "kiln session: --%s %s: %s\n", flag, text, why);
        return -1;
    }
    return 0;
}

/* 0 parsed, else the exit status (help shown: -1 means 0). */
static int parse_args(int argc, char **argv, session_cli *c)
{
    static struct option all[8 + KILN_JOB_LIMIT_COUNT + 1];
    static const struct option fixed[] = {
        {"input", required_argument, NULL, 'i'},
        {"idle-timeout", required_argument, NULL, OPT_IDLE},
        {"lifetime", required_argument, NULL, OPT_LIFETIME},
        {"no-render", no_argument, NULL, OPT_NO_RENDER},
        {"zygote", required_argument, NULL, OPT_ZYGOTE},
        {"request", required_argument, NULL, OPT_REQUEST},
        {"help", no_argument, NULL, 'h'},
    };
    size_t nfixed = sizeof fixed / sizeof fixed[0];
    memcpy(all, fixed, sizeof fixed);
    for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT; i++)
        all[nfixed + i] = (struct option){kiln_limit_defs[i].flag, required_argument, NULL,
                                          OPT_LIMIT + (int)i};
    c->opt.render = &kiln_render_step;
    c->opt.inputs = c->inputs;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":i:h", all, NULL)) != -1) {
        if (ch >= OPT_LIMIT && ch < OPT_LIMIT + KILN_JOB_LIMIT_COUNT) {
            const kiln_limit_def *d = &kiln_limit_defs[ch - OPT_LIMIT];
            double v;
            char why[128];
            if (kiln_limit_parse(d, optarg, &v, why, sizeof why) != 0) {
                fprintf(stderr, "kiln session: --%s %s: %s\n", d->flag, optarg, why);
                return 2;
            }
            kiln_limit_set(&c->opt.limits, d, v);
            c->flags_given = 1;
            continue;
        }
        switch (ch) {
        case 'i': {
            if (c->opt.input_count == INPUTS_MAX)
                return usage_error("at most 64 inputs", "");
            char *copy = strdup(optarg);
            if (!copy)
                return 7;
            kiln_run_input *in = &c->inputs[c->opt.input_count];
            c->input_copies[c->opt.input_count++] = copy;
            char *colon = strrchr(copy, ':');
            if (colon) {
                *colon = '\0';
                in->name = colon + 1;
            }
            in->host_path = copy;
            c->flags_given = 1;
            break;
        }
        case OPT_REQUEST:
            c->request_path = optarg;
            break;
        case OPT_IDLE:
            if (parse_seconds_flag("idle-timeout", optarg, &c->opt.idle_seconds) < 0)
                return 2;
            c->flags_given = 1;
            break;
        case OPT_LIFETIME:
            if (parse_seconds_flag("lifetime", optarg, &c->opt.lifetime_seconds) < 0)
                return 2;
            c->flags_given = 1;
            break;
        case OPT_NO_RENDER:
            c->opt.render = NULL;
            c->flags_given = 1;
            break;
        case OPT_ZYGOTE:
            c->opt.zygote_socket = optarg;
            break;
        case 'h':
            fputs(usage(), stdout);
            return -1;
        case ':':
            return usage_error("this option needs a value: ", argv[optind - 1]);
        default:
            return usage_error("unknown option: ", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument: ", argv[optind]);
    if (c->request_path && c->flags_given)
        return usage_error("--request is the whole session request: give the inputs, limits, "
                           "timeouts and render in it, not as options",
                           "");
    return 0;
}

/* --request FILE: the session request (contract/job.h) in place of the
 * options. 0, else the exit status, the errors written as a "failed"
 * event. */
static int read_request(session_cli *c, void (*emit)(void *, json_t *))
{
    kiln_errors errs;
    kiln_errors_init(&errs);
    json_error_t jerr;
    FILE *f = fopen(c->request_path, "re");
    char *text = NULL;
    size_t len = 0;
    if (f) {
        text = malloc(REQUEST_FILE_MAX + 1);
        len = text ? fread(text, 1, REQUEST_FILE_MAX + 1, f) : 0;
        fclose(f);
    }
    int status = 0;
    if (!text) {
        fprintf(stderr, "kiln session: cannot read %s\n", c->request_path);
        free(text);
        return 5;
    }
    if (len > REQUEST_FILE_MAX) {
        kiln_errors_addf(&errs, KILN_E_INVALID_JOB, "", "a session request is at most %u bytes",
                         REQUEST_FILE_MAX);
    } else {
        c->request = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!c->request)
            kiln_errors_addf(&errs, KILN_E_INVALID_JOB, "", "not JSON: %s (line %d)", jerr.text,
                             jerr.line);
    }
    free(text);
    kiln_session_request rq;
    kiln_job_parse_options po = {.inputs = KILN_JOB_INPUT_PATHS};
    if (c->request && kiln_session_request_parse(c->request, &po, &rq, &errs) == KILN_E_OK) {
        c->opt.limits = rq.limits;
        c->opt.language = rq.language;
        c->opt.render = rq.render ? &kiln_render_step : NULL;
        c->opt.idle_seconds = rq.idle_seconds;
        c->opt.lifetime_seconds = rq.lifetime_seconds;
        for (size_t i = 0; i < json_array_size(rq.inputs) && i < INPUTS_MAX; i++) {
            const json_t *in = json_array_get(rq.inputs, i);
            c->inputs[i].host_path = json_string_value(json_object_get(in, "path"));
            c->inputs[i].name = json_string_value(json_object_get(in, "name"));
            c->opt.input_count = i + 1;
        }
        return 0;
    }
    json_t *ev = json_pack("{s:s}", "event", "failed");
    json_t *list = kiln_errors_json(&errs);
    if (ev && list)
        json_object_update(ev, list);
    if (ev)
        emit(c, ev);
    json_decref(ev);
    json_decref(list);
    for (size_t i = 0; i < errs.count; i++)
        fprintf(stderr, "kiln session: %s: %s\n",
                errs.items[i].pointer[0] ? errs.items[i].pointer : "(whole request)",
                errs.items[i].message);
    status = 2;
    return status;
}

/* Each event on a line of its own, written whole. */
static void emit_line(void *arg, json_t *event)
{
    session_cli *c = arg;
    char *text = json_dumps(event, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (!text)
        return;
    size_t len = strlen(text);
    text[len] = '\n';
    if (!c->stdout_broken && kiln_write_all(1, text, len + 1) < 0)
        c->stdout_broken = 1;
    free(text);
}

/* Standard input, split into lines of at most KILN_SESSION_REQUEST_BYTES. */
typedef struct line_reader {
    char *buf;
    size_t len, cap;
    int skipping, eof;
} line_reader;

/* Read what is there and hand each complete line to the session. 1 when a
 * close request came. */
static int read_requests(line_reader *r, kiln_session *s, session_cli *c)
{
    if (r->cap - r->len < 65536) {
        size_t cap = r->cap ? r->cap * 2 : 1 << 17;
        if (cap > KILN_SESSION_REQUEST_BYTES + 65536)
            cap = KILN_SESSION_REQUEST_BYTES + 65536;
        char *grown = cap > r->cap ? realloc(r->buf, cap) : r->buf;
        if (!grown)
            return 0;
        r->buf = grown;
        r->cap = cap;
    }
    ssize_t n = read(0, r->buf + r->len, r->cap - r->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (n <= 0) {
        r->eof = 1;
        n = 0;
        if (r->len > 0 && !r->skipping) /* a last line without its newline */
            r->buf[r->len++] = '\n';
    }
    size_t start = r->len, from = 0;
    r->len += (size_t)n;
    if (r->eof)
        start = 0;
    int closing = 0;
    for (;;) {
        char *nl = memchr(r->buf + start, '\n', r->len - start);
        if (!nl || closing)
            break;
        size_t end = (size_t)(nl - r->buf);
        size_t len = end - from;
        if (!r->skipping && len > 0 && !(len == 1 && r->buf[from] == '\r'))
            closing = kiln_session_handle_line(s, r->buf + from, len, emit_line, c);
        r->skipping = 0;
        from = start = end + 1;
    }
    memmove(r->buf, r->buf + from, r->len - from);
    r->len -= from;
    if (r->len > KILN_SESSION_REQUEST_BYTES) {
        if (!r->skipping)
            kiln_session_line_too_long(emit_line, c);
        r->skipping = 1;
        r->len = 0;
    }
    return closing;
}

static int signals_fd(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* The loop: requests, the session's descriptors, signals. Returns the exit
 * status. */
static int serve(kiln_session *s, session_cli *c)
{
    line_reader in;
    memset(&in, 0, sizeof in);
    int sig = signals_fd();
    int closing = 0, status = 0;
    while (!closing && !c->stdout_broken) {
        /* At the end of the requests, the running cell is still awaited. */
        if (in.eof && !kiln_session_busy(s))
            break;
        struct pollfd fds[12];
        size_t n = 0;
        if (!in.eof)
            fds[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
        if (sig >= 0)
            fds[n++] = (struct pollfd){.fd = sig, .events = POLLIN};
        size_t first = n;
        n += kiln_session_pollfds(s, fds + n, sizeof fds / sizeof fds[0] - n);
        if (poll(fds, n, kiln_session_timeout_ms(s)) < 0 && errno != EINTR)
            break;
        for (size_t i = 0; i < first; i++) {
            if (!fds[i].revents)
                continue;
            if (fds[i].fd == 0) {
                closing = read_requests(&in, s, c);
            } else {
                struct signalfd_siginfo si;
                while (read(sig, &si, sizeof si) == (ssize_t)sizeof si) {
                    if (si.ssi_signo == SIGINT)
                        kiln_session_interrupt(s);
                    else
                        closing = 1;
                }
            }
        }
        kiln_session_dispatch(s, fds + first, n - first, emit_line, c);
    }
    if (kiln_session_ended(s))
        status = 8;
    free(in.buf);
    if (sig >= 0)
        close(sig);
    return status;
}

int kiln_session_main(int argc, char **argv)
{
    session_cli c;
    memset(&c, 0, sizeof c);
    int status = parse_args(argc, argv, &c);
    if (status != 0)
        goto free_inputs;
    /* A reader that goes away is an error on write, not a signal. */
    signal(SIGPIPE, SIG_IGN);
    if (c.request_path && (status = read_request(&c, emit_line)) != 0)
        goto free_inputs;
    kiln_session *s = NULL;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_status st = kiln_session_open(&c.opt, &s, &err);
    if (st != KILN_E_OK) {
        json_t *ev = json_pack("{s:s}", "event", "failed");
        json_t *list = kiln_error_list_json(&err);
        if (ev && list)
            json_object_update(ev, list);
        if (ev)
            emit_line(&c, ev);
        json_decref(ev);
        json_decref(list);
        fprintf(stderr, "kiln session: %s\n", err.message);
        status = kiln_status_exit(st);
        goto free_inputs;
    }
    json_t *ready = json_pack("{s:s,s:o}", "event", "ready", "session", kiln_session_info(s));
    if (ready)
        emit_line(&c, ready);
    json_decref(ready);
    status = serve(s, &c);
    kiln_session_close(s);
free_inputs:
    for (size_t i = 0; i < c.opt.input_count; i++)
        free(c.input_copies[i]);
    json_decref(c.request);
    return status < 0 ? 0 : status;
}

int kiln_zygote_command(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr,
                "usage: kiln zygote SOCKET\n"
                "\n"
                "Serve warm interpreters to `kiln session --zygote SOCKET` (kiln serve\n"
                "starts one; docs/session.md). Needs root; it drops it after the imports.\n");
        return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    kiln_error err;
    memset(&err, 0, sizeof err);
    int fd = kiln_zygote_listen(argv[1], &err);
    if (fd < 0) {
        fprintf(stderr, "kiln zygote: %s\n", err.message);
        return kiln_status_exit(err.code);
    }
    return kiln_zygote_run(fd);
}
