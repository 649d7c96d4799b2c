// jagged/jagged2_softmax/cuda/launch.cu: dtype switch, grid, checked launch (architecture.md §2
// step 5). Forward and backward are one kernel.
#include "core/cuda/launch.h"
#include "ops/jagged/common/cuda/jagged2_launch.cuh"
#include "ops/jagged/jagged2_softmax/cuda/kernel.cuh"
#include "ops/jagged/jagged2_softmax/cuda/tiles.h"
#include "ops/jagged/jagged2_softmax/impls.h"

namespace recops::ops::jagged2_softmax_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  return jagged2_cuda_floating(p.dtype, "jagged2_softmax: cuda_sm80", [&](auto t) {
    return RECOPS_LAUNCH_KERNEL(p.backward ? "jagged2_softmax_bwd" : "jagged2_softmax",
                                softmax_kernel<decltype(t)>, jagged2_sample_grid(p.B, kMaxBlocks),
                                dim3(kThreads), 0, ctx.stream, p);
  });
}

}  // namespace recops::ops::jagged2_softmax_ns
