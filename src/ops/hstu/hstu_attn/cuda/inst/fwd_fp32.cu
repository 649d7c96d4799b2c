// hstu_attn/cuda/inst/fwd_fp32.cu: the general forward (cuda_sm80) for fp32, one instantiation.
#include "ops/hstu/hstu_attn/cuda/fwd.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_fwd_cuda_fp32(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_fwd<float>(p, ctx);
}

}  // namespace recops::ops
