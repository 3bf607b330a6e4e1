/*
 * errors.c - errors and error lists as JSON (errors.h says the shapes).
 */
#include "errors.h"

#include <math.h>

#include "../common/banned.h"

int kiln_error_has_pointer(const kiln_error *e)
{
    return e->pointer[0] || e->code == KILN_E_INVALID_SPEC || e->code == KILN_E_INVALID_JOB ||
           e->code == KILN_E_LIMIT;
}

/* A limit or a value reached: an integer when it is whole (every limit but
 * seconds), else a real. */
static json_t *number_json(double v)
{
    if (floor(v) == v && fabs(v) < 9007199254740992.0)
        return json_integer((json_int_t)v);
    return json_real(v);
}

json_t *kiln_error_json(const kiln_error *e)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int failed = json_object_set_new(o, "code", json_string(kiln_status_name(e->code)));
    if (kiln_error_has_pointer(e))
        failed |= json_object_set_new(o, "pointer", json_string(e->pointer));
    failed |= json_object_set_new(o, "message", json_string(e->message));
    if (e->code == KILN_E_LIMIT || e->code == KILN_E_TOO_LARGE) {
        failed |= json_object_set_new(o, "limit", number_json(e->limit));
        failed |= json_object_set_new(o, "actual", number_json(e->actual));
    }
    if (failed) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *kiln_errors_json(const kiln_errors *errs)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < errs->count; i++) {
        if (json_array_append_new(list, kiln_error_json(&errs->items[i])) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    if (!list)
        return NULL;
    return json_pack("{s:o, s:I}", "errors", list, "more_errors", (json_int_t)errs->dropped);
}

json_t *kiln_error_list_json(const kiln_error *err)
{
    kiln_errors one;
    kiln_errors_init(&one);
    if (err)
        kiln_errors_add(&one, err);
    return kiln_errors_json(&one);
}
