// training/solve_tril/cuda/launch.cu: the compute-type switch, the grid and the checked launch
// (architecture.md §2 step 5); kernel.cuh says how a block inverts a chunk. Instantiations: the
// compute type only (fp32, or fp64 for fp64 A); A's and Ai's dtypes go through runtime switches.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda/launch.h"
#include "ops/training/common/packed_offsets.h"
#include "ops/training/solve_tril/cuda/kernel.cuh"
#include "ops/training/solve_tril/cuda/tiles.h"
#include "ops/training/solve_tril/impls.h"

namespace recops::ops::solve_tril_ns {
namespace {

template <class C>
Status launch(const Params& p, void* stream) {
  // Chunk slots (gdn_chunks.cuh): a bound from the sizes alone, nothing read back.
  const int64_t slots =
      training_dev::gdn_chunk_slots(p.seq_offsets != nullptr, p.B, p.T, p.BT, p.N);
  const int64_t items = slots * p.H;
  if (items == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("solve_tril", (solve_tril_kernel<C>),
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, p,
                              items);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  if (training::any_zero({p.B, p.T, p.H})) return Status::Ok();  // the entry skips it too
  if (p.BT != 16 && p.BT != 32 && p.BT != 64)
    return Status(StatusCode::internal,
                  "solve_tril: cuda_sm80 reached with BT " + std::to_string(p.BT));
  if (p.seq_offsets && p.N < 1)
    return Status(StatusCode::invalid_argument,
                  "solve_tril: seq_offsets has no sequence but T > 0");
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  if (p.in_dtype == DType::fp64) return launch<double>(p, ctx.stream);
  return launch<float>(p, ctx.stream);
}

}  // namespace recops::ops::solve_tril_ns
