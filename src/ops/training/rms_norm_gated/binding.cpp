// training/rms_norm_gated/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernel of rms_norm_gated_bwd for symbolic sizes (dx and dz like x;
// dweight and dbias [D], or an empty [0] when absent or not wanted). With concrete sizes the
// generic Meta kernel runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(rms_norm_gated_bwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "rms_norm_gated_bwd";
    using recops::binding::arg;
    const at::Tensor& x = arg(a, op, "x").toTensor();
    auto column = [&](const char* t, const char* want) {
      const c10::IValue& v = arg(a, op, t);
      if (arg(a, op, want).toBool() && v.isTensor() && v.toTensor().defined())
        return at::empty_symint(v.toTensor().sym_sizes(), v.toTensor().options());
      return at::empty({0}, x.options());
    };
    return {at::empty_symint(x.sym_sizes(), x.options()),
            at::empty_symint(x.sym_sizes(), x.options()), column("weight", "want_dweight"),
            column("bias", "want_dbias")};
  };
  return h;
}
