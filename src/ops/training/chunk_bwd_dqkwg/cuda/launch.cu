// training/chunk_bwd_dqkwg/cuda/launch.cu: the arithmetic type, the grid and the checked launch
// (architecture.md §2 step 5); kernel.cuh says how a block walks a chunk. Instantiations: fp32
// arithmetic, and fp64 for fp64 q (as the CPU path); every input dtype is read through a runtime
// switch (uniform over the grid), so the nine independent input dtypes need no instances.
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/chunk_bwd_dqkwg/cuda/kernel.cuh"
#include "ops/training/chunk_bwd_dqkwg/cuda/tiles.h"
#include "ops/training/chunk_bwd_dqkwg/impls.h"

namespace recops::ops::chunk_bwd_dqkwg_ns {
namespace {

template <class S>
Status launch(const Params& p, void* stream) {
  // Chunk slots (common/cuda/gdn_chunk.cuh): B · ceil(T/BT), or floor(T/BT) + N with offsets.
  const int64_t slots =
      training::gdn_cuda::slot_count(p.B, p.T, p.BT, p.N, p.seq_offsets != nullptr);
  const int64_t items = slots * p.H;
  if (items <= 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
  const int64_t k_tiles = std::max<int64_t>(1, (p.K + kTile - 1) / kTile);
  // fp32: 41 KB at BT = 64; fp64: 82 KB (the launch check raises the dynamic limit, <= 99 KB).
  const size_t smem = static_cast<size_t>(smem_elems(p.BT)) * sizeof(S);
  return RECOPS_LAUNCH_KERNEL("chunk_bwd_dqkwg", (chunk_bwd_dqkwg_kernel<S>),
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads), smem, stream, p,
                              items, k_tiles);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  if (p.B == 0 || p.T == 0 || p.H == 0) return Status::Ok();  // nothing to write
  if (p.BT < 1 || p.BT > kMaxBT)
    return Status(StatusCode::internal, "chunk_bwd_dqkwg: cuda_sm80 reached with chunk_size > 64");
  if (p.seq_offsets && p.N < 1)
    return Status(StatusCode::invalid_argument,
                  "chunk_bwd_dqkwg: seq_offsets has no sequence but T > 0");
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  if (p.q_dtype == DType::fp64) return launch<double>(p, ctx.stream);
  return launch<float>(p, ctx.stream);
}

}  // namespace recops::ops::chunk_bwd_dqkwg_ns
