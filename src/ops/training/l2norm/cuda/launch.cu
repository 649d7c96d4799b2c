// training/l2norm/cuda/launch.cu: cuda_sm80 (also the path on sm90): the dtype switch to the
// per-dtype launchers of inst/. fp64 and out_dtype != x's dtype never get here (the entry's list
// refuses them for CUDA).
#include "ops/training/l2norm/cuda/launch.h"
#include "ops/training/l2norm/impls.h"

namespace recops::ops::l2norm_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  return training_dev::row_dtype_switch("l2norm", p.dtype, [&](auto t) {
    using T = decltype(t);
    return p.backward ? launch_bwd<T>(p, ctx) : launch_fwd<T>(p, ctx);
  });
}

}  // namespace recops::ops::l2norm_ns
