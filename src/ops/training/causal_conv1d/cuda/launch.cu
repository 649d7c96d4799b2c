// training/causal_conv1d/cuda/launch.cu: dtype switch, grids and checked launches of cuda_sm80
// (kernel.cuh). Grid-stride loops capped at kMaxBlocks blocks.
#include <algorithm>

#include "core/cuda/launch.h"
#include "ops/training/causal_conv1d/cuda/kernel.cuh"
#include "ops/training/causal_conv1d/cuda/tiles.h"
#include "ops/training/causal_conv1d/impls.h"

namespace recops::ops::causal_conv1d_ns {
namespace {

constexpr int64_t kMaxBlocks = 65535;

dim3 grid_for(int64_t items) {
  return dim3(static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>((items + kThreads - 1) / kThreads, kMaxBlocks))));
}

template <class T, class Acc>
Status run(const Params& p, const Context& ctx) {
  void* s = ctx.stream;
  const dim3 block(kThreads);
  constexpr const char* op = "causal_conv1d";
  if (!p.backward) {
    const int64_t tiles = (p.T + kTile - 1) / kTile;
    if (p.B * p.D * tiles > 0)
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(op, (fwd_kernel<T, Acc>),
                                                  grid_for(p.B * p.D * tiles), block, 0, s, p));
    if (p.final_state && p.N * p.D * p.S > 0)
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(op, (final_state_kernel<T, Acc>),
                                                  grid_for(p.N * p.D * p.S), block, 0, s, p));
    return Status::Ok();
  }
  constexpr const char* bop = "causal_conv1d_bwd";
  if (p.B * p.D * p.T > 0)
    RECOPS_RETURN_IF_ERROR(
        RECOPS_LAUNCH_KERNEL(bop, (dx_kernel<T, Acc>), grid_for(p.B * p.D * p.T), block, 0, s, p));
  if (p.dinit && p.N * p.D * p.S > 0)
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(bop, (dinit_kernel<T, Acc>),
                                                grid_for(p.N * p.D * p.S), block, 0, s, p));
  const int64_t chunks = partial_chunks(p.B * p.T);
  if (chunks > 0)
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(bop, (partials_kernel<T, Acc>),
                                                grid_for(chunks * p.D), block, 0, s, p, chunks));
  return RECOPS_LAUNCH_KERNEL(bop, (reduce_kernel<T, Acc>), grid_for(p.D), block, 0, s, p, chunks);
}

}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp64: return run<double, double>(p, ctx);
    case DType::fp32: return run<float, float>(p, ctx);
    case DType::fp16: return run<__half, float>(p, ctx);
    case DType::bf16: return run<__nv_bfloat16, float>(p, ctx);
    default:
      return Status(StatusCode::internal, "causal_conv1d: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::causal_conv1d_ns
