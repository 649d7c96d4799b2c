// training/norm_mul_dropout/cuda/launch.cu: cuda_sm80 (also the path on sm90): the dtype switch to
// the per-dtype launchers of inst/. fp64 never gets here (the entry's list refuses it for CUDA).
#include "ops/training/norm_mul_dropout/cuda/launch.h"
#include "ops/training/norm_mul_dropout/impls.h"

namespace recops::ops::norm_mul_dropout_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  return training_dev::row_dtype_switch("norm_mul_dropout", p.dtype, [&](auto t) {
    using T = decltype(t);
    return p.backward ? launch_bwd<T>(p, ctx) : launch_fwd<T>(p, ctx);
  });
}

}  // namespace recops::ops::norm_mul_dropout_ns
