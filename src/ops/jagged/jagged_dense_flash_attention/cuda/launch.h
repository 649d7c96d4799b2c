// jagged/jagged_dense_flash_attention/cuda/launch.h: the per-dtype launchers, defined in
// kernel.cuh and instantiated once each in inst/ (scripts/gen_instances.py).
#pragma once

#include "ops/jagged/jagged_dense_flash_attention/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::jagged_dense_flash_attention_ns {

// T: float, __half, __nv_bfloat16 or double.
template <class T>
Status launch_fwd(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd(const Params& p, const Context& ctx);
// cuda_sm80_mma (cuda/mma_kernel.cuh), T = __half or __nv_bfloat16.
template <class T>
Status launch_fwd_mma(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd_mma(const Params& p, const Context& ctx);

}  // namespace recops::ops::jagged_dense_flash_attention_ns
