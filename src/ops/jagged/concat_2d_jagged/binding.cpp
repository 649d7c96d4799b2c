// concat_2d_jagged: the torch hook the generic binding (src/torch/kit.h) cannot derive: the Meta
// kernel in SymInts (out rows = A's rows + B's rows, or A's rows with is_replace; a dense side
// [B, S, D] counts B * S rows), for dynamic shapes. The entry makes every other check.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
constexpr const char* kOp = "concat_2d_jagged";

c10::SymInt side_rows(const recops::binding::Args& a, const char* v, const char* o) {
  const at::Tensor& t = recops::binding::arg(a, kOp, v).toTensor();
  const bool jagged = !recops::binding::arg(a, kOp, o).isNone();
  TORCH_CHECK(t.dim() == (jagged ? 2 : 3), kOp, ": ", v, " must be ",
              jagged ? "[total_L, D]" : "dense [B, S, D]", ", got ", t.dim(), "-D");
  return jagged ? t.sym_size(0) : t.sym_size(0) * t.sym_size(1);
}
}  // namespace

RECOPS_TORCH_HOOKS(concat_2d_jagged) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& va = recops::binding::arg(a, kOp, "values_a").toTensor();
    c10::SymInt rows = side_rows(a, "values_a", "offsets_a");
    const c10::SymInt rows_b = side_rows(a, "values_b", "offsets_b");
    if (!recops::binding::arg(a, kOp, "is_replace").toBool()) rows = rows + rows_b;
    return {at::empty_symint({rows, va.sym_size(-1)}, va.options())};
  };
  return h;
}
