// hstu_attn: the torch hooks the generic binding (src/torch/kit.h) cannot derive: output sizes in
// SymInts for torch.compile(dynamic=True). With concrete sizes the generic Meta kernel runs the
// shape functions (every shape rule checked); with symbolic ones the outputs are the inputs'
// symbolic shapes (out: q's with v's last dim; dq, dk, dv, drab: q's, k's, v's, rab's), so token
// counts stay symbolic, and the rules are checked by the real kernel at run time.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
using recops::binding::Args;

at::Tensor like(const at::Tensor& t) {
  return at::empty_symint(t.sym_sizes(), t.options());
}

// Argument positions in the schema (the table in hstu_attn.cpp): q, k, v first; rab is 15th.
constexpr size_t kQ = 0, kK = 1, kV = 2, kRab = 15, kMaxQ = 5, kMaxK = 6;
}  // namespace

RECOPS_TORCH_HOOKS(hstu_attn_fwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) -> std::vector<at::Tensor> {
    const at::Tensor &q = a[kQ].toTensor(), &v = a[kV].toTensor();
    std::vector<c10::SymInt> sizes(q.sym_sizes().begin(), q.sym_sizes().end());
    sizes.back() = v.sym_sizes().back();
    return {at::empty_symint(sizes, q.options())};
  };
  return h;
}

RECOPS_TORCH_HOOKS(hstu_attn_bwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) -> std::vector<at::Tensor> {
    // a[0] is dout; the forward's arguments follow, then want_drab.
    const at::Tensor& q = a[1 + kQ].toTensor();
    const c10::IValue& rab = a[1 + kRab];
    const bool with_drab = a.back().toBool() && rab.isTensor() && rab.toTensor().defined();
    return {like(q), like(a[1 + kK].toTensor()), like(a[1 + kV].toTensor()),
            with_drab ? like(rab.toTensor()) : at::empty({0}, q.options())};
  };
  return h;
}

RECOPS_TORCH_HOOKS(hstu_mask) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) -> std::vector<at::Tensor> {
    return {at::empty({a[kMaxQ].toInt(), a[kMaxK].toInt()},
                      a[kQ].toTensor().options().dtype(at::kBool))};
  };
  return h;
}
