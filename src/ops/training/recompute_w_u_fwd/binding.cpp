// training/recompute_w_u_fwd/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernel for symbolic sizes (w is [B, T, HV, K] in k's dtype: v's first
// three sizes and k's last, so not `out_like` an argument; u is like v). With concrete sizes the
// generic Meta kernel runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(recompute_w_u_fwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& k = recops::binding::arg(a, "recompute_w_u_fwd", "k").toTensor();
    const at::Tensor& v = recops::binding::arg(a, "recompute_w_u_fwd", "v").toTensor();
    TORCH_CHECK(k.dim() == 4 && v.dim() == 4,
                "recompute_w_u_fwd: k must be [B, T, H, K] and v [B, T, HV, V]");
    std::vector<c10::SymInt> ws(v.sym_sizes().begin(), v.sym_sizes().end());
    ws[3] = k.sym_size(3);
    return {at::empty_symint(ws, k.options()), at::empty_symint(v.sym_sizes(), v.options())};
  };
  return h;
}
