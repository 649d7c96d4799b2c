// training/rms_norm/cuda/launch.h: the per-dtype launchers of rms_norm, rms_norm_rstd (fwd) and
// rms_norm_bwd, rms_norm_rstd_bwd (bwd) for x of type T, defined in kernel.cuh and instantiated in
// inst/ (common/cuda/row_launchers.h).
#pragma once

#include "ops/training/common/cuda/row_launchers.h"
#include "ops/training/rms_norm/params.h"

namespace recops::ops::rms_norm_ns {

RECOPS_TRAINING_ROW_LAUNCHERS(Params);

}  // namespace recops::ops::rms_norm_ns
