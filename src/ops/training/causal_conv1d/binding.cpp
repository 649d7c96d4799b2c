// training/causal_conv1d/binding.cpp: the torch hooks the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernels of causal_conv1d and causal_conv1d_bwd for symbolic sizes
// (with concrete sizes the generic Meta kernel runs the shape function, every rule checked), and
// the autograd save/backward pair that keeps what §3.7's "Saves" lists: not the residual, whose
// gradient is dy.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
using recops::binding::arg;

// The optional tensor argument `name`, or an undefined tensor.
at::Tensor opt(const recops::binding::Args& a, const char* op, const char* name) {
  const c10::IValue& v = arg(a, op, name);
  return v.isTensor() ? v.toTensor() : at::Tensor();
}
}  // namespace

// y like x (contiguous); final_state [N, D, S] in the state's dtype, or [0].
RECOPS_TORCH_HOOKS(causal_conv1d) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "causal_conv1d";
    const at::Tensor& x = arg(a, op, "x").toTensor();
    const at::Tensor& w = arg(a, op, "weight").toTensor();
    const at::Tensor init = opt(a, op, "initial_state");
    const at::Tensor off = opt(a, op, "seq_offsets");
    at::Tensor fs = at::empty({0}, init.defined() ? init.options() : x.options());
    if (arg(a, op, "output_final_state").toBool()) {
      const c10::SymInt W = w.sym_size(arg(a, op, "weight_layout").toInt() == 1 ? 0 : 1);
      const int64_t sl = arg(a, op, "state_len").toInt();
      const c10::SymInt S = sl == 0 ? W - 1 : c10::SymInt(sl);
      const c10::SymInt N = off.defined() ? off.sym_size(0) - 1 : x.sym_size(0);
      fs = at::empty_symint({N, x.sym_size(1), S}, fs.options());
    }
    return {at::empty_symint(x.sym_sizes(), x.options()), fs};
  };
  h.save = [](const recops::binding::Args& a) -> recops::binding::Args {
    recops::binding::Args keep = a;
    const auto i = static_cast<size_t>(&arg(a, "causal_conv1d", "residual") - a.data());
    keep[i] = c10::IValue();  // None: the backward needs only dy for it
    return keep;
  };
  // causal_conv1d_bwd(grad_y, grad_final_state, <the saved arguments>, want_dbias,
  // want_dinitial_state, want_dresidual = False); the residual's gradient is grad_y itself.
  h.backward = [](const recops::binding::Args& saved, const std::vector<at::Tensor>& grads) {
    recops::binding::Args args = {grads[0], grads[1]};
    for (const auto& v : saved) args.push_back(v);
    args.emplace_back(true);
    args.emplace_back(true);
    args.emplace_back(false);
    std::vector<at::Tensor> g = recops::binding::call("causal_conv1d_bwd", std::move(args));
    g[4] = grads[0];
    return g;
  };
  return h;
}

// dx like x; dweight like weight; dbias, dinitial_state, dresidual like their argument when
// given and wanted, else [0].
RECOPS_TORCH_HOOKS(causal_conv1d_bwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "causal_conv1d_bwd";
    const at::Tensor& x = arg(a, op, "x").toTensor();
    const at::Tensor& w = arg(a, op, "weight").toTensor();
    auto like = [&](const char* name, const char* want) {
      const at::Tensor t = opt(a, op, name);
      if (t.defined() && arg(a, op, want).toBool())
        return at::empty_symint(t.sym_sizes(), t.options());
      return at::empty({0}, t.defined() ? t.options() : x.options());
    };
    return {at::empty_symint(x.sym_sizes(), x.options()),
            at::empty_symint(w.sym_sizes(), w.options()), like("bias", "want_dbias"),
            like("initial_state", "want_dinitial_state"), like("residual", "want_dresidual")};
  };
  return h;
}
