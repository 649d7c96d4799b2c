// training/recompute_w_u_fwd/cuda/launch.cu: the dtype switch, the grid and the checked launch
// (architecture.md §2 step 5); kernel.cuh says how a block forms its tile. Instantiations: one
// per source dtype (4); u is launched with v's, w with k's. Nothing is read back to the host.
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/common/cuda/gdn_chunks.cuh"
#include "ops/training/recompute_w_u_fwd/cuda/kernel.cuh"
#include "ops/training/recompute_w_u_fwd/cuda/tiles.h"
#include "ops/training/recompute_w_u_fwd/impls.h"

namespace recops::ops::recompute_w_u_fwd_ns {
namespace {

template <class TX>
Status launch(const Params& p, bool with_k, void* stream) {
  using S = std::conditional_t<std::is_same_v<TX, double>, double, float>;
  const int64_t D = with_k ? p.K : p.V;
  if (D == 0) return Status::Ok();  // that output is empty
  const int64_t tiles = (D + kCols<S> - 1) / kCols<S>;
  const int64_t slots =
      training_dev::gdn_chunk_slots(p.seq_offsets != nullptr, p.B, p.T, p.BT, p.N);
  const int64_t items = slots * p.HV * tiles;
  if (items == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("recompute_w_u_fwd", (recompute_w_u_fwd_kernel<TX>),
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, p,
                              with_k, tiles, items);
}

Status launch_any(const Params& p, DType t, bool with_k, void* stream) {
  switch (t) {
    case DType::fp64: return launch<double>(p, with_k, stream);
    case DType::fp32: return launch<float>(p, with_k, stream);
    case DType::fp16: return launch<__half>(p, with_k, stream);
    case DType::bf16: return launch<__nv_bfloat16>(p, with_k, stream);
    default:
      return Status(StatusCode::internal, "recompute_w_u_fwd: cuda_sm80 reached with a bad dtype");
  }
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  // Empty problems launch nothing (B, T or HV = 0; K = 0 or V = 0 skips that output).
  if (p.B == 0 || p.T == 0 || p.HV == 0) return Status::Ok();
  if (p.seq_offsets && p.N < 1)
    return Status(StatusCode::invalid_argument,
                  "recompute_w_u_fwd: seq_offsets has no sequence but T > 0");
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  RECOPS_RETURN_IF_ERROR(launch_any(p, p.v_dtype, false, ctx.stream));
  return launch_any(p, p.k_dtype, true, ctx.stream);
}

}  // namespace recops::ops::recompute_w_u_fwd_ns
