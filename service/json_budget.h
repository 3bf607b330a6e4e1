/*
 * json_budget.h - parse a request's JSON within a memory budget.
 *
 * jansson spends far more memory on some JSON than the text takes: 16 MiB
 * of "[],[],..." asks for 620 MiB (39x; empty objects 71x, and malloc's
 * own overhead comes on top), where a spec's rows of numbers and strings
 * ask for 7x and a bare list of small numbers 16x (jansson 2.14, measured).
 * A body under --max-request could therefore still cost a gigabyte or more. So every request body
 * is parsed with its allocations counted against a budget proportional to its size, and a body
 * that needs more is refused (413) instead of taking the server's memory.
 *
 * kiln_json_budget_install replaces jansson's allocator for the whole
 * process (json_set_alloc_funcs); allocations are only counted on a thread
 * inside kiln_json_budget_load, so everything else is unaffected.
 */
#ifndef KILN_SERVICE_JSON_BUDGET_H
#define KILN_SERVICE_JSON_BUDGET_H

#include <jansson.h>
#include <stddef.h>

/* Bytes of jansson allocations allowed per byte of JSON text, and at least. */
#define KILN_JSON_BUDGET_RATIO 32
#define KILN_JSON_BUDGET_MIN (1u << 20)

/* Once, before any JSON is made (kiln_server_start). */
void kiln_json_budget_install(void);

/* json_loadb with the budget max(len * RATIO, MIN). New reference, or NULL
 * with error filled; *over_budget says the budget (not the syntax) failed. */
json_t *kiln_json_budget_load(const char *text, size_t len, size_t flags, json_error_t *error,
                              int *over_budget);

/* The budget kiln_json_budget_load gives a text of len bytes. */
size_t kiln_json_budget_for(size_t len);

#endif
