// training/chunk_bwd_dqkwg/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernel for symbolic sizes. dq and dk have q's and k's sizes and dtypes;
// dw has w's (an empty [0] tensor without w) and dg g's sizes in fp32 (empty [0] without g), so
// the optional outputs are not `out_like` an argument. With concrete sizes the generic Meta kernel
// runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(chunk_bwd_dqkwg) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* kOp = "chunk_bwd_dqkwg";
    const at::Tensor& q = recops::binding::arg(a, kOp, "q").toTensor();
    const at::Tensor& k = recops::binding::arg(a, kOp, "k").toTensor();
    auto given = [&](const char* name) -> const at::Tensor* {
      const c10::IValue& v = recops::binding::arg(a, kOp, name);
      return v.isTensor() && v.toTensor().defined() ? &v.toTensor() : nullptr;
    };
    const at::Tensor* w = given("w");
    const at::Tensor* g = given("g");
    const auto f32 = q.options().dtype(at::kFloat);
    return {at::empty_symint(q.sym_sizes(), q.options()),
            at::empty_symint(k.sym_sizes(), k.options()),
            w ? at::empty_symint(w->sym_sizes(), w->options()) : at::empty({0}, f32),
            g ? at::empty_symint(g->sym_sizes(), f32) : at::empty({0}, f32)};
  };
  return h;
}
