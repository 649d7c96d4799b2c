// dense_to_jagged, CUDA kernel: device guard, current stream, then the shared body.
#include <torch/library.h>

#include "torch/cuda_context.h"
#include "torch/ops/bodies.h"

namespace recops::binding {
namespace {
at::Tensor dense_to_jagged_cuda(const at::Tensor& dense, const at::Tensor& seq_offsets,
                                std::optional<int64_t> total_L) {
  const c10::cuda::CUDAGuard guard(dense.device());
  return run_dense_to_jagged(dense, seq_offsets, total_L, cuda_context(dense));
}
}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, CUDA, m) {
  m.impl("dense_to_jagged", TORCH_FN(recops::binding::dense_to_jagged_cuda));
}
