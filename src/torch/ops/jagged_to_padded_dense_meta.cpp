// jagged_to_padded_dense, Meta kernel: output shape only, no data read (jagged_ops.md §1.4).
//
// With concrete sizes (meta tensors, static compile) the op's public shape function decides, the
// same one the CPU and CUDA kernels allocate with. Under dynamic shapes the sizes are symbolic and
// cannot be handed to a C++ shape function without specialising them, so the same formula is
// spelled in SymInts: [B, max_seq_len, *E] with B = seq_offsets.size(0) - 1.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "recops/jagged.h"
#include "torch/convert.h"

namespace recops::binding {
namespace {
constexpr const char* kOp = "jagged_to_padded_dense";

at::Tensor jagged_to_padded_dense_meta(const at::Tensor& values, const at::Tensor& seq_offsets,
                                       c10::SymInt max_seq_len, double padding_value) {
  const auto max_l = max_seq_len.maybe_as_int();
  if (max_l && has_concrete_sizes(values) && has_concrete_sizes(seq_offsets)) {
    Shape shape;
    check(jagged_to_padded_dense_shape(to_view(values, kOp, "values"),
                                       to_view(seq_offsets, kOp, "seq_offsets"), *max_l, &shape));
    return new_output(shape, values.options());
  }
  TORCH_CHECK(values.dim() >= 1, kOp, ": values must have at least 1 dim [total_L, *E], got 0-D");
  TORCH_CHECK(seq_offsets.dim() == 1, kOp, ": seq_offsets must be 1-D [B+1], got ",
              seq_offsets.dim(), "-D");
  TORCH_CHECK(seq_offsets.scalar_type() == at::kInt || seq_offsets.scalar_type() == at::kLong, kOp,
              ": seq_offsets must be int32 or int64, got ", seq_offsets.scalar_type());
  TORCH_SYM_CHECK(max_seq_len.sym_ge(0), kOp, ": max_seq_len must be >= 0");
  std::vector<c10::SymInt> shape = {seq_offsets.sym_size(0) - 1, max_seq_len};
  for (int64_t i = 1; i < values.dim(); ++i) shape.push_back(values.sym_size(i));
  return at::empty_symint(shape, values.options());
}
}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, Meta, m) {
  m.impl("jagged_to_padded_dense", TORCH_FN(recops::binding::jagged_to_padded_dense_meta));
}
