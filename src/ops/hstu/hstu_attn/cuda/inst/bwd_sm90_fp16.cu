// hstu_attn/cuda/inst/bwd_sm90_fp16.cu: the Hopper backward (cuda_sm90) for fp16 at d = 128;
// one instantiation (its key and query kernels).
#include "ops/hstu/hstu_attn/cuda/bwd_sm90.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

Status hstu_attn_bwd_cuda_sm90_fp16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_bwd_sm90<__half, 128>(p, ctx);
}

}  // namespace recops::ops
