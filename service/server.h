/*
 * server.h - the HTTP service behind `kiln serve` (issue 7).
 *
 * One kiln_server is a libmicrohttpd daemon with a thread pool, the file
 * store (store.h), the API keys and link secret (auth.h), the job pool that
 * renders and runs (api.h), the metrics and a sweep thread that removes
 * expired files. The HTTP contract it serves is docs/openapi.json;
 * docs/serve.md describes running it.
 *
 * The library never prints: the access log (one JSON object per request)
 * and the server's events (one JSON object with an "event" member each) go
 * to the log callback in the options, one line per call, without the
 * newline. The front end (cli/serve.c) writes them to stdout.
 */
#ifndef KILN_SERVICE_SERVER_H
#define KILN_SERVICE_SERVER_H

#include <stdint.h>

#include "common/error.h"
#include "exec/run.h"

/* Defaults (docs/serve.md has the table). */
#define KILN_SERVER_DEFAULT_PORT 8080
#define KILN_SERVER_DEFAULT_QUEUE 32
#define KILN_SERVER_DEFAULT_MAX_UPLOAD (30ull << 20)
#define KILN_SERVER_DEFAULT_MAX_REQUEST (16ull << 20)
#define KILN_SERVER_DEFAULT_SWEEP 60
#define KILN_SERVER_DEFAULT_CONN_TIMEOUT 30
#define KILN_SERVER_DEFAULT_GRACE 30
#define KILN_SERVER_DEFAULT_MAX_CONNECTIONS 1000
#define KILN_SERVER_DEFAULT_MAX_PER_IP 64
#define KILN_SERVER_DEFAULT_HEADER_TIMEOUT 10
/* 30 MiB (the largest upload) at 100 KiB/s takes 307 s. */
#define KILN_SERVER_DEFAULT_REQUEST_TIMEOUT 300
#define KILN_SERVER_LINK_DEFAULT_SECONDS 3600
#define KILN_SERVER_LINK_MAX_SECONDS 604800 /* 7 days */
#define KILN_SERVER_DEFAULT_MAX_SESSIONS 64
#define KILN_SERVER_DEFAULT_MAX_SESSIONS_PER_TENANT 16
#define KILN_SERVER_DEFAULT_SESSION_POOL 2
#define KILN_SERVER_DEFAULT_SESSION_IDLE (20 * 60)
#define KILN_SERVER_DEFAULT_SESSION_LIFETIME (12 * 3600)
#define KILN_SERVER_DEFAULT_MCP_SESSIONS_PER_TENANT 32
#define KILN_SERVER_DEFAULT_MCP_SESSION_IDLE (30 * 60)
#define KILN_SERVER_DEFAULT_BATCHES_RUNNING 1
#define KILN_SERVER_DEFAULT_BATCHES_PER_TENANT 10
#define KILN_SERVER_DEFAULT_BATCH_MAX_JOBS 100000
#define KILN_SERVER_DEFAULT_BATCH_JOB_TIMEOUT 600

/* One line (a JSON object, no newline) for the log. Called from any of the
 * server's threads, possibly at once: the callback serialises. */
typedef void (*kiln_server_log_fn)(void *arg, const char *line);

typedef struct kiln_server_options {
    const char *host;                /* numeric address or name to bind; "127.0.0.1" */
    unsigned port;                   /* 0 = an ephemeral port (kiln_server_port tells which) */
    const char *data_dir;            /* kiln.db, content/, work/, link.key, keys */
    const char *keys_file;           /* "TENANT SHA256HEX" lines; may be NULL */
    const char *env_keys;            /* "TENANT:KEY,..." (KILN_API_KEYS); may be NULL */
    unsigned threads;                /* HTTP thread pool; 0 = CPUs (at least 2) */
    unsigned max_jobs;               /* render/run workers; 0 = CPUs */
    unsigned queue_max;              /* jobs waiting beyond those; 0 = none wait (the
                                        default is set by kiln_server_options_init) */
    uint64_t max_upload_bytes;       /* POST /v1/files body; 0 = default */
    uint64_t max_request_bytes;      /* JSON bodies; 0 = default */
    uint64_t max_file_bytes;         /* rendered and produced files; 0 = 30 MiB */
    int64_t ttl_seconds;             /* file lifetime; 0 = 24 h */
    unsigned sweep_seconds;          /* expiry sweep period; 0 = default */
    unsigned connection_timeout;     /* seconds without a byte before a connection is closed; 0 =
                                        default */
    unsigned header_timeout;         /* seconds from accept (or the end of the previous response)
                                        to the end of the request's headers; 0 = default */
    unsigned request_timeout;        /* seconds from the end of the headers to the end of the
                                        body; 0 = default */
    unsigned shutdown_grace;         /* seconds running jobs get at stop; 0 = default */
    unsigned max_connections;        /* 0 = default */
    unsigned max_connections_per_ip; /* from one client address; 0 = no limit (the
                                        default, KILN_SERVER_DEFAULT_MAX_PER_IP, is set by
                                        kiln_server_options_init) */
    const char *public_url;  /* base of signed links ("https://kiln.example"); NULL = Host */
    const char *kiln_exe;    /* the kiln executable, for `kiln run` children */
    kiln_run_limits run_max; /* the most a run or session may ask for (zeros = kiln run's
                                defaults) */
    int sessions_enabled;    /* /v1/sessions on (kiln_server_options_init: 1) */
    unsigned max_sessions;   /* open at once on the server; 0 = default */
    unsigned max_sessions_per_tenant; /* ... of one tenant; 0 = default */
    unsigned session_pool; /* ready sessions kept (0 = none: the init sets the default) */
    unsigned session_idle; /* seconds: a session's idle timeout when it asks none; 0 = 20 min */
    unsigned session_lifetime; /* seconds: the longest (and default) lifetime; 0 = 12 h */
    int mcp_enabled;           /* /mcp on (kiln_server_options_init: 1) */
    /* Origins a browser's request to /mcp may come from (exact match); a
     * request without an Origin header is always served. */
    const char *const *mcp_allow_origins;
    size_t n_mcp_allow_origins;
    /* load_file reads below these directories only (kiln mcp --allow-read). */
    const char *const *mcp_allow_read;
    size_t n_mcp_allow_read;
    unsigned mcp_sessions_per_tenant; /* MCP sessions (Mcp-Session-Id) open at once; 0 = 32 */
    unsigned mcp_session_idle;        /* seconds without a request before one ends; 0 = 30 min */
    /* /v1/batches (docs/serve.md, "Batches"): each batch a `kiln batch`
     * child at nice 10. */
    unsigned batch_workers;      /* its -j; 0 = max(1, CPUs / 2) */
    unsigned batches_running;    /* children at once; 0 = 1 */
    unsigned batches_per_tenant; /* queued + running of one tenant; 0 = 10 */
    unsigned batch_max_jobs;     /* jobs (rows) in one batch; 0 = 100000 */
    unsigned batch_job_timeout;  /* seconds, its --job-timeout; 0 = 600 */
    kiln_server_log_fn log;      /* may be NULL: nothing is logged */
    void *log_arg;
    /* Called once the data directory is this server's (its lock taken),
     * before the keys are read, so a front end can make a first key there
     * without ever writing into another server's directory; it may set
     * *keys_file. KILN_E_OK, or a status with err set: the start fails
     * with it. May be NULL. */
    kiln_status (*prepare)(void *arg, const char *data_dir, const char **keys_file,
                           kiln_error *err);
    void *prepare_arg;
} kiln_server_options;

typedef struct kiln_server kiln_server;

/* Every field its default (host, port and the numbers; no keys, no log).
 * A field left 0 also means its default, except max_connections_per_ip
 * (0 = no limit) and queue_max (0 = nothing waits). */
void kiln_server_options_init(kiln_server_options *opt);

/* Bind the listen address, open the store (taking the data directory's
 * lock), call prepare, load the keys (none at all is an error), start the
 * job pool, the sweep thread and the daemon. Logs {"event":"listening",...}
 * first. *srv is new: kiln_server_stop ends and frees it. A failure that
 * one setting caused names it in err->pointer, "/listen" (the address
 * cannot be resolved or bound: KILN_E_USAGE, "in use by another process"
 * when it is taken) or "/data-dir" (the directory cannot be made or opened,
 * or another process holds it: KILN_E_USAGE), so the front end can say
 * where the value came from and how to choose another. */
kiln_status kiln_server_start(kiln_server **srv, const kiln_server_options *opt, kiln_error *err);

/* The port the daemon listens on (the real one when asked for 0). */
unsigned kiln_server_port(const kiln_server *srv);

/* Graceful stop, then free: stop accepting (healthz answers 503), answer
 * queued jobs 503, let running ones finish for up to shutdown_grace
 * seconds, kill runs still going, close every connection. */
void kiln_server_stop(kiln_server *srv);

#endif
