// hstu_attn/cuda/inst/fwd_sm90_bf16.cu: the Hopper forward (cuda_sm90) for bf16 at d = 128;
// one instantiation.
#include "ops/hstu/hstu_attn/cuda/fwd_sm90.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

namespace hstu_cuda {
int hstu_fwd_sm90_binary_version(int device) {
  return core::cuda::kernel_binary_version(
      reinterpret_cast<const void*>(hstu_fwd_sm90_kernel<__nv_bfloat16, 128>), device);
}
}  // namespace hstu_cuda

Status hstu_attn_fwd_cuda_sm90_bf16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_fwd_sm90<__nv_bfloat16, 128>(p, ctx);
}

}  // namespace recops::ops
