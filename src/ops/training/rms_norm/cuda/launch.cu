// training/rms_norm/cuda/launch.cu: cuda_sm80 (also the path on sm90): the dtype switch to the
// per-dtype launchers of inst/. fp64 never gets here (the entry's list refuses it for CUDA).
#include "ops/training/rms_norm/cuda/launch.h"
#include "ops/training/rms_norm/impls.h"

namespace recops::ops::rms_norm_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  const bool bwd = p.mode == Mode::norm_bwd || p.mode == Mode::rstd_bwd;
  return training_dev::row_dtype_switch("rms_norm", p.dtype, [&](auto t) {
    using T = decltype(t);
    return bwd ? launch_bwd<T>(p, ctx) : launch_fwd<T>(p, ctx);
  });
}

}  // namespace recops::ops::rms_norm_ns
