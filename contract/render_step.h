/*
 * render_step.h - Kiln's render step for `kiln run`: each spec a job saved
 * becomes a document (exec/run.h, kiln_run_render_step, says when and in
 * which sandbox it is called).
 *
 * The entry it leaves in a result's "documents" (docs/run.md) is the render
 * shape of contract/report.h plus the runner's own members: {"name",
 * "spec", "ok", "format", "bytes", "warnings", "errors"}.
 */
#ifndef KILN_CONTRACT_RENDER_STEP_H
#define KILN_CONTRACT_RENDER_STEP_H

#include "../exec/run.h"

/* The step; its arg is unused. */
extern const kiln_run_render_step kiln_render_step;

#endif
