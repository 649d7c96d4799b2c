// training/fused_cross_entropy/cuda/launch.h: the per-dtype launchers (logits of type T) of the
// forward (fused_cross_entropy, fused_cross_entropy_fwd) and the backward, defined in kernel.cuh
// and instantiated in inst/.
#pragma once

#include "ops/training/fused_cross_entropy/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::fused_cross_entropy_ns {

template <class T>
Status launch_fwd(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd(const Params& p, const Context& ctx);

}  // namespace recops::ops::fused_cross_entropy_ns
