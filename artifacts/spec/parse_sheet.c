/*
 * parse_sheet.c - sheets and tabular data: columns, inline rows (every cell
 * validated), data sources (CSV / JSON Lines files), freeze panes, tables,
 * merges, conditional formats, validations, sheet charts, images, comments.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "spec_internal.h"
#include "../../common/banned.h"

/* ---- columns and table data ---- */

static const char *const col_types[] = {"auto",     "string",  "number",   "integer", "currency",
                                        "percent",  "date",    "datetime", "boolean", NULL};
static const kiln_column_type col_type_vals[] = {
    KILN_COL_AUTO,    KILN_COL_STRING, KILN_COL_NUMBER,   KILN_COL_INTEGER, KILN_COL_CURRENCY,
    KILN_COL_PERCENT, KILN_COL_DATE,   KILN_COL_DATETIME, KILN_COL_BOOLEAN};

static const char *default_format(kiln_column_type t)
{
    switch (t) {
    case KILN_COL_INTEGER: return "#,##0";
    case KILN_COL_NUMBER: return "#,##0.00";
    case KILN_COL_CURRENCY: return "$#,##0.00";
    case KILN_COL_PERCENT: return "0.0%";
    case KILN_COL_DATE: return "yyyy-mm-dd";
    case KILN_COL_DATETIME: return "yyyy-mm-dd hh:mm";
    default: return NULL;
    }
}

static void parse_columns(kiln_pctx *c, const json_t *cols, kiln_table_data *td)
{
    static const char *const allowed[] = {"header", "key", "type", "number_format", "width",
                                          "align", NULL};
    static const char *const aligns[] = {"left", "center", "right", NULL};
    size_t saved = kiln_ptr_push(&c->ptr, "columns");
    if (!json_is_array(cols)) {
        kiln_perr(c, NULL, "expected an array of column objects");
        goto pop;
    }
    size_t n = json_array_size(cols);
    if (n > c->lim.columns) {
        kiln_perr_limit(c, NULL, c->lim.columns, n,
                        "%zu columns, more than the %u a sheet can have", n,
                        (unsigned)c->lim.columns);
        goto pop;
    }
    td->columns = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *td->columns);
    if (!td->columns) {
        kiln_pnomem(c);
        goto pop;
    }
    td->column_count = n;
    /* A set of explicit keys seen, to refuse two columns answering to one
     * member. Keys derived from headers are checked later, and only where
     * rows may be objects (check_derived_keys). */
    json_t *seen = json_object();
    if (!seen) {
        kiln_pnomem(c);
        goto pop;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *col = json_array_get(cols, i);
        kiln_column *k = &td->columns[i];
        k->width = -1;
        size_t s2 = kiln_ptr_push_index(&c->ptr, i);
        if (!json_is_object(col)) {
            kiln_perr(c, NULL, "expected a column object");
            kiln_ptr_pop(&c->ptr, s2);
            continue;
        }
        kiln_check_members(c, col, allowed);
        kiln_get_string(c, col, "header", &k->header);
        if (kiln_get_string(c, col, "key", &k->key) == 0 && k->key && !*k->key)
            kiln_perr(c, "key", "expected a non-empty key");
        if (k->header && kiln_utf8_count(k->header, strlen(k->header)) > c->lim.cell_chars)
            kiln_perr_limit(c, "header", c->lim.cell_chars,
                            kiln_utf8_count(k->header, strlen(k->header)),
                            "a header longer than %u characters", (unsigned)c->lim.cell_chars);
        int t = 0;
        if (kiln_get_enum(c, col, "type", col_types, &t) == 0)
            k->type = col_type_vals[t];
        k->number_format = default_format(k->type);
        const char *nf = NULL;
        kiln_get_string(c, col, "number_format", &nf);
        if (nf && !*nf)
            kiln_perr(c, "number_format", "expected a number format string such as \"0.0%%\"");
        else if (nf)
            k->number_format = nf;
        kiln_get_number(c, col, "width", 0, 255, &k->width);
        int a = 0;
        if (kiln_get_enum(c, col, "align", aligns, &a) == 0 && json_object_get(col, "align"))
            k->align = (kiln_align)(a + 1);
        if (k->key) {
            if (json_object_get(seen, k->key))
                kiln_perr(c, "key", "another column already has the key \"%s\"", k->key);
            else if (json_object_set_new(seen, k->key, json_true()) != 0)
                kiln_pnomem(c);
        }
        if (!k->key)
            k->key = k->header;
        kiln_ptr_pop(&c->ptr, s2);
    }
    json_decref(seen);
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

/* Keys derived from headers matter only when rows are objects: two columns
 * "Total" are fine over array rows, but an object row's "Total" member would
 * be ambiguous. So when some inline row is an object, or the rows come from
 * JSON Lines (where any line may be one), every key (explicit or derived)
 * must be unique; the later column is reported, at its "header" (or "key"),
 * and pairs of explicit keys were already reported by parse_columns. */
static void check_derived_keys(kiln_pctx *c, const json_t *cols, const kiln_table_data *td,
                               const char *why)
{
    json_t *seen = json_object();
    if (!seen) {
        kiln_pnomem(c);
        return;
    }
    size_t saved = kiln_ptr_push(&c->ptr, "columns");
    for (size_t i = 0; i < td->column_count; i++) {
        const kiln_column *k = &td->columns[i];
        if (!k->key)
            continue;
        const json_t *col = json_array_get(cols, i);
        int explicit_key = json_is_object(col) && json_object_get(col, "key");
        const json_t *first = json_object_get(seen, k->key);
        if (first) {
            size_t j = (size_t)json_integer_value(first);
            const json_t *other = json_array_get(cols, j);
            int other_explicit = json_is_object(other) && json_object_get(other, "key");
            if (explicit_key && other_explicit)
                continue; /* reported already */
            size_t s2 = kiln_ptr_push_index(&c->ptr, i);
            kiln_perr(c, explicit_key ? "key" : "header",
                      "column %zu already has the key \"%s\" (a column's key is its \"key\", "
                      "else its \"header\"); keys must be unique when %s, so give the columns "
                      "distinct \"key\"s",
                      j, k->key, why);
            kiln_ptr_pop(&c->ptr, s2);
        } else if (json_object_set_new(seen, k->key, json_integer((json_int_t)i)) != 0) {
            kiln_pnomem(c);
            break;
        }
    }
    kiln_ptr_pop(&c->ptr, saved);
    json_decref(seen);
}

/* Check every row of the array rows, one at a time (each scanned and
 * converted as a reader would). */
static void validate_inline_rows(kiln_pctx *c, kiln_table_data *td, const json_t *rows)
{
    kiln_cell *cells = NULL;
    kiln_style *styles = NULL;
    size_t cap = 0;
    kiln_pwalk w;
    kiln_pwalk_init(&w, c, rows);
    while (kiln_pwalk_next(&w)) {
        size_t i = w.index;
        /* Past the list's size every further error would only be dropped. */
        if (c->errs->count >= KILN_ERRORS_MAX)
            break;
        size_t saved = kiln_ptr_push_index(&c->ptr, i);
        json_t *row = kiln_pwalk_load(&w, NULL, c->ptr.buf);
        kiln_ptr_pop(&c->ptr, saved);
        if (!row)
            continue;
        size_t width = kiln_json_row_width(row, td);
        if (width > c->lim.columns)
            width = c->lim.columns;
        if (width > cap) {
            size_t ncap = cap ? cap : 16;
            while (ncap < width)
                ncap *= 2;
            kiln_cell *nc = realloc(cells, ncap * sizeof *nc);
            if (nc)
                cells = nc;
            kiln_style *ns = nc ? realloc(styles, ncap * sizeof *ns) : NULL;
            if (ns)
                styles = ns;
            if (!nc || !ns) {
                json_decref(row);
                kiln_pnomem(c);
                break;
            }
            cap = ncap;
        }
        size_t count;
        kiln_json_row(row, td, &c->lim, c->ptr.buf, i, cells, styles, &count, c->errs, NULL);
        json_decref(row);
    }
    free(cells);
    free(styles);
}

static void parse_data_source(kiln_pctx *c, const json_t *d, kiln_table_data *td)
{
    static const char *const allowed[] = {"path", "format", "header", "delimiter", NULL};
    static const char *const formats[] = {"csv", "jsonl", NULL};
    size_t saved = kiln_ptr_push(&c->ptr, "data");
    td->pointer = kiln_ptr_dup(c, NULL);
    if (!json_is_object(d)) {
        kiln_perr(c, NULL, "expected a data source object {\"path\": ..., \"format\": ...}");
        goto pop;
    }
    if (kiln_check_members(c, d, allowed))
        goto pop;
    const char *path = NULL;
    if (kiln_get_string(c, d, "path", &path) != 0)
        goto pop;
    if (!path) {
        kiln_perr(c, NULL, "a data source needs a \"path\"");
        goto pop;
    }
    int fmt = -1;
    if (kiln_get_enum(c, d, "format", formats, &fmt) != 0)
        goto pop;
    if (fmt < 0) {
        /* Without "format", the file name's extension decides. */
        const char *dot = strrchr(path, '.');
        if (dot && strcasecmp(dot, ".csv") == 0)
            fmt = 0;
        else if (dot && (strcasecmp(dot, ".jsonl") == 0 || strcasecmp(dot, ".ndjson") == 0))
            fmt = 1;
        else {
            kiln_perr(c, NULL, "a data source needs \"format\": \"csv\" or \"jsonl\"");
            goto pop;
        }
    }
    td->source = fmt == 0 ? KILN_ROWS_CSV : KILN_ROWS_JSONL;
    td->delimiter = ',';
    td->data_header = td->source == KILN_ROWS_CSV;
    const json_t *h = json_object_get(d, "header");
    if (h && td->source != KILN_ROWS_CSV)
        kiln_perr(c, "header", "\"header\" applies to CSV data only");
    else
        kiln_get_bool(c, d, "header", &td->data_header);
    const json_t *dl = json_object_get(d, "delimiter");
    if (dl) {
        const char *s = json_string_value(dl);
        if (td->source != KILN_ROWS_CSV)
            kiln_perr(c, "delimiter", "\"delimiter\" applies to CSV data only");
        else if (!s || strlen(s) != 1 || s[0] == '"' || s[0] == '\r' || s[0] == '\n' ||
                 (unsigned char)s[0] >= 0x80)
            kiln_perr(c, "delimiter",
                      "expected a single ASCII character other than a quote or a line break");
        else
            td->delimiter = s[0];
    }
    char why[300];
    int is_input;
    int fd = kiln_open_beneath(c->base_dir, path, why, sizeof why, &is_input);
    if (fd < 0) {
        kiln_perr_code(c, is_input ? KILN_E_INPUT : KILN_E_INVALID_SPEC, "path", "%s: %s", path,
                       why);
        goto pop;
    }
    close(fd);
    kiln_data_file *f = kiln_arena_alloc(c->arena, sizeof *f);
    const char *rel = kiln_arena_strdup(c->arena, path);
    const char *joined = kiln_arena_printf(c->arena, "%s/%s", c->base_dir, path);
    if (!f || !rel || !joined) {
        kiln_pnomem(c);
        goto pop;
    }
    f->rel_path = rel;
    f->display = rel;
    td->private_rows = f;
    td->data_path = joined;
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

static void scan_data_file(kiln_pctx *c, kiln_table_data *td)
{
    kiln_row_reader *r;
    kiln_error e;
    if (kiln_rows_open_with(c->base_dir, &c->lim, td, &r, &e) != KILN_E_OK) {
        kiln_errors_add(c->errs, &e);
        return;
    }
    const kiln_cell *cells;
    size_t count;
    int rc;
    while ((rc = kiln_rows_next(r, &cells, &count, &e)) > 0)
        ;
    if (rc < 0)
        kiln_errors_add(c->errs, &e);
    kiln_rows_close(r);
}

void kiln_parse_table_data(kiln_pctx *c, const json_t *obj, kiln_table_data *td)
{
    const json_t *cols = json_object_get(obj, "columns");
    const json_t *rows = json_object_get(obj, "rows");
    const json_t *data = json_object_get(obj, "data");
    size_t errs_before = c->errs->count;
    td->source = KILN_ROWS_INLINE;
    if (cols)
        parse_columns(c, cols, td);
    int cols_ok = c->errs->count == errs_before;
    if (rows && data) {
        kiln_perr(c, "data", "give either \"rows\" or \"data\", not both");
        return;
    }
    if (data) {
        parse_data_source(c, data, td);
        if (!td->private_rows)
            return;
        if (td->source == KILN_ROWS_JSONL && cols_ok && td->column_count) {
            size_t before_keys = c->errs->count;
            check_derived_keys(c, cols, td, "the rows come from JSON Lines (whose lines may be "
                                            "objects)");
            cols_ok = c->errs->count == before_keys;
        }
        int any_header = 0;
        for (size_t i = 0; i < td->column_count; i++)
            any_header |= td->columns[i].header != NULL;
        /* The file's header record names the columns when "columns" gives
         * no headers: either no columns at all, or columns that only set
         * types and formats. */
        if (td->source == KILN_ROWS_CSV && td->data_header && cols_ok && !any_header) {
            char **names;
            size_t n;
            kiln_error e;
            if (kiln_csv_header(c->base_dir, td, &c->lim, c->arena, &names, &n, &e) != 0) {
                kiln_errors_add(c->errs, &e);
                return;
            }
            if (!td->column_count) {
                td->columns = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *td->columns);
                if (!td->columns) {
                    kiln_pnomem(c);
                    return;
                }
                for (size_t i = 0; i < n; i++)
                    td->columns[i].width = -1;
                td->column_count = n;
            }
            for (size_t i = 0; i < n && i < td->column_count; i++) {
                td->columns[i].header = names[i];
                if (!td->columns[i].key)
                    td->columns[i].key = names[i];
            }
        }
    }
    td->header = 0;
    for (size_t i = 0; i < td->column_count; i++)
        if (td->columns[i].header)
            td->header = 1;
    kiln_get_bool(c, obj, "header", &td->header);

    /* The rows are a hole of the piece (kiln_pload): read a row at a time;
     * an empty array is none. */
    kiln_pwalk w;
    size_t row_count = json_is_array(rows) ? kiln_pwalk_init(&w, c, rows) : 0;
    if (row_count && cols_ok && td->column_count) {
        int any_object = 0;
        while (!any_object && kiln_pwalk_next(&w))
            any_object = kiln_pwalk_is_object(&w);
        if (any_object) {
            size_t before_keys = c->errs->count;
            check_derived_keys(c, cols, td, "rows are objects");
            cols_ok = c->errs->count == before_keys;
        }
    }
    if (rows) {
        size_t saved = kiln_ptr_push(&c->ptr, "rows");
        td->pointer = kiln_ptr_dup(c, NULL);
        if (!json_is_array(rows)) {
            kiln_perr(c, NULL, "expected an array of rows");
        } else {
            uint64_t total = (uint64_t)row_count + (td->header ? 1 : 0);
            td->inline_row_count = row_count;
            kiln_inline_rows *kept = NULL;
            /* Counted in the text before a row is copied or built. */
            if (total > c->lim.rows)
                kiln_perr_limit(c, NULL, c->lim.rows, total,
                                "%llu rows (the header row included), more than the %u a sheet "
                                "can have",
                                (unsigned long long)total, (unsigned)c->lim.rows);
            else if ((kept = kiln_pwalk_keep_rows(c, rows)) && cols_ok)
                validate_inline_rows(c, td, rows);
            td->private_rows = kept;
        }
        kiln_ptr_pop(&c->ptr, saved);
    } else if (!data) {
        td->pointer = kiln_ptr_dup(c, NULL);
        td->private_rows = NULL; /* no rows: the reader ends at once */
    }
    if (data && td->private_rows && c->scan_data && cols_ok)
        scan_data_file(c, td);
}

/* ---- sheets ---- */

static int name_equal_fold(const char *a, const char *b)
{
    return kiln_name_equal_fold(a, b);
}

/* First pass: every sheet's name, so chart ranges may name a later sheet. */
static void collect_sheet_names(kiln_pctx *c, json_t *const *sheets, size_t n)
{
    c->sheet_names = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *c->sheet_names);
    if (!c->sheet_names) {
        kiln_pnomem(c);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *s = sheets[i];
        const json_t *nm = json_is_object(s) ? json_object_get(s, "name") : NULL;
        if (!json_is_string(nm))
            continue;
        size_t saved = kiln_ptr_push_index(&c->ptr, i);
        const char *name = kiln_pstrdup(c, nm);
        if (!name) {
            kiln_ptr_pop(&c->ptr, saved);
            return;
        }
        const char *problem = kiln_sheet_name_problem(name, json_string_length(nm));
        if (problem) {
            kiln_perr(c, "name", "%s", problem);
        } else {
            for (size_t j = 0; j < i && name; j++)
                if (c->sheet_names[j] && name_equal_fold(c->sheet_names[j], name)) {
                    kiln_perr(c, "name", "another sheet is already named \"%s\" (names are "
                                         "compared ignoring case)",
                              c->sheet_names[j]);
                    name = NULL;
                }
        }
        c->sheet_names[i] = problem ? NULL : name;
        kiln_ptr_pop(&c->ptr, saved);
    }
    c->sheet_name_count = n;
    /* An unnamed sheet takes SheetN for its position N, as Excel numbers new
     * sheets, or the next number no other sheet's name has taken. */
    for (size_t i = 0; i < n; i++) {
        const json_t *s = sheets[i];
        const json_t *nm = json_is_object(s) ? json_object_get(s, "name") : NULL;
        if (nm)
            continue;
        for (unsigned next = (unsigned)i + 1;; next++) {
            char buf[32];
            snprintf(buf, sizeof buf, "Sheet%u", next);
            int taken = 0;
            for (size_t j = 0; j < n && !taken; j++)
                taken = c->sheet_names[j] && name_equal_fold(c->sheet_names[j], buf);
            if (!taken) {
                c->sheet_names[i] = kiln_arena_strdup(c->arena, buf);
                if (!c->sheet_names[i])
                    kiln_pnomem(c);
                break;
            }
        }
    }
}

static int ref_member(kiln_pctx *c, const json_t *obj, const char *key, uint32_t *row,
                      uint32_t *col, int required)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            kiln_perr(c, NULL, "missing \"%s\": a cell reference such as \"B2\"", key);
        return -1;
    }
    if (!json_is_string(v) || kiln_cell_ref_parse(json_string_value(v), row, col) != 0) {
        kiln_perr(c, key, "expected a cell reference such as \"B2\"");
        return -1;
    }
    return 0;
}

static int range_member(kiln_pctx *c, const json_t *obj, const char *key, kiln_range *r)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        kiln_perr(c, NULL, "missing \"%s\": a range such as \"A1:D10\"", key);
        return -1;
    }
    if (!json_is_string(v) || kiln_range_parse(json_string_value(v), r) != 0) {
        kiln_perr(c, key, "expected a range such as \"A1:D10\"");
        return -1;
    }
    return 0;
}

/* Iterate an optional array member: returns its size, 0 when absent or not
 * an array (reported). */
static size_t array_member(kiln_pctx *c, const json_t *obj, const char *key, const json_t **arr)
{
    *arr = json_object_get(obj, key);
    if (!*arr)
        return 0;
    if (!json_is_array(*arr)) {
        kiln_perr(c, key, "expected an array");
        *arr = NULL;
        return 0;
    }
    return json_array_size(*arr);
}

/* Does a JSON cell value put something in its cell? null and a styled blank
 * ({"value": null}) do not; anything else does. */
static int json_cell_has_data(const json_t *v)
{
    if (!v || json_is_null(v))
        return 0;
    if (json_is_object(v)) {
        static const char *const kinds[] = {"formula", "date", "datetime", "url", NULL};
        for (size_t i = 0; kinds[i]; i++)
            if (json_object_get(v, kinds[i]))
                return 1;
        const json_t *val = json_object_get(v, "value");
        return val && !json_is_null(val);
    }
    return 1;
}

/* The first cell of r (row-major) other than its top-left one that holds
 * data in the header row or an inline row (when skip_first), or the
 * top-left cell itself when it holds data (when !skip_first). Rows from a
 * CSV or JSON Lines file are not looked at. 1 (with *row, *col) when found. */
static int merge_finds_data(const kiln_table_data *td, const kiln_range *r, int skip_first,
                            uint32_t *row, uint32_t *col)
{
    uint32_t hdr = td->header ? 1 : 0;
    const kiln_inline_rows *rows = td->source == KILN_ROWS_INLINE ? td->private_rows : NULL;
    size_t n = rows ? rows->count : 0;
    uint64_t last = (uint64_t)hdr + n; /* one past the last sheet row with data */
    uint64_t stop = skip_first ? r->last_row : r->first_row;
    int found = 0;
    for (uint64_t y = r->first_row; y <= stop && y < last && !found; y++) {
        json_t *rv = y >= hdr ? kiln_inline_row(rows, (size_t)(y - hdr)) : NULL;
        size_t width = y < hdr ? td->column_count
                       : json_is_array(rv) ? json_array_size(rv)
                       : json_is_object(rv) ? td->column_count : 0;
        uint64_t stop_x = skip_first ? r->last_col : r->first_col;
        for (uint64_t x = r->first_col; x <= stop_x && x < width && !found; x++) {
            if (skip_first && y == r->first_row && x == r->first_col)
                continue;
            int has;
            if (y < hdr) {
                const char *h = td->columns[x].header;
                has = h && *h;
            } else if (json_is_array(rv)) {
                has = json_cell_has_data(json_array_get(rv, (size_t)x));
            } else {
                const char *key = td->columns[x].key;
                has = key && json_cell_has_data(json_object_get(rv, key));
            }
            if (has) {
                *row = (uint32_t)y;
                *col = (uint32_t)x;
                found = 1;
            }
        }
        json_decref(rv);
    }
    return found;
}

/* A merge shows only its top-left cell: refuse one that would hide data
 * (another cell of it holds some) or overwrite it (the merge has a value and
 * the top-left cell holds data too). */
static void check_merge_data(kiln_pctx *c, const kiln_sheet *sh, const kiln_merge *mg,
                             int has_value)
{
    uint32_t row, col;
    char name[4];
    if (merge_finds_data(&sh->data, &mg->range, 1, &row, &col)) {
        kiln_col_name(col, name);
        kiln_perr(c, NULL, "the merge covers %s%u, which holds data the merge would hide (only "
                           "the top-left cell of a merged range is shown); leave the other "
                           "cells of a merge empty (null)",
                  name, (unsigned)row + 1);
    } else if (has_value && merge_finds_data(&sh->data, &mg->range, 0, &row, &col)) {
        kiln_col_name(col, name);
        kiln_perr(c, NULL, "the merge has a \"value\" but its top-left cell %s%u holds data "
                           "too; give the value in one place only",
                  name, (unsigned)row + 1);
    }
}

static void parse_merges(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const allowed[] = {"range", "value", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "merges", &arr);
    if (!n)
        return;
    sh->merges = kiln_arena_calloc(c->arena, n, sizeof *sh->merges);
    if (!sh->merges)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "merges");
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(arr, i);
        size_t s2 = kiln_ptr_push_index(&c->ptr, i);
        if (!json_is_object(m)) {
            kiln_perr(c, NULL, "expected {\"range\": \"A1:D1\", \"value\": ...}");
            goto pop_item;
        }
        kiln_check_members(c, m, allowed);
        kiln_merge *mg = &sh->merges[sh->merge_count];
        if (range_member(c, m, "range", &mg->range) != 0)
            goto pop_item;
        const json_t *v = json_object_get(m, "value");
        if (v) {
            kiln_style *st = kiln_arena_alloc(c->arena, sizeof *st);
            kiln_error e;
            if (!st) {
                kiln_pnomem(c);
                goto pop_item;
            }
            if (kiln_cell_from_json(v, KILN_COL_AUTO, &c->lim, &mg->value, st, &e) != 0) {
                kiln_ptr_push(&c->ptr, "value");
                kiln_perr_rel(c, &e);
                goto pop_item;
            }
            if (kiln_pcell_own(c, &mg->value) != 0)
                goto pop_item;
        }
        for (size_t j = 0; j < sh->merge_count; j++) {
            const kiln_range *a = &sh->merges[j].range, *b = &mg->range;
            if (a->first_row <= b->last_row && b->first_row <= a->last_row &&
                a->first_col <= b->last_col && b->first_col <= a->last_col) {
                kiln_perr(c, "range", "overlaps merge %zu (ranges merged must not overlap)", j);
                goto pop_item;
            }
        }
        check_merge_data(c, sh, mg, v != NULL);
        sh->merge_count++;
    pop_item:
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

/* A conditional format's style: a cell style limited to what Excel can
 * change conditionally (no font, size, alignment or wrapping). */
static void parse_cf_style(kiln_pctx *c, const json_t *st, kiln_style *out)
{
    static const char *const cf_members[] = {"bold",  "italic", "underline", "strike",
                                             "color", "fill",   "border",    NULL};
    static const char *const cell_only[] = {"wrap", "size", "font", "align", "valign", NULL};
    size_t saved = kiln_ptr_push(&c->ptr, "style");
    size_t before = c->errs->count;
    if (json_is_object(st)) {
        const char *key;
        json_t *m;
        json_object_foreach((json_t *)st, key, m) {
            int ok = 0;
            for (size_t i = 0; cf_members[i] && !ok; i++)
                ok = strcmp(cf_members[i], key) == 0;
            if (ok)
                continue;
            int cell = 0;
            for (size_t i = 0; cell_only[i] && !cell; i++)
                cell = strcmp(cell_only[i], key) == 0;
            if (cell)
                kiln_perr(c, key, "\"%s\" cannot be used in a conditional format's style "
                                  "(Excel cannot change the font, size, alignment or wrapping "
                                  "conditionally); use bold, italic, underline, strike, color, "
                                  "fill or border",
                          key);
            else
                kiln_perr(c, key, "unknown member \"%s\"", key);
        }
    }
    if (c->errs->count == before) {
        kiln_error e;
        if (kiln_style_from_json(st, out, &e) != 0)
            kiln_perr_rel(c, &e);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_cond_formats(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const types[] = {"cell", "color_scale", "data_bar", NULL};
    static const char *const crit[] = {"==", "!=", ">", ">=", "<", "<=", "between",
                                       "not_between", NULL};
    static const char *const cell_allowed[] = {"range", "type", "criteria", "value", "maximum",
                                               "style", NULL};
    static const char *const scale_allowed[] = {"range", "type", "colors", NULL};
    static const char *const bar_allowed[] = {"range", "type", "color", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "conditional_formats", &arr);
    if (!n)
        return;
    sh->cond_formats = kiln_arena_calloc(c->arena, n, sizeof *sh->cond_formats);
    if (!sh->cond_formats)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "conditional_formats");
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(arr, i);
        kiln_cond_format *cf = &sh->cond_formats[sh->cond_format_count];
        size_t s2 = kiln_ptr_push_index(&c->ptr, i), before = c->errs->count;
        int type = -1;
        if (!json_is_object(f)) {
            kiln_perr(c, NULL, "expected a conditional format object");
            goto pop_item;
        }
        kiln_get_enum(c, f, "type", types, &type);
        if (type < 0) {
            if (!json_object_get(f, "type"))
                kiln_perr(c, NULL, "missing \"type\": \"cell\", \"color_scale\" or \"data_bar\"");
            goto pop_item;
        }
        cf->type = (kiln_cf_type)type;
        kiln_check_members(c, f, type == 0 ? cell_allowed : type == 1 ? scale_allowed
                                                                      : bar_allowed);
        range_member(c, f, "range", &cf->range);
        if (type == 0) {
            int cr = -1;
            kiln_get_enum(c, f, "criteria", crit, &cr);
            if (cr < 0 && !json_object_get(f, "criteria"))
                kiln_perr(c, NULL, "missing \"criteria\"");
            cf->criteria = (kiln_criteria)(cr < 0 ? 0 : cr);
            if (!json_object_get(f, "value"))
                kiln_perr(c, NULL, "missing \"value\"");
            kiln_get_number(c, f, "value", -1e308, 1e308, &cf->value);
            int between = cr == KILN_CRIT_BETWEEN || cr == KILN_CRIT_NOT_BETWEEN;
            if (between && !json_object_get(f, "maximum"))
                kiln_perr(c, NULL, "\"between\" and \"not_between\" need \"maximum\"");
            else if (!between && cr >= 0 && json_object_get(f, "maximum"))
                kiln_perr(c, "maximum", "\"maximum\" belongs to \"between\" and "
                                        "\"not_between\"");
            kiln_get_number(c, f, "maximum", -1e308, 1e308, &cf->maximum);
            const json_t *st = json_object_get(f, "style");
            memset(&cf->style, 0, sizeof cf->style);
            cf->style.color = cf->style.fill = KILN_COLOR_NONE;
            if (!st)
                kiln_perr(c, NULL, "missing \"style\": a cell rule without one would do "
                                   "nothing");
            else
                parse_cf_style(c, st, &cf->style);
        } else if (type == 1) {
            const json_t *cols = json_object_get(f, "colors");
            size_t k = json_is_array(cols) ? json_array_size(cols) : 0;
            if (k < 2 || k > 3) {
                kiln_perr(c, cols ? "colors" : NULL, "expected \"colors\": 2 or 3 colors");
            } else {
                for (size_t j = 0; j < k; j++) {
                    const json_t *e = json_array_get(cols, j);
                    int32_t col = json_is_string(e) ? kiln_color_parse(json_string_value(e)) : -1;
                    if (col < 0) {
                        size_t s3 = kiln_ptr_push(&c->ptr, "colors");
                        kiln_ptr_push_index(&c->ptr, j);
                        kiln_perr(c, NULL, "expected a color \"#RRGGBB\"");
                        kiln_ptr_pop(&c->ptr, s3);
                    }
                    cf->colors[j] = col;
                }
                cf->color_count = (int)k;
            }
        } else {
            cf->colors[0] = 0x638EC6; /* Excel's default data bar blue */
            cf->color_count = 1;
            kiln_get_color(c, f, "color", &cf->colors[0]);
        }
    pop_item:
        if (c->errs->count == before)
            sh->cond_format_count++;
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_validations(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const allowed[] = {"range", "type", "values", "message", NULL};
    static const char *const types[] = {"list", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "validations", &arr);
    if (!n)
        return;
    sh->validations = kiln_arena_calloc(c->arena, n, sizeof *sh->validations);
    if (!sh->validations)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "validations");
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, i);
        kiln_validation *va = &sh->validations[sh->validation_count];
        size_t s2 = kiln_ptr_push_index(&c->ptr, i), before = c->errs->count;
        if (!json_is_object(v)) {
            kiln_perr(c, NULL, "expected a validation object");
            goto pop_item;
        }
        kiln_check_members(c, v, allowed);
        int t = 0;
        kiln_get_enum(c, v, "type", types, &t);
        range_member(c, v, "range", &va->range);
        if (kiln_get_string(c, v, "message", &va->message) == 0 && va->message) {
            size_t chars = kiln_utf8_count(va->message, strlen(va->message));
            if (chars > 255)
                kiln_perr_limit(c, "message", 255, chars,
                                "a message of %zu characters; Excel allows 255", chars);
        }
        const json_t *vals = json_object_get(v, "values");
        size_t k = json_is_array(vals) ? json_array_size(vals) : 0;
        if (!k) {
            kiln_perr(c, vals ? "values" : NULL, "expected \"values\": a non-empty array of "
                                                 "strings");
            goto pop_item;
        }
        va->values = kiln_arena_calloc(c->arena, k, sizeof *va->values);
        if (!va->values) {
            kiln_pnomem(c);
            goto pop_item;
        }
        size_t total = k - 1; /* the commas Excel joins them with */
        for (size_t j = 0; j < k; j++) {
            const json_t *e = json_array_get(vals, j);
            if (!json_is_string(e) || !json_string_length(e)) {
                size_t s3 = kiln_ptr_push(&c->ptr, "values");
                kiln_ptr_push_index(&c->ptr, j);
                kiln_perr(c, NULL, "expected a non-empty string");
                kiln_ptr_pop(&c->ptr, s3);
                continue;
            }
            va->values[j] = kiln_pstrdup(c, e);
            total += kiln_utf8_count(json_string_value(e), json_string_length(e));
        }
        va->value_count = k;
        if (total > 255)
            kiln_perr_limit(c, "values", 255, total,
                            "the values take %zu characters joined with commas; Excel allows "
                            "255",
                            total);
    pop_item:
        if (c->errs->count == before)
            sh->validation_count++;
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_sheet_charts(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const extra[] = {"anchor", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "charts", &arr);
    if (!n)
        return;
    sh->charts = kiln_arena_calloc(c->arena, n, sizeof *sh->charts);
    if (!sh->charts)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "charts");
    for (size_t i = 0; i < n; i++) {
        size_t s2 = kiln_ptr_push_index(&c->ptr, i);
        kiln_parse_chart(c, json_array_get(arr, i), &sh->charts[i], KILN_IN_SHEET, extra);
        kiln_ptr_pop(&c->ptr, s2);
    }
    sh->chart_count = n;
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_sheet_images(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const allowed[] = {"image", "anchor", "scale", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "images", &arr);
    if (!n)
        return;
    sh->images = kiln_arena_calloc(c->arena, n, sizeof *sh->images);
    if (!sh->images)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "images");
    for (size_t i = 0; i < n; i++) {
        const json_t *im = json_array_get(arr, i);
        size_t s2 = kiln_ptr_push_index(&c->ptr, i);
        kiln_sheet_image *si = &sh->images[sh->image_count];
        if (!json_is_object(im)) {
            kiln_perr(c, NULL, "expected {\"image\": ..., \"anchor\": \"F2\"}");
            goto pop_item;
        }
        kiln_check_members(c, im, allowed);
        si->scale = 1;
        kiln_get_number(c, im, "scale", 0.01, 100, &si->scale);
        int ok = ref_member(c, im, "anchor", &si->row, &si->col, 1) == 0;
        const json_t *img = json_object_get(im, "image");
        if (!img) {
            kiln_perr(c, NULL, "missing \"image\"");
            goto pop_item;
        }
        size_t s3 = kiln_ptr_push(&c->ptr, "image");
        si->image = kiln_parse_image(c, img);
        kiln_ptr_pop(&c->ptr, s3);
        if (si->image && ok)
            sh->image_count++;
    pop_item:
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_comments(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const allowed[] = {"cell", "text", "author", NULL};
    const json_t *arr;
    size_t n = array_member(c, sheet, "comments", &arr);
    if (!n)
        return;
    sh->comments = kiln_arena_calloc(c->arena, n, sizeof *sh->comments);
    if (!sh->comments)
        return kiln_pnomem(c);
    size_t saved = kiln_ptr_push(&c->ptr, "comments");
    for (size_t i = 0; i < n; i++) {
        const json_t *cm = json_array_get(arr, i);
        size_t s2 = kiln_ptr_push_index(&c->ptr, i), before = c->errs->count;
        kiln_comment *k = &sh->comments[sh->comment_count];
        if (!json_is_object(cm)) {
            kiln_perr(c, NULL, "expected {\"cell\": \"B2\", \"text\": ...}");
            goto pop_item;
        }
        kiln_check_members(c, cm, allowed);
        ref_member(c, cm, "cell", &k->row, &k->col, 1);
        kiln_get_string(c, cm, "author", &k->author);
        if (kiln_get_string(c, cm, "text", &k->text) == 0 && !k->text)
            kiln_perr(c, NULL, "missing \"text\"");
    pop_item:
        if (c->errs->count == before)
            sh->comment_count++;
        kiln_ptr_pop(&c->ptr, s2);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

/* Excel table names: a letter, '_' or '\' first, then letters, digits, '_'
 * and '.'; at most 255 characters; not something that reads as a cell. */
static int table_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255)
        return 0;
    unsigned char f = (unsigned char)s[0];
    if (!(f >= 0x80 || (f >= 'A' && f <= 'Z') || (f >= 'a' && f <= 'z') || f == '_' || f == '\\'))
        return 0;
    for (size_t i = 1; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!(ch >= 0x80 || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '\\'))
            return 0;
    }
    uint32_t r, col;
    if (kiln_cell_ref_parse(s, &r, &col) == 0)
        return 0;
    if (strcasecmp(s, "R") == 0 || strcasecmp(s, "C") == 0)
        return 0;
    return 1;
}

/* Excel's built-in table styles, exactly as the spec spells them:
 * "Table Style Light 1".."21", "Table Style Medium 1".."28", "Table Style
 * Dark 1".."11" (no leading zero, no "None"). */
static int table_style_ok(const char *s)
{
    static const struct {
        const char *prefix;
        int max;
    } kinds[] = {{"Table Style Light ", 21}, {"Table Style Medium ", 28},
                 {"Table Style Dark ", 11}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t n = strlen(kinds[i].prefix);
        if (strncmp(s, kinds[i].prefix, n) != 0)
            continue;
        const char *p = s + n;
        if (p[0] < '1' || p[0] > '9')
            return 0;
        int v = p[0] - '0';
        if (p[1]) {
            if (p[1] < '0' || p[1] > '9' || p[2])
                return 0;
            v = v * 10 + (p[1] - '0');
        }
        return v <= kinds[i].max;
    }
    return 0;
}

static void parse_sheet_table(kiln_pctx *c, const json_t *sheet, kiln_sheet *sh)
{
    static const char *const allowed[] = {"name", "style", "total_row", NULL};
    const json_t *t = json_object_get(sheet, "table");
    if (!t)
        return;
    if (json_is_boolean(t)) {
        sh->table = json_is_true(t);
        return;
    }
    size_t saved = kiln_ptr_push(&c->ptr, "table");
    if (!json_is_object(t)) {
        kiln_perr(c, NULL, "expected true, false or {\"name\": ..., \"style\": ..., "
                           "\"total_row\": ...}");
        goto pop;
    }
    kiln_check_members(c, t, allowed);
    sh->table = 1;
    kiln_get_string(c, t, "name", &sh->table_name);
    if (sh->table_name && !table_name_ok(sh->table_name))
        kiln_perr(c, "name", "a table name starts with a letter or '_', holds only letters, "
                             "digits, '_' and '.', and does not read as a cell reference");
    if (kiln_get_string(c, t, "style", &sh->table_style) == 0 && sh->table_style &&
        !table_style_ok(sh->table_style))
        kiln_perr(c, "style", "\"%s\" is not an Excel table style: expected \"Table Style "
                              "Light 1\"..\"21\", \"Table Style Medium 1\"..\"28\" or "
                              "\"Table Style Dark 1\"..\"11\", spelled exactly",
                  sh->table_style);
    kiln_get_bool(c, t, "total_row", &sh->table_total_row);
pop:
    kiln_ptr_pop(&c->ptr, saved);
}

static void parse_sheet(kiln_pctx *c, const json_t *s, kiln_sheet *sh, size_t index)
{
    static const char *const allowed[] = {
        "name",   "columns", "rows",     "data",                "header",
        "freeze", "autofilter", "table", "merges", "conditional_formats",
        "validations", "charts", "images", "comments",          "tab_color", NULL};
    static const char *const freeze_allowed[] = {"rows", "columns", NULL};
    sh->name = c->sheet_names ? c->sheet_names[index] : NULL;
    sh->tab_color = KILN_COLOR_NONE;
    sh->pointer = kiln_ptr_dup(c, NULL);
    c->cur_sheet = sh->name;
    if (!json_is_object(s)) {
        kiln_perr(c, NULL, "expected a sheet object");
        return;
    }
    kiln_check_members(c, s, allowed);
    const json_t *nm = json_object_get(s, "name");
    if (nm && !json_is_string(nm))
        kiln_perr(c, "name", "expected a string");
    kiln_parse_table_data(c, s, &sh->data);
    const json_t *fr = json_object_get(s, "freeze");
    if (fr) {
        size_t saved = kiln_ptr_push(&c->ptr, "freeze");
        if (!json_is_object(fr)) {
            kiln_perr(c, NULL, "expected {\"rows\": N, \"columns\": M}");
        } else {
            kiln_check_members(c, fr, freeze_allowed);
            int64_t r = 0, k = 0;
            kiln_get_int(c, fr, "rows", 0, c->lim.rows - 1, &r);
            kiln_get_int(c, fr, "columns", 0, c->lim.columns - 1, &k);
            sh->freeze_rows = (uint32_t)r;
            sh->freeze_cols = (uint32_t)k;
        }
        kiln_ptr_pop(&c->ptr, saved);
    }
    kiln_get_bool(c, s, "autofilter", &sh->autofilter);
    parse_sheet_table(c, s, sh);
    if (sh->table && sh->autofilter)
        kiln_perr(c, "autofilter", "\"autofilter\" and \"table\" exclude each other (a table "
                                   "has its own filter buttons)");
    parse_merges(c, s, sh);
    parse_cond_formats(c, s, sh);
    parse_validations(c, s, sh);
    parse_sheet_charts(c, s, sh);
    parse_sheet_images(c, s, sh);
    parse_comments(c, s, sh);
    kiln_get_color(c, s, "tab_color", &sh->tab_color);
}

void kiln_parse_sheets(kiln_pctx *c, const json_t *arr)
{
    /* A sheet's rows are read a row at a time (kiln_parse_table_data); the
     * rest of every sheet is loaded at once, as the names come first. */
    static const char *const sheet_holes[] = {"rows", NULL};
    size_t saved = kiln_ptr_push(&c->ptr, "sheets"), mark = c->hole_count;
    json_t **pieces = NULL;
    size_t n = 0;
    if (!json_is_array(arr)) {
        kiln_perr(c, NULL, "expected an array of sheets");
        goto pop;
    }
    kiln_pwalk w;
    n = kiln_pwalk_init(&w, c, arr);
    if (n > c->lim.sheets) {
        kiln_perr_limit(c, NULL, c->lim.sheets, n, "%zu sheets, more than the %u allowed", n,
                        (unsigned)c->lim.sheets);
        n = 0;
        goto pop;
    }
    pieces = calloc(n ? n : 1, sizeof *pieces);
    if (!pieces) {
        kiln_pnomem(c);
        n = 0;
        goto pop;
    }
    while (kiln_pwalk_next(&w)) {
        size_t s2 = kiln_ptr_push_index(&c->ptr, w.index);
        pieces[w.index] = kiln_pwalk_load(&w, sheet_holes, c->ptr.buf);
        kiln_ptr_pop(&c->ptr, s2);
    }
    collect_sheet_names(c, pieces, n);
    c->doc->sheets = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *c->doc->sheets);
    if (!c->doc->sheets) {
        kiln_pnomem(c);
        goto pop;
    }
    c->doc->sheet_count = n;
    for (size_t i = 0; i < n && !c->nomem; i++) {
        size_t s2 = kiln_ptr_push_index(&c->ptr, i);
        if (pieces[i])
            parse_sheet(c, pieces[i], &c->doc->sheets[i], i);
        else
            c->doc->sheets[i].pointer = kiln_ptr_dup(c, NULL);
        kiln_ptr_pop(&c->ptr, s2);
    }
    c->cur_sheet = NULL;
    /* Excel table names are unique in a workbook. */
    for (size_t i = 0; i < n; i++) {
        const char *a = c->doc->sheets[i].table_name;
        for (size_t j = 0; a && j < i; j++) {
            const char *b = c->doc->sheets[j].table_name;
            if (b && kiln_name_equal_fold(a, b)) {
                kiln_ptr_push_index(&c->ptr, i);
                kiln_ptr_push(&c->ptr, "table");
                kiln_perr(c, "name", "another sheet's table is already named \"%s\"", b);
                kiln_ptr_pop(&c->ptr, saved + strlen("/sheets"));
                break;
            }
        }
    }
pop:
    for (size_t i = 0; i < n; i++)
        json_decref(pieces[i]);
    free(pieces);
    kiln_phole_pop(c, mark);
    kiln_ptr_pop(&c->ptr, saved);
}
