// One instantiation of the Hopper block-sparse attention kernel (cuda_sm90): bf16, D = 128; also
// the build's sm_90a check (bsa_sm90_binary_version).
#include "ops/stem/block_sparse_attention/cuda/fa_sm90.cuh"

namespace recops::ops::bsa_cuda {

int bsa_sm90_binary_version(int device) {
  return core::cuda::kernel_binary_version(
      reinterpret_cast<const void*>(bsa_sm90_kernel<__nv_bfloat16>), device);
}

template Status launch_sm90<__nv_bfloat16>(const Args& a, const Context& ctx);

}  // namespace recops::ops::bsa_cuda
