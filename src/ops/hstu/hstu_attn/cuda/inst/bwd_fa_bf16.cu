// hstu_attn/cuda/inst/bwd_fa_bf16.cu: the register-resident backward (cuda_sm80_fa) for bf16, one
// instantiation (its key and query kernels).
#include "ops/hstu/hstu_attn/cuda/bwd_fa.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_bwd_cuda_fa_bf16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_bwd_fa<__nv_bfloat16>(p, ctx);
}

}  // namespace recops::ops
