// training/chunk_gated_delta_rule/cuda/launch.cu: cuda_sm80, the composition of the GDN sub-ops
// (compose.cpp) on device tensors, each sub-op running its own CUDA path; the composition's two
// elementwise sums of the backward (dk += dk2, dG += dG2) are the kernel below. Instantiations:
// one per floating dtype.
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "core/cuda/numeric.cuh"
#include "ops/training/chunk_gated_delta_rule/compose.h"
#include "ops/training/chunk_gated_delta_rule/impls.h"

namespace recops::ops::chunk_gated_delta_rule_ns {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;  // grid-stride beyond

// out[i] = a[i] + b[i], the sum in fp64 and rounded once (bit-identical to the host's).
template <class T>
__global__ void add_kernel(T* out, const T* a, const T* b, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = core::cuda::from_double<T>(core::cuda::to_double(a[i]) + core::cuda::to_double(b[i]));
}

template <class T>
Status launch_add(const TensorView& out, const TensorView& a, const TensorView& b,
                  const Context& ctx) {
  const int64_t n = out.numel();
  if (n == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("chunk_gated_delta_rule", (add_kernel<T>),
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, ctx.stream,
                              static_cast<T*>(out.data), static_cast<const T*>(a.data),
                              static_cast<const T*>(b.data), n);
}

Status device_add(const TensorView& out, const TensorView& a, const TensorView& b,
                  const Context& ctx) {
  switch (out.dtype) {
    case DType::fp64: return launch_add<double>(out, a, b, ctx);
    case DType::fp32: return launch_add<float>(out, a, b, ctx);
    case DType::fp16: return launch_add<__half>(out, a, b, ctx);
    case DType::bf16: return launch_add<__nv_bfloat16>(out, a, b, ctx);
    default:
      return Status(StatusCode::internal,
                    "chunk_gated_delta_rule: cuda_sm80 reached with a bad gradient dtype");
  }
}

}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  core::cuda::ScopedDevice device(p.args.q.device.index);
  RECOPS_RETURN_IF_ERROR(device.status());
  return compose(p, ctx, device_add);
}

}  // namespace recops::ops::chunk_gated_delta_rule_ns
