// jagged/jagged_softmax/cuda/launch.cu: dtype switch, tile choice (tiles.h), grid, checked launch.
// cuda_sm80: also the path on sm90 (no Hopper-specific code: a memory-bound streaming kernel).
#include <algorithm>

#include "core/cuda/launch.h"
#include "ops/jagged/jagged_softmax/cuda/kernel.cuh"
#include "ops/jagged/jagged_softmax/impls.h"

namespace recops::ops::jagged_softmax_ns {
namespace {
template <class T, class Acc>
Status launch(const Params& p, void* stream) {
  const int cols = tile_cols(p.H);
  const int64_t items = p.B * ((p.H + cols - 1) / cols);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(items, kMaxBlocks))), block(kThreads);
  if (p.backward)
    return RECOPS_LAUNCH_KERNEL("jagged_softmax_bwd", softmax_bwd_kernel<T>, grid, block, 0, stream,
                                p, cols);
  return RECOPS_LAUNCH_KERNEL("jagged_softmax", (softmax_fwd_kernel<T, Acc>), grid, block, 0,
                              stream, p, cols);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  if (p.B == 0) return Status::Ok();  // no sequences: nothing to write
  switch (p.dtype) {
    case DType::fp64: return launch<double, double>(p, ctx.stream);
    case DType::fp32: return launch<float, float>(p, ctx.stream);
    case DType::fp16: return launch<__half, float>(p, ctx.stream);
    case DType::bf16: return launch<__nv_bfloat16, float>(p, ctx.stream);
    default:
      return Status(StatusCode::internal, "jagged_softmax: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::jagged_softmax_ns
