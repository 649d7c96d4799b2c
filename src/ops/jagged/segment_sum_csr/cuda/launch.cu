// jagged/segment_sum_csr/cuda/launch.cu: dtype switch, grid, checked launch (architecture.md §2
// step 5). One warp per segment (tiles.h), the grid capped and walked grid-stride.
#include <algorithm>

#include "core/cuda/launch.h"
#include "ops/jagged/segment_sum_csr/cuda/kernel.cuh"
#include "ops/jagged/segment_sum_csr/cuda/tiles.h"
#include "ops/jagged/segment_sum_csr/impls.h"

namespace recops::ops::segment_sum_csr_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  constexpr int64_t kWarps = kThreads / 32;
  const int64_t blocks = std::min<int64_t>((p.S + kWarps - 1) / kWarps, kMaxBlocks);
  const dim3 grid(static_cast<unsigned>(blocks)), block(kThreads);
  void* stream = ctx.stream;
  constexpr const char* kOp = "segment_sum_csr";
  switch (p.dtype) {
    case DType::fp64:
      return RECOPS_LAUNCH_KERNEL(kOp, segment_sum_kernel<double>, grid, block, 0, stream, p);
    case DType::fp32:
      return RECOPS_LAUNCH_KERNEL(kOp, segment_sum_kernel<float>, grid, block, 0, stream, p);
    case DType::fp16:
      return RECOPS_LAUNCH_KERNEL(kOp, segment_sum_kernel<__half>, grid, block, 0, stream, p);
    case DType::bf16:
      return RECOPS_LAUNCH_KERNEL(kOp, segment_sum_kernel<__nv_bfloat16>, grid, block, 0, stream,
                                  p);
    case DType::int32:
      return RECOPS_LAUNCH_KERNEL(kOp, segment_sum_kernel<int32_t>, grid, block, 0, stream, p);
    case DType::int64:
      return RECOPS_LAUNCH_KERNEL(kOp, segment_sum_kernel<int64_t>, grid, block, 0, stream, p);
    default:
      return Status(StatusCode::internal, "segment_sum_csr: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::segment_sum_csr_ns
