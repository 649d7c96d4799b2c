// training/chunk_loss/cuda/launch.cu: cuda_sm80 (also the path on sm90): the dtype switch to the
// per-dtype launchers of inst/ (chunk_loss_fwd, p.fused, takes the backward's: kernel.cuh). fp64
// never gets here (the entry's list refuses it for CUDA).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/training/chunk_loss/cuda/launch.h"
#include "ops/training/chunk_loss/impls.h"

namespace recops::ops::chunk_loss_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp32: return p.bwd ? launch_bwd<float>(p, ctx) : launch_fwd<float>(p, ctx);
    case DType::fp16: return p.bwd ? launch_bwd<__half>(p, ctx) : launch_fwd<__half>(p, ctx);
    case DType::bf16:
      return p.bwd ? launch_bwd<__nv_bfloat16>(p, ctx) : launch_fwd<__nv_bfloat16>(p, ctx);
    default: return Status(StatusCode::internal, "chunk_loss: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::chunk_loss_ns
