// hstu_attn/cuda/inst/fwd_sm90_bf16.cu: the Hopper forward (cuda_sm90) for bf16 at d = 128;
// one instantiation.
#include <cuda_runtime_api.h>

#include <atomic>

#include "ops/hstu_attn/cuda/fwd_sm90.cuh"
#include "ops/hstu_attn/impls.h"

namespace recops::ops {

namespace hstu_cuda {
int hstu_fwd_sm90_binary_version(int device) {
  // Read once per device (the accept test runs on every call).
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices) return 0;
  if (const int v = cached[device].load(std::memory_order_relaxed); v != 0) return v;
  core::cuda::ScopedDevice guard(device);
  if (!guard.status().ok()) return 0;
  cudaFuncAttributes a{};
  if (cudaFuncGetAttributes(&a, hstu_fwd_sm90_kernel<__nv_bfloat16, 128>) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  cached[device].store(a.binaryVersion, std::memory_order_relaxed);
  return a.binaryVersion;
}
}  // namespace hstu_cuda

Status hstu_attn_fwd_cuda_sm90_bf16(const HstuAttnParams& p, const Context& ctx) {
  return hstu_cuda::run_fwd_sm90<__nv_bfloat16, 128>(p, ctx);
}

}  // namespace recops::ops
