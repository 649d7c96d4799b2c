// training/chunk_kda_fwd_intra/cuda/launch.cu: the arithmetic switch, the grid and the checked
// launch (architecture.md §2 step 5); kernel.cuh says what a block computes. Instantiations: two
// (fp32 arithmetic, fp64 when k is fp64, as the CPU path); every tensor is read and written
// through a runtime dtype switch that is uniform across a block. Nothing is read back to the
// host (CUDA-graph friendly).
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda/launch.h"
#include "ops/training/chunk_kda_fwd_intra/cuda/kernel.cuh"
#include "ops/training/chunk_kda_fwd_intra/cuda/tiles.h"
#include "ops/training/chunk_kda_fwd_intra/impls.h"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_kda_fwd_intra_ns {
namespace {

template <class S>
Status launch(const Params& p, void* stream) {
  const int64_t slots =
      training_dev::gdn_chunk_slots(p.seq_offsets != nullptr, p.B, p.T, p.BT, p.N);
  const int64_t items = slots * p.HV;
  if (items == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("chunk_kda_fwd_intra", (chunk_kda_fwd_intra_kernel<S>),
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, p,
                              items);
}

}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  // Empty problems launch nothing (B, T or HV = 0); K = 0 or V = 0 only skip those columns.
  if (p.B == 0 || p.T == 0 || p.HV == 0) return Status::Ok();
  if (p.BT < 1 || p.BT > kMaxBT)
    return Status(StatusCode::internal, "chunk_kda_fwd_intra: cuda_sm80 reached with chunk_size " +
                                            std::to_string(p.BT) + " outside [1, 64]");
  if (p.seq_offsets && p.N < 1)
    return Status(StatusCode::invalid_argument,
                  "chunk_kda_fwd_intra: seq_offsets has no sequence but T > 0");
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  if (p.k_dtype == DType::fp64) return launch<double>(p, ctx.stream);
  return launch<float>(p, ctx.stream);
}

}  // namespace recops::ops::chunk_kda_fwd_intra_ns
