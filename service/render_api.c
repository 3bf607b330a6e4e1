/*
 * render_api.c - POST /v1/render (api.h): a spec in, a stored document out.
 *
 * Each render works in a private scratch directory under the server's work
 * directory: its inputs are linked there under their ids (hard links to the
 * stored bodies, else copies), the spec is parsed with that directory as its
 * base, so {"path": "<id>"} names an input and nothing else is in reach (the
 * parser opens paths beneath its base only, never through a symlink), and
 * the writers' scratch files go there; the document itself is written
 * straight into the store's temporary file for it (kiln_output_open_fd),
 * named only once it is complete. The directory is removed whatever
 * happens.
 *
 * Thread safety: several workers render at once. The parser and the writers
 * keep no mutable static state (artifacts/: the libxml2 error handlers are
 * per thread, the writers' table and the case-folding locale are made once
 * under pthread_once); libxml2 2.9's xmlInitParser takes its own global
 * lock; libxlsxwriter and libharu work on per-document objects, each
 * writer's scratch files are created exclusively in this render's own
 * directory. One known exception: libxlsxwriter 1.1.4 formats the
 * workbook's dcterms:created with gmtime(), whose static buffer two
 * renders at once may share (ThreadSanitizer sees it); the worst it can do
 * is a wrong creation time in docProps/core.xml, never a crash. The cure
 * belongs in the executable (a gmtime over gmtime_r with a thread-local
 * buffer, which the library's reference then binds to).
 */
#include "service/api.h"
#include "service/api_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifacts/render.h"
#include "artifacts/spec/spec.h"
#include "contract/report.h"
#include "../common/banned.h"

static void bad_request(kiln_api_reply *reply, const char *pointer, const char *message)
{
    kiln_api_reply_error(reply, 400, "invalid_request", message,
                         json_pack("{s:s}", "pointer", pointer));
}

static void invalid_spec(kiln_api_reply *reply, const kiln_errors *errs)
{
    char msg[128];
    snprintf(msg, sizeof msg, "The spec has %zu error%s.", errs->count + errs->dropped,
             errs->count + errs->dropped == 1 ? "" : "s");
    kiln_api_reply_error(reply, 422, "invalid_spec", msg, kiln_errors_json(errs));
}

/* Put the body open on fd into dir_fd as name: a hard link when the store
 * and the work directory share a file system, else a copy. 0 / -1. */
static int place_input(int fd, int dir_fd, const char *name)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc, dir_fd, name, AT_SYMLINK_FOLLOW) == 0)
        return 0;
    if (errno == EEXIST)
        return 0; /* the same id twice */
    int out = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0)
        return -1;
    char buf[1 << 16];
    off_t off = 0;
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof buf, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto fail_close;
        if (n == 0)
            break;
        off += n;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                goto fail_close;
            done += w;
        }
    }
    return close(out);

fail_close:
    close(out);
    return -1;
}

/* The member of root at a JSON Pointer (RFC 6901: "/a/0/b", ~1 for '/',
 * ~0 for '~'), or NULL. */
static const json_t *at_pointer(const json_t *root, const char *pointer)
{
    const json_t *node = root;
    for (const char *p = pointer; node && *p == '/';) {
        p++;
        char key[KILN_POINTER_MAX];
        size_t n = 0;
        for (; *p && *p != '/' && n + 1 < sizeof key; p++) {
            if (*p == '~' && (p[1] == '0' || p[1] == '1'))
                key[n++] = *++p == '0' ? '~' : '/';
            else
                key[n++] = *p;
        }
        key[n] = '\0';
        if (json_is_object(node)) {
            node = json_object_get(node, key);
        } else if (json_is_array(node)) {
            char *end;
            unsigned long i = strtoul(key, &end, 10);
            node = n && !*end ? json_array_get(node, i) : NULL;
        } else {
            node = NULL;
        }
    }
    return node;
}

/*
 * A spec written for `kiln render` names its files by path ("images/logo.png"
 * beside the spec); through the API nothing but the render's inputs is in
 * reach, by id. The parser can only say it cannot open such a path (or, for
 * "/etc/x" or "../x", that it is refused, relative to a base directory the
 * client never sees): an error at a "path" member that is not one of the
 * inputs says instead what to do.
 */
static void explain_paths(kiln_errors *errs, const json_t *spec, const kiln_api_input *inputs,
                          size_t input_count)
{
    static const char member[] = "/path";
    for (size_t i = 0; i < errs->count; i++) {
        kiln_error *e = &errs->items[i];
        size_t n = strlen(e->pointer);
        if ((e->code != KILN_E_INPUT && e->code != KILN_E_INVALID_SPEC) ||
            n < sizeof member - 1 || strcmp(e->pointer + n - (sizeof member - 1), member) != 0)
            continue;
        const char *path = json_string_value(at_pointer(spec, e->pointer));
        if (!path)
            continue;
        int listed = 0;
        for (size_t k = 0; k < input_count; k++)
            listed |= strcmp(inputs[k].id, path) == 0;
        if (listed)
            continue; /* an input, unreadable for a reason of its own: the parser's message */
        if (kiln_api_valid_id(path))
            snprintf(e->message, sizeof e->message,
                     "\"%s\" is not in \"inputs\": a render reads only the files listed there; "
                     "add the id to \"inputs\"",
                     path);
        else
            snprintf(e->message, sizeof e->message,
                     "\"%.200s\" is not a file of this render: through the API a spec names its "
                     "files by id, not by path. Upload the file (POST /v1/files), list its id in "
                     "\"inputs\" and give that id here as the path",
                     path);
    }
}

/* What a render request asks for, checked. */
typedef struct render_request {
    kiln_format format;
    const kiln_writer *writer;
    char filename[KILN_STORE_FILENAME_MAX + 1];
    const json_t *spec; /* borrowed */
    const json_t *ids;  /* borrowed; NULL = no inputs */
} render_request;

static void bad_format(kiln_api_reply *reply, const char *message)
{
    kiln_api_reply_error(reply, 400, "invalid_request", message,
                         json_pack("{s:s, s:[s,s,s,s]}", "pointer", "/format", "allowed", "xlsx",
                                   "docx", "pptx", "pdf"));
}

/* format and filename: either names the format; the document's name is
 * filename, else "document.EXT". 0, or -1 with reply set (400). */
static int check_format_and_name(const json_t *request, render_request *rr, kiln_api_reply *reply)
{
    const json_t *jformat = json_object_get(request, "format");
    const json_t *jfilename = json_object_get(request, "filename");
    rr->format = KILN_FORMAT__COUNT;
    if (jformat && !json_is_null(jformat)) {
        if (!json_is_string(jformat) ||
            kiln_format_from_name(json_string_value(jformat), &rr->format) != 0 ||
            json_string_value(jformat)[0] == '.') {
            bad_format(reply, "format must be one of xlsx, docx, pptx, pdf.");
            return -1;
        }
    }
    if (jfilename && !json_is_null(jfilename)) {
        if (!json_is_string(jfilename)) {
            bad_request(reply, "/filename", "filename must be a string.");
            return -1;
        }
        /* json_string_length counts a \u0000 the C string would end at. */
        const char *why = kiln_api_check_filename(json_string_value(jfilename),
                                                  json_string_length(jfilename));
        if (why) {
            char msg[128];
            snprintf(msg, sizeof msg, "filename %s.", why);
            bad_request(reply, "/filename", msg);
            return -1;
        }
        snprintf(rr->filename, sizeof rr->filename, "%s", json_string_value(jfilename));
    }
    if (rr->format == KILN_FORMAT__COUNT &&
        (!rr->filename[0] || kiln_format_from_path(rr->filename, &rr->format) != 0)) {
        bad_format(reply, "format is required (xlsx, docx, pptx or pdf) unless filename ends in "
                          "one of those extensions.");
        return -1;
    }
    rr->writer = kiln_writer_for(rr->format);
    if (!rr->filename[0])
        snprintf(rr->filename, sizeof rr->filename, "document%s", rr->writer->extension);
    return 0;
}

/* The whole request. 0, or -1 with reply set (400). */
static int check_render_request(const json_t *request, render_request *rr, kiln_api_reply *reply)
{
    memset(rr, 0, sizeof *rr);
    if (!json_is_object(request)) {
        bad_request(reply, "", "The request body must be a JSON object.");
        return -1;
    }
    if (check_format_and_name(request, rr, reply) != 0)
        return -1;
    rr->spec = json_object_get(request, "spec");
    if (!json_is_object(rr->spec)) {
        bad_request(reply, "/spec", "spec must be a JSON object (a Kiln document spec).");
        return -1;
    }
    const json_t *ids = json_object_get(request, "inputs");
    if (!ids || json_is_null(ids))
        return 0;
    if (!json_is_array(ids)) {
        bad_request(reply, "/inputs", "inputs must be an array of file ids.");
        return -1;
    }
    if (json_array_size(ids) > KILN_API_MAX_INPUTS) {
        char msg[96];
        snprintf(msg, sizeof msg, "At most %d inputs may be given.", KILN_API_MAX_INPUTS);
        kiln_api_reply_error(reply, 400, "invalid_request", msg,
                             json_pack("{s:s, s:i}", "pointer", "/inputs", "limit",
                                       KILN_API_MAX_INPUTS));
        return -1;
    }
    for (size_t i = 0; i < json_array_size(ids); i++) {
        if (!json_is_string(json_array_get(ids, i))) {
            char pointer[32];
            snprintf(pointer, sizeof pointer, "/inputs/%zu", i);
            bad_request(reply, pointer, "Each input must be a file id (a string).");
            return -1;
        }
    }
    rr->ids = ids;
    return 0;
}

/* Each input linked (or copied) into the scratch directory under its id;
 * then the store's descriptors are closed (the ids stay held). 0, or -1
 * with reply set. */
static int place_inputs(const char *scratch, kiln_api_input *inputs, size_t input_count,
                        kiln_api_reply *reply)
{
    int dir_fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        kiln_api_reply_internal(reply, "cannot open %s: %s", scratch, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < input_count; i++) {
        if (place_input(inputs[i].fd, dir_fd, inputs[i].id) != 0) {
            kiln_api_reply_internal(reply, "cannot place input %s in %s: %s", inputs[i].id,
                                    scratch, strerror(errno));
            close(dir_fd);
            return -1;
        }
    }
    close(dir_fd);
    for (size_t i = 0; i < input_count; i++) {
        close(inputs[i].fd);
        inputs[i].fd = -1;
    }
    return 0;
}

/* A 422 for one error met while writing (a data file's row, a deck past
 * its slide limit): the same reply as the parser's. */
static void invalid_spec_one(kiln_api_reply *reply, const kiln_error *err, const json_t *spec,
                             const kiln_api_input *inputs, size_t input_count)
{
    kiln_errors *errs = malloc(sizeof *errs);
    if (!errs) {
        kiln_api_reply_internal(reply, "out of memory");
        return;
    }
    kiln_errors_init(errs);
    kiln_errors_add(errs, err);
    explain_paths(errs, spec, inputs, input_count);
    invalid_spec(reply, errs);
    free(errs);
}

static void too_large(kiln_api_reply *reply, uint64_t limit)
{
    char msg[160];
    snprintf(msg, sizeof msg, "The document would be larger than the limit of %llu bytes.",
             (unsigned long long)limit);
    kiln_api_reply_error(reply, 413, "too_large", msg,
                         json_pack("{s:I}", "limit", (json_int_t)limit));
}

/* The request's own tree of the spec, parsed once (JSON Pointers into it,
 * as into its text), its relative paths beneath scratch. NULL with reply
 * set (422, or 500). */
static kiln_doc *parse_spec(const json_t *spec, const char *scratch, const kiln_api_input *inputs,
                            size_t input_count, kiln_api_reply *reply)
{
    kiln_parse_options popt;
    kiln_parse_options_init(&popt);
    popt.base_dir = scratch;
    kiln_errors *errs = malloc(sizeof *errs);
    if (!errs) {
        kiln_api_reply_internal(reply, "out of memory");
        return NULL;
    }
    kiln_doc *doc = NULL;
    kiln_status st = kiln_doc_parse_json(spec, &popt, &doc, errs);
    if (st == KILN_E_NOMEM || st == KILN_E_INTERNAL) {
        kiln_api_reply_internal(reply, "parsing the spec: %s",
                                errs->count ? errs->items[0].message : "failed");
    } else if (st != KILN_E_OK) {
        explain_paths(errs, spec, inputs, input_count);
        invalid_spec(reply, errs);
    }
    free(errs);
    return doc;
}

/* The document written straight into the store's temporary file, under the
 * same ceiling (the early stop, the check at commit); the writers' scratch
 * files go to the scratch directory. Nothing is visible in the store until
 * kiln_store_commit_written names it. Sets reply (201 and the file object,
 * or the error). */
static void render_into_store(const kiln_api_ctx *ctx, const char *tenant,
                              const render_request *rr, const kiln_doc *doc, const char *scratch,
                              const kiln_api_input *inputs, size_t input_count,
                              kiln_api_reply *reply)
{
    kiln_render_options ropt = {.max_bytes = ctx->max_file_bytes, .tmp_dir = scratch};
    kiln_render_result res;
    kiln_error err;
    memset(&res, 0, sizeof res);
    memset(&err, 0, sizeof err);
    kiln_store_upload *up = NULL;
    if (kiln_store_begin(ctx->store, tenant, rr->filename, rr->writer->media_type,
                         KILN_STORE_SOURCE_DOCUMENT, &up, &err) != KILN_STORE_OK) {
        kiln_api_reply_internal(reply, "storing the document: %s", err.message);
        return;
    }
    kiln_output out;
    kiln_status st = kiln_output_open_fd(&out, kiln_store_upload_fd(up), rr->filename,
                                         ropt.max_bytes, &err);
    if (st == KILN_E_OK)
        st = kiln_render_to_output(doc, rr->format, &out, &ropt, &res, &err);
    if (st == KILN_E_OK)
        st = kiln_output_commit(&out, &res.bytes, &err);
    if (st != KILN_E_OK) {
        kiln_store_abort(up);
        if (st == KILN_E_TOO_LARGE)
            too_large(reply, ctx->max_file_bytes ? ctx->max_file_bytes : KILN_DEFAULT_MAX_BYTES);
        else if (st == KILN_E_INVALID_SPEC || st == KILN_E_LIMIT || st == KILN_E_INPUT)
            invalid_spec_one(reply, &err, rr->spec, inputs, input_count);
        else
            kiln_api_reply_internal(reply, "rendering %s: %s", rr->writer->name, err.message);
        return;
    }

    kiln_store_file file;
    memset(&err, 0, sizeof err);
    kiln_store_result r = kiln_store_commit_written(up, &file, &err); /* frees up */
    if (r == KILN_STORE_TOO_LARGE) {
        too_large(reply, err.limit);
        return;
    }
    if (r != KILN_STORE_OK) {
        kiln_api_reply_internal(reply, "storing the document: %s", err.message);
        return;
    }
    json_t *body = kiln_api_file_json(&file);
    if (body && (res.missing_glyphs > 0 || res.overflow_slides > 0))
        json_object_set_new(body, "warnings", kiln_warnings_json(&res));
    if (!body) {
        kiln_api_reply_internal(reply, "out of memory");
        return;
    }
    reply->status = 201;
    reply->body = body;
    snprintf(reply->location, sizeof reply->location, "/v1/files/%s", file.id);
}

void kiln_api_render(const kiln_api_ctx *ctx, const char *tenant, const json_t *request,
                     kiln_api_reply *reply)
{
    memset(reply, 0, sizeof *reply);
    render_request rr;
    if (check_render_request(request, &rr, reply) != 0)
        return;

    kiln_api_input *inputs = NULL;
    size_t input_count = json_array_size(rr.ids);
    if (kiln_api_inputs_open(ctx, tenant, rr.ids, &inputs, reply) != 0)
        return;
    const char **held = kiln_api_input_ids(inputs, input_count);
    if (held)
        kiln_inuse_take(ctx->inuse, tenant, held, input_count);

    char scratch[PATH_MAX];
    if (kiln_api_scratch_make(ctx, "render", scratch, sizeof scratch) != 0) {
        kiln_api_reply_internal(reply, "cannot make a scratch directory in %s: %s", ctx->work_dir,
                                strerror(errno));
        goto release_inputs;
    }
    if (place_inputs(scratch, inputs, input_count, reply) != 0)
        goto remove_scratch;
    kiln_doc *doc = parse_spec(rr.spec, scratch, inputs, input_count, reply);
    if (!doc)
        goto remove_scratch;
    render_into_store(ctx, tenant, &rr, doc, scratch, inputs, input_count, reply);
    kiln_doc_free(doc);

remove_scratch:
    kiln_api_rmtree(scratch);
release_inputs:
    if (held)
        kiln_inuse_release(ctx->inuse, tenant, held, input_count);
    free((void *)held);
    kiln_api_inputs_close(inputs, input_count);
}
