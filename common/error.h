/*
 * error.h - the one error type every part of Kiln reports through.
 *
 * Library code never prints: it fills a kiln_error and returns a status. The
 * front ends (CLI, server, batch runner) decide how to show it. An error
 * carries a code (which maps to the CLI's exit status and the server's HTTP
 * status), the JSON Pointer of the offending member of the spec when there is
 * one, a message, and for limit errors the limit and the value reached.
 *
 * A spec can have several independent mistakes; the parser collects them in a
 * kiln_errors list (bounded, so a hostile spec cannot make the list itself a
 * memory problem) so a user fixes them all in one round.
 */
#ifndef KILN_ERROR_H
#define KILN_ERROR_H

#include <stddef.h>
#include <stdint.h>

/*
 * One list generates both the enum and the names/exit statuses, so they can
 * never drift apart. Columns: enum suffix, short name (stable, used in JSON
 * output), CLI exit status.
 */
#define KILN_ERROR_CODES(X)            \
    X(OK, "ok", 0)                     \
    X(USAGE, "usage", 2)               \
    X(INVALID_SPEC, "invalid_spec", 3) \
    X(INVALID_JOB, "invalid_run", 2)   \
    X(LIMIT, "limit_exceeded", 3)      \
    X(TOO_LARGE, "too_large", 4)       \
    X(INPUT, "unreadable_input", 5)    \
    X(WRITE, "write_failed", 6)        \
    X(NOMEM, "out_of_memory", 7)       \
    X(GONE, "session_gone", 8)         \
    X(BUSY, "session_busy", 9)         \
    X(INTERNAL, "internal", 70)

/* clang-format off: the enumerators come from the X-macro, which clang-format cannot see */
typedef enum {
#define KILN_X_ENUM(name, str, status) KILN_E_##name,
    KILN_ERROR_CODES(KILN_X_ENUM)
#undef KILN_X_ENUM
        KILN_E__COUNT
} kiln_status;
/* clang-format on */

#define KILN_POINTER_MAX 256
#define KILN_MESSAGE_MAX 512

typedef struct kiln_error {
    kiln_status code;
    char pointer[KILN_POINTER_MAX]; /* JSON Pointer into the spec, "" if none */
    char message[KILN_MESSAGE_MAX]; /* one sentence, no trailing newline */
    double
        limit; /* for LIMIT and TOO_LARGE: the limit (whole but for seconds, exact below 2^53) */
    double actual; /* ... and the value reached (0 if unknown) */
} kiln_error;

/* The most errors one validation run collects before it stops looking. */
#define KILN_ERRORS_MAX 50

typedef struct kiln_errors {
    kiln_error items[KILN_ERRORS_MAX];
    size_t count;
    size_t dropped; /* errors found after the list was full */
} kiln_errors;

/* Stable short name of a code ("invalid_spec"); never NULL. */
const char *kiln_status_name(kiln_status code);
/* The CLI exit status documented for a code. */
int kiln_status_exit(kiln_status code);

/* Fill err (may be NULL: then nothing happens). Returns code. */
kiln_status kiln_error_set(kiln_error *err, kiln_status code, const char *pointer,
                           const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Same, for a limit error: records limit and actual. */
kiln_status kiln_error_limit(kiln_error *err, kiln_status code, const char *pointer, double limit,
                             double actual, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Name where an error came from, when it does not say yet: a writer
 * calls this with the pointer of the block, sheet or slide it was writing,
 * so an error caused by one (a page limit reached there, an image that
 * cannot be read) names it. Errors of the whole output (too_large) and of
 * the machine (out_of_memory, internal, write_failed) keep no pointer. */
void kiln_error_locate(kiln_error *err, const char *pointer);

void kiln_errors_init(kiln_errors *list);
/* Append a copy of err; counts it as dropped when the list is full. */
void kiln_errors_add(kiln_errors *list, const kiln_error *err);
/* Append a new error built from the arguments. Returns the code. */
kiln_status kiln_errors_addf(kiln_errors *list, kiln_status code, const char *pointer,
                             const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
