// jagged/jagged_dense_flash_attention/cuda/launch.cu: the dtype switches of cuda_sm80 and of
// cuda_sm80_mma. The launchers are instantiated in inst/; fp64, which
// scripts/gen_instances.py has no file
// name for, here.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/jagged/jagged_dense_flash_attention/cuda/kernel.cuh"
#include "ops/jagged/jagged_dense_flash_attention/impls.h"

namespace recops::ops::jagged_dense_flash_attention_ns {

template Status launch_fwd<double>(const Params& p, const Context& ctx);
template Status launch_bwd<double>(const Params& p, const Context& ctx);

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp32: return p.backward ? launch_bwd<float>(p, ctx) : launch_fwd<float>(p, ctx);
    case DType::fp16: return p.backward ? launch_bwd<__half>(p, ctx) : launch_fwd<__half>(p, ctx);
    case DType::bf16:
      return p.backward ? launch_bwd<__nv_bfloat16>(p, ctx) : launch_fwd<__nv_bfloat16>(p, ctx);
    case DType::fp64: return p.backward ? launch_bwd<double>(p, ctx) : launch_fwd<double>(p, ctx);
    default:
      return Status(StatusCode::internal,
                    "jagged_dense_flash_attention: cuda_sm80 reached with a bad dtype");
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
                    "jagged_dense_flash_attention: cuda_sm80_mma reached with a bad dtype");
  }
}

}  // namespace recops::ops::jagged_dense_flash_attention_ns
