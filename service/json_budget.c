/*
 * json_budget.c - request JSON parsed within a memory budget
 * (json_budget.h says why).
 *
 * The budget counts what the parse asks for, not what it keeps: frees
 * during the parse are not subtracted (jansson's growing string buffers
 * free their old copies), so the count is an upper bound and the check
 * errs on the side of refusing. Nothing is counted after the parse: the
 * document is freed later, often on another thread.
 */
#include "service/json_budget.h"

#include <stdint.h>
#include <stdlib.h>
#include "../common/banned.h"

struct budget {
    int active;
    int exceeded;
    size_t left;
};

static _Thread_local struct budget budget;

static void *budget_malloc(size_t size)
{
    if (budget.active) {
        if (size > budget.left) {
            budget.exceeded = 1;
            return NULL;
        }
        budget.left -= size;
    }
    return malloc(size);
}

void kiln_json_budget_install(void)
{
    json_set_alloc_funcs(budget_malloc, free);
}

size_t kiln_json_budget_for(size_t len)
{
    if (len > SIZE_MAX / KILN_JSON_BUDGET_RATIO)
        return SIZE_MAX;
    size_t b = len * KILN_JSON_BUDGET_RATIO;
    return b < KILN_JSON_BUDGET_MIN ? KILN_JSON_BUDGET_MIN : b;
}

json_t *kiln_json_budget_load(const char *text, size_t len, size_t flags, json_error_t *error,
                              int *over_budget)
{
    budget.active = 1;
    budget.exceeded = 0;
    budget.left = kiln_json_budget_for(len);
    json_t *doc = json_loadb(text, len, flags, error);
    budget.active = 0;
    *over_budget = budget.exceeded;
    if (doc && budget.exceeded) {
        /* jansson recovered from a refused allocation somewhere (it does
         * not always say): the document may be incomplete. */
        json_decref(doc);
        doc = NULL;
    }
    return doc;
}
