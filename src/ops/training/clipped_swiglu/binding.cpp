// training/clipped_swiglu/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: y's sizes in SymInts (x's with the last dim halved) for dynamic shapes
// (torch.compile(dynamic=True)); the real kernel checks the rules.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(clipped_swiglu) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& x = recops::binding::arg(a, "clipped_swiglu", "x").toTensor();
    TORCH_CHECK(x.dim() >= 1, "clipped_swiglu: x must have at least one dim ([..., 2I])");
    std::vector<c10::SymInt> sizes(x.sym_sizes().begin(), x.sym_sizes().end());
    sizes.back() = sizes.back() / 2;
    return {at::empty_symint(sizes, x.options())};
  };
  return h;
}
