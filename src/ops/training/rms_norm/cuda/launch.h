// training/rms_norm/cuda/launch.h: the per-dtype launchers (defined in kernel.cuh, instantiated
// one per file in inst/ by scripts/gen_instances.py) that launch.cu's dtype switch calls.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/training/rms_norm/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::rms_norm_ns {

// rms_norm, rms_norm_rstd (fwd) and rms_norm_bwd, rms_norm_rstd_bwd (bwd) for x of type T.
template <class T>
Status launch_fwd(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd(const Params& p, const Context& ctx);

extern template Status launch_fwd<float>(const Params&, const Context&);
extern template Status launch_fwd<__half>(const Params&, const Context&);
extern template Status launch_fwd<__nv_bfloat16>(const Params&, const Context&);
extern template Status launch_bwd<float>(const Params&, const Context&);
extern template Status launch_bwd<__half>(const Params&, const Context&);
extern template Status launch_bwd<__nv_bfloat16>(const Params&, const Context&);

}  // namespace recops::ops::rms_norm_ns
