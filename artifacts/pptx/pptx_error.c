/*
 * pptx_error.c - the deck writer's out-of-memory error, in a file of its
 * own: every part of the writer reports it, and a helper they all call must
 * call none of them back.
 */
#include "pptx_internal.h"
#include "../../common/banned.h"

kiln_status pptx_nomem(pptx_ctx *c, const char *pointer)
{
    return kiln_error_set(c->err, KILN_E_NOMEM, pointer, "out of memory writing the deck");
}
