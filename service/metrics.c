/*
 * metrics.c - the service's counters and latency histograms, written in
 * the Prometheus text exposition format 0.0.4.
 *
 * Every series is keyed by labels the server bounds itself (route
 * templates, known methods, statuses, formats, run outcomes), and the
 * number of series is capped besides (KILN_METRICS_SERIES_MAX), so a
 * client cannot grow the table. One mutex guards it all: an update is a
 * few additions, far cheaper than the request it counts.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/api.h"
#include "../common/banned.h"

/* The most series of each family; updates past it are dropped (and
 * counted in kiln_metrics_dropped_total). */
#define KILN_METRICS_SERIES_MAX 1024
#define LABEL_MAX 64

/* Histogram bucket upper bounds, seconds (Prometheus' defaults). */
static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define N_BUCKETS (sizeof buckets / sizeof buckets[0])

struct counter {
    char a[LABEL_MAX], b[LABEL_MAX], c[LABEL_MAX];
    uint64_t value;
};

struct histogram {
    char route[LABEL_MAX];
    uint64_t counts[N_BUCKETS]; /* non-cumulative; summed when written */
    uint64_t count;
    double sum;
};

struct family {
    struct counter *items;
    size_t n, cap;
};

struct kiln_metrics {
    pthread_mutex_t lock;
    struct family requests;   /* method, route, status */
    struct family bytes;      /* route */
    struct family runs;       /* outcome */
    struct family renders;    /* format, result */
    struct family cells;      /* outcome */
    struct family mcp;        /* method, outcome */
    struct family batch_jobs; /* outcome */
    struct family batches;    /* status */
    unsigned batches_queued, batches_running;
    uint64_t batch_jobs_left;
    struct histogram cell_latency;
    struct histogram *hist;
    size_t n_hist, cap_hist;
    uint64_t dropped;
};

kiln_status kiln_metrics_init(kiln_metrics **out, kiln_error *err)
{
    kiln_metrics *m = calloc(1, sizeof *m);
    if (!m) {
        *out = NULL;
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    }
    pthread_mutex_init(&m->lock, NULL);
    *out = m;
    return KILN_E_OK;
}

void kiln_metrics_free(kiln_metrics *m)
{
    if (!m)
        return;
    free(m->requests.items);
    free(m->bytes.items);
    free(m->runs.items);
    free(m->renders.items);
    free(m->cells.items);
    free(m->mcp.items);
    free(m->batch_jobs.items);
    free(m->batches.items);
    free(m->hist);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static void copy_label(char *dst, const char *src)
{
    snprintf(dst, LABEL_MAX, "%s", src ? src : "");
}

/* The counter with these labels, made when new; NULL when full. Locked. */
static struct counter *counter_get(kiln_metrics *m, struct family *f, const char *a,
                                   const char *b, const char *c)
{
    char la[LABEL_MAX], lb[LABEL_MAX], lc[LABEL_MAX];
    copy_label(la, a);
    copy_label(lb, b);
    copy_label(lc, c);
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->items[i].a, la) && !strcmp(f->items[i].b, lb) &&
            !strcmp(f->items[i].c, lc))
            return &f->items[i];
    if (f->n == KILN_METRICS_SERIES_MAX) {
        m->dropped++;
        return NULL;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct counter *grown = realloc(f->items, cap * sizeof *grown);
        if (!grown) {
            m->dropped++;
            return NULL;
        }
        f->items = grown;
        f->cap = cap;
    }
    struct counter *ctr = &f->items[f->n++];
    memset(ctr, 0, sizeof *ctr);
    memcpy(ctr->a, la, LABEL_MAX);
    memcpy(ctr->b, lb, LABEL_MAX);
    memcpy(ctr->c, lc, LABEL_MAX);
    return ctr;
}

static struct histogram *hist_get(kiln_metrics *m, const char *route)
{
    char lr[LABEL_MAX];
    copy_label(lr, route);
    for (size_t i = 0; i < m->n_hist; i++)
        if (!strcmp(m->hist[i].route, lr))
            return &m->hist[i];
    if (m->n_hist == KILN_METRICS_SERIES_MAX) {
        m->dropped++;
        return NULL;
    }
    if (m->n_hist == m->cap_hist) {
        size_t cap = m->cap_hist ? m->cap_hist * 2 : 16;
        struct histogram *grown = realloc(m->hist, cap * sizeof *grown);
        if (!grown) {
            m->dropped++;
            return NULL;
        }
        m->hist = grown;
        m->cap_hist = cap;
    }
    struct histogram *h = &m->hist[m->n_hist++];
    memset(h, 0, sizeof *h);
    memcpy(h->route, lr, LABEL_MAX);
    return h;
}

/* Methods outside the usual set share one label, so a client inventing
 * methods cannot add series. */
static const char *method_label(const char *method)
{
    static const char *const known[] = {"GET",    "HEAD",    "POST", "PUT",
                                        "DELETE", "OPTIONS", "PATCH"};
    for (size_t i = 0; method && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(method, known[i]) == 0)
            return known[i];
    return "other";
}

void kiln_metrics_request(kiln_metrics *m, const char *method, const char *route, int status,
                          double seconds, uint64_t bytes_out)
{
    char st[16];
    snprintf(st, sizeof st, "%d", status);
    pthread_mutex_lock(&m->lock);
    struct counter *c = counter_get(m, &m->requests, method_label(method), route, st);
    if (c)
        c->value++;
    c = counter_get(m, &m->bytes, route, NULL, NULL);
    if (c)
        c->value += bytes_out;
    struct histogram *h = hist_get(m, route);
    if (h) {
        size_t i = 0;
        while (i < N_BUCKETS && seconds > buckets[i])
            i++;
        if (i < N_BUCKETS)
            h->counts[i]++;
        h->count++;
        h->sum += seconds > 0 ? seconds : 0;
    }
    pthread_mutex_unlock(&m->lock);
}

void kiln_metrics_run(kiln_metrics *m, const char *outcome)
{
    pthread_mutex_lock(&m->lock);
    struct counter *c = counter_get(m, &m->runs, outcome, NULL, NULL);
    if (c)
        c->value++;
    pthread_mutex_unlock(&m->lock);
}

void kiln_metrics_render(kiln_metrics *m, const char *format, const char *result)
{
    pthread_mutex_lock(&m->lock);
    struct counter *c = counter_get(m, &m->renders, format, result, NULL);
    if (c)
        c->value++;
    pthread_mutex_unlock(&m->lock);
}

void kiln_metrics_mcp(kiln_metrics *m, const char *method, const char *outcome)
{
    pthread_mutex_lock(&m->lock);
    struct counter *c = counter_get(m, &m->mcp, method, outcome, NULL);
    if (c)
        c->value++;
    pthread_mutex_unlock(&m->lock);
}

void kiln_metrics_cell(kiln_metrics *m, const char *outcome, double seconds)
{
    pthread_mutex_lock(&m->lock);
    struct counter *c = counter_get(m, &m->cells, outcome, NULL, NULL);
    if (c)
        c->value++;
    struct histogram *h = &m->cell_latency;
    for (size_t b = 0; b < N_BUCKETS; b++) {
        if (seconds <= buckets[b]) {
            h->counts[b]++;
            break;
        }
    }
    h->count++;
    h->sum += seconds;
    pthread_mutex_unlock(&m->lock);
}

void kiln_metrics_batch_job(kiln_metrics *m, const char *outcome)
{
    pthread_mutex_lock(&m->lock);
    struct counter *c = counter_get(m, &m->batch_jobs, outcome, NULL, NULL);
    if (c)
        c->value++;
    pthread_mutex_unlock(&m->lock);
}

void kiln_metrics_batch(kiln_metrics *m, const char *status)
{
    pthread_mutex_lock(&m->lock);
    struct counter *c = counter_get(m, &m->batches, status, NULL, NULL);
    if (c)
        c->value++;
    pthread_mutex_unlock(&m->lock);
}

void kiln_metrics_batch_gauges(kiln_metrics *m, unsigned queued, unsigned running,
                               uint64_t jobs_left)
{
    pthread_mutex_lock(&m->lock);
    m->batches_queued = queued;
    m->batches_running = running;
    m->batch_jobs_left = jobs_left;
    pthread_mutex_unlock(&m->lock);
}

/* ---- the exposition text ---- */

struct text {
    char *buf;
    size_t len, cap;
    int failed;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap * 2 + (size_t)n;
        char *grown = realloc(t->buf, cap);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->buf = grown;
        t->cap = cap;
    }
}

/* A label value escaped as the format wants: \\, \" and \n. */
static void put_label(struct text *t, const char *name, const char *value, int first)
{
    put(t, "%s%s=\"", first ? "" : ",", name);
    for (const char *p = value; *p; p++) {
        if (*p == '\\')
            put(t, "\\\\");
        else if (*p == '"')
            put(t, "\\\"");
        else if (*p == '\n')
            put(t, "\\n");
        else
            put(t, "%c", *p);
    }
    put(t, "\"");
}

static void put_header(struct text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A float as Prometheus reads it ("0.005", "10"): 9 significant digits,
 * enough for the bounds and for sums of request times. */
static void put_float(struct text *t, double v)
{
    put(t, "%.9g", v);
}

char *kiln_metrics_text(kiln_metrics *m, uint64_t bytes_stored, unsigned jobs_running,
                        unsigned jobs_queued, unsigned sessions_open, unsigned sessions_pool,
                        unsigned mcp_sessions, size_t *len)
{
    struct text t = {.buf = malloc(4096), .cap = 4096};
    if (!t.buf)
        return NULL;
    t.buf[0] = '\0';
    pthread_mutex_lock(&m->lock);

    put_header(&t, "kiln_http_requests_total", "counter",
               "HTTP requests answered, by method, route template and status.");
    for (size_t i = 0; i < m->requests.n; i++) {
        const struct counter *c = &m->requests.items[i];
        put(&t, "kiln_http_requests_total{");
        put_label(&t, "method", c->a, 1);
        put_label(&t, "route", c->b, 0);
        put_label(&t, "status", c->c, 0);
        put(&t, "} %llu\n", (unsigned long long)c->value);
    }

    put_header(&t, "kiln_http_request_duration_seconds", "histogram",
               "Time from a request's headers to its end, by route template.");
    for (size_t i = 0; i < m->n_hist; i++) {
        const struct histogram *h = &m->hist[i];
        uint64_t cum = 0;
        for (size_t b = 0; b < N_BUCKETS; b++) {
            cum += h->counts[b];
            put(&t, "kiln_http_request_duration_seconds_bucket{");
            put_label(&t, "route", h->route, 1);
            put(&t, ",le=\"");
            put_float(&t, buckets[b]);
            put(&t, "\"} %llu\n", (unsigned long long)cum);
        }
        put(&t, "kiln_http_request_duration_seconds_bucket{");
        put_label(&t, "route", h->route, 1);
        put(&t, ",le=\"+Inf\"} %llu\n", (unsigned long long)h->count);
        put(&t, "kiln_http_request_duration_seconds_sum{");
        put_label(&t, "route", h->route, 1);
        put(&t, "} ");
        put_float(&t, h->sum);
        put(&t, "\nkiln_http_request_duration_seconds_count{");
        put_label(&t, "route", h->route, 1);
        put(&t, "} %llu\n", (unsigned long long)h->count);
    }

    put_header(&t, "kiln_http_response_bytes_total", "counter",
               "Response body bytes sent, by route template.");
    for (size_t i = 0; i < m->bytes.n; i++) {
        put(&t, "kiln_http_response_bytes_total{");
        put_label(&t, "route", m->bytes.items[i].a, 1);
        put(&t, "} %llu\n", (unsigned long long)m->bytes.items[i].value);
    }

    put_header(&t, "kiln_runs_total", "counter", "Runs finished, by the result's status.");
    for (size_t i = 0; i < m->runs.n; i++) {
        put(&t, "kiln_runs_total{");
        put_label(&t, "outcome", m->runs.items[i].a, 1);
        put(&t, "} %llu\n", (unsigned long long)m->runs.items[i].value);
    }

    put_header(&t, "kiln_renders_total", "counter", "Renders finished, by format and result.");
    for (size_t i = 0; i < m->renders.n; i++) {
        put(&t, "kiln_renders_total{");
        put_label(&t, "format", m->renders.items[i].a, 1);
        put_label(&t, "result", m->renders.items[i].b, 0);
        put(&t, "} %llu\n", (unsigned long long)m->renders.items[i].value);
    }

    put_header(&t, "kiln_session_cells_total", "counter",
               "Session cells finished, by the cell's status.");
    for (size_t i = 0; i < m->cells.n; i++) {
        put(&t, "kiln_session_cells_total{");
        put_label(&t, "outcome", m->cells.items[i].a, 1);
        put(&t, "} %llu\n", (unsigned long long)m->cells.items[i].value);
    }
    put_header(&t, "kiln_session_cell_duration_seconds", "histogram",
               "Time from a cell's request to its record, its files stored.");
    {
        const struct histogram *h = &m->cell_latency;
        uint64_t cum = 0;
        for (size_t b = 0; b < N_BUCKETS; b++) {
            cum += h->counts[b];
            put(&t, "kiln_session_cell_duration_seconds_bucket{le=\"");
            put_float(&t, buckets[b]);
            put(&t, "\"} %llu\n", (unsigned long long)cum);
        }
        put(&t, "kiln_session_cell_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
            (unsigned long long)h->count);
        put(&t, "kiln_session_cell_duration_seconds_sum ");
        put_float(&t, h->sum);
        put(&t, "\nkiln_session_cell_duration_seconds_count %llu\n",
            (unsigned long long)h->count);
    }

    put_header(&t, "kiln_mcp_requests_total", "counter",
               "Messages to /mcp, by JSON-RPC method and outcome.");
    for (size_t i = 0; i < m->mcp.n; i++) {
        put(&t, "kiln_mcp_requests_total{");
        put_label(&t, "method", m->mcp.items[i].a, 1);
        put_label(&t, "outcome", m->mcp.items[i].b, 0);
        put(&t, "} %llu\n", (unsigned long long)m->mcp.items[i].value);
    }

    put_header(&t, "kiln_batch_jobs_total", "counter",
               "Jobs of batches finished (their results stored), by outcome.");
    for (size_t i = 0; i < m->batch_jobs.n; i++) {
        put(&t, "kiln_batch_jobs_total{");
        put_label(&t, "outcome", m->batch_jobs.items[i].a, 1);
        put(&t, "} %llu\n", (unsigned long long)m->batch_jobs.items[i].value);
    }
    put_header(&t, "kiln_batches_total", "counter",
               "Batches ended, by their final status (completed, failed, cancelled).");
    for (size_t i = 0; i < m->batches.n; i++) {
        put(&t, "kiln_batches_total{");
        put_label(&t, "status", m->batches.items[i].a, 1);
        put(&t, "} %llu\n", (unsigned long long)m->batches.items[i].value);
    }
    put_header(&t, "kiln_batches", "gauge", "Batches queued and running now.");
    put(&t, "kiln_batches{status=\"queued\"} %u\n", m->batches_queued);
    put(&t, "kiln_batches{status=\"running\"} %u\n", m->batches_running);
    put_header(&t, "kiln_batch_queue_depth", "gauge",
               "Jobs of queued and running batches not finished yet.");
    put(&t, "kiln_batch_queue_depth %llu\n", (unsigned long long)m->batch_jobs_left);

    put_header(&t, "kiln_metrics_dropped_total", "counter",
               "Metric updates dropped because a family reached its series limit.");
    put(&t, "kiln_metrics_dropped_total %llu\n", (unsigned long long)m->dropped);
    pthread_mutex_unlock(&m->lock);

    put_header(&t, "kiln_store_bytes", "gauge", "Bytes of stored file bodies.");
    put(&t, "kiln_store_bytes %llu\n", (unsigned long long)bytes_stored);
    put_header(&t, "kiln_jobs_running", "gauge", "Renders and runs being worked on.");
    put(&t, "kiln_jobs_running %u\n", jobs_running);
    put_header(&t, "kiln_jobs_queued", "gauge", "Renders and runs waiting for a worker.");
    put(&t, "kiln_jobs_queued %u\n", jobs_queued);
    put_header(&t, "kiln_sessions_open", "gauge", "Sessions open (a tenant's, not pooled).");
    put(&t, "kiln_sessions_open %u\n", sessions_open);
    put_header(&t, "kiln_session_pool_ready", "gauge", "Ready sessions waiting in the pool.");
    put(&t, "kiln_session_pool_ready %u\n", sessions_pool);
    put_header(&t, "kiln_mcp_sessions_open", "gauge", "MCP sessions (Mcp-Session-Id) open.");
    put(&t, "kiln_mcp_sessions_open %u\n", mcp_sessions);

    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    if (len)
        *len = t.len;
    return t.buf;
}
