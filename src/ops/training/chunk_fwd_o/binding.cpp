// training/chunk_fwd_o/binding.cpp: the torch hook the generic binding (src/torch/kit.h) cannot
// derive: the Meta kernel for symbolic sizes (o has v_new's sizes [B, T, HV, V] and q's dtype, so
// it is not `out_like` one argument). With concrete sizes the generic Meta kernel runs the shape
// function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(chunk_fwd_o) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& q = recops::binding::arg(a, "chunk_fwd_o", "q").toTensor();
    const at::Tensor& v = recops::binding::arg(a, "chunk_fwd_o", "v_new").toTensor();
    return {at::empty_symint(v.sym_sizes(), v.options().dtype(q.scalar_type()))};
  };
  return h;
}
