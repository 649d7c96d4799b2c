// training/norm_mul_dropout/cuda/launch.h: the per-dtype launchers of norm_mul_dropout (fwd) and
// norm_mul_dropout_bwd (bwd) for x of type T, defined in kernel.cuh and instantiated in inst/
// (common/cuda/row_launchers.h).
#pragma once

#include "ops/training/common/cuda/row_launchers.h"
#include "ops/training/norm_mul_dropout/params.h"

namespace recops::ops::norm_mul_dropout_ns {

RECOPS_TRAINING_ROW_LAUNCHERS(Params);

}  // namespace recops::ops::norm_mul_dropout_ns
