/*
 * report.c - render results and their warnings as JSON (report.h says
 * the shapes).
 */
#include "report.h"

#include <stdio.h>

#include "../artifacts/render.h"
#include "../common/banned.h"

size_t kiln_render_warnings(const kiln_render_result *r, kiln_warning out[KILN_WARNINGS_MAX])
{
    size_t n = 0;
    if (r->missing_glyphs > 0) {
        kiln_warning *w = &out[n++];
        w->code = "missing_glyphs";
        w->count = r->missing_glyphs;
        w->first = r->missing_first;
        snprintf(w->message, sizeof w->message,
                 "%llu character%s no glyph in any embedded font (the first is U+%04X); "
                 "shown as '?'",
                 (unsigned long long)r->missing_glyphs,
                 r->missing_glyphs == 1 ? " has" : "s have", (unsigned)r->missing_first);
    }
    if (r->overflow_slides > 0) {
        kiln_warning *w = &out[n++];
        w->code = "overflow_slides";
        w->count = r->overflow_slides;
        w->first = r->overflow_first;
        snprintf(w->message, sizeof w->message,
                 "%u slide%s text that does not fit its placeholder or table even when shrunk "
                 "(the first is slide %u)",
                 (unsigned)r->overflow_slides, r->overflow_slides == 1 ? " has" : "s have",
                 (unsigned)r->overflow_first);
    }
    return n;
}

json_t *kiln_warnings_json(const kiln_render_result *r)
{
    kiln_warning w[KILN_WARNINGS_MAX];
    size_t n = kiln_render_warnings(r, w);
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        json_t *o = json_pack("{s:s, s:s, s:I, s:I}", "code", w[i].code, "message", w[i].message,
                              "count", (json_int_t)w[i].count, "first", (json_int_t)w[i].first);
        if (json_array_append_new(list, o) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    return list;
}

json_t *kiln_render_result_json(const kiln_render_result *r)
{
    const kiln_writer *w = kiln_writer_for(r->format);
    return json_pack("{s:s, s:I, s:o}", "format", w ? w->name : "", "bytes", (json_int_t)r->bytes,
                     "warnings", kiln_warnings_json(r));
}

json_t *kiln_render_outcome_json(const kiln_render_result *r, const kiln_errors *errs,
                                 const kiln_error *err)
{
    json_t *outcome = r ? kiln_render_result_json(r) : json_pack("{s:[]}", "warnings");
    json_t *list = errs ? kiln_errors_json(errs) : kiln_error_list_json(err);
    if (!outcome || !list || json_object_update(outcome, list) != 0 ||
        json_object_set_new(outcome, "ok", json_boolean(r != NULL)) != 0) {
        json_decref(outcome);
        outcome = NULL;
    }
    json_decref(list);
    return outcome;
}
