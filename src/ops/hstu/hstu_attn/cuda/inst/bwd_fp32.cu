// hstu_attn/cuda/inst/bwd_fp32.cu: the general backward (cuda_sm80) for fp32, one instantiation.
#include "ops/hstu/hstu_attn/cuda/bwd.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_bwd_cuda_fp32(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_bwd<float>(p, ctx);
}

}  // namespace recops::ops
