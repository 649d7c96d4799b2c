// training/clipped_swiglu/cuda/launch.cu: dtype switch, the vector width, grid and checked launch
// (architecture.md §2 step 5). 16-byte accesses (N = 16 / sizeof(T)) when N divides I and x, dy
// and the output start 16-byte aligned; one element a thread otherwise (and for fp64).
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/clipped_swiglu/cuda/kernel.cuh"
#include "ops/training/clipped_swiglu/cuda/tiles.h"
#include "ops/training/clipped_swiglu/impls.h"

namespace recops::ops::clipped_swiglu_ns {
namespace {
bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

template <class T, int N>
Status launch(const Params& p, void* stream) {
  const int64_t groups = p.rows * (p.I / N);
  const int64_t blocks = std::min<int64_t>((groups + kThreads - 1) / kThreads, kMaxBlocks);
  const dim3 grid(static_cast<unsigned>(blocks)), block(kThreads);
  return RECOPS_LAUNCH_KERNEL(p.backward ? "clipped_swiglu_bwd" : "clipped_swiglu",
                              (clipped_swiglu_kernel<T, N>), grid, block, 0, stream, p);
}

template <class T>
Status launch_typed(const Params& p, void* stream) {
  constexpr int kVec = 16 / sizeof(T);
  const bool vec =
      p.I % kVec == 0 && aligned16(p.x) && aligned16(p.out) && (p.dy == nullptr || aligned16(p.dy));
  return vec ? launch<T, kVec>(p, stream) : launch<T, 1>(p, stream);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp64: return launch<double, 1>(p, ctx.stream);
    case DType::fp32: return launch_typed<float>(p, ctx.stream);
    case DType::fp16: return launch_typed<__half>(p, ctx.stream);
    case DType::bf16: return launch_typed<__nv_bfloat16>(p, ctx.stream);
    default:
      return Status(StatusCode::internal, "clipped_swiglu: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::clipped_swiglu_ns
