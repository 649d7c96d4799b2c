// training/common/gdn_binding.h: the torch Meta kernels of the composed GDN / KDA ops
// (chunk_gated_delta_rule, chunk_kda) and their backwards for symbolic sizes
// (torch.compile(dynamic=True), opcheck). Forward: o like v, final_state [N, HV, K, V] fp32 or an
// empty [0]. Backward: dq, dk, dv, dg, dbeta like q, k, v, g, beta; dh0 fp32 like initial_state
// when it is given and want_d_initial_state, else an empty [0]. With concrete sizes the generic
// Meta kernel runs the shape function (every rule checked). Included by the ops' binding.cpp only
// (torch).
#pragma once

#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace recops::training_binding {

inline recops::binding::TorchHooks gdn_fwd_hooks(const char* op) {
  recops::binding::TorchHooks h;
  h.meta = [op](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    using recops::binding::arg;
    const at::Tensor& q = arg(a, op, "q").toTensor();
    const at::Tensor& v = arg(a, op, "v").toTensor();
    const c10::IValue& off = arg(a, op, "seq_offsets");
    const c10::SymInt N = off.isTensor() ? off.toTensor().sym_size(0) - 1 : q.sym_size(0);
    const auto f32 = q.options().dtype(at::kFloat);
    at::Tensor ht = at::empty({0}, f32);
    if (arg(a, op, "output_final_state").toBool())
      ht = at::empty_symint({N, v.sym_size(2), q.sym_size(3), v.sym_size(3)}, f32);
    return {at::empty_symint(v.sym_sizes(), v.options()), ht};
  };
  return h;
}

inline recops::binding::TorchHooks gdn_bwd_hooks(const char* op) {
  recops::binding::TorchHooks h;
  h.meta = [op](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    using recops::binding::arg;
    auto like = [&](const char* name) {
      const at::Tensor& t = arg(a, op, name).toTensor();
      return at::empty_symint(t.sym_sizes(), t.options());
    };
    const at::Tensor& q = arg(a, op, "q").toTensor();
    const c10::IValue& h0 = arg(a, op, "initial_state");
    const bool with_dh0 =
        arg(a, op, "want_d_initial_state").toBool() && h0.isTensor() && h0.toTensor().defined();
    const auto f32 = q.options().dtype(at::kFloat);
    at::Tensor dh0 =
        with_dh0 ? at::empty_symint(h0.toTensor().sym_sizes(), f32) : at::empty({0}, f32);
    return {like("q"), like("k"), like("v"), like("g"), like("beta"), dh0};
  };
  return h;
}

}  // namespace recops::training_binding
