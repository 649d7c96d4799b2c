// training/chunk_bwd_dqkwg/cuda/launch.cu: the arithmetic type, the grid and the checked launch
// (architecture.md §2 step 5); kernel.cuh says how a block walks a chunk. Instantiations: fp32
// arithmetic, and fp64 for fp64 q (as the CPU path); every input dtype is read through a runtime
// switch (uniform over the grid), so the nine independent input dtypes need no instances.
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/chunk_bwd_dqkwg/cuda/kernel.cuh"
#include "ops/training/chunk_bwd_dqkwg/cuda/tiles.h"
#include "ops/training/chunk_bwd_dqkwg/impls.h"

namespace recops::ops::chunk_bwd_dqkwg_ns {
namespace {

template <class S>
Status launch(const Params& p, void* stream) {
  const training::gdn_cuda::ChunkGrid g = training::gdn_cuda::chunk_grid(
      p.B, p.T, p.BT, p.N, p.seq_offsets != nullptr, p.H, p.K, kTile, kMaxBlocks);
  if (g.items <= 0) return Status::Ok();
  // fp32: 41 KB at BT = 64; fp64: 82 KB (the launch check raises the dynamic limit, <= 99 KB).
  size_t smem = static_cast<size_t>(smem_elems(p.BT)) * sizeof(S);
  // dg's partial sums over several K tiles in shared memory while they fit in 98 KB (under
  // sm_86's opt-in limit): HV/H up to 36 in fp64 at BT = 64, 232 in fp32; else each K tile adds
  // its fp32-rounded part to dg (kernel.cuh).
  const size_t part = static_cast<size_t>(p.BT * (p.HV / p.H)) * sizeof(S);
  const bool dg_smem = p.g != nullptr && g.k_tiles > 1 && smem + part <= kSmemOptinLimit;
  if (dg_smem) smem += part;
  return RECOPS_LAUNCH_KERNEL("chunk_bwd_dqkwg", (chunk_bwd_dqkwg_kernel<S>),
                              dim3(static_cast<unsigned>(g.blocks)), dim3(kThreads), smem, stream,
                              p, g.items, g.k_tiles, dg_smem);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  bool empty = false;
  RECOPS_RETURN_IF_ERROR(training::gdn_cuda::chunk_preamble(
      "chunk_bwd_dqkwg", p.B, p.T, p.H, p.BT, kMaxBT, p.seq_offsets != nullptr, p.N, &empty));
  if (empty) return Status::Ok();  // nothing to write
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  if (p.q_dtype == DType::fp64) return launch<double>(p, ctx.stream);
  return launch<float>(p, ctx.stream);
}

}  // namespace recops::ops::chunk_bwd_dqkwg_ns
