// training/chunk_scaled_dot_kkt/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernel for symbolic sizes (A is [B, T, HV, chunk_size] fp32: beta's
// sizes plus chunk_size, so not `out_like` an argument). With concrete sizes the generic Meta
// kernel runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(chunk_scaled_dot_kkt) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& beta = recops::binding::arg(a, "chunk_scaled_dot_kkt", "beta").toTensor();
    const int64_t bt = recops::binding::arg(a, "chunk_scaled_dot_kkt", "chunk_size").toInt();
    std::vector<c10::SymInt> sizes(beta.sym_sizes().begin(), beta.sym_sizes().end());
    sizes.push_back(c10::SymInt(bt));
    return {at::empty_symint(sizes, beta.options().dtype(at::kFloat))};
  };
  return h;
}
