// training/chunk_kda_fwd_intra/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernel for symbolic sizes (w, qg, kg are [B, T, HV, K]: v's first three
// sizes and q's last; Aqk, Akk [B, T, HV, BT] with BT = chunk_size; u is like v). With concrete
// sizes the generic Meta kernel runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(chunk_kda_fwd_intra) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "chunk_kda_fwd_intra";
    const at::Tensor& q = recops::binding::arg(a, op, "q").toTensor();
    const at::Tensor& k = recops::binding::arg(a, op, "k").toTensor();
    const at::Tensor& v = recops::binding::arg(a, op, "v").toTensor();
    const int64_t bt = recops::binding::arg(a, op, "chunk_size").toInt();
    TORCH_CHECK(q.dim() == 4 && v.dim() == 4, op, ": q must be [B, T, H, K] and v [B, T, HV, V]");
    std::vector<c10::SymInt> hk(v.sym_sizes().begin(), v.sym_sizes().end());
    hk[3] = q.sym_size(3);
    std::vector<c10::SymInt> ha = hk;
    ha[3] = bt;
    return {at::empty_symint(hk, k.options()), at::empty_symint(v.sym_sizes(), v.options()),
            at::empty_symint(hk, q.options()), at::empty_symint(hk, k.options()),
            at::empty_symint(ha, k.options()), at::empty_symint(ha, k.options().dtype(at::kFloat))};
  };
  return h;
}
