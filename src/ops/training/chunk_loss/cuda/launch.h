// training/chunk_loss/cuda/launch.h: the per-dtype launchers that inst/ instantiates (kernel.cuh)
// and launch.cu calls.
#pragma once

#include "ops/training/chunk_loss/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::chunk_loss_ns {

template <class T>
Status launch_fwd(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd(const Params& p, const Context& ctx);

}  // namespace recops::ops::chunk_loss_ns
