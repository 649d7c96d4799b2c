// dense_to_jagged, Meta kernel: output shape only, no data read (jagged_ops.md §1.4, §2.2).
//
// The output is [total_L, *E]. With total_L omitted the size is seq_offsets[B], a data-dependent
// value: FakeTensor represents it as an unbacked SymInt, which only Python can create. So the
// fake kernel of dense_to_jagged is Python's (python/recops/ops.py, registered with
// torch.library.register_fake, which needs the op to have no C++ Meta kernel); it creates the
// size when needed and calls this kernel, registered as the Meta kernel of the helper op
// `_dense_to_jagged_meta`, for everything else. With concrete sizes the op's public shape function
// decides, the one the CPU and CUDA kernels allocate with; with symbolic sizes the same formula is
// spelled in SymInts.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "recops/jagged.h"
#include "torch/convert.h"

namespace recops::binding {
namespace {
constexpr const char* kOp = "dense_to_jagged";

at::Tensor dense_to_jagged_meta(const at::Tensor& dense, const at::Tensor& seq_offsets,
                                c10::SymInt total_L) {
  const auto rows = total_L.maybe_as_int();
  if (rows && has_concrete_sizes(dense) && has_concrete_sizes(seq_offsets)) {
    Shape shape;
    check(dense_to_jagged_shape(to_view(dense, kOp, "dense"),
                                to_view(seq_offsets, kOp, "seq_offsets"), *rows, &shape));
    return new_output(shape, dense.options());
  }
  TORCH_CHECK(dense.dim() >= 2, kOp, ": dense must have at least 2 dims [B, S, *E], got ",
              dense.dim(), "-D");
  TORCH_CHECK(seq_offsets.dim() == 1, kOp, ": seq_offsets must be 1-D [B+1], got ",
              seq_offsets.dim(), "-D");
  TORCH_CHECK(seq_offsets.scalar_type() == at::kInt || seq_offsets.scalar_type() == at::kLong, kOp,
              ": seq_offsets must be int32 or int64, got ", seq_offsets.scalar_type());
  TORCH_SYM_CHECK(dense.sym_size(0).sym_eq(seq_offsets.sym_size(0) - 1), kOp,
                  ": dense's batch must be B = seq_offsets.numel() - 1");
  TORCH_SYM_CHECK(total_L.sym_ge(0), kOp, ": total_L must be >= 0");
  std::vector<c10::SymInt> shape = {total_L};
  for (int64_t i = 2; i < dense.dim(); ++i) shape.push_back(dense.sym_size(i));
  return at::empty_symint(shape, dense.options());
}
}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, Meta, m) {
  m.impl("_dense_to_jagged_meta", TORCH_FN(recops::binding::dense_to_jagged_meta));
}
