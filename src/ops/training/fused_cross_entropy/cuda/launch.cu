// training/fused_cross_entropy/cuda/launch.cu: cuda_sm80 (also the path on sm90): the dtype
// switch to the per-dtype launchers of inst/. fp64 never gets here (the entry's list refuses it
// for CUDA).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/training/fused_cross_entropy/cuda/launch.h"
#include "ops/training/fused_cross_entropy/impls.h"

namespace recops::ops::fused_cross_entropy_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp32: return p.bwd ? launch_bwd<float>(p, ctx) : launch_fwd<float>(p, ctx);
    case DType::fp16: return p.bwd ? launch_bwd<__half>(p, ctx) : launch_fwd<__half>(p, ctx);
    case DType::bf16:
      return p.bwd ? launch_bwd<__nv_bfloat16>(p, ctx) : launch_fwd<__nv_bfloat16>(p, ctx);
    default:
      return Status(StatusCode::internal,
                    "fused_cross_entropy: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::fused_cross_entropy_ns
