// training/l2norm/cuda/launch.h: the per-dtype launchers of l2norm (fwd) and l2norm_bwd (bwd) for x
// of type T, defined in kernel.cuh and instantiated in inst/ (common/cuda/row_launchers.h).
#pragma once

#include "ops/training/common/cuda/row_launchers.h"
#include "ops/training/l2norm/params.h"

namespace recops::ops::l2norm_ns {

RECOPS_TRAINING_ROW_LAUNCHERS(Params);

}  // namespace recops::ops::l2norm_ns
