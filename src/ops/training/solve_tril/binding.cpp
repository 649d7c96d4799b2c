// training/solve_tril/binding.cpp: the torch hook the generic binding (src/torch/kit.h) cannot
// derive: the Meta kernel of solve_tril for symbolic sizes (Ai has A's sizes and dtype out_dtype,
// fp32 when None, so it is not `out_like` A). With concrete sizes the generic Meta kernel runs the
// shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(solve_tril) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& A = recops::binding::arg(a, "solve_tril", "A").toTensor();
    const c10::IValue& t = recops::binding::arg(a, "solve_tril", "out_dtype");
    return {at::empty_symint(A.sym_sizes(),
                             A.options().dtype(t.isNone() ? at::kFloat : t.toScalarType()))};
  };
  return h;
}
