/*
 * opc_chart_workbook.c - the workbook embedded behind a chart, so that
 * "Edit Data" in Word or PowerPoint opens the chart's numbers.
 *
 * One sheet, "Sheet1", laid out as Office lays out a chart it made: A1
 * empty, series names across row 1 from B1, categories down column A from
 * A2, each series' values down its column under its name. The chart part's
 * references (opc_chart_ref_*) point at exactly these cells.
 *
 * libxlsxwriter 1.1.4 writes only to a file, so the workbook is written to a
 * file of its own in tmp_dir (created exclusively, so two renders never
 * share one), read back into memory and unlinked on every path. Big charts
 * use constant_memory mode: every cell is written in row order anyway.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xlsxwriter.h>

#include "../xlsx/xlsx_xstring.h"
#include "opc.h"
#include "../../common/banned.h"

/* Excel's longest cell text, in characters. */
#define MAX_CELL_CHARS 32767u
/* Above this many cells the workbook is written in constant_memory mode. */
#define CONSTANT_MEMORY_CELLS 65536u

typedef struct workbook_writer {
    lxw_worksheet *ws;
    char *esc; /* xlsx_xstring scratch */
    size_t esc_cap;
    char *cut; /* text cut to MAX_CELL_CHARS */
    size_t cut_cap;
} workbook_writer;

/* s cut to Excel's cell limit on a character boundary: s itself when it
 * fits, else a copy in w->cut. NULL when out of memory. */
static const char *fit_cell(workbook_writer *w, const char *s, size_t *len)
{
    size_t chars = 0, i = 0;
    for (; i < *len; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80 && ++chars > MAX_CELL_CHARS)
            break;
    }
    if (i == *len)
        return s;
    if (i + 1 > w->cut_cap) {
        char *n = realloc(w->cut, i + 1);
        if (!n)
            return NULL;
        w->cut = n;
        w->cut_cap = i + 1;
    }
    memcpy(w->cut, s, i);
    w->cut[i] = '\0';
    *len = i;
    return w->cut;
}

static lxw_error put_string(workbook_writer *w, uint32_t row, uint32_t col, const char *s)
{
    if (!s || !*s)
        return LXW_NO_ERROR;
    size_t len = strlen(s);
    const char *fit = fit_cell(w, s, &len);
    const char *t = fit ? xlsx_xstring(fit, len, &w->esc, &w->esc_cap) : NULL;
    if (!t)
        return LXW_ERROR_MEMORY_MALLOC_FAILED;
    return worksheet_write_string(w->ws, row, (lxw_col_t)col, t, NULL);
}

/* The one translation of a libxlsxwriter error here into a kiln_error. */
static kiln_status lxw_fail(kiln_error *err, lxw_error e, const char *pointer)
{
    kiln_status code;
    switch (e) {
    case LXW_ERROR_MEMORY_MALLOC_FAILED:
        code = KILN_E_NOMEM;
        break;
    case LXW_ERROR_CREATING_XLSX_FILE:
    case LXW_ERROR_CREATING_TMPFILE:
    case LXW_ERROR_READING_TMPFILE:
    case LXW_ERROR_ZIP_FILE_OPERATION:
    case LXW_ERROR_ZIP_FILE_ADD:
    case LXW_ERROR_ZIP_CLOSE:
        code = KILN_E_WRITE;
        break;
    default:
        /* The cells are checked before they are written: anything else is
         * a bug here. */
        code = KILN_E_INTERNAL;
        break;
    }
    return kiln_error_set(err, code, pointer, "writing a chart's embedded workbook: %s",
                          lxw_strerror(e));
}

/* Every cell, row by row (constant_memory mode needs that order). */
static lxw_error write_cells(workbook_writer *w, lxw_workbook *wb, const kiln_chart_data *d)
{
    lxw_error e;
    lxw_format **formats = calloc(d->series_count ? d->series_count : 1, sizeof *formats);
    if (!formats)
        return LXW_ERROR_MEMORY_MALLOC_FAILED;
    for (size_t s = 0; s < d->series_count; s++) {
        const char *nf = d->series[s].number_format;
        if (!nf || !*nf || strcmp(nf, "General") == 0)
            continue;
        /* The workbook owns its formats. */
        formats[s] = workbook_add_format(wb);
        if (!formats[s]) {
            e = LXW_ERROR_MEMORY_MALLOC_FAILED;
            goto cleanup_formats;
        }
        format_set_num_format(formats[s], nf);
    }

    /* Dates are date cells, under the chart's date format. */
    lxw_format *date_format = NULL;
    if (d->categories_dates && d->category_numbers) {
        if (!(date_format = workbook_add_format(wb))) {
            e = LXW_ERROR_MEMORY_MALLOC_FAILED;
            goto cleanup_formats;
        }
        format_set_num_format(date_format,
                              d->category_format ? d->category_format : "yyyy-mm-dd");
    }

    for (size_t s = 0; s < d->series_count; s++)
        if ((e = put_string(w, 0, OPC_CHART_SERIES_COL(s), d->series[s].name)) != LXW_NO_ERROR)
            goto cleanup_formats;
    for (size_t p = 0; p < d->point_count; p++) {
        uint32_t row = (uint32_t)p + 1;
        if (d->categories) {
            if (date_format)
                e = worksheet_write_number(w->ws, row, 0, d->category_numbers[p], date_format);
            else if (d->categories_numeric && d->category_numbers &&
                     !isnan(d->category_numbers[p]))
                e = worksheet_write_number(w->ws, row, 0, d->category_numbers[p], NULL);
            else
                e = put_string(w, row, 0, d->categories[p]);
            if (e != LXW_NO_ERROR)
                goto cleanup_formats;
        }
        for (size_t s = 0; s < d->series_count; s++) {
            double v = d->series[s].values[p];
            if (isnan(v))
                continue;
            e = worksheet_write_number(w->ws, row, (lxw_col_t)OPC_CHART_SERIES_COL(s), v,
                                       formats[s]);
            if (e != LXW_NO_ERROR)
                goto cleanup_formats;
        }
    }
    e = LXW_NO_ERROR;

cleanup_formats:
    free(formats);
    return e;
}

/* The whole of an open file, into a malloc'd buffer. */
static kiln_status read_back(int fd, unsigned char **out, size_t *out_len, const char *pointer,
                             kiln_error *err)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0 || sb.st_size <= 0)
        return kiln_error_set(err, KILN_E_WRITE, pointer,
                              "reading back a chart's embedded workbook failed");
    size_t size = (size_t)sb.st_size;
    unsigned char *buf = malloc(size);
    if (!buf)
        return kiln_error_set(err, KILN_E_NOMEM, pointer,
                              "out of memory reading a chart's embedded workbook");
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(buf);
            return kiln_error_set(err, KILN_E_WRITE, pointer,
                                  "reading back a chart's embedded workbook failed");
        }
        got += (size_t)n;
    }
    *out = buf;
    *out_len = size;
    return KILN_E_OK;
}

kiln_status opc_chart_workbook(const kiln_chart_data *data, const char *tmp_dir,
                               unsigned char **out, size_t *out_len, kiln_error *err)
{
    const char *pointer = data->chart && data->chart->pointer ? data->chart->pointer : "";
    const char *dir = tmp_dir && *tmp_dir ? tmp_dir : "/tmp";
    *out = NULL;
    *out_len = 0;
    if (data->series_count > OPC_CHART_MAX_SERIES || data->point_count >= LXW_ROW_MAX)
        return kiln_error_set(err, KILN_E_LIMIT, pointer,
                              "a chart's data does not fit in one worksheet");
    /* An unusable directory would make libxlsxwriter print its own error. */
    if (access(dir, W_OK | X_OK) != 0)
        return kiln_error_set(err, KILN_E_WRITE, pointer,
                              "the scratch directory '%s' is not a writable directory", dir);

    size_t path_len = strlen(dir) + sizeof "/kiln-chart-XXXXXX.xlsx";
    char *path = malloc(path_len);
    if (!path)
        return kiln_error_set(err, KILN_E_NOMEM, pointer, "out of memory");
    snprintf(path, path_len, "%s/kiln-chart-XXXXXX.xlsx", dir);
    /* The name is ours alone once mkstemps made it; libxlsxwriter then
     * truncates and writes the file in place. */
    int fd = mkstemps(path, 5);
    if (fd < 0) {
        kiln_status st = kiln_error_set(err, KILN_E_WRITE, pointer,
                                        "cannot create a scratch file in '%s': %s", dir,
                                        strerror(errno));
        free(path);
        return st;
    }
    close(fd);

    kiln_status st = KILN_E_OK;
    workbook_writer w = {0};
    lxw_workbook_options opt = {0};
    opt.tmpdir = (char *)dir;
    opt.constant_memory = (uint64_t)data->point_count * (data->series_count + 1) >
                          CONSTANT_MEMORY_CELLS;
    lxw_workbook *wb = workbook_new_opt(path, &opt);
    if (!wb) {
        st = kiln_error_set(err, KILN_E_NOMEM, pointer,
                            "out of memory creating a chart's embedded workbook");
        goto cleanup_file;
    }
    /* The document's own creation time and author, so that a document
     * made twice from one spec is the same file twice (libxlsxwriter would
     * take the current time). */
    lxw_doc_properties props = {0};
    if (data->metadata) {
        if (data->metadata->has_created)
            props.created = (time_t)data->metadata->created;
        props.author = (char *)data->metadata->author;
    }
    lxw_error e = props.created || props.author ? workbook_set_properties(wb, &props)
                                                : LXW_NO_ERROR;
    if (e == LXW_NO_ERROR) {
        w.ws = workbook_add_worksheet(wb, OPC_CHART_SHEET);
        e = w.ws ? write_cells(&w, wb, data) : LXW_ERROR_MEMORY_MALLOC_FAILED;
    }
    /* workbook_close frees the workbook whatever happens, so it is called
     * on the error path too; its own error only matters when the cells went
     * in. */
    lxw_error closed = workbook_close(wb);
    if (e == LXW_NO_ERROR)
        e = closed;
    if (e != LXW_NO_ERROR) {
        st = lxw_fail(err, e, pointer);
        goto cleanup_file;
    }

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        st = kiln_error_set(err, KILN_E_WRITE, pointer,
                            "reading back a chart's embedded workbook: %s", strerror(errno));
        goto cleanup_file;
    }
    st = read_back(fd, out, out_len, pointer, err);
    close(fd);

cleanup_file:
    unlink(path);
    free(path);
    free(w.esc);
    free(w.cut);
    return st;
}
