// ops/jagged/common/cuda/bmm_sm90_bf16.cu: the bf16 instance of cuda_sm90 of the jagged matmuls
// (bmm_sm90_kernel.cuh: one kernel for each of its three operand layouts and two tile widths).
#include "ops/jagged/common/bmm.h"
#include "ops/jagged/common/cuda/bmm_sm90_kernel.cuh"

namespace recops::ops::bmm {

Status launch_sm90_bf16(const BmmParams& p, int layout, void* stream) {
  return launch_sm90<__nv_bfloat16>(p, layout, stream);
}

int sm90_binary_version(int device) {
  return core::cuda::kernel_binary_version(
      reinterpret_cast<const void*>(bmm_sm90_kernel<__nv_bfloat16, 128, 0>), device);
}

}  // namespace recops::ops::bmm
