// training/fused_cross_entropy/binding.cpp: the torch hooks the generic binding (src/torch/kit.h)
// cannot derive: the backward calls fused_cross_entropy_bwd with the forward's lse, which the
// table saves (save_outputs from fused_cross_entropy_fwd, so the forward runs that op when a
// gradient is needed); both are registered ops, so torch.compile traces the backward as a graph
// of recops ops. Meta kernels give the loss shapes in SymInts.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
using recops::binding::arg;
using recops::binding::Args;

// loss and z_loss ([N] for reduction "none" (0), else []), then lse [N] when with_lse.
std::vector<at::Tensor> fwd_meta(const Args& a, const char* op, bool with_lse) {
  const at::Tensor& logits = arg(a, op, "logits").toTensor();
  const auto opts =
      logits.options().dtype(logits.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
  const c10::SymInt n = logits.sym_size(0);
  const bool none = arg(a, op, "reduction").toInt() == 0;
  auto loss = [&] {
    return none ? at::empty_symint({n}, opts) : at::empty(c10::IntArrayRef{}, opts);
  };
  std::vector<at::Tensor> out = {loss(), loss()};
  if (with_lse) out.push_back(at::empty_symint({n}, opts));
  return out;
}
}  // namespace

RECOPS_TORCH_HOOKS(fused_cross_entropy) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) { return fwd_meta(a, "fused_cross_entropy", false); };
  // saved: logits, labels, weight, ignore_index, label_smoothing, z_loss_scale, softcap,
  // reduction, precompute_grad, inplace (the schema's order), then the saved output lse.
  h.backward = [](const Args& s, const std::vector<at::Tensor>& grads) {
    return recops::binding::call("fused_cross_entropy_bwd",
                                 {grads[0], s[0], s[1], s[2], s[10], s[3], s[4], s[5], s[6], s[7]});
  };
  return h;
}

RECOPS_TORCH_HOOKS(fused_cross_entropy_fwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) { return fwd_meta(a, "fused_cross_entropy_fwd", true); };
  return h;
}
