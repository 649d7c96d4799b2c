// training/layer_norm/cuda/launch.cu: cuda_sm80 (also the path on sm90): the dtype switch to the
// per-dtype launchers of inst/. fp64 never gets here (the entry's list refuses it for CUDA).
#include "ops/training/layer_norm/cuda/launch.h"
#include "ops/training/layer_norm/impls.h"

namespace recops::ops::layer_norm_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  return training_dev::row_dtype_switch("layer_norm", p.dtype, [&](auto t) {
    using T = decltype(t);
    return p.backward ? launch_bwd<T>(p, ctx) : launch_fwd<T>(p, ctx);
  });
}

}  // namespace recops::ops::layer_norm_ns
