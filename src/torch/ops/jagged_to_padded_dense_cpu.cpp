// jagged_to_padded_dense, CPU kernel (and the shared body the CUDA kernel calls).
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "recops/jagged.h"
#include "torch/convert.h"
#include "torch/ops/bodies.h"

namespace recops::binding {

at::Tensor run_jagged_to_padded_dense(const at::Tensor& values_in, const at::Tensor& seq_offsets,
                                      int64_t max_seq_len, double padding_value,
                                      const Context& ctx) {
  constexpr const char* kOp = "jagged_to_padded_dense";
  // values [total_L, *E]: trailing dims dense, row stride free.
  const at::Tensor values = dense_from(values_in, 1);
  const TensorView v = to_view(values, kOp, "values");
  const TensorView off = to_view(seq_offsets, kOp, "seq_offsets");
  Shape shape;  // [B, max_seq_len, *E]
  check(jagged_to_padded_dense_shape(v, off, max_seq_len, &shape));
  at::Tensor out = new_output(shape, values.options());
  check(jagged_to_padded_dense(v, off, max_seq_len, padding_value, to_view(out, kOp, "out"), ctx));
  return out;
}

namespace {
at::Tensor jagged_to_padded_dense_cpu(const at::Tensor& values, const at::Tensor& seq_offsets,
                                      int64_t max_seq_len, double padding_value) {
  return run_jagged_to_padded_dense(values, seq_offsets, max_seq_len, padding_value, cpu_context());
}
}  // namespace

}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, CPU, m) {
  m.impl("jagged_to_padded_dense", TORCH_FN(recops::binding::jagged_to_padded_dense_cpu));
}
