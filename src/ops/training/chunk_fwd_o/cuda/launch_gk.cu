// training/chunk_fwd_o/cuda/launch_gk.cu: the grid and the checked launch of the gk kernel
// (kernel_gk.cuh). Instantiations: S = fp32 and S = fp64 (fp64 q, hence fp64 o); o's dtype and the
// inputs' are read at run time. Nothing is read back to the host (CUDA-graph friendly).
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/chunk_fwd_o/cuda/kernel_gk.cuh"
#include "ops/training/chunk_fwd_o/cuda/launch_gk.h"
#include "ops/training/chunk_fwd_o/cuda/tiles.h"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_fwd_o_ns {
namespace {

template <class S>
Status launch(const Params& p, void* stream) {
  const int64_t vtiles = (p.V + kVT - 1) / kVT;
  const int64_t slots =
      training_dev::gdn_chunk_slots(p.seq_offsets != nullptr, p.B, p.T, p.BT, p.N);
  const int64_t items = slots * p.HV * vtiles;
  if (items == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("chunk_fwd_o", chunk_fwd_o_gk_kernel<S>,
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                              kGkSmemElems<S> * sizeof(S), stream, p, vtiles, items);
}

}  // namespace

Status launch_gk(const Params& p, void* stream) {
  switch (p.o_dtype) {
    case DType::fp64: return launch<double>(p, stream);
    case DType::fp32:
    case DType::fp16:
    case DType::bf16: return launch<float>(p, stream);
    default:
      return Status(StatusCode::internal, "chunk_fwd_o: cuda_sm80 (gk) reached with a bad dtype");
  }
}

}  // namespace recops::ops::chunk_fwd_o_ns
