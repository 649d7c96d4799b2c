// training/chunk_fwd_o/cuda/launch.cu: the dtype switch, the grid and the checked launch
// (architecture.md §2 step 5); kernel.cuh says how a block forms its tile. Instantiations: one per
// o dtype (q's, 4); the other inputs are read through a runtime dtype switch that is uniform
// across a block. Nothing is read back to the host (CUDA-graph friendly). With gk the launch is
// launch_gk.cu's (kernel_gk.cuh).
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/chunk_fwd_o/cuda/kernel.cuh"
#include "ops/training/chunk_fwd_o/cuda/launch_gk.h"
#include "ops/training/chunk_fwd_o/cuda/tiles.h"
#include "ops/training/chunk_fwd_o/impls.h"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_fwd_o_ns {
namespace {

template <class TO>
Status launch(const Params& p, void* stream) {
  using S = std::conditional_t<std::is_same_v<TO, double>, double, float>;
  const int64_t vtiles = (p.V + kVT - 1) / kVT;
  const int64_t slots =
      training_dev::gdn_chunk_slots(p.seq_offsets != nullptr, p.B, p.T, p.BT, p.N);
  const int64_t items = slots * p.HV * vtiles;
  if (items == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("chunk_fwd_o", (chunk_fwd_o_kernel<TO>),
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                              kSmemElems<S> * sizeof(S), stream, p, vtiles, items);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  if (p.B == 0 || p.T == 0 || p.HV == 0 || p.V == 0) return Status::Ok();  // nothing to write
  if (p.seq_offsets && p.N < 1)
    return Status(StatusCode::invalid_argument,
                  "chunk_fwd_o: seq_offsets has no sequence but T > 0");
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  if (p.gk) return launch_gk(p, ctx.stream);  // KDA's per-channel gate: launch_gk.cu
  switch (p.o_dtype) {
    case DType::fp64: return launch<double>(p, ctx.stream);
    case DType::fp32: return launch<float>(p, ctx.stream);
    case DType::fp16: return launch<__half>(p, ctx.stream);
    case DType::bf16: return launch<__nv_bfloat16>(p, ctx.stream);
    default: return Status(StatusCode::internal, "chunk_fwd_o: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::chunk_fwd_o_ns
