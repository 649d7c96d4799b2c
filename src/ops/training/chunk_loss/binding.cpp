// training/chunk_loss/binding.cpp: the torch hooks the generic binding (src/torch/kit.h) cannot
// derive. When a gradient is needed the Autograd kernel runs chunk_loss_fwd (the table's
// save_outputs), which returns the gradients for grad_loss = 1 with the loss ("sum", "mean"); the
// backward scales them by grad_loss. For "none" they are absent ([0]) and the backward calls
// chunk_loss_bwd, which recomputes the logits. Both paths are registered ops or aten ops, so
// torch.compile traces the backward as a graph. Meta kernels give the shapes in SymInts: loss and
// z_loss are [N] for reduction "none" (0), else []; an absent gradient is an empty [0].
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>

#include "torch/kit.h"

namespace {
using recops::binding::arg;
using recops::binding::Args;

// loss, z_loss, then (with_grads) d_hidden, d_weight, d_bias.
std::vector<at::Tensor> chunk_loss_meta(const Args& a, const char* op, bool with_grads) {
  const at::Tensor& hidden = arg(a, op, "hidden").toTensor();
  const auto opts =
      hidden.options().dtype(hidden.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
  const bool none = arg(a, op, "reduction").toInt() == 0;
  auto loss = [&] {
    return none ? at::empty_symint({hidden.sym_size(0)}, opts)
                : at::empty(c10::IntArrayRef{}, opts);
  };
  std::vector<at::Tensor> out = {loss(), loss()};
  if (!with_grads) return out;
  const at::Tensor& weight = arg(a, op, "weight").toTensor();
  const c10::IValue& bias = arg(a, op, "bias");
  auto grad = [&](const at::Tensor& like, bool present) {
    return present ? at::empty_symint(like.sym_sizes(), hidden.options())
                   : at::empty({0}, hidden.options());
  };
  out.push_back(grad(hidden, !none));
  out.push_back(grad(weight, !none));
  out.push_back(grad(bias.isTensor() ? bias.toTensor() : hidden, !none && bias.isTensor()));
  return out;
}
}  // namespace

RECOPS_TORCH_HOOKS(chunk_loss) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) { return chunk_loss_meta(a, "chunk_loss", false); };
  // saved: hidden, weight, labels, bias, token_weight, ignore_index, label_smoothing, z_loss_scale,
  // softcap, reduction, token_chunk, vocab_chunk, accum_dtype (the schema's order), then the saved
  // outputs d_hidden, d_weight, d_bias of chunk_loss_fwd.
  h.backward = [](const Args& s, const std::vector<at::Tensor>& grads) {
    const at::Tensor& g = grads[0];
    const bool has_bias = s[3].isTensor() && s[3].toTensor().defined();
    if (arg(s, "chunk_loss", "reduction").toInt() == 0) {  // "none": recompute
      Args st = {g};
      st.insert(st.end(), s.begin(), s.begin() + 13);
      st.emplace_back(has_bias);  // want_dbias
      std::vector<at::Tensor> d = recops::binding::call("chunk_loss_bwd", std::move(st));
      if (!has_bias) d[2] = at::Tensor();
      return d;
    }
    // g is [] (fp32, fp64 for fp64): the products keep the gradients' dtype.
    return std::vector<at::Tensor>{at::mul(s[13].toTensor(), g), at::mul(s[14].toTensor(), g),
                                   has_bias ? at::mul(s[15].toTensor(), g) : at::Tensor()};
  };
  return h;
}

RECOPS_TORCH_HOOKS(chunk_loss_fwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) { return chunk_loss_meta(a, "chunk_loss_fwd", true); };
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
