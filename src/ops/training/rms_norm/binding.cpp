// training/rms_norm/binding.cpp: the torch hooks the generic binding (src/torch/kit.h) cannot
// derive: Meta kernels for symbolic sizes (torch.compile(dynamic=True), opcheck) of the outputs
// that are not `out_like` an argument: rms_norm_bwd's dweight (weight's shape, or an empty [0]
// when absent or not wanted) and rms_norm_rstd's r (x's shape with the last dim 1, out_dtype or
// fp32). With concrete sizes the generic Meta kernel runs the shape functions (every rule
// checked); here the rules are checked by the real kernel at run time.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
using recops::binding::arg;
using recops::binding::Args;
using recops::binding::empty_like_sym;
}  // namespace

RECOPS_TORCH_HOOKS(rms_norm_bwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "rms_norm_bwd";
    const at::Tensor& x = arg(a, op, "x").toTensor();
    const c10::IValue& w = arg(a, op, "weight");
    const bool with_dw =
        arg(a, op, "want_dweight").toBool() && w.isTensor() && w.toTensor().defined();
    return {empty_like_sym(x),
            with_dw ? empty_like_sym(w.toTensor()) : at::empty({0}, x.options())};
  };
  return h;
}

RECOPS_TORCH_HOOKS(rms_norm_rstd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "rms_norm_rstd";
    const at::Tensor& x = arg(a, op, "x").toTensor();
    const c10::IValue& t = arg(a, op, "out_dtype");
    std::vector<c10::SymInt> sizes(x.sym_sizes().begin(), x.sym_sizes().end());
    if (!sizes.empty()) sizes.back() = 1;
    return {at::empty_symint(sizes, x.options().dtype(t.isNone() ? at::kFloat : t.toScalarType()))};
  };
  return h;
}
