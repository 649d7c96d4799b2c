// hstu_attn/cuda/inst/fwd_fa_bf16.cu: the register-resident forward (cuda_sm80_fa) for bf16, 32
// query rows per warp; one instantiation.
#include "ops/hstu/hstu_attn/cuda/fwd_fa.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_fwd_cuda_fa_bf16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_fwd_fa<__nv_bfloat16, 2>(p, ctx);
}

}  // namespace recops::ops
