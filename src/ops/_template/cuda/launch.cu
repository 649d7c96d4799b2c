// __family__/__op__/cuda/launch.cu: dtype switch, grid, checked launch (architecture.md §2 step 5).
// Tile choice: 256 threads, at most 4 blocks per SM's worth of work per launch (tiles.h).
#include <algorithm>

#include "core/cuda/launch.h"
#include "ops/__family__/__op__/cuda/kernel.cuh"
#include "ops/__family__/__op__/cuda/tiles.h"
#include "ops/__family__/__op__/impls.h"

namespace recops::ops::__op___ns {

Status run_cuda(const Params& p, const Context& ctx) {
  const int64_t blocks = std::min<int64_t>((p.N + kThreads - 1) / kThreads, kMaxBlocks);
  const dim3 grid(static_cast<unsigned>(blocks)), block(kThreads);
  void* stream = ctx.stream;
  switch (p.dtype) {
    case DType::fp32:
      return RECOPS_LAUNCH_KERNEL("__op__", scale_kernel<float>, grid, block, 0, stream, p);
    case DType::fp16:
      return RECOPS_LAUNCH_KERNEL("__op__", scale_kernel<__half>, grid, block, 0, stream, p);
    case DType::bf16:
      return RECOPS_LAUNCH_KERNEL("__op__", scale_kernel<__nv_bfloat16>, grid, block, 0, stream, p);
    default: return Status(StatusCode::internal, "__op__: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::__op___ns
