// jagged/multi_head_jagged_flash_attention/cuda/launch.h: the per-dtype launchers (forward: out
// and lse; backward: dq, then dk and dv), defined in kernel.cuh and instantiated once per dtype and
// direction in inst/ (instances.json).
#pragma once

#include "ops/jagged/multi_head_jagged_flash_attention/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {

template <class T>
Status launch_fwd(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd(const Params& p, const Context& ctx);

// cuda_sm80_mma (cuda/mma_kernel.cuh), T = __half or __nv_bfloat16.
template <class T>
Status launch_fwd_mma(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd_mma(const Params& p, const Context& ctx);

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
