// hstu_attn/cuda/inst/fwd_sm90_d64_fp16.cu: the Hopper forward (cuda_sm90) for fp16 at d = 64;
// one instantiation.
#include "ops/hstu/hstu_attn/cuda/fwd_sm90.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_fwd_cuda_sm90_d64_fp16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_fwd_sm90<__half, 64>(p, ctx);
}

}  // namespace recops::ops
