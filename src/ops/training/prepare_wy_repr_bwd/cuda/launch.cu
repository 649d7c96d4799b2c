// training/prepare_wy_repr_bwd/cuda/launch.cu: the arithmetic type, the grid and the checked
// launch (architecture.md §2 step 5); kernel.cuh says how a block walks a chunk. Instantiations:
// fp32 arithmetic, and fp64 for fp64 k or v (as the CPU path); every input dtype is read through
// a runtime switch (uniform over the grid), so the seven independent input dtypes need no
// instances.
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/prepare_wy_repr_bwd/cuda/kernel.cuh"
#include "ops/training/prepare_wy_repr_bwd/cuda/tiles.h"
#include "ops/training/prepare_wy_repr_bwd/impls.h"

namespace recops::ops::prepare_wy_repr_bwd_ns {
namespace {

template <class S>
Status launch(const Params& p, void* stream) {
  const training::gdn_cuda::ChunkGrid g = training::gdn_cuda::chunk_grid(
      p.B, p.T, p.BT, p.N, p.seq_offsets != nullptr, p.H, p.K, kTile, kMaxBlocks);
  if (g.items <= 0) return Status::Ok();
  // fp32: 43 KB at BT = 64; fp64: 86 KB (the launch check raises the dynamic limit, <= 99 KB).
  const size_t smem = static_cast<size_t>(smem_elems(p.BT)) * sizeof(S);
  return RECOPS_LAUNCH_KERNEL("prepare_wy_repr_bwd", (prepare_wy_repr_bwd_kernel<S>),
                              dim3(static_cast<unsigned>(g.blocks)), dim3(kThreads), smem, stream,
                              p, g.items, g.k_tiles);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  bool empty = false;
  RECOPS_RETURN_IF_ERROR(training::gdn_cuda::chunk_preamble(
      "prepare_wy_repr_bwd", p.B, p.T, p.H, p.BT, kMaxBT, p.seq_offsets != nullptr, p.N, &empty));
  if (empty) return Status::Ok();  // nothing to write
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  if (p.k_dtype == DType::fp64 || p.v_dtype == DType::fp64) return launch<double>(p, ctx.stream);
  return launch<float>(p, ctx.stream);
}

}  // namespace recops::ops::prepare_wy_repr_bwd_ns
