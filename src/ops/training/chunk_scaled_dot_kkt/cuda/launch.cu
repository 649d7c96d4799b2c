// training/chunk_scaled_dot_kkt/cuda/launch.cu: the dtype switch, the grid and the checked launch
// (architecture.md §2 step 5); kernel.cuh says how a block forms a chunk's A. Instantiations: one
// per k dtype (4); beta's and G's dtypes are read through a runtime switch.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda/launch.h"
#include "ops/training/chunk_scaled_dot_kkt/cuda/kernel.cuh"
#include "ops/training/chunk_scaled_dot_kkt/cuda/tiles.h"
#include "ops/training/chunk_scaled_dot_kkt/impls.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_scaled_dot_kkt_ns {
namespace {

template <class TK>
Status launch(const Params& p, void* stream) {
  // Chunk slots (gdn_chunks.cuh): a bound from the sizes alone, nothing read back.
  const int64_t slots =
      training_dev::gdn_chunk_slots(p.seq_offsets != nullptr, p.B, p.T, p.BT, p.N);
  const int64_t items = slots * p.H;
  if (items == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("chunk_scaled_dot_kkt", (chunk_scaled_dot_kkt_kernel<TK>),
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, p,
                              items);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  if (training::any_zero({p.B, p.T, p.H, p.HV})) return Status::Ok();  // the entry skips it too
  if (p.BT < 1 || p.BT > kMaxBT)
    return Status(StatusCode::internal, "chunk_scaled_dot_kkt: cuda_sm80 reached with chunk_size " +
                                            std::to_string(p.BT));
  if (p.seq_offsets && p.N < 1)
    return Status(StatusCode::invalid_argument,
                  "chunk_scaled_dot_kkt: seq_offsets has no sequence but T > 0");
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  switch (p.k_dtype) {
    case DType::fp64: return launch<double>(p, ctx.stream);
    case DType::fp32: return launch<float>(p, ctx.stream);
    case DType::fp16: return launch<__half>(p, ctx.stream);
    case DType::bf16: return launch<__nv_bfloat16>(p, ctx.stream);
    default:
      return Status(StatusCode::internal,
                    "chunk_scaled_dot_kkt: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::chunk_scaled_dot_kkt_ns
