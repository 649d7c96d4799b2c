// training/chunk_kda_bwd_dav/cuda/launch.cu: the arithmetic switch, the grid and the checked
// launch (architecture.md §2 step 5); kernel.cuh says what a block computes. Instantiations: two
// (fp32 arithmetic, fp64 when do is fp64, as the CPU path); every tensor is read and written
// through a runtime dtype switch that is uniform across a block. Nothing is read back to the
// host (CUDA-graph friendly).
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/chunk_kda_bwd_dav/cuda/kernel.cuh"
#include "ops/training/chunk_kda_bwd_dav/cuda/tiles.h"
#include "ops/training/chunk_kda_bwd_dav/impls.h"
#include "ops/training/common/cuda/gdn_chunk.cuh"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_kda_bwd_dav_ns {
namespace {

template <class S>
Status launch(const Params& p, void* stream) {
  const int64_t slots =
      training_dev::gdn_chunk_slots(p.seq_offsets != nullptr, p.B, p.T, p.BT, p.N);
  const int64_t items = slots * p.HV;
  if (items == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("chunk_kda_bwd_dav", (chunk_kda_bwd_dav_kernel<S>),
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, p,
                              items);
}

}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  // Empty problems launch nothing (B, T or HV = 0); V = 0 still writes dAqk (zeros).
  bool empty = false;
  RECOPS_RETURN_IF_ERROR(training::gdn_cuda::chunk_preamble(
      "chunk_kda_bwd_dav", p.B, p.T, p.HV, p.BT, kMaxBT, p.seq_offsets != nullptr, p.N, &empty));
  if (empty) return Status::Ok();
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  if (p.do_dtype == DType::fp64) return launch<double>(p, ctx.stream);
  return launch<float>(p, ctx.stream);
}

}  // namespace recops::ops::chunk_kda_bwd_dav_ns
