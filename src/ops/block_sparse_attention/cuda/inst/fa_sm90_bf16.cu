// One instantiation of the Hopper block-sparse attention kernel (cuda_sm90): bf16, D = 128; also
// the build's sm_90a check (bsa_sm90_binary_version).
#include <cuda_runtime_api.h>

#include <atomic>

#include "ops/block_sparse_attention/cuda/fa_sm90.cuh"

namespace recops::ops::bsa_cuda {

int bsa_sm90_binary_version(int device) {
  // Read once per device (the accept test runs on every call).
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices) return 0;
  if (const int v = cached[device].load(std::memory_order_relaxed); v != 0) return v;
  core::cuda::ScopedDevice guard(device);
  if (!guard.status().ok()) return 0;
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, bsa_sm90_kernel<__nv_bfloat16>) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  cached[device].store(attr.binaryVersion, std::memory_order_relaxed);
  return attr.binaryVersion;
}

template Status launch_sm90<__nv_bfloat16>(const Args& a, const Context& ctx);

}  // namespace recops::ops::bsa_cuda
