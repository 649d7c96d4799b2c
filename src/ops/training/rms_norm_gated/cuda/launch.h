// training/rms_norm_gated/cuda/launch.h: the per-dtype launchers of rms_norm_gated (fwd) and
// rms_norm_gated_bwd (bwd) for x of type T, defined in kernel.cuh and instantiated in inst/
// (common/cuda/row_launchers.h).
#pragma once

#include "ops/training/common/cuda/row_launchers.h"
#include "ops/training/rms_norm_gated/params.h"

namespace recops::ops::rms_norm_gated_ns {

RECOPS_TRAINING_ROW_LAUNCHERS(Params);

}  // namespace recops::ops::rms_norm_gated_ns
