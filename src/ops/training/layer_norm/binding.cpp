// training/layer_norm/binding.cpp: the torch hooks the generic binding (src/torch/kit.h) cannot
// derive: the Meta kernels of layer_norm_bwd and swish_layer_norm_bwd for symbolic sizes (dx like
// x; dweight and dbias [D], or an empty [0] when absent or not wanted). With concrete sizes the
// generic Meta kernel runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
recops::binding::TorchHooks bwd_hooks(const char* op) {
  recops::binding::TorchHooks h;
  h.meta = [op](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    using recops::binding::arg;
    const at::Tensor& x = arg(a, op, "x").toTensor();
    auto column = [&](const char* t, const char* want) {
      const c10::IValue& v = arg(a, op, t);
      if (arg(a, op, want).toBool() && v.isTensor() && v.toTensor().defined())
        return at::empty_symint(v.toTensor().sym_sizes(), v.toTensor().options());
      return at::empty({0}, x.options());
    };
    return {at::empty_symint(x.sym_sizes(), x.options()), column("weight", "want_dweight"),
            column("bias", "want_dbias")};
  };
  return h;
}
}  // namespace

RECOPS_TORCH_HOOKS(layer_norm_bwd) {
  return bwd_hooks("layer_norm_bwd");
}

RECOPS_TORCH_HOOKS(swish_layer_norm_bwd) {
  return bwd_hooks("swish_layer_norm_bwd");
}
