// training/prepare_wy_repr_bwd/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernel for symbolic sizes. dk, dv and dbeta have k's, v's and beta's
// sizes and dtypes; dg has g's sizes in fp32 (an empty [0] tensor without g), so it is not
// `out_like` an argument. With concrete sizes the generic Meta kernel runs the shape function
// (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(prepare_wy_repr_bwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* kOp = "prepare_wy_repr_bwd";
    auto tensor = [&](const char* name) -> const at::Tensor& {
      return recops::binding::arg(a, kOp, name).toTensor();
    };
    const at::Tensor& k = tensor("k");
    const at::Tensor& v = tensor("v");
    const at::Tensor& beta = tensor("beta");
    const c10::IValue& g = recops::binding::arg(a, kOp, "g");
    const bool has_g = g.isTensor() && g.toTensor().defined();
    const auto f32 = k.options().dtype(at::kFloat);
    return {at::empty_symint(k.sym_sizes(), k.options()),
            at::empty_symint(v.sym_sizes(), v.options()),
            at::empty_symint(beta.sym_sizes(), beta.options()),
            has_g ? at::empty_symint(g.toTensor().sym_sizes(), f32) : at::empty({0}, f32)};
  };
  return h;
}
