/*
 * serve.c - `kiln serve`: the front end of the HTTP service.
 *
 * Built into kiln-service.so with service/ (the kiln executable loads it
 * only for this command: cli/kiln.c, cmd_serve). It gathers the settings
 * (flags > environment > config file > defaults; every bad value is a
 * usage error naming where it came from), makes a first API key when none
 * is configured, starts the server, prints its log lines on stdout, and
 * waits for SIGTERM or SIGINT to stop it gracefully.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/units.h"
#include "contract/limits.h"
#include "service/auth.h"
#include "service/server.h"
#include "service/store.h"
#include "../common/banned.h"

int kiln_serve_main(int argc, char **argv);

static const char usage_serve[] =
    "usage: kiln serve [OPTIONS]\n"
    "\n"
    "Run the HTTP service (docs/serve.md; the API: docs/openapi.json). Settings\n"
    "come from flags, then KILN_* environment variables, then the config file.\n"
    "\n"
    "options:\n"
    "      --listen HOST:PORT      address to listen on (127.0.0.1:8080; port 0 = any free)\n"
    "      --data-dir DIR          files, database, keys (./kiln-data)\n"
    "      --keys-file FILE        API keys, \"TENANT SHA256HEX\" lines (DATA_DIR/keys)\n"
    "      --config FILE           settings file, \"name = value\" lines\n"
    "      --threads N             HTTP threads (CPUs, at least 2)\n"
    "      --max-jobs N            renders and runs at once (CPUs)\n"
    "      --queue N               renders and runs waiting beyond those (32; 0 = none)\n"
    "      --max-upload SIZE       largest upload (30M)\n"
    "      --max-request SIZE      largest JSON body (16M)\n"
    "      --ttl DURATION          file lifetime (24h)\n"
    "      --sweep-interval DURATION  expired-file sweep period (60s)\n"
    "      --connection-timeout DURATION  longest wait for the next byte (30s)\n"
    "      --header-timeout DURATION  request line and headers must arrive within (10s)\n"
    "      --request-timeout DURATION  a request body must arrive within (300s)\n"
    "      --shutdown-grace DURATION  time running jobs get at shutdown (30s)\n"
    "      --max-connections N     open connections at most (1000)\n"
    "      --max-connections-per-ip N  open connections from one address (64; 0 = no limit)\n"
    "      --public-url URL        base URL of signed links (default: the request's Host)\n"
    "      --sessions on|off       serve /v1/sessions (on)\n"
    "      --max-sessions N        sessions open at once on the server (64)\n"
    "      --max-sessions-per-tenant N  sessions open at once of one tenant (16)\n"
    "      --session-pool N        ready sessions kept for POST /v1/sessions (2; 0 = none)\n"
    "      --session-idle-timeout DURATION  a session's idle timeout unless it asks (20m)\n"
    "      --session-lifetime DURATION  a session's longest (and default) lifetime (12h)\n"
    "      --mcp on|off            serve /mcp, the MCP server over HTTP (on)\n"
    "      --mcp-allow-origin ORIGIN  a browser Origin /mcp serves (repeatable; none)\n"
    "      --mcp-allow-read DIR    load_file reads below DIR only (repeatable; none)\n"
    "      --mcp-sessions-per-tenant N  MCP sessions open at once of one tenant (32)\n"
    "      --mcp-session-idle-timeout DURATION  an MCP session's idle timeout (30m)\n"
    "      --batch-workers N       jobs at once in a batch (-j of its kiln batch; CPUs/2, at least 1)\n"
    "      --batches-running N     batches running at once (1)\n"
    "      --batches-per-tenant N  batches queued or running of one tenant (10)\n"
    "      --batch-max-jobs N      jobs (or data rows) in one batch (100000)\n"
    "      --batch-job-timeout DURATION  a batch job's longest time (600s)\n"
    "The most a POST /v1/runs or /v1/sessions may ask for, and what it gets when it asks for nothing\n"
    "(kiln run's limit flags with run- before them; defaults: kiln run's, docs/run.md):\n";
static const char usage_serve_tail[] =
    "      --hash-key              read a key on standard input, print its hash, exit\n"
    "  -h, --help                  show this help\n"
    "SIZE: bytes or with K, M, G (KiB-based). DURATION: seconds, or with s, m, h, d.\n"
    "Environment: KILN_LISTEN, KILN_DATA_DIR, ... (the long name in capitals, - as _),\n"
    "KILN_CONFIG, and KILN_API_KEYS=\"TENANT:KEY,...\".\n";

/* Longest line of a config file. */
#define CONFIG_LINE_MAX 4096
/* Bytes of a generated API key before encoding. */
#define KEY_BYTES 32

/* K_LIST: a list, a flag given again adds to it; the environment and the
 * config file give it comma-separated (in the file, a name given again
 * adds too). Kept as one value, the items separated by newlines. */
enum kind { K_STR, K_COUNT, K_SIZE, K_DURATION, K_LISTEN, K_URL, K_LIMIT, K_LIST };

struct setting {
    const char *name; /* long flag without --, config name */
    enum kind kind;
    uint64_t max;                /* for counts and durations; for sizes, 0 = none */
    uint64_t min;                /* for counts and sizes; 0 = 1 */
    int zero_ok;                 /* counts: 0 is a value too (its meaning is the option's) */
    const kiln_limit_def *limit; /* K_LIMIT: the run limit (contract/limits.h) */
    const char *value;           /* chosen value */
    char origin[PATH_MAX + 64];
    const char *flag_val;
    char *flag_list; /* K_LIST: every flag's value */
    const char *env_val;
    char *env_list; /* K_LIST: the environment's, newline-separated */
    char *file_val;
    unsigned file_line;
};

enum {
    S_LISTEN,
    S_DATA_DIR,
    S_KEYS_FILE,
    S_THREADS,
    S_MAX_JOBS,
    S_QUEUE,
    S_MAX_UPLOAD,
    S_MAX_REQUEST,
    S_TTL,
    S_SWEEP,
    S_CONN_TIMEOUT,
    S_HEADER_TIMEOUT,
    S_REQUEST_TIMEOUT,
    S_GRACE,
    S_MAX_CONN,
    S_MAX_PER_IP,
    S_PUBLIC_URL,
    S_SESSIONS,
    S_MAX_SESSIONS,
    S_MAX_SESSIONS_TENANT,
    S_SESSION_POOL,
    S_SESSION_IDLE,
    S_SESSION_LIFETIME,
    S_MCP,
    S_MCP_ALLOW_ORIGIN,
    S_MCP_ALLOW_READ,
    S_MCP_SESSIONS_TENANT,
    S_MCP_SESSION_IDLE,
    S_BATCH_WORKERS,
    S_BATCHES_RUNNING,
    S_BATCHES_TENANT,
    S_BATCH_MAX_JOBS,
    S_BATCH_JOB_TIMEOUT,
    /* then a --run-FLAG per run limit, in the table's order */
    S_RUN_FIRST,
    S__COUNT = S_RUN_FIRST + KILN_JOB_LIMIT_COUNT
};

static struct setting settings[S__COUNT] = {
    [S_LISTEN] = {.name = "listen", .kind = K_LISTEN, .max = 0},
    [S_DATA_DIR] = {.name = "data-dir", .kind = K_STR, .max = 0},
    [S_KEYS_FILE] = {.name = "keys-file", .kind = K_STR, .max = 0},
    [S_THREADS] = {.name = "threads", .kind = K_COUNT, .max = 1024},
    [S_MAX_JOBS] = {.name = "max-jobs", .kind = K_COUNT, .max = 1024},
    /* 0: nothing waits; a job is taken only by an idle worker (jobs.c) */
    [S_QUEUE] = {.name = "queue", .kind = K_COUNT, .max = 1000000, .zero_ok = 1},
    [S_MAX_UPLOAD] = {.name = "max-upload", .kind = K_SIZE, .max = 0},
    [S_MAX_REQUEST] = {.name = "max-request", .kind = K_SIZE, .max = 0},
    [S_TTL] = {.name = "ttl", .kind = K_DURATION, .max = 10ull * 365 * 86400},
    [S_SWEEP] = {.name = "sweep-interval", .kind = K_DURATION, .max = 86400},
    [S_CONN_TIMEOUT] = {.name = "connection-timeout", .kind = K_DURATION, .max = 86400},
    [S_HEADER_TIMEOUT] = {.name = "header-timeout", .kind = K_DURATION, .max = 86400},
    [S_REQUEST_TIMEOUT] = {.name = "request-timeout", .kind = K_DURATION, .max = 86400},
    [S_GRACE] = {.name = "shutdown-grace", .kind = K_DURATION, .max = 86400},
    [S_MAX_CONN] = {.name = "max-connections", .kind = K_COUNT, .max = 1000000},
    [S_MAX_PER_IP] = {.name = "max-connections-per-ip",
                      .kind = K_COUNT,
                      .max = 1000000,
                      .zero_ok = 1},
    [S_PUBLIC_URL] = {.name = "public-url", .kind = K_URL, .max = 0},
    [S_SESSIONS] = {.name = "sessions", .kind = K_STR, .max = 0},
    [S_MAX_SESSIONS] = {.name = "max-sessions", .kind = K_COUNT, .max = 100000},
    [S_MAX_SESSIONS_TENANT] = {.name = "max-sessions-per-tenant", .kind = K_COUNT, .max = 100000},
    [S_SESSION_POOL] = {.name = "session-pool", .kind = K_COUNT, .max = 1000, .zero_ok = 1},
    /* a session request's own idle_timeout and lifetime go to 30 days */
    [S_SESSION_IDLE] = {.name = "session-idle-timeout", .kind = K_DURATION, .max = 30 * 86400},
    [S_SESSION_LIFETIME] = {.name = "session-lifetime", .kind = K_DURATION, .max = 30 * 86400},
    [S_MCP] = {.name = "mcp", .kind = K_STR, .max = 0},
    [S_MCP_ALLOW_ORIGIN] = {.name = "mcp-allow-origin", .kind = K_LIST, .max = 0},
    [S_MCP_ALLOW_READ] = {.name = "mcp-allow-read", .kind = K_LIST, .max = 0},
    [S_MCP_SESSIONS_TENANT] = {.name = "mcp-sessions-per-tenant", .kind = K_COUNT, .max = 100000},
    [S_MCP_SESSION_IDLE] = {.name = "mcp-session-idle-timeout",
                            .kind = K_DURATION,
                            .max = 30 * 86400},
    /* kiln batch's -j and --job-timeout bounds; a batch's jobs the runner's */
    [S_BATCH_WORKERS] = {.name = "batch-workers", .kind = K_COUNT, .max = 256},
    [S_BATCHES_RUNNING] = {.name = "batches-running", .kind = K_COUNT, .max = 64},
    [S_BATCHES_TENANT] = {.name = "batches-per-tenant", .kind = K_COUNT, .max = 100000},
    [S_BATCH_MAX_JOBS] = {.name = "batch-max-jobs", .kind = K_COUNT, .max = 10000000},
    [S_BATCH_JOB_TIMEOUT] = {.name = "batch-job-timeout", .kind = K_DURATION, .max = 30 * 86400},
};

/* Append item to a newline-separated list (*list malloc'd): 0, or -1. */
static int list_add(char **list, const char *item, size_t n)
{
    size_t have = *list ? strlen(*list) : 0;
    char *grown = realloc(*list, have + n + 2);
    if (!grown)
        return -1;
    if (have)
        grown[have++] = '\n';
    memcpy(grown + have, item, n);
    grown[have + n] = '\0';
    *list = grown;
    return 0;
}

/* Each comma-separated item of text (spaces around it dropped) appended. */
static int list_add_commas(char **list, const char *text)
{
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, ",");
        const char *a = p, *b = p + n;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a && list_add(list, a, (size_t)(b - a)) != 0)
            return -1;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

/* The --run-* settings: kiln run's limit flags with run- before them,
 * one per row of the limits table. */
static char run_setting_names[KILN_JOB_LIMIT_COUNT][48];
static void init_run_settings(void)
{
    for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT; i++) {
        snprintf(run_setting_names[i], sizeof run_setting_names[i], "run-%s",
                 kiln_limit_defs[i].flag);
        settings[S_RUN_FIRST + i].name = run_setting_names[i];
        settings[S_RUN_FIRST + i].kind = K_LIMIT;
        settings[S_RUN_FIRST + i].limit = &kiln_limit_defs[i];
    }
}

/* The help: the fixed options, a line per run limit, the rest. */
static void print_usage(void)
{
    fputs(usage_serve, stdout);
    for (size_t i = 0; i < KILN_JOB_LIMIT_COUNT; i++) {
        const kiln_limit_def *d = &kiln_limit_defs[i];
        char flag[64], def[32], lo[32], hi[32];
        static const char *const placeholder[] = {"DURATION", "SIZE", "N"};
        snprintf(flag, sizeof flag, "--run-%s %s", d->flag, placeholder[d->kind]);
        kiln_limit_format(d, d->def, def, sizeof def);
        kiln_limit_format(d, d->min, lo, sizeof lo);
        kiln_limit_format(d, d->max, hi, sizeof hi);
        printf("      %-26s  %s (%s; %s%s to %s)\n", flag, d->meaning, def,
               d->kind == KILN_LIMIT_SECONDS ? "more than " : "", lo, hi);
    }
    fputs(usage_serve_tail, stdout);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("kiln serve: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n(kiln serve --help lists the options)\n", stderr);
    return kiln_status_exit(KILN_E_USAGE);
}

static void env_name(const char *name, char *out, size_t cap)
{
    size_t o = snprintf(out, cap, "KILN_");
    for (const char *p = name; *p && o + 1 < cap; p++)
        out[o++] = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    out[o] = '\0';
}

/* ---- values ---- */

/* "3600", "90s", "90m", "24h", "7d" -> a whole number of seconds, 1 to max. */
static int parse_duration(const char *text, uint64_t max, uint64_t *out)
{
    double v;
    if (kiln_parse_seconds(text, &v) != 0 || v != floor(v) || v < 1 || v > (double)max)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

static int parse_count(const char *text, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    if (text[0] < '0' || text[0] > '9')
        return -1;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno || *end || n == 0 || n > max)
        return -1;
    *out = n;
    return 0;
}

/* HOST:PORT or [V6]:PORT into host (cap bytes) and port. */
static int parse_listen(const char *text, char *host, size_t cap, unsigned *port)
{
    const char *colon;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':' || close == text + 1)
            return -1;
        if ((size_t)(close - text - 1) >= cap)
            return -1;
        memcpy(host, text + 1, (size_t)(close - text - 1));
        host[close - text - 1] = '\0';
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon || colon == text || (size_t)(colon - text) >= cap)
            return -1;
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
        if (strchr(host, ':'))
            return -1;
    }
    char *end;
    errno = 0;
    if (colon[1] < '0' || colon[1] > '9')
        return -1;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (errno || *end || p > 65535)
        return -1;
    *port = (unsigned)p;
    return 0;
}

/* ---- the config file ---- */

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

static int read_config(const char *path, const char *origin)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return usage_error("cannot read the config file %s (from %s): %s", path, origin,
                           strerror(errno));
    char line[CONFIG_LINE_MAX];
    unsigned lineno = 0;
    int status = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            status = usage_error("%s:%u: line longer than %d bytes", path, lineno,
                                 CONFIG_LINE_MAX);
            break;
        }
        char *s = trim(line);
        if (!*s || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            status = usage_error("%s:%u: expected \"name = value\"", path, lineno);
            break;
        }
        *eq = '\0';
        char *name = trim(s), *value = trim(eq + 1);
        size_t vn = strlen(value);
        if (vn >= 2 && ((value[0] == '"' && value[vn - 1] == '"') ||
                        (value[0] == '\'' && value[vn - 1] == '\''))) {
            value[vn - 1] = '\0';
            value++;
        }
        int found = -1;
        for (int i = 0; i < S__COUNT; i++)
            if (strcmp(settings[i].name, name) == 0)
                found = i;
        if (found < 0) {
            status = usage_error("%s:%u: unknown setting '%s'", path, lineno, name);
            break;
        }
        if (!*value) {
            status = usage_error("%s:%u: %s has no value", path, lineno, name);
            break;
        }
        if (settings[found].kind == K_LIST) {
            if (list_add_commas(&settings[found].file_val, value) != 0) {
                status = usage_error("out of memory");
                break;
            }
            settings[found].file_line = lineno;
            continue;
        }
        free(settings[found].file_val);
        settings[found].file_val = strdup(value);
        settings[found].file_line = lineno;
        if (!settings[found].file_val) {
            status = usage_error("out of memory");
            break;
        }
        /* remember the file for messages */
    }
    fclose(f);
    return status;
}

/* ---- keys ---- */

/* Write data to path atomically, mode 0600: temp file, fsync, rename. */
static int write_private(const char *path, const char *data)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return -1;
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t n = strlen(data), off = 0;
    while (off < n) {
        ssize_t w = write(fd, data + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* A new key for tenant "default": DATA_DIR/api-key holds it, DATA_DIR/keys
 * its hash. */
static int make_first_key(const char *data_dir, char *keys_path, char *key_path, size_t cap)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char raw[KEY_BYTES];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return -1;
    char key[2 * KEY_BYTES] = "kiln_";
    size_t o = strlen(key);
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < sizeof raw; i++) {
        acc = (acc << 8) | raw[i];
        bits += 8;
        while (bits >= 6) {
            key[o++] = b64[(acc >> (bits - 6)) & 63];
            bits -= 6;
        }
    }
    if (bits > 0)
        key[o++] = b64[(acc << (6 - bits)) & 63];
    key[o] = '\0';
    char hash[65], line[160], keyline[sizeof key + 1];
    kiln_auth_hash_key(key, o, hash);
    snprintf(keyline, sizeof keyline, "%s\n", key);
    snprintf(line, sizeof line,
             "# API keys of kiln serve: TENANT SHA256-OF-KEY (kiln serve --hash-key)\n"
             "default %s\n",
             hash);
    snprintf(key_path, cap, "%s/api-key", data_dir);
    snprintf(keys_path, cap, "%s/keys", data_dir);
    /* The key first: a keys file without its key would lock the owner out. */
    if (write_private(key_path, keyline) != 0 || write_private(keys_path, line) != 0)
        return -1;
    return 0;
}

static int hash_key_from_stdin(void)
{
    char buf[4096];
    if (!fgets(buf, sizeof buf, stdin))
        return usage_error("--hash-key reads a key on standard input; none was given");
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    if (n == 0)
        return usage_error("--hash-key: the key is empty");
    char hex[65];
    kiln_auth_hash_key(buf, n, hex);
    printf("%s\n", hex);
    return 0;
}

/* ---- the log ---- */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* One write per line, so lines from several threads never interleave
 * (and a reader of a pipe sees whole lines). */
static void log_line(void *arg, const char *line)
{
    (void)arg;
    size_t n = strlen(line);
    char *buf = malloc(n + 1);
    if (!buf)
        return;
    memcpy(buf, line, n);
    buf[n] = '\n';
    pthread_mutex_lock(&log_lock);
    size_t off = 0;
    while (off < n + 1) {
        ssize_t w = write(STDOUT_FILENO, buf + off, n + 1 - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    pthread_mutex_unlock(&log_lock);
    free(buf);
}

static void log_event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_event(const char *fmt, ...)
{
    char now[32], body[PATH_MAX * 2 + 256], line[sizeof body + 64];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "{\"time\":\"%s\",%s}", now, body);
    log_line(NULL, line);
}

/* A string as a JSON string's contents (for paths in events). */
static void json_escape(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    for (; *s && o + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
}

/* ---- start ---- */

/* What prepare_keys decides, for the api_key_created event. */
struct first_key {
    int env_keys; /* KILN_API_KEYS gives keys */
    int made;
    char keys_path[PATH_MAX], key_path[PATH_MAX];
};

/* kiln_server_options.prepare: the keys are the keys file named, else
 * DATA_DIR/keys when it exists, else (and no KILN_API_KEYS either) a first
 * key made now. */
static kiln_status prepare_keys(void *arg, const char *data_dir, const char **keys_file,
                                kiln_error *err)
{
    struct first_key *fk = arg;
    if (*keys_file)
        return KILN_E_OK;
    snprintf(fk->keys_path, sizeof fk->keys_path, "%s/keys", data_dir);
    if (access(fk->keys_path, F_OK) == 0) {
        *keys_file = fk->keys_path;
        return KILN_E_OK;
    }
    if (fk->env_keys)
        return KILN_E_OK;
    if (make_first_key(data_dir, fk->keys_path, fk->key_path, sizeof fk->keys_path) != 0)
        return kiln_error_set(err, KILN_E_WRITE, "/data-dir",
                              "cannot write a first API key to %s: %s", data_dir,
                              strerror(errno));
    *keys_file = fk->keys_path;
    fk->made = 1;
    return KILN_E_OK;
}

/* Where a setting's value came from, for a message: "came from
 * KILN_LISTEN" (or --listen, or FILE:LINE (listen)) or "is the default". */
static const char *origin_of(int i, char *buf, size_t cap)
{
    if (!settings[i].value)
        return "is the default";
    snprintf(buf, cap, "came from %s", settings[i].origin);
    return buf;
}

/* The one line a failed start prints. A failure that a setting caused
 * (err->pointer "/listen" or "/data-dir") says where the value came from
 * and how to give another. The address is bound before the data directory
 * is opened, so when it fails the directory's lock is looked up too: a
 * second server started like a running one hears of both at once. */
static void start_error(const kiln_error *err, const char *data_dir)
{
    const char *ptr = err->pointer;
    char lo[sizeof settings[0].origin + 16], dd[sizeof lo];
    if (strcmp(ptr, "/listen") == 0) {
        long pid = 0;
        if (kiln_store_holder(data_dir, &pid) == 1) {
            char who[32] = "";
            if (pid > 0)
                snprintf(who, sizeof who, " (pid %ld)", pid);
            fprintf(stderr,
                    "kiln serve: error: %s, and the data directory '%s' is in use too%s: choose "
                    "another address with --listen HOST:PORT or KILN_LISTEN "
                    "(this one %s) and another directory with --data-dir DIR or KILN_DATA_DIR "
                    "(this one %s)\n",
                    err->message, data_dir, who, origin_of(S_LISTEN, lo, sizeof lo),
                    origin_of(S_DATA_DIR, dd, sizeof dd));
            return;
        }
        fprintf(stderr,
                "kiln serve: error: %s: choose another address with --listen HOST:PORT or "
                "KILN_LISTEN (this one %s)\n",
                err->message, origin_of(S_LISTEN, lo, sizeof lo));
    } else if (strcmp(ptr, "/data-dir") == 0) {
        fprintf(stderr,
                "kiln serve: error: %s: choose another directory with --data-dir DIR or "
                "KILN_DATA_DIR (this one %s)\n",
                err->message, origin_of(S_DATA_DIR, dd, sizeof dd));
    } else {
        fprintf(stderr, "kiln serve: error: %s\n", err->message);
    }
}

/* ---- main ---- */

/* The lists' items for the server's options: pointers into a copy of
 * each list (freed with free_settings). */
static char **mcp_origins, **mcp_reads;
static char *list_copies[2];

static void free_lists(void)
{
    free(mcp_origins);
    free(mcp_reads);
    free(list_copies[0]);
    free(list_copies[1]);
    mcp_origins = mcp_reads = NULL;
    list_copies[0] = list_copies[1] = NULL;
}

static void free_settings(void)
{
    free_lists();
    for (int i = 0; i < S__COUNT; i++) {
        free(settings[i].file_val);
        settings[i].file_val = NULL;
        free(settings[i].flag_list);
        settings[i].flag_list = NULL;
        free(settings[i].env_list);
        settings[i].env_list = NULL;
    }
}

/* Choose each setting's value and say where it came from. */
static void choose(const char *config_path)
{
    for (int i = 0; i < S__COUNT; i++) {
        struct setting *s = &settings[i];
        char env[64];
        env_name(s->name, env, sizeof env);
        s->env_val = getenv(env);
        if (s->env_val && !s->env_val[0])
            s->env_val = NULL;
        if (s->kind == K_LIST) {
            if (s->flag_list)
                s->flag_val = s->flag_list;
            if (s->env_val && list_add_commas(&s->env_list, s->env_val) == 0 && s->env_list)
                s->env_val = s->env_list;
        }
        if (s->flag_val) {
            s->value = s->flag_val;
            snprintf(s->origin, sizeof s->origin, "--%s", s->name);
        } else if (s->env_val) {
            s->value = s->env_val;
            snprintf(s->origin, sizeof s->origin, "%s", env);
        } else if (s->file_val) {
            s->value = s->file_val;
            snprintf(s->origin, sizeof s->origin, "%s:%u (%s)", config_path, s->file_line,
                     s->name);
        } else {
            s->value = NULL;
        }
    }
}

static int bad_value(const struct setting *s, const char *what)
{
    return usage_error("invalid value '%s' for %s: %s", s->value, s->origin, what);
}

/* The value of setting s, checked for its kind: 0 with *v (counts, sizes,
 * durations) or *host and opt's port (the address) or opt's run limit set,
 * else the exit status of the usage error printed. */
static int parse_setting(struct setting *s, uint64_t *out, char *host, size_t host_cap,
                         kiln_server_options *opt)
{
    int status = 0;
    uint64_t v = 0;
    switch (s->kind) {
    case K_LISTEN:
        if (parse_listen(s->value, host, host_cap, &opt->port) != 0) {
            status = bad_value(s, "expected HOST:PORT (or [IPV6]:PORT), port 0 to 65535");
            return status;
        }
        opt->host = host;
        break;
    case K_COUNT:
        if (s->zero_ok && strcmp(s->value, "0") == 0) {
            v = 0;
            break;
        }
        if (parse_count(s->value, s->max, &v) != 0 || v < s->min) {
            char why[64];
            snprintf(why, sizeof why, "expected a whole number from %llu to %llu",
                     (unsigned long long)(s->zero_ok ? 0
                                          : s->min   ? s->min
                                                     : 1),
                     (unsigned long long)s->max);
            status = bad_value(s, why);
            return status;
        }
        break;
    case K_SIZE:
        if (kiln_parse_size(s->value, &v) != 0 || v < s->min || (s->max && v > s->max)) {
            char why[160];
            size_t o = (size_t)snprintf(why, sizeof why,
                                        "expected a size: bytes, or a number with K, M or G");
            char lim[32];
            if (s->min) {
                kiln_format_size(s->min, lim, sizeof lim);
                o += (size_t)snprintf(why + o, sizeof why - o, ", at least %s", lim);
            }
            if (s->max) {
                kiln_format_size(s->max, lim, sizeof lim);
                snprintf(why + o, sizeof why - o, ", at most %s", lim);
            }
            status = bad_value(s, why);
            return status;
        }
        break;
    case K_DURATION:
        if (parse_duration(s->value, s->max, &v) != 0) {
            char why[128];
            snprintf(why, sizeof why,
                     "expected a duration: a whole number of seconds, or one with s, "
                     "m, h or d, more than 0 and at most %llus",
                     (unsigned long long)s->max);
            status = bad_value(s, why);
            return status;
        }
        break;
    case K_URL:
        if (strncmp(s->value, "http://", 7) != 0 && strncmp(s->value, "https://", 8) != 0) {
            status = bad_value(s, "expected an http:// or https:// URL");
            return status;
        }
        break;
    case K_LIMIT: {
        char why[128];
        double lv;
        if (kiln_limit_parse(s->limit, s->value, &lv, why, sizeof why) != 0) {
            status = bad_value(s, why);
            return status;
        }
        kiln_limit_set(&opt->run_max, s->limit, lv);
        break;
    }
    case K_STR:
        if ((s == &settings[S_SESSIONS] || s == &settings[S_MCP]) &&
            strcmp(s->value, "on") != 0 && strcmp(s->value, "off") != 0) {
            status = bad_value(s, "expected on or off");
            return status;
        }
        break;
    case K_LIST:
        if (s == &settings[S_MCP_ALLOW_ORIGIN]) {
            /* An origin as a browser sends it: scheme://host[:port], no
             * path, no trailing slash (compared exactly). */
            for (const char *p = s->value; *p;) {
                size_t n = strcspn(p, "\n");
                const char *sep = memmem(p, n, "://", 3);
                const char *name = sep ? sep + 3 : NULL;
                if (!sep || sep == p || !name || name >= p + n ||
                    memchr(name, '/', (size_t)(p + n - name))) {
                    status = bad_value(s, "expected origins such as http://localhost:3000 "
                                          "(scheme://host[:port], no path)");
                    return status;
                }
                p += n;
                if (*p == '\n')
                    p++;
            }
        }
        break;
    }
    *out = v;
    return 0;
}

/* Setting i's checked value into the server's options. */
static void apply_setting(int i, const struct setting *s, uint64_t v, kiln_server_options *opt)
{
    switch (i) {
    case S_DATA_DIR:
        opt->data_dir = s->value;
        break;
    case S_KEYS_FILE:
        opt->keys_file = s->value;
        break;
    case S_THREADS:
        opt->threads = (unsigned)v;
        break;
    case S_MAX_JOBS:
        opt->max_jobs = (unsigned)v;
        break;
    case S_QUEUE:
        opt->queue_max = (unsigned)v;
        break;
    case S_MAX_UPLOAD:
        opt->max_upload_bytes = v;
        break;
    case S_MAX_REQUEST:
        opt->max_request_bytes = v;
        break;
    case S_TTL:
        opt->ttl_seconds = (int64_t)v;
        break;
    case S_SWEEP:
        opt->sweep_seconds = (unsigned)v;
        break;
    case S_CONN_TIMEOUT:
        opt->connection_timeout = (unsigned)v;
        break;
    case S_HEADER_TIMEOUT:
        opt->header_timeout = (unsigned)v;
        break;
    case S_REQUEST_TIMEOUT:
        opt->request_timeout = (unsigned)v;
        break;
    case S_GRACE:
        opt->shutdown_grace = (unsigned)v;
        break;
    case S_MAX_CONN:
        opt->max_connections = (unsigned)v;
        break;
    case S_MAX_PER_IP:
        opt->max_connections_per_ip = (unsigned)v;
        break;
    case S_PUBLIC_URL:
        opt->public_url = s->value;
        break;
    case S_SESSIONS:
        opt->sessions_enabled = strcmp(s->value, "on") == 0;
        break;
    case S_MAX_SESSIONS:
        opt->max_sessions = (unsigned)v;
        break;
    case S_MAX_SESSIONS_TENANT:
        opt->max_sessions_per_tenant = (unsigned)v;
        break;
    case S_SESSION_POOL:
        opt->session_pool = (unsigned)v;
        break;
    case S_SESSION_IDLE:
        opt->session_idle = (unsigned)v;
        break;
    case S_SESSION_LIFETIME:
        opt->session_lifetime = (unsigned)v;
        break;
    case S_MCP:
        opt->mcp_enabled = strcmp(s->value, "on") == 0;
        break;
    case S_MCP_SESSIONS_TENANT:
        opt->mcp_sessions_per_tenant = (unsigned)v;
        break;
    case S_MCP_SESSION_IDLE:
        opt->mcp_session_idle = (unsigned)v;
        break;
    case S_BATCH_WORKERS:
        opt->batch_workers = (unsigned)v;
        break;
    case S_BATCHES_RUNNING:
        opt->batches_running = (unsigned)v;
        break;
    case S_BATCHES_TENANT:
        opt->batches_per_tenant = (unsigned)v;
        break;
    case S_BATCH_MAX_JOBS:
        opt->batch_max_jobs = (unsigned)v;
        break;
    case S_BATCH_JOB_TIMEOUT:
        opt->batch_job_timeout = (unsigned)v;
        break;
    default:
        break;
    }
}

/* text's newline-separated items as a NULL-terminated array (*items
 * malloc'd, the strings in a copy kept in list_copies). 0, or -1. */
static int list_items(const char *text, char ***items, size_t *n)
{
    *items = NULL;
    *n = 0;
    if (!text)
        return 0;
    char *copy = strdup(text);
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == '\n';
    char **out = calloc(cap + 1, sizeof *out);
    if (!copy || !out) {
        free(copy);
        free(out);
        return -1;
    }
    size_t k = 0;
    for (char *save = NULL, *t = strtok_r(copy, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
        out[k++] = t;
    list_copies[list_copies[0] ? 1 : 0] = copy;
    *items = out;
    *n = k;
    return 0;
}

/* Every chosen setting into opt (host: room for the address's host). 0, or
 * the exit status of the usage error printed. */
static int gather_settings(kiln_server_options *opt, char *host, size_t host_cap)
{
    for (int i = 0; i < S__COUNT; i++) {
        struct setting *s = &settings[i];
        uint64_t v = 0;
        if (!s->value)
            continue;
        int status = parse_setting(s, &v, host, host_cap, opt);
        if (status != 0)
            return status;
        apply_setting(i, s, v, opt);
    }
    if (list_items(settings[S_MCP_ALLOW_ORIGIN].value, &mcp_origins, &opt->n_mcp_allow_origins) !=
            0 ||
        list_items(settings[S_MCP_ALLOW_READ].value, &mcp_reads, &opt->n_mcp_allow_read) != 0)
        return usage_error("out of memory");
    opt->mcp_allow_origins = (const char *const *)mcp_origins;
    opt->mcp_allow_read = (const char *const *)mcp_reads;
    opt->env_keys = getenv("KILN_API_KEYS");
    if (opt->env_keys && !opt->env_keys[0])
        opt->env_keys = NULL;
    return 0;
}

/* Start the server with opt, log, and wait for SIGTERM or SIGINT to stop
 * it. The exit status. */
static int serve_until_signal(kiln_server_options *opt)
{
    /* The first key is made by prepare, once the server holds the data
     * directory: a server refused because another one uses it writes
     * nothing there. */
    struct first_key fk = {.env_keys = opt->env_keys != NULL};
    opt->prepare = prepare_keys;
    opt->prepare_arg = &fk;
    opt->log = log_line;
    /* Signals are taken by sigwait below, so every thread must have them
     * blocked; a client going away must not kill the process. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    kiln_server *srv = NULL;
    kiln_error err;
    memset(&err, 0, sizeof err);
    kiln_status st = kiln_server_start(&srv, opt, &err);
    if (st != KILN_E_OK) {
        start_error(&err, opt->data_dir);
        return kiln_status_exit(st);
    }
    if (fk.made) {
        char kp[PATH_MAX * 2];
        json_escape(fk.key_path, kp, sizeof kp);
        log_event("\"event\":\"api_key_created\",\"tenant\":\"default\",\"key_file\":\"%s\","
                  "\"message\":\"no API keys were configured: a key for tenant default is in "
                  "key_file (its hash in the keys file beside it)\"",
                  kp);
    }
    int sig = 0;
    while (sigwait(&set, &sig) != 0)
        ;
    log_event("\"event\":\"signal\",\"signal\":\"%s\"", sig == SIGINT ? "SIGINT" : "SIGTERM");
    kiln_server_stop(srv);
    return 0;
}

int kiln_serve_main(int argc, char **argv)
{
    /* A long option per setting (its name), then the three that are not. */
    enum { OPT_CONFIG = 'c', OPT_HASH_KEY = 'k' };
    struct option opts[S__COUNT + 4];
    init_run_settings();
    for (int i = 0; i < S__COUNT; i++)
        opts[i] = (struct option){settings[i].name, required_argument, NULL, 256 + i};
    opts[S__COUNT] = (struct option){"config", required_argument, NULL, OPT_CONFIG};
    opts[S__COUNT + 1] = (struct option){"hash-key", no_argument, NULL, OPT_HASH_KEY};
    opts[S__COUNT + 2] = (struct option){"help", no_argument, NULL, 'h'};
    opts[S__COUNT + 3] = (struct option){NULL, 0, NULL, 0};
    const char *config = NULL;
    int hash_key = 0, c, status = 0;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c >= 256 && c < 256 + S__COUNT) {
            struct setting *s = &settings[c - 256];
            if (s->kind == K_LIST) {
                if (list_add(&s->flag_list, optarg, strlen(optarg)) != 0)
                    return usage_error("out of memory");
                continue;
            }
            s->flag_val = optarg;
            continue;
        }
        switch (c) {
        case OPT_CONFIG:
            config = optarg;
            break;
        case OPT_HASH_KEY:
            hash_key = 1;
            break;
        case 'h':
            print_usage();
            return 0;
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (hash_key)
        return hash_key_from_stdin();

    const char *config_origin = "--config";
    if (!config && getenv("KILN_CONFIG") && getenv("KILN_CONFIG")[0]) {
        config = getenv("KILN_CONFIG");
        config_origin = "KILN_CONFIG";
    }
    if (config && (status = read_config(config, config_origin)) != 0)
        goto free_settings;
    choose(config);

    kiln_server_options opt;
    kiln_server_options_init(&opt);
    char host[256];
    if ((status = gather_settings(&opt, host, sizeof host)) != 0)
        goto free_settings;

    static char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "kiln serve: error: cannot find the kiln executable: %s\n",
                strerror(errno));
        status = kiln_status_exit(KILN_E_INTERNAL);
        goto free_settings;
    }
    exe[n] = '\0';
    opt.kiln_exe = exe;
    status = serve_until_signal(&opt);

free_settings:
    free_settings();
    return status;
}
