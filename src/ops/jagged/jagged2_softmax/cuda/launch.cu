// jagged/jagged2_softmax/cuda/launch.cu: dtype switch, grid, checked launch (architecture.md §2
// step 5). Forward and backward are one kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/jagged/jagged2_softmax/cuda/kernel.cuh"
#include "ops/jagged/jagged2_softmax/cuda/tiles.h"
#include "ops/jagged/jagged2_softmax/impls.h"

namespace recops::ops::jagged2_softmax_ns {
namespace {
template <class T>
Status launch(const Params& p, void* stream) {
  const int64_t blocks = std::min<int64_t>(p.B, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL(p.backward ? "jagged2_softmax_bwd" : "jagged2_softmax",
                              softmax_kernel<T>, dim3(static_cast<unsigned>(blocks)),
                              dim3(kThreads), 0, stream, p);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp64: return launch<double>(p, ctx.stream);
    case DType::fp32: return launch<float>(p, ctx.stream);
    case DType::fp16: return launch<__half>(p, ctx.stream);
    case DType::bf16: return launch<__nv_bfloat16>(p, ctx.stream);
    default: return Status(StatusCode::internal, "jagged2_softmax: cuda_sm80: unsupported dtype");
  }
}

}  // namespace recops::ops::jagged2_softmax_ns
