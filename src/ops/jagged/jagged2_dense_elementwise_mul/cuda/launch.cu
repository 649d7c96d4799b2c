// jagged/jagged2_dense_elementwise_mul/cuda/launch.cu: dtype switch, grid, checked launch
// (architecture.md §2 step 5). Forward and backward are one kernel (a = x or grad).
#include "core/cuda/launch.h"
#include "ops/jagged/common/cuda/jagged2_launch.cuh"
#include "ops/jagged/jagged2_dense_elementwise_mul/cuda/kernel.cuh"
#include "ops/jagged/jagged2_dense_elementwise_mul/cuda/tiles.h"
#include "ops/jagged/jagged2_dense_elementwise_mul/impls.h"

namespace recops::ops::jagged2_dense_elementwise_mul_ns {

Status run_cuda(const Params& p, const Context& ctx) {
  return jagged2_cuda_floating(p.dtype, "jagged2_dense_elementwise_mul: cuda_sm80", [&](auto t) {
    return RECOPS_LAUNCH_KERNEL("jagged2_dense_elementwise_mul", mul_kernel<decltype(t)>,
                                jagged2_sample_grid(p.B, kMaxBlocks), dim3(kThreads), 0, ctx.stream,
                                p);
  });
}

}  // namespace recops::ops::jagged2_dense_elementwise_mul_ns
