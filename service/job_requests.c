/*
 * job_requests.c - POST /v1/render and POST /v1/runs through the job pool.
 *
 * The HTTP thread parses the body, holds the input files (a DELETE of one
 * answers 409 until the job ends), suspends the connection and queues a
 * task; a worker calls kiln_api_render / kiln_api_run, keeps the reply in
 * the request and resumes the connection; libmicrohttpd then calls the
 * access handler again, which queues the reply. A full queue is a 429
 * with Retry-After; a stopping server answers 503.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "service/http.h"
#include "../common/banned.h"

struct job_task {
    kiln_server *srv;
    kiln_req *req;
    int is_run;
    char tenant[KILN_AUTH_TENANT_MAX + 1];
    char format[8]; /* the metrics label of a render */
    json_t *request;
    size_t body_bytes; /* the request's JSON text, for the trim in task_free */
    size_t n_ids;
    const char **ids; /* point into request's strings */
    int client_fd;    /* the connection's socket, only polled (kiln_api_client_gone) */
};

static void task_free(struct job_task *t)
{
    if (t->n_ids)
        kiln_inuse_release(t->srv->inuse, t->tenant, t->ids, t->n_ids);
    free(t->ids);
    json_decref(t->request);
    /* A big request's parsed JSON (up to 32 bytes a byte of its text,
     * json_budget.h) and the job's own memory are free now; glibc keeps
     * freed heap memory resident unless asked. */
    if (t->body_bytes >= (1u << 20))
        malloc_trim(0);
    free(t);
}

/* Hand the reply to the request and wake its connection. */
static void task_finish(struct job_task *t)
{
    kiln_req *req = t->req;
    struct MHD_Connection *conn = req->conn;
    task_free(t);
    req->job = JOB_DONE;
    MHD_resume_connection(conn);
}

/* A render whose client left while it worked: the document nobody will
 * hear of is deleted rather than kept until it expires. */
static void render_abandoned(struct job_task *t, kiln_api_reply *reply)
{
    const char *id = json_string_value(json_object_get(reply->body, "id"));
    kiln_error err;
    if (reply->status == 201 && id)
        kiln_store_delete(t->srv->store, t->tenant, id, &err);
    json_decref(reply->body);
    reply->body = NULL;
    reply->client_gone = 1;
}

static void task_run(void *arg)
{
    struct job_task *t = arg;
    kiln_server *srv = t->srv;
    kiln_api_reply reply;
    memset(&reply, 0, sizeof reply);
    /* A job whose client left while it waited is not begun. */
    reply.client_gone = kiln_api_client_gone(t->client_fd);
    if (t->is_run) {
        if (!reply.client_gone)
            kiln_api_run(&srv->api, t->tenant, t->request, t->client_fd, &reply);
        const char *outcome = "error";
        if (reply.client_gone) {
            outcome = "client_abort";
        } else if (reply.status == 200) {
            const char *s = json_string_value(json_object_get(reply.body, "status"));
            outcome = s ? s : "unknown";
        }
        kiln_metrics_run(srv->metrics, outcome);
    } else {
        if (!reply.client_gone) {
            kiln_api_render(&srv->api, t->tenant, t->request, &reply);
            if (kiln_api_client_gone(t->client_fd))
                render_abandoned(t, &reply);
        }
        kiln_metrics_render(srv->metrics, t->format,
                            reply.client_gone     ? "client_abort"
                            : reply.status == 201 ? "ok"
                                                  : "error");
    }
    if (reply.client_gone) {
        /* Nothing to send: the connection is closed once resumed. */
        json_decref(reply.body);
        reply.body = NULL;
        t->req->client_gone = 1;
    } else if (!reply.body || reply.status < 200 || reply.status > 599) {
        json_decref(reply.body);
        kiln_api_reply_error(&reply, 500, "internal", "The server failed to handle the request.",
                             NULL);
    }
    if (reply.log[0])
        http_event(srv, "error",
                   json_pack("{s:s, s:s, s:s}", "request_id", t->req->request_id, "path",
                             t->req->path, "message", reply.log));
    t->req->reply = reply;
    task_finish(t);
}

static int task_client_gone(void *arg)
{
    const struct job_task *t = arg;
    return kiln_api_client_gone(t->client_fd);
}

void jobs_drop_gone(kiln_server *srv)
{
    /* task_run sees the client gone again and begins nothing: the request is
     * logged client_abort and counted, its inputs released. */
    kiln_jobs_drop_gone(srv->jobs, task_client_gone, task_run);
}

void jobs_cancel(void *arg)
{
    struct job_task *t = arg;
    kiln_api_reply_error(&t->req->reply, 503, "unavailable",
                         "The server is shutting down; the request was not run.", NULL);
    task_finish(t);
}

/* The format label of a render request, bounded to the known ones. */
static void render_format(const json_t *request, char *out, size_t cap)
{
    static const char *const known[] = {"xlsx", "docx", "pptx", "pdf"};
    const char *f = json_string_value(json_object_get(request, "format"));
    if (!f) {
        const char *name = json_string_value(json_object_get(request, "filename"));
        const char *dot = name ? strrchr(name, '.') : NULL;
        f = dot ? dot + 1 : NULL;
    }
    snprintf(out, cap, "other");
    for (size_t i = 0; f && i < sizeof known / sizeof known[0]; i++)
        if (strcasecmp(f, known[i]) == 0)
            snprintf(out, cap, "%s", known[i]);
}

enum MHD_Result jobs_request(kiln_req *req)
{
    kiln_server *srv = req->srv;
    if (req->job == JOB_DONE) {
        if (req->client_gone)
            return MHD_NO; /* close it: on_completed logs client_abort */
        kiln_api_reply *r = &req->reply;
        json_t *body = r->body;
        r->body = NULL;
        return http_json_location(req, r->status, body, r->location);
    }
    if (req->job == JOB_WAITING)
        return MHD_YES;

    json_t *request = NULL;
    enum MHD_Result res = MHD_NO;
    size_t body_bytes = req->len; /* http_body_json frees the text */
    if (http_body_json(req, 0, &request, &res) != 0)
        return res;

    struct job_task *t = calloc(1, sizeof *t);
    json_t *inputs = json_object_get(request, "inputs");
    size_t n = json_is_array(inputs) ? json_array_size(inputs) : 0;
    if (!t || (n && !(t->ids = calloc(n, sizeof *t->ids)))) {
        free(t);
        json_decref(request);
        return http_internal(req, "out of memory");
    }
    t->srv = srv;
    t->req = req;
    t->is_run = req->route == ROUTE_RUNS;
    snprintf(t->tenant, sizeof t->tenant, "%s", req->tenant);
    t->request = request;
    t->body_bytes = body_bytes;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    t->client_fd = ci ? ci->connect_fd : -1;
    if (!t->is_run)
        render_format(request, t->format, sizeof t->format);
    /* Hold the inputs now, so a DELETE between this and the worker is a 409. */
    for (size_t i = 0; i < n; i++) {
        const char *id = json_string_value(json_array_get(inputs, i));
        if (id && kiln_api_valid_id(id))
            t->ids[t->n_ids++] = id;
    }
    if (t->n_ids)
        kiln_inuse_take(srv->inuse, t->tenant, t->ids, t->n_ids);

    /* Suspend before the worker can resume. */
    req->job = JOB_WAITING;
    MHD_suspend_connection(req->conn);
    int rc = -2;
    unsigned running = 0, queued = 0;
    pthread_mutex_lock(&srv->jobs_lock);
    if (srv->jobs && !srv->stopping) {
        rc = kiln_jobs_submit(srv->jobs, task_run, t);
        if (rc != 0)
            kiln_jobs_counts(srv->jobs, &running, &queued);
    }
    pthread_mutex_unlock(&srv->jobs_lock);
    if (rc == 0)
        return MHD_YES;

    if (rc == -2) {
        kiln_api_reply_error(&req->reply, 503, "unavailable", "The server is shutting down.",
                             NULL);
    } else {
        char msg[128];
        /* About how long the queue ahead takes to move by one slot. */
        req->retry_after = 1 + queued / (srv->opt.max_jobs ? srv->opt.max_jobs : 1);
        snprintf(msg, sizeof msg, "The job queue is full (%u waiting); retry after %u s.", queued,
                 req->retry_after);
        kiln_api_reply_error(&req->reply, 429, "too_many_requests", msg,
                             json_pack("{s:i, s:i}", "running", (int)running, "queued",
                                       (int)queued));
    }
    task_finish(t);
    return MHD_YES;
}
