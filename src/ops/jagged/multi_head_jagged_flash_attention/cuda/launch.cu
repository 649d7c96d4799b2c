// jagged/multi_head_jagged_flash_attention/cuda/launch.cu: cuda_sm80_mma and cuda_sm80 (also the
// paths on sm90): the dtype switches to the per-dtype launchers of inst/. What the entry's accept
// tests refuse (fp64, D > 256; for cuda_sm80_mma fp32, D not a multiple of 8 up to 128, unaligned
// rows) never gets here.
#include "ops/jagged/multi_head_jagged_flash_attention/cuda/launch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/jagged/multi_head_jagged_flash_attention/impls.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp32: return p.backward ? launch_bwd<float>(p, ctx) : launch_fwd<float>(p, ctx);
    case DType::fp16: return p.backward ? launch_bwd<__half>(p, ctx) : launch_fwd<__half>(p, ctx);
    case DType::bf16:
      return p.backward ? launch_bwd<__nv_bfloat16>(p, ctx) : launch_fwd<__nv_bfloat16>(p, ctx);
    default:
      return Status(StatusCode::internal,
                    "multi_head_jagged_flash_attention: cuda_sm80 reached with a bad dtype");
  }
}

Status run_cuda_mma(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp16:
      return p.backward ? launch_bwd_mma<__half>(p, ctx) : launch_fwd_mma<__half>(p, ctx);
    case DType::bf16:
      return p.backward ? launch_bwd_mma<__nv_bfloat16>(p, ctx)
                        : launch_fwd_mma<__nv_bfloat16>(p, ctx);
    default:
      return Status(StatusCode::internal,
                    "multi_head_jagged_flash_attention: cuda_sm80_mma reached with a bad dtype");
  }
}

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
