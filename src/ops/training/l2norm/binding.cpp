// training/l2norm/binding.cpp: the torch hook the generic binding (src/torch/kit.h) cannot
// derive: the Meta kernel for symbolic sizes of y (x's sizes, dtype out_dtype or x's), which is
// not `out_like` x when out_dtype differs. With concrete sizes the generic Meta kernel runs the
// shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(l2norm) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& x = recops::binding::arg(a, "l2norm", "x").toTensor();
    const c10::IValue& t = recops::binding::arg(a, "l2norm", "out_dtype");
    return {at::empty_symint(x.sym_sizes(),
                             x.options().dtype(t.isNone() ? x.scalar_type() : t.toScalarType()))};
  };
  return h;
}
