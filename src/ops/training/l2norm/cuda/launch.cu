// training/l2norm/cuda/launch.cu: cuda_sm80 (also the path on sm90): the dtype switch to the
// per-dtype launchers of inst/. fp64 and out_dtype != x's dtype never get here (the entry's list
// refuses them for CUDA).
#include "ops/training/l2norm/cuda/launch.h"
#include "ops/training/l2norm/impls.h"

namespace recops::ops::l2norm_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp32: return p.backward ? launch_bwd<float>(p, ctx) : launch_fwd<float>(p, ctx);
    case DType::fp16: return p.backward ? launch_bwd<__half>(p, ctx) : launch_fwd<__half>(p, ctx);
    case DType::bf16:
      return p.backward ? launch_bwd<__nv_bfloat16>(p, ctx) : launch_fwd<__nv_bfloat16>(p, ctx);
    default: return Status(StatusCode::internal, "l2norm: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::l2norm_ns
