// ops/jagged/common/cuda/jagged2_bmm_launch.cu: dtype switch, grid and checked launch of the
// jagged² matmuls' cuda_sm80 kernel (one instantiation per dtype).
#include "core/cuda/launch.h"
#include "ops/jagged/common/cuda/jagged2_bmm_kernel.cuh"
#include "ops/jagged/common/cuda/jagged2_launch.cuh"

namespace recops::ops::j2bmm {
namespace {
constexpr int kThreads = 256;           // untuned: 8 warps a CTA
constexpr long long kMaxBlocks = 8192;  // grid-stride over samples beyond this
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  return jagged2_cuda_floating(p.dtype, "jagged² bmm: cuda_sm80", [&](auto t) {
    return RECOPS_LAUNCH_KERNEL("jagged2_bmm", jagged2_bmm_kernel<decltype(t)>,
                                jagged2_sample_grid(p.B, kMaxBlocks), dim3(kThreads), 0, ctx.stream,
                                p);
  });
}

}  // namespace recops::ops::j2bmm
