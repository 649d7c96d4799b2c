// training/mhc_pre_bmm/binding.cpp: the torch hook the generic binding (src/torch/kit.h) cannot
// derive: y's sizes in SymInts (X's without the stream dim n) and its dtype (out_dtype, default
// fp32) for dynamic shapes (torch.compile(dynamic=True)); the real kernel checks the rules.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(mhc_pre_bmm) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& X = recops::binding::arg(a, "mhc_pre_bmm", "X").toTensor();
    const c10::IValue& t = recops::binding::arg(a, "mhc_pre_bmm", "out_dtype");
    TORCH_CHECK(X.dim() >= 2, "mhc_pre_bmm: X must have at least two dims ([..., n, C])");
    std::vector<c10::SymInt> sizes(X.sym_sizes().begin(), X.sym_sizes().end() - 2);
    sizes.push_back(X.sym_sizes().back());
    return {at::empty_symint(sizes, X.options().dtype(t.isNone() ? at::kFloat : t.toScalarType()))};
  };
  return h;
}
