// training/chunk_gated_delta_rule_fwd_h/binding.cpp: the torch hook the generic binding
// (src/torch/kit.h) cannot derive: the Meta kernel for symbolic sizes (h [B, NT, HV, K, V] in k's
// dtype or fp32, v_new like u, final_state [N, HV, K, V] fp32 or [0]). With concrete sizes the
// generic Meta kernel runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(chunk_gated_delta_rule_fwd_h) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    using recops::binding::arg;
    constexpr const char* op = "chunk_gated_delta_rule_fwd_h";
    const at::Tensor& k = arg(a, op, "k").toTensor();
    const at::Tensor& u = arg(a, op, "u").toTensor();
    const c10::IValue& off = arg(a, op, "seq_offsets");
    const c10::IValue& nc = arg(a, op, "num_chunks");
    const int64_t bt = arg(a, op, "chunk_size").toInt();
    const c10::SymInt HV = u.sym_size(2), K = k.sym_size(3), V = u.sym_size(3);
    const c10::SymInt N = off.isTensor() ? off.toTensor().sym_size(0) - 1 : k.sym_size(0);
    // NT: ceil(T / BT) per row; with offsets num_chunks or the sync-free bound ceil(T / BT) + N.
    c10::SymInt NT = (k.sym_size(1) + (bt - 1)) / bt;
    if (off.isTensor()) NT = nc.isInt() ? c10::SymInt(nc.toInt()) : NT + N;
    const bool fp32_states = arg(a, op, "fp32_chunk_states").toBool();
    const auto f32 = k.options().dtype(at::kFloat);
    at::Tensor ht = at::empty({0}, f32);
    if (arg(a, op, "output_final_state").toBool()) ht = at::empty_symint({N, HV, K, V}, f32);
    return {at::empty_symint({k.sym_size(0), NT, HV, K, V}, fp32_states ? f32 : k.options()),
            at::empty_symint(u.sym_sizes(), u.options()), ht};
  };
  return h;
}
