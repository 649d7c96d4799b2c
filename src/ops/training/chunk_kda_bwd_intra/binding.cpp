// training/chunk_kda_bwd_intra/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernel for symbolic sizes. The outputs have the sizes of q, q, beta and
// g, all in fp32, so they are not `out_like` an argument. With concrete sizes the generic Meta
// kernel runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(chunk_kda_bwd_intra) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* kOp = "chunk_kda_bwd_intra";
    auto tensor = [&](const char* name) -> const at::Tensor& {
      return recops::binding::arg(a, kOp, name).toTensor();
    };
    const at::Tensor& q = tensor("q");
    const auto f32 = q.options().dtype(at::kFloat);
    return {at::empty_symint(q.sym_sizes(), f32), at::empty_symint(q.sym_sizes(), f32),
            at::empty_symint(tensor("beta").sym_sizes(), f32),
            at::empty_symint(tensor("g").sym_sizes(), f32)};
  };
  return h;
}
