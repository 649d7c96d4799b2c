// training/rms_norm/cuda/launch.cu: cuda_sm80 (also the path on sm90): the dtype switch to the
// per-dtype launchers of inst/. fp64 never gets here (the entry's list refuses it for CUDA).
#include "ops/training/rms_norm/cuda/launch.h"
#include "ops/training/rms_norm/impls.h"

namespace recops::ops::rms_norm_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  const bool bwd = p.mode == Mode::norm_bwd || p.mode == Mode::rstd_bwd;
  switch (p.dtype) {
    case DType::fp32: return bwd ? launch_bwd<float>(p, ctx) : launch_fwd<float>(p, ctx);
    case DType::fp16: return bwd ? launch_bwd<__half>(p, ctx) : launch_fwd<__half>(p, ctx);
    case DType::bf16:
      return bwd ? launch_bwd<__nv_bfloat16>(p, ctx) : launch_fwd<__nv_bfloat16>(p, ctx);
    default: return Status(StatusCode::internal, "rms_norm: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::rms_norm_ns
