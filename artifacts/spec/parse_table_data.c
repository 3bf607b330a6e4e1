/*
 * parse_table_data.c - a table's data, as a sheet and a table block both
 * hold it (kiln_parse_table_data): columns, inline rows (every cell
 * validated), data sources (CSV / JSON Lines files) and the header.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "spec_internal.h"
#include "../../common/banned.h"

static const char *const col_types[] = {"auto",    "string", "number",   "integer", "currency",
                                        "percent", "date",   "datetime", "boolean", NULL};
static const kiln_column_type col_type_vals[] = {KILN_COL_AUTO,     KILN_COL_STRING,
                                                 KILN_COL_NUMBER,   KILN_COL_INTEGER,
                                                 KILN_COL_CURRENCY, KILN_COL_PERCENT,
                                                 KILN_COL_DATE,     KILN_COL_DATETIME,
                                                 KILN_COL_BOOLEAN};

static const char *default_format(kiln_column_type t)
{
    switch (t) {
    case KILN_COL_INTEGER:
        return "#,##0";
    case KILN_COL_NUMBER:
        return "#,##0.00";
    case KILN_COL_CURRENCY:
        return "$#,##0.00";
    case KILN_COL_PERCENT:
        return "0.0%";
    case KILN_COL_DATE:
        return "yyyy-mm-dd";
    case KILN_COL_DATETIME:
        return "yyyy-mm-dd hh:mm";
    default:
        return NULL;
    }
}

static void parse_columns(kiln_pctx *c, const json_t *cols, kiln_table_data *td)
{
    static const char *const allowed[] = {"header", "key",   "type", "number_format",
                                          "width",  "align", NULL};
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
            check_derived_keys(c, cols, td,
                               "the rows come from JSON Lines (whose lines may be "
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
