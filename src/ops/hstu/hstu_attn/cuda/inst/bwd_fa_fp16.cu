// hstu_attn/cuda/inst/bwd_fa_fp16.cu: the register-resident backward (cuda_sm80_fa) for fp16, one
// instantiation (its key and query kernels).
#include "ops/hstu/hstu_attn/cuda/bwd_fa.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_bwd_cuda_fa_fp16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_bwd_fa<__half>(p, ctx);
}

}  // namespace recops::ops
