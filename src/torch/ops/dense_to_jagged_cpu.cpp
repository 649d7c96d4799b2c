// dense_to_jagged, CPU kernel (and the shared body the CUDA kernel calls).
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "recops/jagged.h"
#include "torch/convert.h"
#include "torch/ops/bodies.h"

namespace recops::binding {

at::Tensor run_dense_to_jagged(const at::Tensor& dense_in, const at::Tensor& seq_offsets,
                               std::optional<int64_t> total_L, const Context& ctx) {
  constexpr const char* kOp = "dense_to_jagged";
  // dense [B, S, *E]: trailing dims dense, batch and row strides free.
  const at::Tensor dense = dense_from(dense_in, 2);
  const TensorView d = to_view(dense, kOp, "dense");
  const TensorView off = to_view(seq_offsets, kOp, "seq_offsets");
  int64_t rows = 0;
  if (total_L) {
    rows = *total_L;
  } else {
    // seq_offsets[B]: a device-to-host copy and a synchronisation for CUDA offsets (§2.2).
    check(dense_to_jagged_total_L(off, &rows, ctx));
  }
  Shape shape;  // [total_L, *E]
  check(dense_to_jagged_shape(d, off, rows, &shape));
  at::Tensor out = new_output(shape, dense.options());
  check(dense_to_jagged(d, off, to_view(out, kOp, "out"), ctx));
  return out;
}

namespace {
at::Tensor dense_to_jagged_cpu(const at::Tensor& dense, const at::Tensor& seq_offsets,
                               std::optional<int64_t> total_L) {
  return run_dense_to_jagged(dense, seq_offsets, total_L, cpu_context());
}
}  // namespace

}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, CPU, m) {
  m.impl("dense_to_jagged", TORCH_FN(recops::binding::dense_to_jagged_cpu));
}
