// training/chunk_kda_bwd_dav/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernel for symbolic sizes. dAqk has Aqk's sizes in fp32, so it is not
// `out_like` an argument; dv has do's sizes and dtype. With concrete sizes the generic Meta kernel
// runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(chunk_kda_bwd_dav) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* kOp = "chunk_kda_bwd_dav";
    auto tensor = [&](const char* name) -> const at::Tensor& {
      return recops::binding::arg(a, kOp, name).toTensor();
    };
    const at::Tensor& A = tensor("Aqk");
    const at::Tensor& d_o = tensor("do");
    return {at::empty_symint(A.sym_sizes(), A.options().dtype(at::kFloat)),
            at::empty_symint(d_o.sym_sizes(), d_o.options())};
  };
  return h;
}
