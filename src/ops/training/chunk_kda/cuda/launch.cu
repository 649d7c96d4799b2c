// training/chunk_kda/cuda/launch.cu: cuda_sm80, the composition of the KDA sub-ops (compose.cpp)
// on device tensors, each sub-op running its own CUDA path; the composition's roundings of the
// backward's fp32 dq, dk and dbeta to their outputs' dtypes are the kernel below. Instantiations:
// one per floating dtype.
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "core/cuda/numeric.cuh"
#include "ops/training/chunk_kda/compose.h"
#include "ops/training/chunk_kda/impls.h"

namespace recops::ops::chunk_kda_ns {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;  // grid-stride beyond

// out[i] = src[i] rounded once to T (through fp64, exact for an fp32 source: the host's rounding).
template <class T>
__global__ void cast_kernel(T* out, const float* src, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = core::cuda::from_double<T>(static_cast<double>(src[i]));
}

template <class T>
Status launch_cast(const TensorView& out, const TensorView& src, const Context& ctx) {
  const int64_t n = out.numel();
  if (n == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("chunk_kda", (cast_kernel<T>), dim3(static_cast<unsigned>(blocks)),
                              dim3(kThreads), 0, ctx.stream, static_cast<T*>(out.data),
                              static_cast<const float*>(src.data), n);
}

Status device_cast(const TensorView& out, const TensorView& src, const Context& ctx) {
  switch (out.dtype) {
    case DType::fp64: return launch_cast<double>(out, src, ctx);
    case DType::fp32: return launch_cast<float>(out, src, ctx);
    case DType::fp16: return launch_cast<__half>(out, src, ctx);
    case DType::bf16: return launch_cast<__nv_bfloat16>(out, src, ctx);
    default:
      return Status(StatusCode::internal, "chunk_kda: cuda_sm80 reached with a bad gradient dtype");
  }
}

}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  core::cuda::ScopedDevice device(p.args.q.device.index);
  RECOPS_RETURN_IF_ERROR(device.status());
  return compose(p, ctx, device_cast);
}

}  // namespace recops::ops::chunk_kda_ns
