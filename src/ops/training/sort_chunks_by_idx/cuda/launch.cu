// training/sort_chunks_by_idx/cuda/launch.cu: the offsets kernel, then the row mover with the
// widest access (16, 8, 4, 2 or 1 bytes) that divides the row size and both base addresses
// (architecture.md §2 step 5). Both launches are checked; no host synchronisation.
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/sort_chunks_by_idx/cuda/kernel.cuh"
#include "ops/training/sort_chunks_by_idx/cuda/tiles.h"
#include "ops/training/sort_chunks_by_idx/impls.h"

namespace recops::ops::sort_chunks_by_idx_ns {
namespace {
const char* op_name(const Params& p) {
  return p.inverse ? "sort_chunks_by_idx_bwd" : "sort_chunks_by_idx";
}

template <class V>
Status move(const Params& p, void* stream) {
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(p.T, kMaxBlocks))), block(kThreads);
  return RECOPS_LAUNCH_KERNEL(op_name(p), move_rows_kernel<V>, grid, block, 0, stream, p);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(
      RECOPS_LAUNCH_KERNEL(op_name(p), row_map_kernel, dim3(1), dim3(1), 0, ctx.stream, p));
  const uint64_t bits = static_cast<uint64_t>(p.row_bytes) | reinterpret_cast<uintptr_t>(p.from) |
                        reinterpret_cast<uintptr_t>(p.to);
  if (bits % 16 == 0) return move<uint4>(p, ctx.stream);
  if (bits % 8 == 0) return move<uint2>(p, ctx.stream);
  if (bits % 4 == 0) return move<uint32_t>(p, ctx.stream);
  if (bits % 2 == 0) return move<uint16_t>(p, ctx.stream);
  return move<uint8_t>(p, ctx.stream);
}

}  // namespace recops::ops::sort_chunks_by_idx_ns
