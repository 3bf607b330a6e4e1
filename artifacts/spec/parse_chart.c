/*
 * parse_chart.c - a chart object of the spec (kiln_parse_chart), as a sheet,
 * a chart block and a slide place it: its kind, series, categories (literal
 * values or ranges of a sheet's cells, sheet-qualified here), axes and
 * legend.
 */
#include <math.h>
#include <string.h>

#include "spec_internal.h"
#include "../../common/banned.h"

static const char *quote_sheet(kiln_pctx *c, const char *sheet, const char *rest)
{
    /* Always quoted, apostrophes doubled: one form every consumer parses. */
    size_t n = strlen(sheet), q = 0;
    for (size_t i = 0; i < n; i++)
        q += sheet[i] == '\'';
    size_t rest_len = strlen(rest);
    char *out = kiln_arena_alloc(c->arena, n + q + rest_len + 4);
    if (!out) {
        kiln_pnomem(c);
        return NULL;
    }
    char *p = out;
    *p++ = '\'';
    for (size_t i = 0; i < n; i++) {
        *p++ = sheet[i];
        if (sheet[i] == '\'')
            *p++ = '\'';
    }
    *p++ = '\'';
    *p++ = '!';
    memcpy(p, rest, rest_len + 1);
    return out;
}

/* A range (or single cell when cell_only) string inside a sheet chart:
 * checks it and returns it normalised to "'Sheet'!A1:B2"; *cells gets the
 * number of cells. NULL (reported) when bad. */
static const char *chart_ref(kiln_pctx *c, const char *member, const json_t *v,
                             kiln_chart_place place, int cell_only, size_t *cells)
{
    if (place != KILN_IN_SHEET) {
        kiln_perr(c, member,
                  "a range string works only in a sheet's chart; give the values "
                  "themselves");
        return NULL;
    }
    const char *s = json_string_value(v);
    char sheet_buf[128];
    const char *sheet, *rest;
    kiln_range r;
    if (*s == '=')
        s++;
    if (kiln_ref_split_sheet(s, sheet_buf, sizeof sheet_buf, &sheet, &rest) != 0 ||
        kiln_range_parse(rest, &r) != 0 ||
        (cell_only && (r.first_row != r.last_row || r.first_col != r.last_col))) {
        kiln_perr(c, member,
                  cell_only ? "expected a cell reference such as \"B1\" or "
                              "\"'Other sheet'!B1\""
                            : "expected a range such as \"A2:A13\" or \"'Other "
                              "sheet'!B2:B13\"");
        return NULL;
    }
    /* A chart reads a range as one list of values (or categories): a range
     * of several rows and several columns has no one order. */
    if (!cell_only && r.first_row != r.last_row && r.first_col != r.last_col) {
        kiln_perr(c, member,
                  "a range of %u rows by %u columns; expected one row or one "
                  "column, such as \"B2:B13\" or \"B2:M2\"",
                  (unsigned)(r.last_row - r.first_row + 1),
                  (unsigned)(r.last_col - r.first_col + 1));
        return NULL;
    }
    if (sheet) {
        const char *found = NULL;
        for (size_t i = 0; i < c->sheet_name_count && !found; i++)
            if (c->sheet_names[i] && kiln_name_equal_fold(c->sheet_names[i], sheet))
                found = c->sheet_names[i];
        if (!found) {
            kiln_perr(c, member, "there is no sheet named \"%s\"", sheet);
            return NULL;
        }
        sheet = found;
    } else {
        sheet = c->cur_sheet ? c->cur_sheet : "Sheet1";
    }
    *cells = (size_t)(r.last_row - r.first_row + 1) * (r.last_col - r.first_col + 1);
    return quote_sheet(c, sheet, rest);
}

/* Does a series name read as a cell reference? Only an explicit form counts:
 * "=B1" always (a typo in it is an error), and "Sheet!B1" / "'My sheet'!B1"
 * when it parses as one. A bare "Q1" is far more often a name than a
 * reference, and "Wow!" is just a name. */
static int looks_like_ref(const char *s)
{
    if (*s == '=')
        return 1;
    if (!strchr(s, '!'))
        return 0;
    char buf[128];
    const char *sheet, *rest;
    uint32_t r, c;
    return kiln_ref_split_sheet(s, buf, sizeof buf, &sheet, &rest) == 0 && sheet &&
           kiln_cell_ref_parse(rest, &r, &c) == 0;
}

static void parse_series(kiln_pctx *c, const json_t *s, kiln_series *se, kiln_chart_place place)
{
    static const char *const allowed[] = {"name", "values", "color", NULL};
    se->color = KILN_COLOR_NONE;
    if (!json_is_object(s)) {
        kiln_perr(c, NULL, "expected a series {\"name\": ..., \"values\": [...]}");
        return;
    }
    kiln_check_members(c, s, allowed);
    const json_t *nm = json_object_get(s, "name");
    if (nm) {
        if (!json_is_string(nm)) {
            kiln_perr(c, "name", "expected a string");
        } else if (place == KILN_IN_SHEET && looks_like_ref(json_string_value(nm))) {
            size_t cells;
            se->name_ref = chart_ref(c, "name", nm, place, 1, &cells);
        } else {
            se->name = kiln_one_line(c, json_string_value(nm));
        }
    }
    kiln_get_color(c, s, "color", &se->color);
    const json_t *v = json_object_get(s, "values");
    if (!v) {
        kiln_perr(c, NULL, "missing \"values\"");
        return;
    }
    if (json_is_string(v)) {
        se->values_ref = chart_ref(c, "values", v, place, 0, &se->value_count);
        return;
    }
    if (!json_is_array(v)) {
        kiln_perr(c, "values",
                  place == KILN_IN_SHEET ? "expected an array of numbers (or null) or a range"
                                         : "expected an array of numbers (or null)");
        return;
    }
    size_t n = json_array_size(v);
    se->values = kiln_arena_calloc(c->arena, n ? n : 1, sizeof *se->values);
    if (!se->values) {
        kiln_pnomem(c);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        if (json_is_null(e)) {
            /* A missing point: a gap, as an empty cell is in a range. */
            se->values[i] = NAN;
            continue;
        }
        if (!json_is_number(e)) {
            size_t saved = kiln_ptr_push(&c->ptr, "values");
            kiln_ptr_push_index(&c->ptr, i);
            kiln_perr(c, NULL, "expected a number, or null for a missing point");
            kiln_ptr_pop(&c->ptr, saved);
            continue;
        }
        se->values[i] = json_number_value(e);
    }
    se->value_count = n;
}

static void parse_axis(kiln_pctx *c, const json_t *ch, const char *key, const char **title)
{
    static const char *const allowed[] = {"title", NULL};
    const json_t *a = json_object_get(ch, key);
    if (!a)
        return;
    size_t saved = kiln_ptr_push(&c->ptr, key);
    if (!json_is_object(a))
        kiln_perr(c, NULL, "expected {\"title\": ...}");
    else {
        kiln_check_members(c, a, allowed);
        kiln_get_string(c, a, "title", title);
        *title = kiln_one_line(c, *title);
    }
    kiln_ptr_pop(&c->ptr, saved);
}

void kiln_parse_chart(kiln_pctx *c, const json_t *obj, kiln_chart *ch, kiln_chart_place place,
                      const char *const *extra)
{
    static const char *const base[] = {"kind",   "title",  "stacked", "categories",
                                       "series", "x_axis", "y_axis",  "legend",
                                       "width",  "height", NULL};
    static const char *const kinds[] = {"column",   "bar",     "line", "pie",
                                        "doughnut", "scatter", "area", NULL};
    static const char *const legends[] = {"right", "left", "top", "bottom", "none", NULL};
    ch->anchor_row = ch->anchor_col = -1;
    ch->width_px = c->chart_width;
    ch->height_px = c->chart_height;
    ch->pointer = kiln_ptr_dup(c, NULL);
    if (!json_is_object(obj)) {
        kiln_perr(c, NULL, "expected a chart object");
        return;
    }
    /* The allowed members are the chart's own plus the place's extras. */
    const char *allowed[24];
    size_t na = 0;
    for (size_t i = 0; base[i]; i++)
        allowed[na++] = base[i];
    for (size_t i = 0; extra && extra[i] && na < 23; i++)
        allowed[na++] = extra[i];
    allowed[na] = NULL;
    kiln_check_members(c, obj, allowed);

    int kind = -1;
    kiln_get_enum(c, obj, "kind", kinds, &kind);
    if (kind < 0 && !json_object_get(obj, "kind"))
        kiln_perr(c, NULL, "missing \"kind\"");
    ch->kind = (kiln_chart_kind)(kind < 0 ? 0 : kind);
    /* Chart text is one line (docs/spec.md "Line breaks"). */
    kiln_get_string(c, obj, "title", &ch->title);
    ch->title = kiln_one_line(c, ch->title);
    kiln_get_bool(c, obj, "stacked", &ch->stacked);
    if (ch->stacked && kind >= 0 && ch->kind != KILN_CHART_COLUMN && ch->kind != KILN_CHART_BAR &&
        ch->kind != KILN_CHART_AREA)
        kiln_perr(c, "stacked", "\"stacked\" applies to column, bar and area charts");
    int legend = 0;
    kiln_get_enum(c, obj, "legend", legends, &legend);
    ch->legend = (kiln_legend)legend;
    parse_axis(c, obj, "x_axis", &ch->x_title);
    parse_axis(c, obj, "y_axis", &ch->y_title);
    if (kind == KILN_CHART_PIE || kind == KILN_CHART_DOUGHNUT) {
        static const char *const axes[] = {"x_axis", "y_axis"};
        for (size_t i = 0; i < 2; i++)
            if (json_object_get(obj, axes[i]))
                kiln_perr(c, axes[i], "a %s chart has no axes, so no \"%s\"", kinds[kind],
                          axes[i]);
        ch->x_title = ch->y_title = NULL;
    }
    int64_t w = ch->width_px, h = ch->height_px;
    kiln_get_int(c, obj, "width", 16, 8192, &w);
    kiln_get_int(c, obj, "height", 16, 8192, &h);
    ch->width_px = (uint32_t)w;
    ch->height_px = (uint32_t)h;
    if (json_object_get(obj, "anchor")) {
        uint32_t r, col;
        const json_t *a = json_object_get(obj, "anchor");
        if (!json_is_string(a) || kiln_cell_ref_parse(json_string_value(a), &r, &col) != 0)
            kiln_perr(c, "anchor", "expected a cell reference such as \"F2\"");
        else {
            ch->anchor_row = r;
            ch->anchor_col = col;
        }
    }
    if (json_object_get(obj, "caption"))
        kiln_get_string(c, obj, "caption", &ch->caption);

    /* Categories: inline labels or numbers, or a range in a sheet. */
    const json_t *cats = json_object_get(obj, "categories");
    size_t ncat = 0;
    int have_cats = 0;
    if (cats && json_is_string(cats)) {
        ch->categories_ref = chart_ref(c, "categories", cats, place, 0, &ncat);
        have_cats = ch->categories_ref != NULL;
    } else if (json_is_array(cats)) {
        ncat = json_array_size(cats);
        ch->categories = kiln_arena_calloc(c->arena, ncat ? ncat : 1, sizeof *ch->categories);
        if (!ch->categories) {
            kiln_pnomem(c);
            return;
        }
        for (size_t i = 0; i < ncat; i++) {
            const json_t *e = json_array_get(cats, i);
            kiln_category *k = &ch->categories[i];
            if (json_is_number(e)) {
                k->is_number = 1;
                k->number = json_number_value(e);
                k->text = kiln_arena_printf(c->arena, "%.15g", k->number);
                if (!k->text)
                    kiln_pnomem(c);
            } else if (json_is_string(e) && ch->kind != KILN_CHART_SCATTER) {
                k->text = kiln_one_line(c, json_string_value(e));
                int has_time = 0;
                k->is_date = k->text && kiln_iso_to_serial(k->text, &k->number, &has_time) == 0 &&
                             !has_time;
            } else {
                size_t saved = kiln_ptr_push(&c->ptr, "categories");
                kiln_ptr_push_index(&c->ptr, i);
                kiln_perr(c, NULL,
                          ch->kind == KILN_CHART_SCATTER
                              ? "expected a number (a scatter chart's categories are "
                                "its x values)"
                              : "expected a string or a number");
                kiln_ptr_pop(&c->ptr, saved);
            }
        }
        ch->category_count = ncat;
        have_cats = 1;
    } else if (cats) {
        kiln_perr(c, "categories",
                  place == KILN_IN_SHEET ? "expected an array of labels or a range string"
                                         : "expected an array of labels");
    }

    const json_t *series = json_object_get(obj, "series");
    if (!series) {
        kiln_perr(c, NULL, "missing \"series\"");
        return;
    }
    size_t saved = kiln_ptr_push(&c->ptr, "series");
    size_t ns = json_is_array(series) ? json_array_size(series) : 0;
    if (!ns) {
        kiln_perr(c, NULL, "expected a non-empty array of series");
        goto pop;
    }
    if ((ch->kind == KILN_CHART_PIE || ch->kind == KILN_CHART_DOUGHNUT) && ns != 1) {
        kiln_perr(c, NULL, "a %s chart takes exactly one series, not %zu", kinds[ch->kind], ns);
    }
    if (ns > KILN_LIMIT_CHART_SERIES) {
        /* Excel and PowerPoint draw at most 255 series in a chart and repair a
         * file that has more. */
        kiln_perr_limit(c, NULL, KILN_LIMIT_CHART_SERIES, ns,
                        "a chart of %zu series, more than the %u Excel and PowerPoint allow", ns,
                        (unsigned)KILN_LIMIT_CHART_SERIES);
        goto pop;
    }
    ch->series = kiln_arena_calloc(c->arena, ns, sizeof *ch->series);
    if (!ch->series) {
        kiln_pnomem(c);
        goto pop;
    }
    ch->series_count = ns;
    size_t first_count = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t s2 = kiln_ptr_push_index(&c->ptr, i), before = c->errs->count;
        kiln_series *se = &ch->series[i];
        parse_series(c, json_array_get(series, i), se, place);
        int values_ok = c->errs->count == before && (se->values || se->values_ref);
        if (values_ok && have_cats && se->value_count != ncat)
            kiln_perr(c, "values",
                      "%zu values for %zu categories (every series needs one value "
                      "per category)",
                      se->value_count, ncat);
        else if (values_ok && !have_cats && i > 0 && se->value_count != first_count)
            kiln_perr(c, "values", "%zu values, but series 0 has %zu", se->value_count,
                      first_count);
        if (i == 0)
            first_count = se->value_count;
        kiln_ptr_pop(&c->ptr, s2);
    }
pop:
    kiln_ptr_pop(&c->ptr, saved);
}
