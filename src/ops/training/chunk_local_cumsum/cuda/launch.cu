// training/chunk_local_cumsum/cuda/launch.cu: the dtype switch, the column tile, the grid and the
// checked launch (architecture.md §2 step 5); kernel.cuh says how a block walks a chunk.
// Instantiations: in dtype × out dtype (4 × 4), both directions share them.
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/chunk_local_cumsum/cuda/kernel.cuh"
#include "ops/training/chunk_local_cumsum/cuda/tiles.h"
#include "ops/training/chunk_local_cumsum/impls.h"

namespace recops::ops::chunk_local_cumsum_ns {
namespace {

template <class T, class U>
Status launch(const Params& p, void* stream) {
  int log_cw = 0;
  while (log_cw < 5 && (int64_t{1} << log_cw) < p.C) ++log_cw;  // CW = min(32, pow2 >= C)
  const int64_t cw = int64_t{1} << log_cw;
  const int64_t tiles = (p.C + cw - 1) / cw;
  // Chunk slots (kernel.cuh): B · ceil(T/BT), or floor(T/BT) + N with seq_offsets.
  const int64_t slots = p.seq_offsets ? p.T / p.chunk + p.N : p.B * ((p.T + p.chunk - 1) / p.chunk);
  const int64_t items = slots * tiles;
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);  // >= 1: the entry skips empties
  // Warps: enough for the longest chunk in one step (min(BT, T) positions, 32/CW · V a warp).
  const int64_t per_warp = (32 >> log_cw) * kRowsPerThread;
  const int64_t longest = std::min(p.chunk, p.T);
  const int64_t warps = std::clamp<int64_t>((longest + per_warp - 1) / per_warp, 1, kWarps);
  const char* op = "chunk_local_cumsum";  // both directions (Params has no fwd/bwd flag)
  return RECOPS_LAUNCH_KERNEL(
      op, (chunk_local_cumsum_kernel<T, U>), dim3(static_cast<unsigned>(blocks)),
      dim3(static_cast<unsigned>(32 * warps)), 0, stream, p, log_cw, tiles, items);
}

template <class T>
Status launch_in(const Params& p, void* stream) {
  switch (p.out_dtype) {
    case DType::fp64: return launch<T, double>(p, stream);
    case DType::fp32: return launch<T, float>(p, stream);
    case DType::fp16: return launch<T, __half>(p, stream);
    case DType::bf16: return launch<T, __nv_bfloat16>(p, stream);
    default:
      return Status(StatusCode::internal,
                    "chunk_local_cumsum: cuda_sm80 reached with a bad output dtype");
  }
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  if (p.B * p.T * p.C == 0) return Status::Ok();  // nothing to launch (the entry skips it too)
  if (p.seq_offsets && p.N < 1)
    return Status(StatusCode::invalid_argument,
                  "chunk_local_cumsum: seq_offsets has no sequence but T > 0");
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  switch (p.in_dtype) {
    case DType::fp64: return launch_in<double>(p, ctx.stream);
    case DType::fp32: return launch_in<float>(p, ctx.stream);
    case DType::fp16: return launch_in<__half>(p, ctx.stream);
    case DType::bf16: return launch_in<__nv_bfloat16>(p, ctx.stream);
    default:
      return Status(StatusCode::internal,
                    "chunk_local_cumsum: cuda_sm80 reached with a bad input dtype");
  }
}

}  // namespace recops::ops::chunk_local_cumsum_ns
