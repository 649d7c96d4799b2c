// training/norm_mul_dropout/binding.cpp: the torch hooks the generic binding (src/torch/kit.h)
// cannot derive: Meta kernels for symbolic sizes of the outputs that are not `out_like` an
// argument: norm_mul_dropout's out (x's shape, the last dim tripled with concat_ux) and the
// backward's dweight / dbias (weight's shape). With concrete sizes the generic Meta kernel runs
// the shape functions (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
using recops::binding::arg;
using recops::binding::Args;
using recops::binding::empty_like_sym;
}  // namespace

RECOPS_TORCH_HOOKS(norm_mul_dropout) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "norm_mul_dropout";
    const at::Tensor& x = arg(a, op, "x").toTensor();
    std::vector<c10::SymInt> sizes(x.sym_sizes().begin(), x.sym_sizes().end());
    if (!sizes.empty() && arg(a, op, "concat_ux").toBool()) sizes.back() = sizes.back() * 3;
    return {at::empty_symint(sizes, x.options())};
  };
  return h;
}

RECOPS_TORCH_HOOKS(norm_mul_dropout_bwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "norm_mul_dropout_bwd";
    const at::Tensor& x = arg(a, op, "x").toTensor();
    const at::Tensor& w = arg(a, op, "weight").toTensor();
    at::Tensor dw = at::empty_symint(w.sym_sizes(), x.options());
    at::Tensor db = at::empty_symint(w.sym_sizes(), x.options());
    return {empty_like_sym(x), empty_like_sym(x), dw, db};
  };
  return h;
}
