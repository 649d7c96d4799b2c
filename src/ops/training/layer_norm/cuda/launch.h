// training/layer_norm/cuda/launch.h: the per-dtype launchers of layer_norm / swish_layer_norm
// (fwd) and their backwards (bwd) for x of type T, defined in kernel.cuh and instantiated in inst/
// (common/cuda/row_launchers.h).
#pragma once

#include "ops/training/common/cuda/row_launchers.h"
#include "ops/training/layer_norm/params.h"

namespace recops::ops::layer_norm_ns {

RECOPS_TRAINING_ROW_LAUNCHERS(Params);

}  // namespace recops::ops::layer_norm_ns
