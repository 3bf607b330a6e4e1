/*
 * parse_sheet.c - sheets: the names, freeze panes, tables, merges,
 * conditional formats, validations, sheet charts, images and comments, over
 * the sheet's data (parse_table_data.c; charts and images in parse_chart.c
 * and parse_image.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "spec_internal.h"
#include "../../common/banned.h"

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
                    kiln_perr(c, "name",
                              "another sheet is already named \"%s\" (names are "
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
        size_t width = y < hdr              ? td->column_count
                       : json_is_array(rv)  ? json_array_size(rv)
                       : json_is_object(rv) ? td->column_count
                                            : 0;
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
        kiln_perr(c, NULL,
                  "the merge covers %s%u, which holds data the merge would hide (only "
                  "the top-left cell of a merged range is shown); leave the other "
                  "cells of a merge empty (null)",
                  name, (unsigned)row + 1);
    } else if (has_value && merge_finds_data(&sh->data, &mg->range, 0, &row, &col)) {
        kiln_col_name(col, name);
        kiln_perr(c, NULL,
                  "the merge has a \"value\" but its top-left cell %s%u holds data "
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
                kiln_perr(c, key,
                          "\"%s\" cannot be used in a conditional format's style "
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
    static const char *const crit[] = {"==", "!=",      ">",           ">=", "<",
                                       "<=", "between", "not_between", NULL};
    static const char *const cell_allowed[] = {"range",   "type",  "criteria", "value",
                                               "maximum", "style", NULL};
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
        kiln_check_members(c, f,
                           type == 0   ? cell_allowed
                           : type == 1 ? scale_allowed
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
                kiln_perr(c, "maximum",
                          "\"maximum\" belongs to \"between\" and "
                          "\"not_between\"");
            kiln_get_number(c, f, "maximum", -1e308, 1e308, &cf->maximum);
            const json_t *st = json_object_get(f, "style");
            memset(&cf->style, 0, sizeof cf->style);
            cf->style.color = cf->style.fill = KILN_COLOR_NONE;
            if (!st)
                kiln_perr(c, NULL,
                          "missing \"style\": a cell rule without one would do "
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
            kiln_perr(c, vals ? "values" : NULL,
                      "expected \"values\": a non-empty array of "
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
    } kinds[] = {{"Table Style Light ", 21},
                 {"Table Style Medium ", 28},
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
        kiln_perr(c, NULL,
                  "expected true, false or {\"name\": ..., \"style\": ..., "
                  "\"total_row\": ...}");
        goto pop;
    }
    kiln_check_members(c, t, allowed);
    sh->table = 1;
    kiln_get_string(c, t, "name", &sh->table_name);
    if (sh->table_name && !table_name_ok(sh->table_name))
        kiln_perr(c, "name",
                  "a table name starts with a letter or '_', holds only letters, "
                  "digits, '_' and '.', and does not read as a cell reference");
    if (kiln_get_string(c, t, "style", &sh->table_style) == 0 && sh->table_style &&
        !table_style_ok(sh->table_style))
        kiln_perr(c, "style",
                  "\"%s\" is not an Excel table style: expected \"Table Style "
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
        "name",        "columns",    "rows",   "data",     "header",
        "freeze",      "autofilter", "table",  "merges",   "conditional_formats",
        "validations", "charts",     "images", "comments", "tab_color",
        NULL};
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
        kiln_perr(c, "autofilter",
                  "\"autofilter\" and \"table\" exclude each other (a table "
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
