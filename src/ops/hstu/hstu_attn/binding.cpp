// hstu_attn: the torch hooks the generic binding (src/torch/kit.h) cannot derive: output sizes in
// SymInts for torch.compile(dynamic=True). With concrete sizes the generic Meta kernel runs the
// shape functions (every shape rule checked); with symbolic ones the outputs are the inputs'
// symbolic shapes (out: q's with v's last dim; dq, dk, dv, drab: q's, k's, v's, rab's), so token
// counts stay symbolic, and the rules are checked by the real kernel at run time.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
using recops::binding::arg;
using recops::binding::Args;

at::Tensor like(const at::Tensor& t) {
  return at::empty_symint(t.sym_sizes(), t.options());
}
}  // namespace

RECOPS_TORCH_HOOKS(hstu_attn_fwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& q = arg(a, "hstu_attn_fwd", "q").toTensor();
    const at::Tensor& v = arg(a, "hstu_attn_fwd", "v").toTensor();
    std::vector<c10::SymInt> sizes(q.sym_sizes().begin(), q.sym_sizes().end());
    sizes.back() = v.sym_sizes().back();
    return {at::empty_symint(sizes, q.options())};
  };
  return h;
}

RECOPS_TORCH_HOOKS(hstu_attn_bwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "hstu_attn_bwd";
    const at::Tensor& q = arg(a, op, "q").toTensor();
    const c10::IValue& rab = arg(a, op, "rab");
    const bool with_drab =
        arg(a, op, "want_drab").toBool() && rab.isTensor() && rab.toTensor().defined();
    return {like(q), like(arg(a, op, "k").toTensor()), like(arg(a, op, "v").toTensor()),
            with_drab ? like(rab.toTensor()) : at::empty({0}, q.options())};
  };
  return h;
}

RECOPS_TORCH_HOOKS(hstu_mask) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "hstu_mask";
    // The max lengths are SymInts in the schema (symbolic under torch.compile).
    const std::vector<c10::SymInt> sizes = {arg(a, op, "max_seq_len_q").toSymInt(),
                                            arg(a, op, "max_seq_len_k").toSymInt()};
    return {at::empty_symint(sizes, arg(a, op, "q").toTensor().options().dtype(at::kBool))};
  };
  return h;
}
