/*
 * render.h - the one render entry point. The CLI, the batch runner and the
 * server all call kiln_render(); none of them knows how a format is written.
 *
 * Each format is a row in one writer table (render.c): its name, extension,
 * media type and render function, which writes a validated kiln_doc into a
 * kiln_output (common/output.h). kiln_render owns the output's life: it
 * opens it, lets the writer fill it, then commits or aborts, so a writer
 * cannot leave a partial file even by mistake.
 */
#ifndef KILN_RENDER_H
#define KILN_RENDER_H

#include <stdint.h>

#include "../common/error.h"
#include "../common/output.h"
#include "spec/spec.h"

typedef enum {
    KILN_FORMAT_XLSX,
    KILN_FORMAT_DOCX,
    KILN_FORMAT_PDF,
    KILN_FORMAT_PPTX,
    KILN_FORMAT__COUNT
} kiln_format;

typedef struct kiln_render_options {
    uint64_t max_bytes;  /* output ceiling; 0 = KILN_DEFAULT_MAX_BYTES */
    const char *tmp_dir; /* scratch space for writers that need it; NULL = the output's own
                            directory (see kiln_output_dir_path for why) */
    int defer_sync;      /* kiln_render: link the file without an fsync (kiln_output's
                            defer_sync: the caller syncs many at once) */
} kiln_render_options;

typedef struct kiln_render_result {
    kiln_format format;
    uint64_t bytes;           /* size of the committed file */
    uint64_t missing_glyphs;  /* PDF: characters no embedded font could draw, shown as '?' */
    uint32_t missing_first;   /* ... the first of them (a code point) */
    uint32_t overflow_slides; /* PPTX: slides with text that does not fit its placeholder
                                 even at the smallest font scale (docs/spec.md) */
    uint32_t overflow_first;  /* ... the first of them (a 1-based slide number) */
} kiln_render_result;

/* A writer fills out; result (zeroed, never NULL) takes what the caller
 * should report besides success (warnings), not bytes. */
typedef kiln_status (*kiln_write_fn)(const kiln_doc *doc, kiln_output *out,
                                     const kiln_render_options *opt, kiln_render_result *result,
                                     kiln_error *err);

typedef struct kiln_writer {
    kiln_format format;
    const char *name;      /* "xlsx" */
    const char *extension; /* ".xlsx" */
    const char *media_type;
} kiln_writer;

/* The write function for a format, or NULL with err set. Programs linking
 * libkiln.a get the writers linked in (writers_static.c); the kiln
 * executable loads them from kiln-writers.so on first use (writers_dl.c,
 * which says why). */
kiln_write_fn kiln_writer_write_fn(kiln_format format, kiln_error *err);

/* The name, extension and media type of a format; never NULL for a valid
 * format. */
const kiln_writer *kiln_writer_for(kiln_format format);
/* Look a format up by name ("xlsx") or by a file name's extension. 0 / -1. */
int kiln_format_from_name(const char *name, kiln_format *out);
int kiln_format_from_path(const char *path, kiln_format *out);

/* Render doc to out_path ("-" = stdout). Nothing appears at out_path unless
 * the whole file was written within the ceiling. kiln_output_open,
 * kiln_render_to_output, kiln_output_commit. */
kiln_status kiln_render(const kiln_doc *doc, kiln_format format, const char *out_path,
                        const kiln_render_options *opt, kiln_render_result *result,
                        kiln_error *err);

/* Render doc into an open output (kiln_output_open, or kiln_output_open_fd
 * over a file the caller owns). On success the output is left for the
 * caller to commit (kiln_output_commit checks the ceiling once more) or
 * abort, result->bytes being what it holds now; on failure it is aborted.
 * opt->max_bytes is not used: the output's own ceiling applies. */
kiln_status kiln_render_to_output(const kiln_doc *doc, kiln_format format, kiln_output *out,
                                  const kiln_render_options *opt, kiln_render_result *result,
                                  kiln_error *err);

/* Writers (one per format). */
kiln_status kiln_xlsx_write(const kiln_doc *doc, kiln_output *out, const kiln_render_options *opt,
                            kiln_render_result *result, kiln_error *err);
kiln_status kiln_docx_write(const kiln_doc *doc, kiln_output *out, const kiln_render_options *opt,
                            kiln_render_result *result, kiln_error *err);
kiln_status kiln_pptx_write(const kiln_doc *doc, kiln_output *out, const kiln_render_options *opt,
                            kiln_render_result *result, kiln_error *err);
kiln_status kiln_pdf_write(const kiln_doc *doc, kiln_output *out, const kiln_render_options *opt,
                           kiln_render_result *result, kiln_error *err);

#endif
