/*
 * xlsx_writer.c - kiln_xlsx_write: a validated kiln_doc into an .xlsx file,
 * through libxlsxwriter.
 *
 * MEMORY MODE. libxlsxwriter's constant_memory mode writes each row to a
 * temporary file as soon as the next row starts, so a million-row sheet
 * never sits in memory; but it is a workbook-wide option and it forbids
 * going back to a row already written. Kiln writes rows strictly in order
 * either way, and uses constant_memory unless a sheet of the workbook has
 *   - merges: worksheet_merge_range() writes the first cell and pads the
 *     rest of the range with formatted blanks, over rows already written
 *     (and a merge without a value must sit under the data it covers);
 *   - a table (worksheet_add_table() refuses constant_memory outright: it
 *     rewrites the header row and writes the total row).
 * Everything else works in constant_memory: cell notes are stored apart
 * from the cells and are added before the first row; conditional formats,
 * validations, images, charts, freeze panes and column widths are stored
 * apart too; the autofilter is set right after the last row. What the mode
 * costs: strings are written inline rather than shared (bigger XML, same
 * zip), and charts carry no cached values (see xlsx_charts.c).
 *
 * OTHER CHOICES
 *   - Blank cells are skipped unless they have a style of their own.
 *   - A formula's cached value is written with it. libxlsxwriter 1.1.4 has
 *     no boolean formula result, so a cached true/false is stored as the
 *     string "TRUE"/"FALSE" (t="str"); a formula without a cached value is
 *     stored with libxlsxwriter's default result, 0. Excel recalculates on
 *     load either way (libxlsxwriter sets fullCalcOnLoad).
 *   - Hyperlinks past Excel's limits (65,530 per sheet; 2,079 characters of
 *     URL after escaping, as libxlsxwriter counts) are written as their text,
 *     a plain string, rather than failing the render.
 *   - Dates are numbers with a date format: the cell's number_format, else
 *     the column's when it is a date format, else yyyy-mm-dd (yyyy-mm-dd
 *     hh:mm for date-times).
 *   - A list validation whose values are over 255 bytes, or contain a comma
 *     or a double quote, cannot be an inline list; its values go into the
 *     hidden "_kiln_data" sheet and the validation references them. (Over
 *     255 bytes is also where libxlsxwriter 1.1.4 would overflow its buffer:
 *     it checks the list's length in characters but copies bytes. And it
 *     leaks the ~25-byte formula string of such a cell-range list.)
 *   - Tables: the column names are the headers made non-empty ("Column N")
 *     and unique ignoring case ("Amount", "Amount2"), and the header row
 *     shows those names. A table with no data rows gets one empty row (Excel
 *     needs one). The name is sanitised to a defined name (letters, digits,
 *     "_", "."; not a cell reference) and made unique, else "Table1", ….
 *     With total_row, numeric columns get a SUBTOTAL(109) sum whose cached
 *     value is computed here, and the first column says "Total" when it is
 *     not numeric.
 *   - A merged range's value is centred unless its style says otherwise; a
 *     single-cell "merge" only gives the cell its value and style.
 *   - Text is escaped as ST_Xstring requires: a literal "_xHHHH_" in a cell,
 *     header, table column name or note is written "_x005F_xHHHH_", or Excel
 *     would show the character it encodes (xlsx_xstring).
 *   - In memory mode, charts over the sheets' cells get cached values that
 *     include formula results (xlsx_chart_fill_caches).
 *   - libxlsxwriter prints warnings to stderr for invalid arguments; the
 *     writer checks those conditions itself first so it never reaches them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/output.h"
#include "../layout/list_marker.h"
#include "../render.h"
#include "xlsx_internal.h"
#include "../../common/banned.h"

#define HEADER_ARROW_PX 16 /* an autofilter's drop-down button */
#define ROW_PX 20          /* default row height in pixels */

static const kiln_style no_style = {.color = KILN_COLOR_NONE, .fill = KILN_COLOR_NONE};

/* ---- per-column state ---- */
enum { V_PLAIN, V_DATE, V_DATETIME, V_LINK, V__COUNT };

typedef struct colstate {
    lxw_format *fmt[V__COUNT];
    uint8_t have[V__COUNT];
    const char *nf[V__COUNT];
    xlsx_numfmt_info nfi[V__COUNT];
    kiln_align align;
    uint32_t max_px;
    int autofit;
    double width;
    int numeric;
    double sum;
} colstate;

typedef struct wctx {
    const kiln_doc *doc;
    lxw_workbook *wb;
    xlsx_formats *formats;
    xlsx_chart_ctx data; /* the hidden data sheet, shared with the charts */
    kiln_arena *arena;
    xlsx_plan *plan;
    double font_scale; /* theme font size / 11 */
    int default_font;  /* the theme font is Calibri 11 */
    char **table_names;
    size_t table_count;
} wctx;

typedef struct sheetw {
    wctx *w;
    xlsx_plan_sheet *ps;
    lxw_worksheet *ws;
    const kiln_table_data *data;
    colstate *cols;
    size_t ncols, cap;
    size_t used_cols; /* widest row written */
    uint32_t links;
    uint32_t next_row;
    int arrows; /* header cells show filter buttons */
} sheetw;

/* worksheet_write_string with the text escaped as ST_Xstring needs. */
static lxw_error put_string(wctx *w, lxw_worksheet *ws, lxw_row_t r, lxw_col_t c, const char *s,
                            size_t len, lxw_format *f)
{
    const char *t = xlsx_xstring(s, len, &w->data.esc, &w->data.esc_cap);
    return t ? worksheet_write_string(ws, r, c, t, f) : LXW_ERROR_MEMORY_MALLOC_FAILED;
}

static const char *esc(wctx *w, const char *s)
{
    return xlsx_xstring(s, strlen(s), &w->data.esc, &w->data.esc_cap);
}

static void col_init(colstate *cs, const kiln_column *col)
{
    memset(cs, 0, sizeof *cs);
    cs->autofit = 1;
    cs->width = -1;
    const char *nf = col ? col->number_format : NULL;
    int date_nf = xlsx_numfmt_is_date(nf);
    cs->nf[V_PLAIN] = nf;
    cs->nf[V_DATE] = date_nf ? nf : "yyyy-mm-dd";
    cs->nf[V_DATETIME] = date_nf ? nf : "yyyy-mm-dd hh:mm";
    cs->nf[V_LINK] = nf;
    for (int v = 0; v < V__COUNT; v++)
        xlsx_numfmt_analyse(cs->nf[v], &cs->nfi[v]);
    if (col) {
        cs->align = col->align;
        if (col->width >= 0) {
            cs->autofit = 0;
            cs->width = col->width > 255 ? 255 : col->width;
        }
        cs->numeric = col->type == KILN_COL_NUMBER || col->type == KILN_COL_INTEGER ||
                      col->type == KILN_COL_CURRENCY || col->type == KILN_COL_PERCENT;
    }
}

static int ensure_cols(sheetw *sw, size_t n)
{
    if (n <= sw->ncols)
        return 0;
    if (n > sw->cap) {
        size_t ncap = sw->cap ? sw->cap : 16;
        while (ncap < n)
            ncap *= 2;
        colstate *c = realloc(sw->cols, ncap * sizeof *c);
        if (!c)
            return -1;
        sw->cols = c;
        sw->cap = ncap;
    }
    for (size_t i = sw->ncols; i < n; i++)
        col_init(&sw->cols[i], i < sw->data->column_count ? &sw->data->columns[i] : NULL);
    sw->ncols = n;
    return 0;
}

/* The column's own format for a variant, built on first use. */
static lxw_format *col_format(sheetw *sw, colstate *cs, int v, int *oom)
{
    *oom = 0;
    if (cs->have[v])
        return cs->fmt[v];
    xlsx_fmt_key k = {.style = no_style,
                      .number_format = cs->nf[v],
                      .col_align = cs->align,
                      .link = v == V_LINK};
    cs->fmt[v] = xlsx_formats_get(sw->w->formats, &k, oom);
    if (*oom)
        return NULL;
    cs->have[v] = 1;
    return cs->fmt[v];
}

static lxw_format *cell_format(sheetw *sw, colstate *cs, const kiln_cell *cell, int v, int *oom)
{
    if (!cell->style && !cell->number_format)
        return col_format(sw, cs, v, oom);
    xlsx_fmt_key k = {.style = cell->style ? *cell->style : no_style,
                      .number_format = cell->number_format ? cell->number_format : cs->nf[v],
                      .col_align = cs->align,
                      .link = v == V_LINK};
    return xlsx_formats_get(sw->w->formats, &k, oom);
}

/* A text with a line break (docs/spec.md "Line breaks": always LF by now)
 * shows it only when its cell wraps, so such a cell is set to wrap, as
 * Excel does when a line break is typed into a cell. */
static int has_break(const char *s, size_t len)
{
    return s && memchr(s, '\n', len) != NULL;
}

/* The cell's format with wrapping on. */
static lxw_format *wrapped_format(sheetw *sw, colstate *cs, const kiln_cell *cell, int *oom)
{
    xlsx_fmt_key k = {.style = cell->style ? *cell->style : no_style,
                      .number_format = cell->number_format ? cell->number_format
                                                           : cs->nf[V_PLAIN],
                      .col_align = cs->align};
    k.style.wrap = 1;
    return xlsx_formats_get(sw->w->formats, &k, oom);
}

static void fit(colstate *cs, uint32_t px, const kiln_cell *cell)
{
    if (cell->style && cell->style->size > 0)
        px = (uint32_t)(px * cell->style->size / 11.0);
    if (px > cs->max_px)
        cs->max_px = px;
}

static void fit_number(colstate *cs, const kiln_cell *cell, double v, int variant)
{
    if (cell->number_format) {
        xlsx_numfmt_info nfi;
        xlsx_numfmt_analyse(cell->number_format, &nfi);
        fit(cs, xlsx_number_px(v, &nfi), cell);
    } else {
        fit(cs, xlsx_number_px(v, &cs->nfi[variant]), cell);
    }
}

static void fit_text(colstate *cs, const kiln_cell *cell, const char *s, size_t len)
{
    /* No character is wider than 15 pixels per byte: skip what cannot win. */
    if (len * 15 <= cs->max_px && !(cell->style && cell->style->size > 11))
        return;
    fit(cs, xlsx_text_px(s, len), cell);
}

static int isxdigit_ascii(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* Excel's URL length as libxlsxwriter counts it: the part before '#', in
 * characters, after escaping. */
static size_t escaped_url_chars(const char *url)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)url; *p && *p != '#'; p++) {
        if ((*p & 0xC0) == 0x80)
            continue;
        n++;
        if (strchr(" \"<>[]`^{}", *p))
            n += 2;
        else if (*p == '%' && !(isxdigit_ascii(p[1]) && isxdigit_ascii(p[2])))
            n += 2;
    }
    return n;
}

static lxw_error write_url(sheetw *sw, colstate *cs, uint32_t r, lxw_col_t c,
                           const kiln_cell *cell, int *oom)
{
    const char *text = cell->link_text ? cell->link_text : cell->text;
    fit_text(cs, cell, text, strlen(text));
    if (sw->links >= XLSX_MAX_URLS_PER_SHEET ||
        escaped_url_chars(cell->text) > XLSX_MAX_URL_CHARS) {
        lxw_format *f = cell_format(sw, cs, cell, V_PLAIN, oom);
        return *oom ? LXW_ERROR_MEMORY_MALLOC_FAILED
                    : put_string(sw->w, sw->ws, r, c, text, strlen(text), f);
    }
    lxw_format *f = NULL;
    /* libxlsxwriter's own hyperlink format (Excel's Hyperlink cell style)
     * unless the cell needs more than it gives. */
    if (cell->style || cell->number_format || cs->align || cs->nf[V_PLAIN] ||
        !sw->w->default_font) {
        f = cell_format(sw, cs, cell, V_LINK, oom);
        if (*oom)
            return LXW_ERROR_MEMORY_MALLOC_FAILED;
    }
    /* libxlsxwriter takes "internal:" / "external:" anywhere in the URL as
     * its own link syntax; escape the colon so the URL stays a URL. */
    const char *url = cell->text;
    char *copy = NULL;
    if (strstr(url, "internal:") || strstr(url, "external:")) {
        size_t len = strlen(url);
        copy = malloc(len * 3 + 1);
        if (!copy)
            return LXW_ERROR_MEMORY_MALLOC_FAILED;
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
            if (url[i] == ':' && i >= 8 &&
                (strncmp(url + i - 8, "internal", 8) == 0 ||
                 strncmp(url + i - 8, "external", 8) == 0)) {
                memcpy(copy + o, "%3A", 3);
                o += 3;
            } else {
                copy[o++] = url[i];
            }
        }
        copy[o] = '\0';
        url = copy;
    }
    const char *shown = esc(sw->w, text);
    lxw_error e = shown ? worksheet_write_url_opt(sw->ws, r, c, url, f, shown, NULL)
                        : LXW_ERROR_MEMORY_MALLOC_FAILED;
    free(copy);
    if (!e)
        sw->links++;
    return e;
}

static lxw_error write_cell(sheetw *sw, uint32_t r, size_t ci, const kiln_cell *cell, int *oom)
{
    colstate *cs = &sw->cols[ci];
    lxw_col_t c = (lxw_col_t)ci;
    lxw_worksheet *ws = sw->ws;
    lxw_format *f;
    *oom = 0;

    switch (cell->kind) {
    case KILN_CELL_BLANK:
        if (!cell->style)
            return LXW_NO_ERROR;
        f = cell_format(sw, cs, cell, V_PLAIN, oom);
        return *oom ? LXW_ERROR_MEMORY_MALLOC_FAILED : worksheet_write_blank(ws, r, c, f);
    case KILN_CELL_NUMBER:
        f = cell_format(sw, cs, cell, V_PLAIN, oom);
        if (*oom)
            return LXW_ERROR_MEMORY_MALLOC_FAILED;
        if (cs->autofit)
            fit_number(cs, cell, cell->number, V_PLAIN);
        cs->sum += cell->number;
        return worksheet_write_number(ws, r, c, cell->number, f);
    case KILN_CELL_STRING:
        f = has_break(cell->text, cell->text_len) ? wrapped_format(sw, cs, cell, oom)
                                                  : cell_format(sw, cs, cell, V_PLAIN, oom);
        if (*oom)
            return LXW_ERROR_MEMORY_MALLOC_FAILED;
        if (cs->autofit)
            fit_text(cs, cell, cell->text, cell->text_len);
        return put_string(sw->w, ws, r, c, cell->text, cell->text_len, f);
    case KILN_CELL_BOOL:
        f = cell_format(sw, cs, cell, V_PLAIN, oom);
        if (*oom)
            return LXW_ERROR_MEMORY_MALLOC_FAILED;
        if (cs->autofit)
            fit(cs, cell->number != 0 ? 30 : 35, cell);
        return worksheet_write_boolean(ws, r, c, cell->number != 0, f);
    case KILN_CELL_DATE:
    case KILN_CELL_DATETIME: {
        int v = cell->kind == KILN_CELL_DATE ? V_DATE : V_DATETIME;
        if (cell->number_format && !xlsx_numfmt_is_date(cell->number_format))
            v = V_PLAIN;
        f = cell_format(sw, cs, cell, v, oom);
        if (*oom)
            return LXW_ERROR_MEMORY_MALLOC_FAILED;
        if (cs->autofit)
            fit_number(cs, cell, cell->number, v);
        return worksheet_write_number(ws, r, c, cell->number, f);
    }
    case KILN_CELL_FORMULA:
        f = cell_format(sw, cs, cell, V_PLAIN, oom);
        if (*oom)
            return LXW_ERROR_MEMORY_MALLOC_FAILED;
        switch (cell->cached_kind) {
        case KILN_CELL_NUMBER:
            if (cs->autofit)
                fit_number(cs, cell, cell->cached_number, V_PLAIN);
            cs->sum += cell->cached_number;
            return worksheet_write_formula_num(ws, r, c, cell->text, f, cell->cached_number);
        case KILN_CELL_STRING: {
            const char *t = cell->cached_text ? cell->cached_text : "";
            if (has_break(t, strlen(t))) {
                f = wrapped_format(sw, cs, cell, oom);
                if (*oom)
                    return LXW_ERROR_MEMORY_MALLOC_FAILED;
            }
            if (cs->autofit)
                fit_text(cs, cell, t, strlen(t));
            if (!(t = esc(sw->w, t)))
                return LXW_ERROR_MEMORY_MALLOC_FAILED;
            return worksheet_write_formula_str(ws, r, c, cell->text, f, t);
        }
        case KILN_CELL_BOOL:
            if (cs->autofit)
                fit(cs, cell->cached_number != 0 ? 30 : 35, cell);
            return worksheet_write_formula_str(ws, r, c, cell->text, f,
                                               cell->cached_number != 0 ? "TRUE" : "FALSE");
        default:
            return worksheet_write_formula(ws, r, c, cell->text, f);
        }
    case KILN_CELL_URL:
        return write_url(sw, cs, r, c, cell, oom);
    }
    return LXW_NO_ERROR;
}

static kiln_status lxw_fail(kiln_error *err, lxw_error e, const char *pointer, const char *what)
{
    return xlsx_lxw_error(err, e, pointer, what);
}

static kiln_status oom_fail(kiln_error *err, const char *pointer)
{
    return kiln_error_set(err, KILN_E_NOMEM, pointer, "out of memory writing the workbook");
}

/* ---- tables ---- */

static int name_used(wctx *w, const char *name)
{
    for (size_t i = 0; i < w->table_count; i++)
        if (xlsx_name_equal(w->table_names[i], name))
            return 1;
    return 0;
}

/* Like a cell reference ("AB12", "R1C1", "R", "C")? Excel refuses those as names. */
static int looks_like_ref(const char *s)
{
    size_t i = 0;
    while (((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z') && i < 4)
        i++;
    if (i >= 1 && i <= 3 && s[i] >= '0' && s[i] <= '9') {
        size_t j = i;
        while (s[j] >= '0' && s[j] <= '9')
            j++;
        if (!s[j])
            return 1;
    }
    if ((s[0] | 0x20) == 'r' || (s[0] | 0x20) == 'c') {
        const char *p = s + 1;
        while (*p >= '0' && *p <= '9')
            p++;
        if (!*p)
            return 1;
        if ((s[0] | 0x20) == 'r' && (*p | 0x20) == 'c') {
            p++;
            while (*p >= '0' && *p <= '9')
                p++;
            if (!*p)
                return 1;
        }
    }
    return 0;
}

static const char *table_name(wctx *w, const char *want)
{
    char buf[256];
    size_t o = 0;
    if (want) {
        for (const unsigned char *p = (const unsigned char *)want; *p && o < 250; p++) {
            unsigned char c = *p;
            int ok = c >= 0x80 || (c >= '0' && c <= '9') ||
                     ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '_' || c == '.';
            buf[o++] = ok ? (char)c : '_';
        }
        /* Do not cut a UTF-8 sequence in half. */
        while (o > 0 && ((unsigned char)buf[o - 1] & 0xC0) == 0x80)
            o--;
        if (o > 0 && (unsigned char)buf[o - 1] >= 0xC0)
            o--;
    }
    buf[o] = '\0';
    char name[300];
    if (!o) {
        unsigned k = (unsigned)w->table_count + 1;
        do
            snprintf(name, sizeof name, "Table%u", k++);
        while (name_used(w, name));
    } else {
        int prefix = (buf[0] >= '0' && buf[0] <= '9') || buf[0] == '.' || looks_like_ref(buf);
        snprintf(name, sizeof name, "%s%s", prefix ? "_" : "", buf);
        size_t base = strlen(name);
        for (unsigned k = 2; name_used(w, name); k++)
            snprintf(name + base, sizeof name - base, "_%u", k);
    }
    char *copy = kiln_arena_strdup(w->arena, name);
    if (!copy)
        return NULL;
    char **list = kiln_arena_calloc(w->arena, w->table_count + 1, sizeof *list);
    if (!list)
        return NULL;
    if (w->table_count)
        memcpy(list, w->table_names, w->table_count * sizeof *list);
    list[w->table_count++] = copy;
    w->table_names = list;
    return copy;
}

/* "Table Style Medium 2" / "TableStyleMedium2" -> libxlsxwriter's pair. */
static int table_style(const char *s, uint8_t *type, uint8_t *number)
{
    char buf[64];
    size_t o = 0;
    for (; *s && o + 1 < sizeof buf; s++)
        if (*s != ' ')
            buf[o++] = (char)((*s >= 'A' && *s <= 'Z') ? *s + 32 : *s);
    buf[o] = '\0';
    const char *p = buf;
    if (strncmp(p, "tablestyle", 10) != 0)
        return -1;
    p += 10;
    int max;
    if (strncmp(p, "light", 5) == 0) {
        *type = LXW_TABLE_STYLE_TYPE_LIGHT;
        p += 5;
        max = 21;
    } else if (strncmp(p, "medium", 6) == 0) {
        *type = LXW_TABLE_STYLE_TYPE_MEDIUM;
        p += 6;
        max = 28;
    } else if (strncmp(p, "dark", 4) == 0) {
        *type = LXW_TABLE_STYLE_TYPE_DARK;
        p += 4;
        max = 11;
    } else {
        return -1;
    }
    if (!*p || strlen(p) > 2)
        return -1;
    int n = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        n = n * 10 + (*p - '0');
    }
    if (n > max || (n == 0 && *type != LXW_TABLE_STYLE_TYPE_LIGHT))
        return -1;
    *number = (uint8_t)n;
    return 0;
}

/* Header names for a table: non-empty, at most 255 characters, unique
 * ignoring case. */
static char **table_headers(sheetw *sw, size_t ncols)
{
    kiln_arena *a = sw->w->arena;
    char **names = kiln_arena_calloc(a, ncols + 1, sizeof *names);
    if (!names)
        return NULL;
    for (size_t i = 0; i < ncols; i++) {
        const char *h = i < sw->data->column_count ? sw->data->columns[i].header : NULL;
        char base[1024];
        if (h && *h) {
            /* 255 characters at most; cut on a character boundary. */
            size_t o = 0, chars = 0;
            for (const char *p = h; *p && o + 4 < sizeof base; p++) {
                if (((unsigned char)*p & 0xC0) != 0x80 && ++chars > 250)
                    break;
                base[o++] = *p;
            }
            base[o] = '\0';
        } else {
            snprintf(base, sizeof base, "Column%zu", i + 1);
        }
        char *name = kiln_arena_strdup(a, base);
        for (unsigned k = 2; name; k++) {
            int dup = 0;
            for (size_t j = 0; j < i && !dup; j++)
                dup = xlsx_name_equal(names[j], name);
            if (!dup)
                break;
            name = kiln_arena_printf(a, "%s%u", base, k);
        }
        if (!name)
            return NULL;
        /* The names are both the header cells' text and the table's column
         * names: escape them once, here. */
        const char *e = esc(sw->w, name);
        if (!e || (e != name && !(name = kiln_arena_strdup(a, e))))
            return NULL;
        names[i] = name;
    }
    return names;
}

static kiln_status add_table(sheetw *sw, const kiln_sheet *sh, char **headers,
                             uint32_t last_data_row, kiln_error *err)
{
    wctx *w = sw->w;
    kiln_arena *a = w->arena;
    size_t ncols = sw->used_cols;
    int header = sw->data->header && sw->data->column_count > 0;
    char ptr[KILN_POINTER_MAX];
    snprintf(ptr, sizeof ptr, "%s/table", sh->pointer ? sh->pointer : "");

    lxw_table_options opt = {0};
    const char *style = sh->table_style ? sh->table_style : "Table Style Medium 2";
    if (table_style(style, &opt.style_type, &opt.style_type_number) != 0)
        return kiln_error_set(err, KILN_E_INVALID_SPEC, ptr,
                              "'%s' is not an Excel table style (\"Table Style Medium 2\", "
                              "Light 0-21, Medium 1-28, Dark 1-11)",
                              style);
    opt.name = (char *)table_name(w, sh->table_name);
    if (!opt.name)
        return oom_fail(err, ptr);
    opt.no_header_row = !header;
    opt.total_row = sh->table_total_row != 0;

    lxw_table_column *cols = kiln_arena_calloc(a, ncols, sizeof *cols);
    lxw_table_column **list = kiln_arena_calloc(a, ncols + 1, sizeof *list);
    if (!cols || !list)
        return oom_fail(err, ptr);
    int oom;
    for (size_t i = 0; i < ncols; i++) {
        colstate *cs = &sw->cols[i];
        cols[i].header = headers[i];
        /* The table rewrites the header cells: in the format the header row
         * gave each (its column's alignment, wrapping for a line break). */
        xlsx_fmt_key hk = {.style = no_style, .col_align = cs->align, .header = 1};
        hk.style.wrap = has_break(headers[i], strlen(headers[i]));
        cols[i].header_format = xlsx_formats_get(w->formats, &hk, &oom);
        if (oom)
            return oom_fail(err, ptr);
        if (opt.total_row) {
            if (cs->numeric) {
                cols[i].total_function = LXW_TABLE_FUNCTION_SUM;
                cols[i].total_value = cs->sum;
                cols[i].format = col_format(sw, cs, V_PLAIN, &oom);
                if (oom)
                    return oom_fail(err, ptr);
            } else if (i == 0) {
                cols[i].total_string = "Total";
            }
        }
        list[i] = &cols[i];
    }
    opt.columns = list;

    uint32_t first = 0;
    uint32_t last = last_data_row;
    /* Excel needs at least one data row. */
    if (header && last < 1)
        last = 1;
    if (opt.total_row)
        last++;
    if (last >= LXW_ROW_MAX)
        return kiln_error_limit(err, KILN_E_LIMIT, ptr, LXW_ROW_MAX, (uint64_t)last + 1,
                                "the table's total row does not fit in the sheet");
    lxw_error e = worksheet_add_table(sw->ws, first, 0, last, (lxw_col_t)(ncols - 1), &opt);
    if (e)
        return lxw_fail(err, e, ptr, "adding the table");
    return KILN_E_OK;
}

/* ---- merges, conditional formats, validations ---- */

static kiln_status write_merge(sheetw *sw, const kiln_merge *m, const char *ptr, kiln_error *err)
{
    const kiln_range *r = &m->range;
    int single = r->first_row == r->last_row && r->first_col == r->last_col;
    xlsx_fmt_key k = {.style = m->value.style ? *m->value.style : no_style,
                      .number_format = m->value.number_format,
                      .merge = !single};
    if (m->value.kind == KILN_CELL_STRING && has_break(m->value.text, m->value.text_len))
        k.style.wrap = 1;
    if (!k.number_format && m->value.kind == KILN_CELL_DATE)
        k.number_format = "yyyy-mm-dd";
    if (!k.number_format && m->value.kind == KILN_CELL_DATETIME)
        k.number_format = "yyyy-mm-dd hh:mm";
    int oom;
    lxw_format *f = xlsx_formats_get(sw->w->formats, &k, &oom);
    if (oom)
        return oom_fail(err, ptr);
    lxw_error e = LXW_NO_ERROR;
    const char *first_text = m->value.kind == KILN_CELL_STRING ? esc(sw->w, m->value.text) : "";
    if (!first_text)
        return oom_fail(err, ptr);
    if (!single)
        e = worksheet_merge_range(sw->ws, r->first_row, (lxw_col_t)r->first_col, r->last_row,
                                  (lxw_col_t)r->last_col, first_text, f);
    if (e)
        return lxw_fail(err, e, ptr, "merging cells");
    /* A single cell "merge" merges nothing: it only gives the cell its value
     * and style. */
    if (single && m->value.kind == KILN_CELL_BLANK && m->value.style) {
        e = worksheet_write_blank(sw->ws, r->first_row, (lxw_col_t)r->first_col, f);
        return e ? lxw_fail(err, e, ptr, "writing a merged cell") : KILN_E_OK;
    }
    if (m->value.kind == KILN_CELL_BLANK || (!single && m->value.kind == KILN_CELL_STRING))
        return KILN_E_OK;

    /* Other value types overwrite the first cell, keeping the merge format. */
    lxw_worksheet *ws = sw->ws;
    uint32_t row = r->first_row;
    lxw_col_t col = (lxw_col_t)r->first_col;
    const kiln_cell *v = &m->value;
    switch (v->kind) {
    case KILN_CELL_STRING:
        e = worksheet_write_string(ws, row, col, first_text, f);
        break;
    case KILN_CELL_NUMBER:
    case KILN_CELL_DATE:
    case KILN_CELL_DATETIME:
        e = worksheet_write_number(ws, row, col, v->number, f);
        break;
    case KILN_CELL_BOOL:
        e = worksheet_write_boolean(ws, row, col, v->number != 0, f);
        break;
    case KILN_CELL_FORMULA:
        if (v->cached_kind == KILN_CELL_NUMBER)
            e = worksheet_write_formula_num(ws, row, col, v->text, f, v->cached_number);
        else if (v->cached_kind == KILN_CELL_STRING)
            e = worksheet_write_formula_str(ws, row, col, v->text, f,
                                            esc(sw->w, v->cached_text ? v->cached_text : ""));
        else if (v->cached_kind == KILN_CELL_BOOL)
            e = worksheet_write_formula_str(ws, row, col, v->text, f,
                                            v->cached_number != 0 ? "TRUE" : "FALSE");
        else
            e = worksheet_write_formula(ws, row, col, v->text, f);
        break;
    case KILN_CELL_URL:
        e = worksheet_write_url_opt(ws, row, col, v->text, f,
                                    esc(sw->w, v->link_text ? v->link_text : v->text), NULL);
        break;
    default:
        break;
    }
    return e ? lxw_fail(err, e, ptr, "writing a merged cell") : KILN_E_OK;
}

static uint8_t lxw_criteria(kiln_criteria c)
{
    switch (c) {
    case KILN_CRIT_EQ:
        return LXW_CONDITIONAL_CRITERIA_EQUAL_TO;
    case KILN_CRIT_NE:
        return LXW_CONDITIONAL_CRITERIA_NOT_EQUAL_TO;
    case KILN_CRIT_GT:
        return LXW_CONDITIONAL_CRITERIA_GREATER_THAN;
    case KILN_CRIT_GE:
        return LXW_CONDITIONAL_CRITERIA_GREATER_THAN_OR_EQUAL_TO;
    case KILN_CRIT_LT:
        return LXW_CONDITIONAL_CRITERIA_LESS_THAN;
    case KILN_CRIT_LE:
        return LXW_CONDITIONAL_CRITERIA_LESS_THAN_OR_EQUAL_TO;
    case KILN_CRIT_BETWEEN:
        return LXW_CONDITIONAL_CRITERIA_BETWEEN;
    case KILN_CRIT_NOT_BETWEEN:
        return LXW_CONDITIONAL_CRITERIA_NOT_BETWEEN;
    }
    return LXW_CONDITIONAL_CRITERIA_EQUAL_TO;
}

static kiln_status write_cond_format(sheetw *sw, const kiln_cond_format *cf, const char *ptr,
                                     kiln_error *err)
{
    /* Zeroed: every color LXW_COLOR_UNSET, and no Excel 2010 data bar
     * options, so data bars are plain 2007 ones without the x14 extension. */
    lxw_conditional_format o = {0};
    switch (cf->type) {
    case KILN_CF_CELL:
        o.type = LXW_CONDITIONAL_TYPE_CELL;
        o.criteria = lxw_criteria(cf->criteria);
        if (cf->criteria == KILN_CRIT_BETWEEN || cf->criteria == KILN_CRIT_NOT_BETWEEN) {
            o.min_value = cf->value;
            o.max_value = cf->maximum;
        } else {
            o.value = cf->value;
        }
        o.format = xlsx_formats_dxf(sw->w->formats, &cf->style);
        if (!o.format)
            return oom_fail(err, ptr);
        break;
    case KILN_CF_COLOR_SCALE:
        if (cf->color_count >= 3) {
            o.type = LXW_CONDITIONAL_3_COLOR_SCALE;
            o.min_color = xlsx_color(cf->colors[0]);
            o.mid_color = xlsx_color(cf->colors[1]);
            o.max_color = xlsx_color(cf->colors[2]);
        } else {
            o.type = LXW_CONDITIONAL_2_COLOR_SCALE;
            if (cf->color_count >= 1)
                o.min_color = xlsx_color(cf->colors[0]);
            if (cf->color_count >= 2)
                o.max_color = xlsx_color(cf->colors[1]);
        }
        break;
    case KILN_CF_DATA_BAR:
        o.type = LXW_CONDITIONAL_DATA_BAR;
        o.bar_color = cf->color_count >= 1 && cf->colors[0] != KILN_COLOR_NONE
                          ? xlsx_color(cf->colors[0])
                          : 0x638EC6;
        break;
    }
    const kiln_range *r = &cf->range;
    lxw_error e = worksheet_conditional_format_range(sw->ws, r->first_row,
                                                     (lxw_col_t)r->first_col, r->last_row,
                                                     (lxw_col_t)r->last_col, &o);
    return e ? lxw_fail(err, e, ptr, "adding a conditional format") : KILN_E_OK;
}

/* Copy at most max characters of s into the arena. */
static char *clip_chars(kiln_arena *a, const char *s, size_t max)
{
    size_t o = 0, chars = 0;
    for (; s[o]; o++)
        if (((unsigned char)s[o] & 0xC0) != 0x80 && ++chars > max)
            break;
    return kiln_arena_strndup(a, s, o);
}

/* 1 when the validation's values cannot be an inline list: Excel keeps one
 * as a single string of at most 255 characters, the values joined by commas,
 * so none may be empty or hold a comma or a double quote. */
static int validation_needs_data(const kiln_validation *v)
{
    size_t bytes = 0;
    for (size_t i = 0; i < v->value_count; i++) {
        bytes += strlen(v->values[i]) + (i ? 1 : 0);
        if (strpbrk(v->values[i], ",\"") || !v->values[i][0])
            return 1;
    }
    return bytes > 255 || v->value_count == 0;
}

static kiln_status write_validation(sheetw *sw, const kiln_validation *v, const char *ptr,
                                    kiln_error *err)
{
    wctx *w = sw->w;
    lxw_data_validation dv = {0};
    if (!validation_needs_data(v)) {
        char **list = kiln_arena_calloc(w->arena, v->value_count + 1, sizeof *list);
        if (!list)
            return oom_fail(err, ptr);
        for (size_t i = 0; i < v->value_count; i++)
            list[i] = (char *)v->values[i];
        dv.validate = LXW_VALIDATION_TYPE_LIST;
        dv.value_list = list;
    } else {
        /* The values go into the hidden data sheet, one per row. */
        if (!w->data.data_ws)
            return kiln_error_set(err, KILN_E_INTERNAL, ptr, "no data sheet for the list");
        uint32_t base = w->data.data_row;
        if (v->value_count + 1 > (size_t)LXW_ROW_MAX - base)
            return kiln_error_limit(err, KILN_E_LIMIT, ptr, LXW_ROW_MAX, base + v->value_count,
                                    "the validation lists do not fit in one sheet");
        for (size_t i = 0; i < v->value_count; i++) {
            lxw_error e = put_string(w, w->data.data_ws, base + (uint32_t)i, 0, v->values[i],
                                     strlen(v->values[i]), NULL);
            if (e)
                return lxw_fail(err, e, ptr, "writing a validation list");
        }
        w->data.data_row = base + (uint32_t)v->value_count + 1;
        char quoted[XLSX_SHEET_NAME_BUF * 2 + 4];
        size_t o = 0;
        quoted[o++] = '\'';
        for (const char *p = w->data.data_name; *p; p++) {
            if (*p == '\'')
                quoted[o++] = '\'';
            quoted[o++] = *p;
        }
        quoted[o++] = '\'';
        quoted[o] = '\0';
        dv.validate = LXW_VALIDATION_TYPE_LIST_FORMULA;
        unsigned last = base + (unsigned)(v->value_count ? v->value_count : 1);
        dv.value_formula = kiln_arena_printf(w->arena, "=%s!$A$%u:$A$%u", quoted, base + 1, last);
        if (!dv.value_formula)
            return oom_fail(err, ptr);
    }
    if (v->message) {
        dv.input_message = clip_chars(w->arena, v->message, 255);
        dv.error_message = dv.input_message;
        if (!dv.input_message)
            return oom_fail(err, ptr);
    }
    const kiln_range *r = &v->range;
    lxw_error e = worksheet_data_validation_range(sw->ws, r->first_row, (lxw_col_t)r->first_col,
                                                  r->last_row, (lxw_col_t)r->last_col, &dv);
    return e ? lxw_fail(err, e, ptr, "adding a validation") : KILN_E_OK;
}

/* ---- the text sheet (documents with neither sheets nor tables) ---- */

#define TEXT_MAX_DEPTH 16

typedef struct textw {
    sheetw *sw;
    char *buf;
    size_t cap;
    lxw_format *bold, *wrap, *bold_wrap;
    lxw_format *indent[TEXT_MAX_DEPTH]; /* nested list items, built on use */
    lxw_format *indent_wrap[TEXT_MAX_DEPTH];
} textw;

/* One row of text in format f, or in f_wrap when it has a line break. */
static lxw_error text_row(textw *t, const char *s, size_t len, lxw_format *f, lxw_format *f_wrap)
{
    sheetw *sw = t->sw;
    if (sw->next_row >= LXW_ROW_MAX)
        return LXW_NO_ERROR; /* the rest would not fit; the text is a courtesy */
    /* A cell holds 32,767 characters. */
    size_t o = 0, chars = 0;
    while (o < len) {
        if (((unsigned char)s[o] & 0xC0) != 0x80 && ++chars > KILN_LIMIT_CELL_CHARS)
            break;
        o++;
    }
    if (o + 1 > t->cap) {
        char *n = realloc(t->buf, o + 1);
        if (!n)
            return LXW_ERROR_MEMORY_MALLOC_FAILED;
        t->buf = n;
        t->cap = o + 1;
    }
    memcpy(t->buf, s, o);
    t->buf[o] = '\0';
    uint32_t px = xlsx_text_px(t->buf, o);
    if (has_break(t->buf, o))
        f = f_wrap;
    else if (px > 700 && !f)
        f = t->wrap;
    if (px > sw->cols[0].max_px)
        sw->cols[0].max_px = px;
    return put_string(sw->w, sw->ws, sw->next_row++, 0, t->buf, o, f);
}

static lxw_error text_runs(textw *t, const kiln_text *x, const char *prefix, lxw_format *f,
                           lxw_format *f_wrap)
{
    size_t len = strlen(prefix);
    for (size_t i = 0; i < x->run_count; i++)
        len += x->runs[i].len;
    char *s = malloc(len + 1);
    if (!s)
        return LXW_ERROR_MEMORY_MALLOC_FAILED;
    size_t o = strlen(prefix);
    memcpy(s, prefix, o);
    for (size_t i = 0; i < x->run_count; i++) {
        memcpy(s + o, x->runs[i].text, x->runs[i].len);
        o += x->runs[i].len;
    }
    s[o] = '\0';
    lxw_error e = o ? text_row(t, s, o, f, f_wrap) : LXW_NO_ERROR;
    free(s);
    return e;
}

static lxw_error text_list(textw *t, const kiln_list *l, int depth)
{
    /* Nesting is the cell's indent, not leading blanks (which would need
     * xml:space="preserve" and are lost when the cell is edited). */
    lxw_format *f = NULL, *f_wrap = t->wrap;
    if (depth > 0) {
        for (int w = 0; w < 2; w++) {
            lxw_format **slot = w ? &t->indent_wrap[depth] : &t->indent[depth];
            if (*slot)
                continue;
            if (!(*slot = workbook_add_format(t->sw->w->wb)))
                return LXW_ERROR_MEMORY_MALLOC_FAILED;
            format_set_indent(*slot, (uint8_t)(depth * 2));
            if (w) {
                format_set_text_wrap(*slot);
                format_set_align(*slot, LXW_ALIGN_VERTICAL_TOP);
            }
            if (!t->sw->w->default_font) {
                const kiln_theme *th = &t->sw->w->doc->theme;
                if (th->font)
                    format_set_font_name(*slot, th->font);
                if (th->font_size > 0)
                    format_set_font_size(*slot, th->font_size);
            }
        }
        f = t->indent[depth];
        f_wrap = t->indent_wrap[depth];
    }
    kiln_list_marks marks = kiln_list_marks_of(l, depth);
    for (size_t i = 0; i < l->item_count; i++) {
        char marker[KILN_LIST_MARKER_MAX], prefix[KILN_LIST_MARKER_MAX + 1];
        kiln_list_marker(marks, depth, (int64_t)l->start + (int64_t)i, marker, sizeof marker);
        snprintf(prefix, sizeof prefix, "%s ", marker);
        lxw_error e = text_runs(t, &l->items[i].text, prefix, f, f_wrap);
        if (!e && l->items[i].children && depth + 1 < TEXT_MAX_DEPTH)
            e = text_list(t, l->items[i].children, depth + 1);
        if (e)
            return e;
    }
    return LXW_NO_ERROR;
}

static kiln_status write_text_sheet(sheetw *sw, kiln_error *err)
{
    const kiln_doc *doc = sw->w->doc;
    textw t = {.sw = sw};
    xlsx_fmt_key kb = {.style = no_style}, kw = {.style = no_style};
    kb.style.bold = 1;
    kw.style.wrap = 1;
    kw.style.valign = KILN_VALIGN_TOP;
    xlsx_fmt_key kbw = kw;
    kbw.style.bold = 1;
    int oom1, oom2, oom3;
    t.bold = xlsx_formats_get(sw->w->formats, &kb, &oom1);
    t.wrap = xlsx_formats_get(sw->w->formats, &kw, &oom2);
    t.bold_wrap = xlsx_formats_get(sw->w->formats, &kbw, &oom3);
    if (oom1 || oom2 || oom3 || ensure_cols(sw, 1) != 0)
        return oom_fail(err, "");
    lxw_error e = LXW_NO_ERROR;
    for (size_t i = 0; i < doc->block_count && !e; i++) {
        const kiln_block *b = &doc->blocks[i];
        switch (b->kind) {
        case KILN_BLOCK_HEADING:
            e = text_runs(&t, &b->text, "", t.bold, t.bold_wrap);
            break;
        case KILN_BLOCK_PARAGRAPH:
        case KILN_BLOCK_QUOTE:
            e = text_runs(&t, &b->text, "", NULL, t.wrap);
            break;
        case KILN_BLOCK_LIST:
            e = text_list(&t, &b->list, 0);
            break;
        case KILN_BLOCK_CODE:
            if (b->code && *b->code)
                e = text_row(&t, b->code, strlen(b->code), t.wrap, t.wrap);
            break;
        default:
            break;
        }
    }
    for (size_t i = 0; doc->block_count == 0 && i < doc->slide_count && !e; i++) {
        const kiln_slide *s = &doc->slides[i];
        if (s->title && *s->title)
            e = text_row(&t, s->title, strlen(s->title), t.bold, t.bold_wrap);
        if (!e && s->subtitle && *s->subtitle)
            e = text_row(&t, s->subtitle, strlen(s->subtitle), NULL, t.wrap);
        if (!e)
            e = text_list(&t, &s->bullets, 0);
        if (!e)
            e = text_list(&t, &s->left, 0);
        if (!e)
            e = text_list(&t, &s->right, 0);
    }
    free(t.buf);
    sw->used_cols = 1;
    if (e)
        return lxw_fail(err, e, "", "writing the text sheet");
    /* Long paragraphs wrap in a column of 100 characters rather than
     * stretching it to 255. */
    if (sw->cols[0].max_px > 700)
        sw->cols[0].max_px = 700;
    return KILN_E_OK;
}

/* ---- one sheet ---- */

static kiln_status write_rows(sheetw *sw, kiln_error *err)
{
    const kiln_table_data *d = sw->data;
    kiln_row_reader *rd = NULL;
    kiln_status st = kiln_rows_open(sw->w->doc, d, &rd, err);
    if (st != KILN_E_OK)
        return st;
    const kiln_cell *cells;
    size_t count;
    int more;
    while ((more = kiln_rows_next(rd, &cells, &count, err)) == 1) {
        uint32_t r = sw->next_row;
        if (r >= LXW_ROW_MAX) {
            st = kiln_error_limit(err, KILN_E_LIMIT, d->pointer, LXW_ROW_MAX, (uint64_t)r + 1,
                                  "a sheet holds at most %u rows", (unsigned)LXW_ROW_MAX);
            goto cleanup_reader;
        }
        if (count > LXW_COL_MAX) {
            st = kiln_error_limit(err, KILN_E_LIMIT, d->pointer, LXW_COL_MAX, count,
                                  "a sheet holds at most %u columns", (unsigned)LXW_COL_MAX);
            goto cleanup_reader;
        }
        if (count > sw->ncols && ensure_cols(sw, count) != 0) {
            st = oom_fail(err, d->pointer);
            goto cleanup_reader;
        }
        if (count > sw->used_cols)
            sw->used_cols = count;
        for (size_t c = 0; c < count; c++) {
            int oom;
            lxw_error e = write_cell(sw, r, c, &cells[c], &oom);
            if (e) {
                char ptr[KILN_POINTER_MAX];
                if (d->source == KILN_ROWS_INLINE)
                    snprintf(ptr, sizeof ptr, "%s/%llu/%zu", d->pointer ? d->pointer : "",
                             (unsigned long long)kiln_rows_index(rd), c);
                else
                    snprintf(ptr, sizeof ptr, "%s", d->pointer ? d->pointer : "");
                st = lxw_fail(err, e, ptr, "writing a cell");
                goto cleanup_reader;
            }
        }
        sw->next_row = r + 1;
    }
    if (more < 0)
        st = err->code != KILN_E_OK ? err->code : KILN_E_INPUT;

cleanup_reader:
    kiln_rows_close(rd);
    return st;
}

static kiln_status place_charts(sheetw *sw, kiln_error *err)
{
    xlsx_plan_sheet *ps = sw->ps;
    uint32_t row = sw->data && sw->data->header && sw->data->column_count ? 1 : 0;
    uint32_t col = (uint32_t)(sw->used_cols ? sw->used_cols : 1) + 1;
    for (size_t i = 0; i < ps->chart_count; i++) {
        const kiln_chart *c = ps->charts[i];
        uint32_t r = row, k = col;
        if (c->anchor_row >= 0 && c->anchor_col >= 0) {
            r = (uint32_t)c->anchor_row;
            k = (uint32_t)c->anchor_col;
        } else {
            uint32_t h = c->height_px ? c->height_px : 288;
            row += (h + ROW_PX - 1) / ROW_PX + 1;
            if (row >= LXW_ROW_MAX)
                row = LXW_ROW_MAX - 1;
        }
        kiln_status st = xlsx_chart_insert(&sw->w->data, ps, c, r, k, err);
        if (st != KILN_E_OK)
            return st;
    }
    return KILN_E_OK;
}

/* The spec's page setup, so a sheet prints as the user asked. Excel's paper
 * codes (ECMA-376 ST_PaperSize) and margins in inches. */
static void set_page_setup(lxw_worksheet *ws, const kiln_page *page)
{
    static const uint8_t paper_code[] = {
        [KILN_PAGE_A4] = 9, [KILN_PAGE_LETTER] = 1, [KILN_PAGE_LEGAL] = 5,
        [KILN_PAGE_A3] = 8, [KILN_PAGE_A5] = 11,
    };
    if ((unsigned)page->size < sizeof paper_code)
        worksheet_set_paper(ws, paper_code[page->size]);
    if (page->landscape)
        worksheet_set_landscape(ws);
    else
        worksheet_set_portrait(ws);
    worksheet_set_margins(ws, page->margin_left / 72.0, page->margin_right / 72.0,
                          page->margin_top / 72.0, page->margin_bottom / 72.0);
}

static kiln_status write_sheet_objects_before(sheetw *sw, const kiln_sheet *sh, kiln_error *err)
{
    const kiln_doc *doc = sw->w->doc;
    char ptr[KILN_POINTER_MAX];
    const char *sp = sh->pointer ? sh->pointer : "";
    /* Notes first: in constant_memory mode a cell above the current row can
     * no longer be addressed. */
    for (size_t i = 0; i < sh->comment_count; i++) {
        const kiln_comment *c = &sh->comments[i];
        lxw_comment_options o = {0};
        o.author = (char *)(c->author ? c->author : doc->metadata.author);
        const char *text = esc(sw->w, c->text);
        lxw_error e = text ? worksheet_write_comment_opt(sw->ws, c->row, (lxw_col_t)c->col, text,
                                                         &o)
                           : LXW_ERROR_MEMORY_MALLOC_FAILED;
        if (e) {
            snprintf(ptr, sizeof ptr, "%s/comments/%zu", sp, i);
            return lxw_fail(err, e, ptr, "adding a note");
        }
    }
    /* A merge without a value goes under the data, which then fills it. */
    for (size_t i = 0; i < sh->merge_count; i++) {
        if (sh->merges[i].value.kind != KILN_CELL_BLANK)
            continue;
        snprintf(ptr, sizeof ptr, "%s/merges/%zu", sp, i);
        kiln_status st = write_merge(sw, &sh->merges[i], ptr, err);
        if (st != KILN_E_OK)
            return st;
    }
    return KILN_E_OK;
}

static kiln_status write_sheet_objects_after(sheetw *sw, const kiln_sheet *sh, kiln_error *err)
{
    char ptr[KILN_POINTER_MAX];
    const char *sp = sh->pointer ? sh->pointer : "";
    kiln_status st;
    for (size_t i = 0; i < sh->merge_count; i++) {
        if (sh->merges[i].value.kind == KILN_CELL_BLANK)
            continue;
        snprintf(ptr, sizeof ptr, "%s/merges/%zu", sp, i);
        if ((st = write_merge(sw, &sh->merges[i], ptr, err)) != KILN_E_OK)
            return st;
    }
    for (size_t i = 0; i < sh->cond_format_count; i++) {
        snprintf(ptr, sizeof ptr, "%s/conditional_formats/%zu", sp, i);
        if ((st = write_cond_format(sw, &sh->cond_formats[i], ptr, err)) != KILN_E_OK)
            return st;
    }
    for (size_t i = 0; i < sh->validation_count; i++) {
        snprintf(ptr, sizeof ptr, "%s/validations/%zu", sp, i);
        if ((st = write_validation(sw, &sh->validations[i], ptr, err)) != KILN_E_OK)
            return st;
    }
    for (size_t i = 0; i < sh->image_count; i++) {
        const kiln_sheet_image *im = &sh->images[i];
        lxw_image_options o = {0};
        o.x_scale = im->scale > 0 ? im->scale : 1;
        o.y_scale = o.x_scale;
        o.description = (char *)(im->image->alt ? im->image->alt : "");
        lxw_error e = worksheet_insert_image_buffer_opt(sw->ws, im->row, (lxw_col_t)im->col,
                                                        im->image->data, im->image->size, &o);
        if (e) {
            snprintf(ptr, sizeof ptr, "%s/images/%zu", sp, i);
            return lxw_fail(err, e, ptr, "inserting an image");
        }
    }
    set_page_setup(sw->ws, &sw->w->doc->page);
    if (sh->freeze_rows || sh->freeze_cols)
        worksheet_freeze_panes(sw->ws, sh->freeze_rows, (lxw_col_t)sh->freeze_cols);
    if (sh->tab_color != KILN_COLOR_NONE)
        worksheet_set_tab_color(sw->ws, xlsx_color(sh->tab_color));
    return KILN_E_OK;
}

static kiln_status set_widths(sheetw *sw, kiln_error *err)
{
    double scale = sw->w->font_scale;
    for (size_t i = 0; i < sw->ncols; i++) {
        colstate *cs = &sw->cols[i];
        double width;
        if (!cs->autofit)
            width = cs->width;
        else if (cs->max_px == 0)
            continue;
        else
            width = xlsx_px_to_width((uint32_t)(cs->max_px * scale));
        lxw_error e = worksheet_set_column(sw->ws, (lxw_col_t)i, (lxw_col_t)i, width, NULL);
        if (e)
            return lxw_fail(err, e, sw->ps->pointer, "setting a column width");
    }
    return KILN_E_OK;
}

static kiln_status write_sheet(wctx *w, xlsx_plan_sheet *ps, kiln_error *err)
{
    static const kiln_table_data no_data = {0};
    sheetw sw = {.w = w, .ps = ps, .ws = ps->ws, .data = ps->data ? ps->data : &no_data};
    const kiln_sheet *sh = ps->sheet;
    const kiln_table_data *d = sw.data;
    int header = d->header && d->column_count > 0;
    int table = sh && sh->table;
    char **headers = NULL;
    kiln_status st = KILN_E_OK;

    if (ps->text_sheet) {
        st = write_text_sheet(&sw, err);
        goto finish;
    }
    if (ensure_cols(&sw, d->column_count) != 0) {
        st = oom_fail(err, ps->pointer);
        goto cleanup_cols;
    }
    sw.arrows = header && sh && (sh->autofilter || sh->table);
    if (sh && (st = write_sheet_objects_before(&sw, sh, err)) != KILN_E_OK)
        goto cleanup_cols;

    if (header) {
        if (table && !(headers = table_headers(&sw, d->column_count))) {
            st = oom_fail(err, ps->pointer);
            goto cleanup_cols;
        }
        for (size_t i = 0; i < d->column_count; i++) {
            colstate *cs = &sw.cols[i];
            const char *h = headers ? headers[i] : d->columns[i].header;
            xlsx_fmt_key k = {.style = no_style, .col_align = cs->align, .header = 1};
            k.style.wrap = h && has_break(h, strlen(h));
            int oom;
            lxw_format *f = xlsx_formats_get(w->formats, &k, &oom);
            if (oom) {
                st = oom_fail(err, ps->pointer);
                goto cleanup_cols;
            }
            if (!h || !*h) {
                lxw_error e = worksheet_write_blank(sw.ws, 0, (lxw_col_t)i, f);
                if (e) {
                    st = lxw_fail(err, e, ps->pointer, "writing the header row");
                    goto cleanup_cols;
                }
                continue;
            }
            /* Table names are escaped already (table_headers). */
            lxw_error e = headers ? worksheet_write_string(sw.ws, 0, (lxw_col_t)i, h, f)
                                  : put_string(w, sw.ws, 0, (lxw_col_t)i, h, strlen(h), f);
            if (e) {
                st = lxw_fail(err, e, ps->pointer, "writing the header row");
                goto cleanup_cols;
            }
            if (cs->autofit) {
                uint32_t px = xlsx_text_px(h, strlen(h));
                px = px * 11 / 10 + (sw.arrows ? HEADER_ARROW_PX : 0); /* bold */
                if (px > cs->max_px)
                    cs->max_px = px;
            }
        }
        sw.used_cols = d->column_count;
        sw.next_row = 1;
    }

    if (ps->data && (st = write_rows(&sw, err)) != KILN_E_OK)
        goto cleanup_cols;

    if (sh) {
        uint32_t last = sw.next_row ? sw.next_row - 1 : 0;
        if (table && sw.used_cols > 0) {
            if (!headers && !(headers = table_headers(&sw, sw.used_cols))) {
                st = oom_fail(err, ps->pointer);
                goto cleanup_cols;
            }
            /* Rows may be wider than the columns given: name the rest too. */
            if (sw.used_cols > d->column_count && !(headers = table_headers(&sw, sw.used_cols))) {
                st = oom_fail(err, ps->pointer);
                goto cleanup_cols;
            }
            if ((st = add_table(&sw, sh, headers, last, err)) != KILN_E_OK)
                goto cleanup_cols;
        } else if (sh->autofilter && sw.used_cols > 0 && sw.next_row > 0) {
            lxw_error e = worksheet_autofilter(sw.ws, 0, 0, last, (lxw_col_t)(sw.used_cols - 1));
            if (e) {
                st = lxw_fail(err, e, ps->pointer, "setting the autofilter");
                goto cleanup_cols;
            }
        }
        if ((st = write_sheet_objects_after(&sw, sh, err)) != KILN_E_OK)
            goto cleanup_cols;
    }

finish:
    if (st == KILN_E_OK)
        st = place_charts(&sw, err);
    if (st == KILN_E_OK)
        st = set_widths(&sw, err);

cleanup_cols:
    free(sw.cols);
    return st;
}

/* ---- the workbook ---- */

static int workbook_needs_memory(const xlsx_plan *plan)
{
    for (size_t i = 0; i < plan->count; i++) {
        const kiln_sheet *sh = plan->sheets[i].sheet;
        if (sh && (sh->merge_count > 0 || sh->table))
            return 1;
    }
    return 0;
}

static int workbook_needs_data_sheet(const xlsx_plan *plan)
{
    for (size_t i = 0; i < plan->count; i++) {
        const xlsx_plan_sheet *ps = &plan->sheets[i];
        for (size_t c = 0; c < ps->chart_count; c++)
            if (xlsx_chart_needs_data(ps->charts[c]))
                return 1;
        if (ps->sheet)
            for (size_t v = 0; v < ps->sheet->validation_count; v++)
                if (validation_needs_data(&ps->sheet->validations[v]))
                    return 1;
    }
    return 0;
}

/* Images are stored, not compressed away: if they alone pass the ceiling
 * there is no point writing anything. */
static kiln_status check_image_bytes(const xlsx_plan *plan, const kiln_output *out,
                                     kiln_error *err)
{
    uint64_t total = 0;
    for (size_t i = 0; i < plan->count; i++) {
        const kiln_sheet *sh = plan->sheets[i].sheet;
        for (size_t j = 0; sh && j < sh->image_count; j++)
            total += sh->images[j].image->size;
    }
    if (out->max_bytes && total > out->max_bytes)
        return kiln_error_limit(err, KILN_E_TOO_LARGE, "", out->max_bytes, total,
                                "the images alone (%llu bytes) exceed the output limit of "
                                "%llu bytes",
                                (unsigned long long)total, (unsigned long long)out->max_bytes);
    return KILN_E_OK;
}

static void set_properties(lxw_workbook *wb, const kiln_metadata *m)
{
    lxw_doc_properties p = {0};
    p.title = (char *)m->title;
    p.subject = (char *)m->subject;
    p.author = (char *)m->author;
    p.company = (char *)m->company;
    p.category = (char *)m->category;
    p.keywords = (char *)m->keywords;
    p.comments = (char *)m->description;
    if (m->has_created)
        p.created = (time_t)m->created;
    workbook_set_properties(wb, &p);
}

/* Free a workbook without writing it. libxlsxwriter's free leaves the
 * constant_memory temporary files open (workbook_close closes them while
 * assembling), so close them here. */
static void discard_workbook(lxw_workbook *wb)
{
    lxw_sheet *s;
    STAILQ_FOREACH(s, wb->sheets, list_pointers) {
        if (s->is_chartsheet)
            continue;
        lxw_worksheet *ws = s->u.worksheet;
        if (ws->optimize_tmpfile) {
            fclose(ws->optimize_tmpfile);
            ws->optimize_tmpfile = NULL;
            ws->file = NULL;
        }
    }
    lxw_workbook_free(wb);
}

kiln_status kiln_xlsx_write(const kiln_doc *doc, kiln_output *out, const kiln_render_options *opt,
                            kiln_render_result *result, kiln_error *err)
{
    (void)result; /* nothing to report besides success */
    kiln_arena arena;
    xlsx_plan plan;
    kiln_status st;
    lxw_workbook *wb = NULL;
    wctx w = {.doc = doc, .arena = &arena, .plan = &plan};

    kiln_arena_init(&arena, 0);
    if ((st = xlsx_plan_build(doc, &arena, &plan, err)) != KILN_E_OK)
        goto cleanup_arena;
    if ((st = check_image_bytes(&plan, out, err)) != KILN_E_OK)
        goto cleanup_arena;

    lxw_workbook_options wo = {0};
    wo.constant_memory = !workbook_needs_memory(&plan);
    /* libxlsxwriter ignores write errors on its scratch files, so a full
     * scratch disk would give a corrupt file that looks fine. Scratch files
     * therefore go beside the output by default: on the same filesystem, the
     * full disk is still full when the zip is written, and that error is
     * checked. */
    const char *tmp = opt && opt->tmp_dir && *opt->tmp_dir ? opt->tmp_dir
                                                           : kiln_output_dir_path(out);
    /* An unusable scratch directory would make libxlsxwriter print its own
     * error before failing: say it here instead. */
    if (tmp && access(tmp, W_OK | X_OK) != 0) {
        st = kiln_error_set(err, KILN_E_WRITE, NULL,
                            "the scratch directory '%s' is not a writable directory", tmp);
        goto cleanup_arena;
    }
    wo.tmpdir = (char *)tmp;
    wb = workbook_new_opt(kiln_output_path(out), &wo);
    if (!wb) {
        st = kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory creating the workbook");
        goto cleanup_arena;
    }
    set_properties(wb, &doc->metadata);
    w.wb = wb;
    w.font_scale = doc->theme.font_size > 0 ? doc->theme.font_size / 11.0 : 1.0;
    w.default_font = (!doc->theme.font || strcmp(doc->theme.font, "Calibri") == 0) &&
                     w.font_scale == 1.0;
    if (!(w.formats = xlsx_formats_new(wb, &doc->theme))) {
        st = oom_fail(err, NULL);
        goto cleanup_workbook;
    }

    /* All sheets first (the order of the tabs), then the hidden data sheet
     * last, then the content. */
    for (size_t i = 0; i < plan.count; i++) {
        plan.sheets[i].ws = workbook_add_worksheet(wb, plan.sheets[i].name);
        if (!plan.sheets[i].ws) {
            st = kiln_error_set(err, wo.constant_memory ? KILN_E_WRITE : KILN_E_NOMEM,
                                plan.sheets[i].pointer,
                                "cannot create worksheet '%s' (out of memory, or no "
                                "temporary file in the scratch directory)",
                                plan.sheets[i].name);
            goto cleanup_formats;
        }
    }
    w.data = (xlsx_chart_ctx){
        .wb = wb, .doc = doc, .arena = &arena, .plan = &plan, .theme = &doc->theme};
    if (workbook_needs_data_sheet(&plan)) {
        char name[XLSX_SHEET_NAME_BUF];
        snprintf(name, sizeof name, "%s", XLSX_DATA_SHEET);
        for (unsigned k = 2; xlsx_plan_find(&plan, name); k++)
            snprintf(name, sizeof name, "%s (%u)", XLSX_DATA_SHEET, k);
        w.data.data_name = kiln_arena_strdup(&arena, name);
        if (!w.data.data_name) {
            st = oom_fail(err, NULL);
            goto cleanup_formats;
        }
        w.data.data_ws = workbook_add_worksheet(wb, w.data.data_name);
        if (!w.data.data_ws) {
            st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create the chart data sheet");
            goto cleanup_formats;
        }
        worksheet_hide(w.data.data_ws);
    }

    for (size_t i = 0; i < plan.count; i++)
        if ((st = write_sheet(&w, &plan.sheets[i], err)) != KILN_E_OK) {
            kiln_error_locate(err, plan.sheets[i].pointer);
            goto cleanup_formats;
        }
    if (!wo.constant_memory && (st = xlsx_chart_fill_caches(&w.data, err)) != KILN_E_OK)
        goto cleanup_formats;

    xlsx_formats_free(w.formats);
    lxw_error e = workbook_close(wb); /* frees wb, whatever the outcome */
    if (e)
        st = xlsx_lxw_error(err, e, NULL, "writing the xlsx file");
    free(w.data.esc);
    kiln_arena_release(&arena);
    return st;

cleanup_formats:
    xlsx_formats_free(w.formats);
cleanup_workbook:
    discard_workbook(wb);
cleanup_arena:
    free(w.data.esc);
    kiln_arena_release(&arena);
    return st;
}
