// training/chunk_loss/binding.cpp: Meta kernels for symbolic sizes (the generic binding covers
// everything else: the Autograd kernel saves the arguments and calls chunk_loss_bwd, which
// recomputes the logits). loss/z_loss are [N] for reduction "none" (0), else []; the backward's
// d_bias is bias's [V] when bias is given and want_dbias, else an empty [0].
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
using recops::binding::arg;
using recops::binding::Args;
}  // namespace

RECOPS_TORCH_HOOKS(chunk_loss) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) {
    const at::Tensor& hidden = arg(a, "chunk_loss", "hidden").toTensor();
    const auto opts =
        hidden.options().dtype(hidden.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
    const bool none = arg(a, "chunk_loss", "reduction").toInt() == 0;
    auto loss = [&] {
      return none ? at::empty_symint({hidden.sym_size(0)}, opts)
                  : at::empty(c10::IntArrayRef{}, opts);
    };
    return std::vector<at::Tensor>{loss(), loss()};
  };
  return h;
}

RECOPS_TORCH_HOOKS(chunk_loss_bwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) {
    const at::Tensor& hidden = arg(a, "chunk_loss_bwd", "hidden").toTensor();
    const at::Tensor& weight = arg(a, "chunk_loss_bwd", "weight").toTensor();
    const c10::IValue& bias = arg(a, "chunk_loss_bwd", "bias");
    const bool want = bias.isTensor() && arg(a, "chunk_loss_bwd", "want_dbias").toBool();
    return std::vector<at::Tensor>{
        at::empty_symint(hidden.sym_sizes(), hidden.options()),
        at::empty_symint(weight.sym_sizes(), weight.options()),
        want ? at::empty_symint(bias.toTensor().sym_sizes(), hidden.options())
             : at::empty({0}, hidden.options())};
  };
  return h;
}
