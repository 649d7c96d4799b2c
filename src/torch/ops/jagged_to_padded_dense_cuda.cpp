// jagged_to_padded_dense, CUDA kernel: device guard, current stream, then the shared body.
#include <torch/library.h>

#include "torch/cuda_context.h"
#include "torch/ops/bodies.h"

namespace recops::binding {
namespace {
at::Tensor jagged_to_padded_dense_cuda(const at::Tensor& values, const at::Tensor& seq_offsets,
                                       int64_t max_seq_len, double padding_value) {
  const c10::cuda::CUDAGuard guard(values.device());
  return run_jagged_to_padded_dense(values, seq_offsets, max_seq_len, padding_value,
                                    cuda_context(values));
}
}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, CUDA, m) {
  m.impl("jagged_to_padded_dense", TORCH_FN(recops::binding::jagged_to_padded_dense_cuda));
}
