// jagged/jagged2_to_padded_dense/cuda/launch.cu: element-size switch, grid, checked launch
// (architecture.md §2 step 5). Both directions; the grid is capped (tiles.h).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/cuda/launch.h"
#include "ops/jagged/common/cuda/jagged2_launch.cuh"
#include "ops/jagged/jagged2_to_padded_dense/cuda/kernel.cuh"
#include "ops/jagged/jagged2_to_padded_dense/cuda/tiles.h"
#include "ops/jagged/jagged2_to_padded_dense/impls.h"

namespace recops::ops::jagged2_to_padded_dense_ns {
namespace {
template <class E>
Status launch(const Params& p, void* stream) {
  if (p.backward) {
    return RECOPS_LAUNCH_KERNEL("jagged2_to_padded_dense_bwd", to_jagged_kernel<E>,
                                jagged2_sample_grid(p.B, kMaxBlocks), dim3(kThreads), 0, stream, p);
  }
  E pad;
  std::memcpy(&pad, &p.padding_bits, sizeof(E));
  const int64_t n = p.B * p.max_L * p.max_L;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL("jagged2_to_padded_dense", to_dense_kernel<E>,
                              dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, p,
                              pad);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.elem_size) {
    case 1: return launch<uint8_t>(p, ctx.stream);
    case 2: return launch<uint16_t>(p, ctx.stream);
    case 4: return launch<uint32_t>(p, ctx.stream);
    case 8: return launch<unsigned long long>(p, ctx.stream);
    default:
      return Status(StatusCode::internal, "jagged2_to_padded_dense: cuda_sm80: bad element size");
  }
}

}  // namespace recops::ops::jagged2_to_padded_dense_ns
