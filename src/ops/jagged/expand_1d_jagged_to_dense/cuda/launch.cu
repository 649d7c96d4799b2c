// jagged/expand_1d_jagged_to_dense/cuda/launch.cu: element-size switch, grid, checked launch
// (architecture.md §2 step 5). One thread per output element, the grid capped (tiles.h).
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/jagged/expand_1d_jagged_to_dense/cuda/kernel.cuh"
#include "ops/jagged/expand_1d_jagged_to_dense/cuda/tiles.h"
#include "ops/jagged/expand_1d_jagged_to_dense/impls.h"

namespace recops::ops::expand_1d_jagged_to_dense_ns {
namespace {
template <class E>
Status launch(const Params& p, void* stream) {
  const int64_t n = p.B * p.max_len;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("expand_1d_jagged_to_dense", expand_kernel<E>,
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, p);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.elem_size) {
    case 1: return launch<uint8_t>(p, ctx.stream);
    case 2: return launch<uint16_t>(p, ctx.stream);
    case 4: return launch<uint32_t>(p, ctx.stream);
    case 8: return launch<unsigned long long>(p, ctx.stream);
    default:
      return Status(StatusCode::internal, "expand_1d_jagged_to_dense: cuda_sm80: bad element size");
  }
}

}  // namespace recops::ops::expand_1d_jagged_to_dense_ns
