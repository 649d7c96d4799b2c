// complete_cumsum family, Meta kernels: output shape only (see jagged_to_padded_dense_meta.cpp for
// the concrete/symbolic split). complete: [n] -> [n+1], [R, n] -> [R, n+1]; exclusive and
// inclusive keep t's shape.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "recops/jagged.h"
#include "torch/convert.h"

namespace recops::binding {
namespace {
enum class Kind { complete, same_shape };

template <Kind K>
at::Tensor cumsum_meta(const at::Tensor& t, std::optional<at::ScalarType> out_dtype) {
  const char* op = K == Kind::complete ? "complete_cumsum" : "cumsum";
  const at::ScalarType dt = out_dtype.value_or(t.scalar_type());
  TORCH_CHECK(t.scalar_type() == at::kInt || t.scalar_type() == at::kLong, op,
              ": t must be int32 or int64, got ", t.scalar_type());
  TORCH_CHECK(dt == at::kInt || dt == at::kLong, op, ": out_dtype must be int32 or int64, got ",
              dt);
  const auto opts = t.options().dtype(dt);
  if (K == Kind::same_shape) return at::empty_symint(t.sym_sizes(), opts);
  if (has_concrete_sizes(t)) {
    Shape shape;
    check(complete_cumsum_shape(to_view(t, op, "t"), &shape));
    return new_output(shape, opts);
  }
  TORCH_CHECK(t.dim() == 1 || t.dim() == 2, op, ": t must be 1-D [n] or 2-D [R, n], got ", t.dim(),
              "-D");
  std::vector<c10::SymInt> shape(t.sym_sizes().begin(), t.sym_sizes().end());
  shape.back() = shape.back() + 1;
  return at::empty_symint(shape, opts);
}
}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, Meta, m) {
  using recops::binding::cumsum_meta;
  using recops::binding::Kind;
  m.impl("complete_cumsum", TORCH_FN(cumsum_meta<Kind::complete>));
  m.impl("exclusive_cumsum", TORCH_FN(cumsum_meta<Kind::same_shape>));
  m.impl("inclusive_cumsum", TORCH_FN(cumsum_meta<Kind::same_shape>));
  m.impl("asynchronous_complete_cumsum", TORCH_FN(cumsum_meta<Kind::complete>));
  m.impl("asynchronous_exclusive_cumsum", TORCH_FN(cumsum_meta<Kind::same_shape>));
  m.impl("asynchronous_inclusive_cumsum", TORCH_FN(cumsum_meta<Kind::same_shape>));
}
