// hstu_attn/cuda/inst/fwd_fp16.cu: the general forward (cuda_sm80) for fp16, one instantiation.
#include "ops/hstu/hstu_attn/cuda/fwd.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_fwd_cuda_fp16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_fwd<__half>(p, ctx);
}

}  // namespace recops::ops
