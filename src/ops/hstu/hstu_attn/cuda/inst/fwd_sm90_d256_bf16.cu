// hstu_attn/cuda/inst/fwd_sm90_d256_bf16.cu: the Hopper forward (cuda_sm90) for bf16 at d = 256;
// one instantiation.
#include "ops/hstu/hstu_attn/cuda/fwd_sm90.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_fwd_cuda_sm90_d256_bf16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_fwd_sm90<__nv_bfloat16, 256>(p, ctx);
}

}  // namespace recops::ops
