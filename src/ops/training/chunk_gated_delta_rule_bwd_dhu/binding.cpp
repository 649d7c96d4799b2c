// training/chunk_gated_delta_rule_bwd_dhu/binding.cpp: the torch hook the generic binding
// (src/torch/kit.h) cannot derive: the Meta kernel for symbolic sizes. dh [B, NT, HV, K, V] has
// NT = ceil(T / chunk_size) (+ N with seq_offsets) and q's dtype (fp32 with fp32_chunk_states);
// dh0 [N, HV, K, V] fp32 with h0 (h0's sizes), else an empty [0]; dv2 dv_local's sizes and dtype.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(chunk_gated_delta_rule_bwd_dhu) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "chunk_gated_delta_rule_bwd_dhu";
    const at::Tensor& q = recops::binding::arg(a, op, "q").toTensor();
    const at::Tensor& dv = recops::binding::arg(a, op, "dv_local").toTensor();
    const c10::IValue& h0 = recops::binding::arg(a, op, "h0");
    const c10::IValue& off = recops::binding::arg(a, op, "seq_offsets");
    const int64_t bt = recops::binding::arg(a, op, "chunk_size").toInt();
    const bool f32 = recops::binding::arg(a, op, "fp32_chunk_states").toBool();
    const c10::SymInt T = q.sym_size(1);
    c10::SymInt nt = (T + (bt - 1)) / bt;
    if (!off.isNone()) nt = nt + (off.toTensor().sym_size(0) - 1);
    std::vector<c10::SymInt> dh{q.sym_size(0), nt, dv.sym_size(2), q.sym_size(3), dv.sym_size(3)};
    const auto dh_dtype = f32 ? at::kFloat : q.scalar_type();
    at::Tensor dh0 =
        h0.isNone() ? at::empty({0}, q.options().dtype(at::kFloat))
                    : at::empty_symint(h0.toTensor().sym_sizes(), q.options().dtype(at::kFloat));
    return {at::empty_symint(dh, q.options().dtype(dh_dtype)), dh0,
            at::empty_symint(dv.sym_sizes(), dv.options())};
  };
  return h;
}
