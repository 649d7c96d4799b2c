// hstu_attn/cuda/inst/fwd_fa_fp16.cu: the register-resident forward (cuda_sm80_fa) for fp16, 32
// query rows per warp; one instantiation.
#include "ops/hstu/hstu_attn/cuda/fwd_fa.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_fwd_cuda_fa_fp16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_fwd_fa<__half, 2>(p, ctx);
}

}  // namespace recops::ops
