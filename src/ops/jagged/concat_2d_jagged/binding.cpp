// concat_2d_jagged: the torch hooks the generic binding (src/torch/kit.h) cannot derive:
//   meta: in SymInts (out rows = A's rows + B's rows, or A's rows with is_replace; a dense side
//         [B, S, D] counts B * S rows), for dynamic shapes. The entry makes every other check.
//   save: the backward reads only the shapes of values_a and values_b, so it keeps stand-ins of
//         their sizes with row strides 0 (D elements of storage) instead of the inputs.
#include <ATen/ops/empty.h>

#include <vector>

#include "ops/jagged/common/two_parts_binding.h"
#include "torch/kit.h"

namespace {
constexpr const char* kConcat2dJagged = "concat_2d_jagged";

c10::SymInt side_rows(const recops::binding::Args& a, const char* v, const char* o) {
  const at::Tensor& t = recops::binding::arg(a, kConcat2dJagged, v).toTensor();
  const bool jagged = !recops::binding::arg(a, kConcat2dJagged, o).isNone();
  TORCH_CHECK(t.dim() == (jagged ? 2 : 3), kConcat2dJagged, ": ", v, " must be ",
              jagged ? "[total_L, D]" : "dense [B, S, D]", ", got ", t.dim(), "-D");
  return jagged ? t.sym_size(0) : t.sym_size(0) * t.sym_size(1);
}
}  // namespace

// A tensor of t's sizes, dtype and device whose dims but the last have stride 0.
at::Tensor shape_standin(const at::Tensor& t) {
  std::vector<c10::SymInt> strides(static_cast<size_t>(t.dim()), c10::SymInt(0));
  if (t.dim() > 0) strides.back() = c10::SymInt(1);
  return t.new_empty_strided_symint(t.sym_sizes(), strides);
}

RECOPS_TORCH_HOOKS(concat_2d_jagged) {
  recops::binding::TorchHooks h;
  h.save = [](const recops::binding::Args& a) {
    return recops::ops::keep_part_standins(a, kConcat2dJagged, shape_standin);
  };
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& va = recops::binding::arg(a, kConcat2dJagged, "values_a").toTensor();
    c10::SymInt rows = side_rows(a, "values_a", "offsets_a");
    const c10::SymInt rows_b = side_rows(a, "values_b", "offsets_b");
    if (!recops::binding::arg(a, kConcat2dJagged, "is_replace").toBool()) rows = rows + rows_b;
    return {at::empty_symint({rows, va.sym_size(-1)}, va.options())};
  };
  return h;
}
