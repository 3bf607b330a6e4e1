/* error.c - see error.h. */
#include "error.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "banned.h"

static const struct {
    const char *name;
    int exit_status;
} codes[] = {
#define KILN_X_ROW(name, str, status) {str, status},
    KILN_ERROR_CODES(KILN_X_ROW)
#undef KILN_X_ROW
};

const char *kiln_status_name(kiln_status code)
{
    if ((unsigned)code >= KILN_E__COUNT)
        return "internal";
    return codes[code].name;
}

int kiln_status_exit(kiln_status code)
{
    if ((unsigned)code >= KILN_E__COUNT)
        return 70;
    return codes[code].exit_status;
}

static void fill(kiln_error *err, kiln_status code, const char *pointer, const char *fmt,
                 va_list ap) __attribute__((format(printf, 4, 0)));
static void fill(kiln_error *err, kiln_status code, const char *pointer, const char *fmt,
                 va_list ap)
{
    err->code = code;
    snprintf(err->pointer, sizeof err->pointer, "%s", pointer ? pointer : "");
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    /* Either may have been cut in the middle of a character (or hold what a
     * client sent that is not UTF-8): text every front end can print and
     * put in JSON. */
    kiln_utf8_cut(err->pointer);
    kiln_utf8_cut(err->message);
    err->limit = 0;
    err->actual = 0;
}

kiln_status kiln_error_set(kiln_error *err, kiln_status code, const char *pointer,
                           const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    fill(err, code, pointer, fmt, ap);
    va_end(ap);
    return code;
}

kiln_status kiln_error_limit(kiln_error *err, kiln_status code, const char *pointer, double limit,
                             double actual, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    fill(err, code, pointer, fmt, ap);
    va_end(ap);
    err->limit = limit;
    err->actual = actual;
    return code;
}

void kiln_errors_init(kiln_errors *list)
{
    list->count = 0;
    list->dropped = 0;
}

void kiln_errors_add(kiln_errors *list, const kiln_error *err)
{
    if (list->count < KILN_ERRORS_MAX)
        list->items[list->count++] = *err;
    else
        list->dropped++;
}

kiln_status kiln_errors_addf(kiln_errors *list, kiln_status code, const char *pointer,
                             const char *fmt, ...)
{
    kiln_error e;
    va_list ap;
    va_start(ap, fmt);
    fill(&e, code, pointer, fmt, ap);
    va_end(ap);
    kiln_errors_add(list, &e);
    return code;
}

void kiln_error_locate(kiln_error *err, const char *pointer)
{
    if (!err || !pointer || err->pointer[0])
        return;
    if (err->code != KILN_E_LIMIT && err->code != KILN_E_INVALID_SPEC &&
        err->code != KILN_E_INPUT)
        return;
    snprintf(err->pointer, sizeof err->pointer, "%s", pointer);
    kiln_utf8_cut(err->pointer);
}
