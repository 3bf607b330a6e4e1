/*
 * spec_internal.h - declarations shared by the spec parser's own files
 * (artifacts/spec/). Writers include spec.h only; nothing here is a stable
 * interface.
 *
 * The files in layers, each calling only files of the layers below it (make
 * check's cycles part, tests/check_cycles.py, fails on a call back up):
 *
 *   top     spec_parse.c        kiln_doc_parse / kiln_doc_load: the root,
 *                               metadata, theme and page; the doc's life
 *   walk    parse_sheet.c       sheets and what they hold
 *           parse_content.c     blocks, lists, runs, slides
 *   shared  parse_table_data.c  a table's columns, rows and data source (a
 *                               sheet's or a table block's)
 *           parse_chart.c       a chart object, wherever it is placed
 *           parse_image.c       an image object, wherever it is placed
 *           markdown.c          a markdown block's text to blocks (md4c)
 *   state   parse_state.c       the walk's kiln_pctx: errors at the current
 *                               pointer, the spec loaded a piece at a time,
 *                               member getters, sheet-name rules
 *           rows.c              row readers: inline JSON, CSV, JSON Lines
 *   values  parse_cell.c        default limits, JSON Pointers, UTF-8, the
 *                               tree scan, colors, styles, cells
 *   bottom  json_text.c         the spec's text walked without a tree
 *           cellref.c           A1 references, ranges, ISO dates
 *           image.c             files beneath the base directory, PNG/JPEG
 */
#ifndef KILN_SPEC_INTERNAL_H
#define KILN_SPEC_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/arena.h"
#include "../../common/error.h"
#include "../../common/pointer.h"
#include "../../common/utf8.h"
#include "spec.h"

/* Everything a kiln_doc owns besides its public members. The model owns
 * every string it holds (arena copies): no JSON tree outlives the parse. */
struct kiln_doc_private {
    kiln_arena arena;   /* the model itself (the kiln_doc struct included) */
    kiln_limits limits; /* limits the doc was parsed with; row readers apply them */
};

/* What kiln_table_data.private_rows points to for inline rows (a table's
 * "rows" in the spec, or a markdown table's): the rows' JSON text, an arena
 * copy, and each row's bytes in it. A reader has jansson build one row at a
 * time, so rows cost their text, not a tree of it (a tree of a million rows
 * of five numbers is some 260 MB; their text 40 MB). */
typedef struct kiln_inline_rows {
    const char *text;
    size_t len;
    const struct kiln_span *rows;
    size_t count;
} kiln_inline_rows;

/* What kiln_table_data.private_rows points to for CSV / JSON Lines sources:
 * the path relative to doc->base_dir, so kiln_rows_open can walk it again
 * without following symbolic links. */
typedef struct kiln_data_file {
    const char *rel_path;
    const char *display; /* the path as written in the spec, for messages */
} kiln_data_file;

/* Longest CSV record / JSON Lines line a reader accepts (the bounded buffer). */
#define KILN_RECORD_MAX (16u << 20)

/* ---- the spec's text (json_text.c) ----
 * The parser never has jansson build the whole spec: it checks the text's
 * syntax once, then builds one piece at a time (a block, a slide, a sheet
 * without its rows, one row) from the byte spans the walkers find. */

/* Bytes [off, off + len) of a text. A spec is at most 4 GiB (its limit is far
 * below), so 32 bits each. */
typedef struct kiln_span {
    uint32_t off, len;
} kiln_span;

/* A syntax error: where (a byte offset) and what. */
typedef struct kiln_json_syntax {
    size_t offset;
    int too_deep; /* nested past jansson's own ceiling */
    char what[160];
} kiln_json_syntax;

/* 0 when s[0..len) is one JSON value (RFC 8259) that jansson would take
 * too (integers within 64 bits, reals within a double, valid UTF-8); else -1
 * and *e says where and what. Builds nothing. */
int kiln_json_check(const char *s, size_t len, kiln_json_syntax *e);
/* The position of the first non-whitespace byte at or after pos. */
size_t kiln_json_skip_ws(const char *s, size_t len, size_t pos);
/* On checked text: the end of the value that starts at pos. */
size_t kiln_json_value_end(const char *s, size_t len, size_t pos);

/* Walking an array's elements or an object's members, on checked text. */
typedef struct kiln_json_iter {
    const char *s;
    size_t len, pos;
} kiln_json_iter;
/* container: the span of an array or object value. */
void kiln_json_iter_init(kiln_json_iter *it, const char *s, size_t len, kiln_span container);
/* The next element's span; 0 at the end. */
int kiln_json_next_element(kiln_json_iter *it, kiln_span *el);
/* The next member: its name's span (the quoted string) and its value's. */
int kiln_json_next_member(kiln_json_iter *it, kiln_span *key, kiln_span *value);
/* Elements (or members) of a container. */
size_t kiln_json_count(const char *s, size_t len, kiln_span container);
/* 1 when the member name at key (a quoted string) is name[0..n). */
int kiln_json_key_is(const char *s, kiln_span key, const char *name, size_t n);
/* jansson's tree of one value of the text (a new reference; duplicate
 * members refused, NUL allowed as the whole spec's parse allows it); NULL
 * with *e (offset into s) when jansson refuses it. */
json_t *kiln_json_load_span(const char *s, kiln_span span, kiln_json_syntax *e);
/* 1-based line and column (in characters) of a byte offset, for messages. */
void kiln_json_line_col(const char *s, size_t len, size_t offset, int *line, int *column);

/* ---- JSON Pointer building: common/pointer.h ---- */

/* ---- strings ---- */
/* Code points in valid UTF-8 of len bytes. */
size_t kiln_utf8_count(const char *s, size_t len);
/* Byte offset of the first character XML 1.0 forbids (NUL and other C0
 * controls except tab/LF/CR, U+FFFE, U+FFFF), or -1 when there is none. */
long kiln_xml_illegal_at(const char *s, size_t len);

/* ---- colors, styles and cells (parse_cell.c) ---- */
/* "#RRGGBB" or "RRGGBB" -> 0xRRGGBB; -1 when malformed. */
int32_t kiln_color_parse(const char *s);

/*
 * Convert one JSON cell value under a column type into *out. style is the
 * scratch the cell's own style (if any) is written into; out->style points at
 * it. Strings are borrowed from v. On error returns -1 and fills err with a
 * pointer RELATIVE to the cell ("" for the cell itself, "/style/bold" for a
 * member) that the caller prefixes with the cell's own pointer.
 */
int kiln_cell_from_json(const json_t *v, kiln_column_type type, const kiln_limits *lim,
                        kiln_cell *out, kiln_style *style, kiln_error *err);
/* Parse a style object into *st; errors as above (relative pointers). */
int kiln_style_from_json(const json_t *v, kiln_style *st, kiln_error *err);
/* Prefix err->pointer with prefix (an absolute pointer). */
void kiln_error_prefix(kiln_error *err, const char *prefix);

/* Text field conversion for CSV fields under a column type. Returns 0, or -1
 * with a message (no pointer) in err. text must be NUL-terminated. */
int kiln_cell_from_text(const char *text, size_t len, kiln_column_type type,
                        const kiln_limits *lim, kiln_cell *out, kiln_error *err);

/* The scan over a JSON tree: nesting depth, strings XML cannot hold, and
 * the total string bytes; and every string's line breaks made LF (a CR LF or a
 * lone CR becomes LF, in place: run it before borrowing any string). root sits
 * at prefix (a JSON Pointer) in the spec, which also gives its depth there (one
 * more than prefix's segments). Adds errors (absolute pointers under prefix) to
 * errs, or when errs is NULL fills err with the first one. Returns the number of
 * errors found. *string_bytes is increased by the bytes of the strings as
 * written. */
size_t kiln_json_scan(json_t *root, const char *prefix, const kiln_limits *lim,
                      uint64_t *string_bytes, kiln_errors *errs, kiln_error *err);
/* Only the line breaks of the scan: every string of v made LF-only. 0, or -1
 * when out of memory. */
int kiln_json_breaks_to_lf(json_t *v);

/* ---- rows (rows.c) ---- */
/*
 * Convert one JSON row (array, or object looked up by column key) of table t
 * into cells/styles, which need room for max(t->column_count, row length)
 * entries (callers bound that by lim->columns first; see kiln_json_row_width).
 * *count gets the number of cells (column_count when columns are given).
 * Returns the number of errors found. With errs every bad cell is added, with
 * the pointer rows_ptr + "/" + index + "/" + column (+ member); without errs
 * the first one goes to err (rows_ptr NULL: pointer relative to the row).
 */
size_t kiln_json_row(const json_t *row, const kiln_table_data *t, const kiln_limits *lim,
                     const char *rows_ptr, uint64_t index, kiln_cell *cells, kiln_style *styles,
                     size_t *count, kiln_errors *errs, kiln_error *err);
/* Cells a row needs room for: max(column_count, array length). */
size_t kiln_json_row_width(const json_t *row, const kiln_table_data *t);
/* Inline rows from a JSON array of rows (a markdown table's): each row's
 * compact text, in arena. NULL when out of memory. */
kiln_inline_rows *kiln_inline_rows_from_json(kiln_arena *arena, const json_t *rows);
/* jansson's tree of inline row i (a new reference); NULL when out of memory
 * (the text was checked when it was kept). */
json_t *kiln_inline_row(const kiln_inline_rows *rows, size_t i);

/* Read the first record of a CSV file as column names (arena copies).
 * Errors as kiln_rows_next reports them. 0 / -1. */
int kiln_csv_header(const char *base_dir, const kiln_table_data *t, const kiln_limits *lim,
                    kiln_arena *arena, char ***names, size_t *count, kiln_error *err);

/* Open a reader without a kiln_doc (the parser uses this before the doc is
 * finished). */
kiln_status kiln_rows_open_with(const char *base_dir, const kiln_limits *lim,
                                const kiln_table_data *table, kiln_row_reader **out,
                                kiln_error *err);

/* ---- references and dates (cellref.c) ---- */
/* Split an optional sheet prefix ("'My sheet'!A1:B2", "Data!A1") off a range:
 * *sheet gets the unquoted sheet name in sheet_buf (or NULL when none), *rest
 * the part after '!'. Returns 0, or -1 when the prefix is malformed. */
int kiln_ref_split_sheet(const char *ref, char *sheet_buf, size_t cap, const char **sheet,
                         const char **rest);
/* Parse ISO 8601 date / date-time into fields; zone designator skipped.
 * Returns 0 / -1. */
int kiln_iso_parse(const char *iso, int *y, int *mo, int *d, int *h, int *mi, double *sec,
                   int *has_time);
/* The same, also giving the zone designator's offset east of UTC in minutes
 * (+05:00 -> 300, -0530 -> -330; 0 for Z or no zone). */
int kiln_iso_parse_zone(const char *iso, int *y, int *mo, int *d, int *h, int *mi, double *sec,
                        int *has_time, int *zone_minutes);
/* Days from 1970-01-01 to the given civil date (proleptic Gregorian). */
int64_t kiln_days_from_civil(int64_t y, unsigned m, unsigned d);

/* ---- files and images (image.c) ---- */
/* kiln_open_beneath: spec.h (the batch runner opens its spec files with it too). */

/* Recognise PNG/JPEG bytes and read their size and resolution. 0 / -1 (why). */
int kiln_image_probe(const unsigned char *data, size_t size, kiln_image *img, char *why,
                     size_t why_cap);

/* Decode base64 (RFC 4648, padding optional, whitespace ignored) into a new
 * buffer from arena; -1 on malformed input (why), -2 when the decoded size
 * would pass max_bytes, -3 out of memory. */
int kiln_base64_decode(kiln_arena *arena, const char *in, size_t len, uint64_t max_bytes,
                       unsigned char **out, size_t *out_len, char *why, size_t why_cap);

/* Read the whole regular file fd into arena memory, at most max_bytes.
 * Returns 0, -1 read error (why), -2 too large (*size gets the file size),
 * -3 out of memory. Closes nothing. */
int kiln_read_fd(kiln_arena *arena, int fd, uint64_t max_bytes, unsigned char **out, size_t *size,
                 char *why, size_t why_cap);

/* ---- the parser's working state (parse_state.c) ---- */
typedef enum { KILN_IN_SHEET, KILN_IN_BLOCK, KILN_IN_SLIDE } kiln_chart_place;

typedef struct kiln_pctx {
    kiln_doc *doc;
    kiln_arena *arena;
    kiln_limits lim;
    const char *base_dir;
    int scan_data;
    kiln_errors *errs;
    kiln_ptr ptr; /* pointer of the value being validated */
    uint32_t image_count;
    uint64_t image_total;
    int nomem;        /* an allocation failed: stop and report once */
    const char *text; /* the spec's JSON text (checked), while it is parsed */
    size_t text_len;
    const json_t *tree;      /* or the spec's tree (kiln_doc_parse_json; text is NULL),
                                borrowed: the pieces are copies of its values */
    uint64_t string_bytes;   /* of the strings scanned so far (the string_bytes limit) */
    struct kiln_hole *holes; /* the arrays left out of the pieces loaded (kiln_pload) */
    size_t hole_count, hole_cap;
    const char **sheet_names; /* every sheet's (final) name, for range prefixes */
    size_t sheet_name_count;
    const char *cur_sheet;              /* the sheet being validated, or NULL */
    uint32_t chart_width, chart_height; /* theme.json defaults */
    const char *table_style;            /* theme.json default */
} kiln_pctx;

/* ---- the spec loaded a piece at a time (parse_state.c) ----
 * A piece is a value of the text (the root object, a block, a slide, a
 * sheet, a row) loaded by jansson. Its big arrays are left out of it: each
 * member on a holes path whose value is a non-empty array is loaded as an
 * empty array, a hole standing for the array's span of the text, which the
 * parser then walks an element at a time. Paths are member names, "a" or
 * "a/b" (b inside a's object), NULL-terminated.
 *
 * A spec given as a tree (kiln_doc_parse_json) is taken the same way: a
 * piece is a copy of one of its values (the scan changes what it scans, and
 * the spec is the caller's), its holes left out of the copy just as the
 * text's are, each standing for the spec's own array. The parser sees the
 * same pieces in both modes; only the walkers below know which it is. */
typedef struct kiln_hole {
    const json_t *placeholder; /* the empty array in the piece's tree */
    kiln_span span;            /* the array it stands for (text mode) */
    const json_t *array;       /* ... (tree mode: the spec's, borrowed) */
    const char *path;          /* its holes path */
} kiln_hole;

/* Load the piece at span, its arrays on holes left out (holes may be NULL);
 * it is scanned (depth, characters, string bytes) with pointer as its own.
 * A new reference, or NULL when the text is refused (the error is
 * reported). Forget its holes with kiln_phole_pop(c, mark) once it is freed,
 * mark being c->hole_count before the call. */
json_t *kiln_pload(kiln_pctx *c, kiln_span span, const char *const *holes, const char *pointer);
/* The same for a value of the spec's tree (a spec given as one, kiln_doc_parse_json): a
 * copy, its holes left out likewise. */
json_t *kiln_pload_tree(kiln_pctx *c, const json_t *v, const char *const *holes,
                        const char *pointer);
void kiln_phole_pop(kiln_pctx *c, size_t mark);
/* Report a syntax error of the spec's text (e from kiln_json_check or a
 * piece's load) with its line and column. */
void kiln_perr_syntax(kiln_pctx *c, const kiln_json_syntax *e);
/* The hole the array v stands for, else NULL. */
const kiln_hole *kiln_phole(const kiln_pctx *c, const json_t *v);
/* Elements of the array v, a hole or not. */
size_t kiln_parray_size(const kiln_pctx *c, const json_t *v);

/* Walking the elements of a piece's array, a hole (its text's elements, or
 * the spec tree's) or not (an empty array: none), a piece at a time:
 *
 *   kiln_pwalk w;
 *   size_t n = kiln_pwalk_init(&w, c, arr);
 *   while (kiln_pwalk_next(&w)) {
 *       json_t *el = kiln_pwalk_load(&w, holes, pointer);  (w.index: which)
 *       ...
 *   }
 */
typedef struct kiln_pwalk {
    kiln_pctx *c;
    kiln_span span;      /* text mode: the array's */
    const json_t *array; /* tree mode: the array's (NULL: no elements) */
    kiln_json_iter it;
    kiln_span el; /* text mode: the current element's */
    size_t index; /* the current element's (after kiln_pwalk_next) */
    size_t count;
    int started;
} kiln_pwalk;
/* Start at the elements of v; returns how many there are. */
size_t kiln_pwalk_init(kiln_pwalk *w, kiln_pctx *c, const json_t *v);
/* On to the next element: 1, or 0 past the last. */
int kiln_pwalk_next(kiln_pwalk *w);
/* The current element as a piece, as kiln_pload gives it (holes, scan,
 * errors, kiln_phole_pop). */
json_t *kiln_pwalk_load(kiln_pwalk *w, const char *const *holes, const char *pointer);
/* 1 when the current element is an object (without loading it). */
int kiln_pwalk_is_object(const kiln_pwalk *w);
/* The elements of the array v as the model keeps inline rows (rows.c):
 * their text, an arena copy (tree mode: each element's compact text). NULL
 * when out of memory (reported). */
kiln_inline_rows *kiln_pwalk_keep_rows(kiln_pctx *c, const json_t *v);
/* Arena copy of a JSON string's value (its length, NULs and all); NULL when
 * out of memory (reported). */
const char *kiln_pstrdup(kiln_pctx *c, const json_t *s);
/* Copy a cell's strings (and style font) into the arena, for a cell the
 * model keeps (kiln_cell_from_json borrows from the tree). 0 / -1 (reported). */
int kiln_pcell_own(kiln_pctx *c, kiln_cell *cell);

/* Errors at the current pointer, or at member under it (member may be NULL). */
void kiln_perr(kiln_pctx *c, const char *member, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void kiln_perr_code(kiln_pctx *c, kiln_status code, const char *member, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void kiln_perr_limit(kiln_pctx *c, const char *member, uint64_t limit, uint64_t actual,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Add a ready error (its pointer relative to the current one). */
void kiln_perr_rel(kiln_pctx *c, kiln_error *e);
void kiln_pnomem(kiln_pctx *c);
/* Report members of obj that are not in allowed (NULL-terminated). Returns
 * how many there were. */
size_t kiln_check_members(kiln_pctx *c, const json_t *obj, const char *const *allowed);
/* Arena copy of the current pointer (plus member). */
const char *kiln_ptr_dup(kiln_pctx *c, const char *member);
/* Text that cannot break (chart text, the page header): s with each line
 * feed a space, s itself when it has none (or when out of memory, reported). */
const char *kiln_one_line(kiln_pctx *c, const char *s);

/* Member getters: absent members leave *out alone and return 0; a wrong
 * type reports an error at the member and returns -1. Strings are arena
 * copies. */
int kiln_get_string(kiln_pctx *c, const json_t *obj, const char *key, const char **out);
int kiln_get_bool(kiln_pctx *c, const json_t *obj, const char *key, int *out);
int kiln_get_number(kiln_pctx *c, const json_t *obj, const char *key, double min, double max,
                    double *out);
int kiln_get_int(kiln_pctx *c, const json_t *obj, const char *key, int64_t min, int64_t max,
                 int64_t *out);
/* names NULL-terminated; *out = index. expected: text for the message. */
int kiln_get_enum(kiln_pctx *c, const json_t *obj, const char *key, const char *const *names,
                  int *out);
int kiln_get_color(kiln_pctx *c, const json_t *obj, const char *key, int32_t *out);
/* A length (number of points or "20mm", "2.5cm", "1in", "72pt"). */
int kiln_get_length(kiln_pctx *c, const json_t *obj, const char *key, double min, double max,
                    double *out);
/* Sheet names compared as Excel does, ignoring case: 1 when a and b (valid
 * UTF-8) are equal once every code point is folded with towlower_l in a
 * C.UTF-8 locale object (ASCII folding only if that locale is missing). */
int kiln_name_equal_fold(const char *a, const char *b);
/* Sheet-name rules without uniqueness; NULL when fine, else what is wrong. */
const char *kiln_sheet_name_problem(const char *name, size_t len);

/* ---- what sheets and content both hold ---- */
/* A table's data (parse_table_data.c): columns + rows/data + header of obj
 * into td. */
void kiln_parse_table_data(kiln_pctx *c, const json_t *obj, kiln_table_data *td);
/* Parse a chart object at the current pointer (parse_chart.c). extra:
 * additional allowed members (NULL-terminated) beyond the chart's own. */
void kiln_parse_chart(kiln_pctx *c, const json_t *obj, kiln_chart *ch, kiln_chart_place place,
                      const char *const *extra);
/* An image object at the current pointer (parse_image.c); NULL on error
 * (reported). */
kiln_image *kiln_parse_image(kiln_pctx *c, const json_t *v);

/* ---- sheets (parse_sheet.c) and content (parse_content.c) ---- */
void kiln_parse_sheets(kiln_pctx *c, const json_t *arr);
void kiln_parse_blocks(kiln_pctx *c, const json_t *arr);
void kiln_parse_slides(kiln_pctx *c, const json_t *arr);
int kiln_parse_text(kiln_pctx *c, const json_t *obj, kiln_text *out, int required);

#endif
