/*
 * mcp.c - `kiln mcp`: the MCP server on stdio (docs/mcp.md).
 *
 * One JSON-RPC message per line on standard input; replies and
 * notifications, one per line, on standard output, and nothing else ever
 * goes there (the sessions' children write to pipes; diagnostics go to
 * standard error). The messages are the MCP core's (mcp/mcp.h), the
 * sessions and files its local backend's (mcp/local.h): this file reads
 * lines, hands each request to a pool of threads (a cell can run for
 * minutes, and a cancellation must reach it meanwhile), writes lines, and
 * ends at the end of its input or on SIGTERM/SIGINT.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "common/fdio.h"
#include "common/line_reader.h"
#include "common/units.h"
#include "contract/session.h"
#include "mcp/local.h"
#include "mcp/mcp.h"
#include "../common/banned.h"

static const char usage[] =
    "usage: kiln mcp [OPTIONS]\n"
    "\n"
    "Serve the Model Context Protocol on standard input and output, for an assistant\n"
    "host (Claude Desktop, Claude Code, an IDE): tools to run Python or bash in a\n"
    "sandboxed session whose variables and files persist (execute_code), to render\n"
    "a document spec into .xlsx, .docx, .pptx or .pdf (render_document), and to list\n"
    "and load files (list_files, load_file); every file made is a resource,\n"
    "kiln://files/{id} (docs/mcp.md).\n"
    "\n"
    "options:\n"
    "  -o, --out DIR          write the files sessions and renders make here (made when\n"
    "                         missing; default ./kiln-out); nothing there is overwritten\n"
    "      --allow-read DIR   let load_file copy files from below DIR into a session\n"
    "                         (repeatable; without it load_file reads nothing)\n"
    "      --request FILE     each session's request: its limits, timeouts and inputs\n"
    "                         (docs/session.md, \"Session requests\")\n"
    "      --max-sessions N   sessions open at once (default 8)\n"
    "      --max-file-bytes N the largest file kept or rendered (default 30M)\n"
    "  -h, --help             show this help\n"
    "\n"
    "Sessions need root (the sandbox). At the end of its input the server answers\n"
    "the requests it has begun, then ends; SIGTERM or SIGINT ends it at once,\n"
    "interrupting running cells. Every session is closed.\n"
    "exit status: 0 ended; 2 usage error; 70 internal error.\n";

/* The longest message line: a render_document's spec, as large as a
 * session's request line may be. */
#define MESSAGE_MAX KILN_SESSION_REQUEST_BYTES
/* Requests worked on at once; one more is answered "busy". */
#define REQUESTS_MAX 32
#define ALLOW_MAX 32
#define SERVER_BUSY (-32000)

typedef struct mcp_cli {
    kiln_mcp_conn *conn;
    pthread_mutex_t out_lock; /* standard output */
    int out_broken;
    pthread_mutex_t lock; /* everything below */
    pthread_cond_t idle;  /* running dropped, or the pool is stopping */
    pthread_cond_t work;  /* a request was queued */
    unsigned running;     /* requests taken and not yet answered */
    json_t *ids;          /* their ids */
    json_t *queue;        /* requests waiting for a thread */
    unsigned threads, waiting;
    int stopping;
} mcp_cli;

static void send_line(void *arg, const json_t *message)
{
    mcp_cli *m = arg;
    char *line = json_dumps(message, JSON_COMPACT);
    if (!line)
        return;
    size_t n = strlen(line);
    /* Not the pool's lock: a host slow to read a long reply holds up the
     * other replies, never the reading of its next message. */
    pthread_mutex_lock(&m->out_lock);
    if (!m->out_broken && (kiln_write_all(STDOUT_FILENO, line, n) != 0 ||
                           kiln_write_all(STDOUT_FILENO, "\n", 1) != 0))
        m->out_broken = 1;
    pthread_mutex_unlock(&m->out_lock);
    free(line);
}

/* The request threads: a pool that grows to REQUESTS_MAX as requests
 * wait and keeps its threads. A thread made per request would cost each
 * request a scheduler slice before it first runs (milliseconds on a busy
 * machine); a waiting thread is woken at once. */
static void *worker_main(void *p)
{
    mcp_cli *m = p;
    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (!json_array_size(m->queue) && !m->stopping) {
            m->waiting++;
            pthread_cond_wait(&m->work, &m->lock);
            m->waiting--;
        }
        if (!json_array_size(m->queue))
            break;
        json_t *msg = json_incref(json_array_get(m->queue, 0));
        json_array_remove(m->queue, 0);
        pthread_mutex_unlock(&m->lock);

        kiln_mcp_handle(m->conn, msg, send_line, m);

        pthread_mutex_lock(&m->lock);
        const json_t *id = json_object_get(msg, "id");
        size_t i;
        json_t *v;
        json_array_foreach(m->ids, i, v) {
            if (json_equal(v, id)) {
                json_array_remove(m->ids, i);
                break;
            }
        }
        json_decref(msg);
        m->running--;
        pthread_cond_broadcast(&m->idle);
    }
    m->threads--;
    pthread_cond_broadcast(&m->idle);
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

static void reply_error(mcp_cli *m, const json_t *id, int code, const char *message)
{
    json_t *reply = kiln_mcp_error_reply(id, code, message, NULL);
    if (reply)
        send_line(m, reply);
    json_decref(reply);
}

/* A request goes to the pool; a notification is done here, at once, so a
 * cancellation is never queued behind the request it cancels, and so is
 * `initialize`, so that what a client sends behind it finds the
 * connection initialized. msg is stolen. */
static void dispatch(mcp_cli *m, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (kiln_mcp_classify(msg) != KILN_MCP_REQUEST || strcmp(method, "initialize") == 0) {
        kiln_mcp_handle(m->conn, msg, send_line, m);
        json_decref(msg);
        return;
    }
    pthread_mutex_lock(&m->lock);
    int busy = m->running >= REQUESTS_MAX;
    if (!busy) {
        m->running++;
        json_array_append(m->ids, json_object_get(msg, "id"));
        json_array_append(m->queue, msg);
        if (m->waiting < json_array_size(m->queue) && m->threads < REQUESTS_MAX) {
            pthread_t t;
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            if (pthread_create(&t, &attr, worker_main, m) == 0)
                m->threads++;
            pthread_attr_destroy(&attr);
        }
        pthread_cond_signal(&m->work);
    }
    /* Not even one thread could start: answer here, late but answered. */
    int here = !busy && m->threads == 0;
    if (here) {
        json_array_remove(m->queue, json_array_size(m->queue) - 1);
        json_array_remove(m->ids, json_array_size(m->ids) - 1);
    }
    pthread_mutex_unlock(&m->lock);
    if (busy)
        reply_error(m, json_object_get(msg, "id"), SERVER_BUSY,
                    "too many requests at once: wait for one to be answered");
    if (here) {
        kiln_mcp_handle(m->conn, msg, send_line, m);
        pthread_mutex_lock(&m->lock);
        m->running--;
        pthread_mutex_unlock(&m->lock);
    }
    json_decref(msg);
}

static void handle_line(mcp_cli *m, const char *line, size_t len)
{
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (!len)
        return;
    json_error_t jerr;
    json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!msg) {
        char text[300];
        snprintf(text, sizeof text, "Parse error: %s (column %d)", jerr.text, jerr.column);
        reply_error(m, NULL, KILN_MCP_PARSE_ERROR, text);
        return;
    }
    dispatch(m, msg);
}

static void on_line(void *arg, const char *line, size_t len)
{
    handle_line(arg, line, len);
}

/* Read messages until the end of input (0) or a signal (1). */
static int read_loop(mcp_cli *m, int sig_fd)
{
    kiln_line_reader r;
    kiln_line_reader_init(&r, MESSAGE_MAX);
    char chunk[1 << 16];
    uint64_t told = 0;
    int signalled = 0;
    for (;;) {
        struct pollfd p[2] = {{STDIN_FILENO, POLLIN, 0}, {sig_fd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents & POLLIN) {
            signalled = 1;
            break;
        }
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0 || kiln_line_reader_feed(&r, chunk, (size_t)n, on_line, m) < 0)
            break;
        /* Each line past the bound is answered once and dropped. */
        for (; told < r.oversized; told++) {
            char why[80];
            snprintf(why, sizeof why, "message too long: a line holds at most %u MiB",
                     (unsigned)(MESSAGE_MAX >> 20));
            reply_error(m, NULL, KILN_MCP_INVALID_REQUEST, why);
        }
    }
    /* A last message without its newline. */
    if (r.len && !r.skipping && !signalled)
        handle_line(m, r.buf, r.len);
    kiln_line_reader_release(&r);
    return signalled;
}

/* Cancel what runs: its cells are interrupted, its replies not sent. */
static void cancel_all(mcp_cli *m)
{
    pthread_mutex_lock(&m->lock);
    json_t *ids = json_deep_copy(m->ids);
    pthread_mutex_unlock(&m->lock);
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id) {
        kiln_mcp_cancel(m->conn, id);
    }
    json_decref(ids);
}

/* Wait for the requests begun, then stop the pool. After the end of the
 * input they are answered (`printf ... | kiln mcp` gets its replies); a
 * signal, then or meanwhile, cancels them (a host that closed our input
 * and would rather not wait sends SIGTERM, as the spec's shutdown has it). */
static void drain(mcp_cli *m, int sig_fd, int signalled)
{
    if (signalled)
        cancel_all(m);
    pthread_mutex_lock(&m->lock);
    while (m->running) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&m->idle, &m->lock, &until);
        struct pollfd p = {sig_fd, POLLIN, 0};
        if (!signalled && poll(&p, 1, 0) == 1) {
            signalled = 1;
            pthread_mutex_unlock(&m->lock);
            cancel_all(m);
            pthread_mutex_lock(&m->lock);
        }
    }
    m->stopping = 1;
    pthread_cond_broadcast(&m->work);
    while (m->threads)
        pthread_cond_wait(&m->idle, &m->lock);
    pthread_mutex_unlock(&m->lock);
}

static int usage_error(const char *what)
{
    fprintf(stderr, "kiln mcp: %s\n%s", what, usage);
    return 2;
}

int kiln_mcp_main(int argc, char **argv)
{
    enum { OPT_ALLOW = 256, OPT_REQUEST, OPT_MAX_SESSIONS, OPT_MAX_FILE };
    static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                         {"allow-read", required_argument, NULL, OPT_ALLOW},
                                         {"request", required_argument, NULL, OPT_REQUEST},
                                         {"max-sessions", required_argument, NULL,
                                          OPT_MAX_SESSIONS},
                                         {"max-file-bytes", required_argument, NULL,
                                          OPT_MAX_FILE},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *allow[ALLOW_MAX];
    size_t n_allow = 0;
    kiln_mcp_local_options lopt = {.out_dir = "kiln-out", .spare = 1};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'o':
            lopt.out_dir = optarg;
            break;
        case OPT_ALLOW:
            if (n_allow == ALLOW_MAX)
                return usage_error("at most 32 --allow-read directories");
            allow[n_allow++] = optarg;
            break;
        case OPT_REQUEST:
            lopt.session_request = optarg;
            break;
        case OPT_MAX_SESSIONS: {
            unsigned long v = strtoul(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > 64)
                return usage_error("--max-sessions takes a number from 1 to 64");
            lopt.max_sessions = (unsigned)v;
            break;
        }
        case OPT_MAX_FILE:
            if (kiln_parse_size(optarg, &lopt.max_file_bytes) != 0 || !lopt.max_file_bytes)
                return usage_error("--max-file-bytes takes a size (30M)");
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        case ':':
        default: {
            char what[256];
            snprintf(what, sizeof what, "%s '%.200s'",
                     c == ':' ? "a value is missing after" : "unknown option", argv[optind - 1]);
            return usage_error(what);
        }
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument");

    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "kiln mcp: error: cannot find the kiln executable\n");
        return 70;
    }
    exe[n] = '\0';
    lopt.kiln_exe = exe;

    /* SIGINT and SIGTERM are read from a signalfd, so every thread blocks
     * them (threads inherit the mask); a closed stdout is an EPIPE. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC);

    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_mcp_backend *backend = NULL;
    kiln_mcp_server *srv = NULL;
    int status = 0;
    if (kiln_mcp_local_new(&lopt, &backend, &err) != KILN_E_OK)
        goto fail;
    kiln_mcp_options opt = {.backend = backend, .allow_read = allow, .n_allow_read = n_allow};
    if (kiln_mcp_server_new(&opt, &srv, &err) != KILN_E_OK)
        goto free_backend;

    mcp_cli m = {.ids = json_array(), .queue = json_array()};
    pthread_mutex_init(&m.out_lock, NULL);
    pthread_mutex_init(&m.lock, NULL);
    pthread_cond_init(&m.idle, NULL);
    pthread_cond_init(&m.work, NULL);
    m.conn = kiln_mcp_conn_new(srv, "local");
    if (!m.conn || !m.ids || !m.queue || sig_fd < 0) {
        kiln_error_set(&err, KILN_E_NOMEM, "", "out of memory");
        status = 70;
    } else {
        int signalled = read_loop(&m, sig_fd);
        drain(&m, sig_fd, signalled);
    }
    kiln_mcp_conn_free(m.conn);
    json_decref(m.ids);
    json_decref(m.queue);
    pthread_mutex_destroy(&m.out_lock);
    pthread_mutex_destroy(&m.lock);
    pthread_cond_destroy(&m.idle);
    pthread_cond_destroy(&m.work);
    kiln_mcp_server_free(srv);
    kiln_mcp_local_free(backend);
    if (sig_fd >= 0)
        close(sig_fd);
    if (status)
        fprintf(stderr, "kiln mcp: error: %s\n", err.message);
    return status;

free_backend:
    kiln_mcp_local_free(backend);
fail:
    if (sig_fd >= 0)
        close(sig_fd);
    fprintf(stderr, "kiln mcp: error: %s\n", err.message);
    return err.code == KILN_E_USAGE ? 2 : 70;
}
