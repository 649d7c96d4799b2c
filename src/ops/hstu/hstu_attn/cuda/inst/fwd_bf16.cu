// hstu_attn/cuda/inst/fwd_bf16.cu: the general forward (cuda_sm80) for bf16, one instantiation.
#include "ops/hstu/hstu_attn/cuda/fwd.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_fwd_cuda_bf16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_fwd<__nv_bfloat16>(p, ctx);
}

}  // namespace recops::ops
