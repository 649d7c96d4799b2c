// training/chunk_local_cumsum/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernel of chunk_local_cumsum for symbolic sizes (out has g's sizes and
// dtype out_dtype, fp32 when None, so it is not `out_like` g). With concrete sizes the generic
// Meta kernel runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(chunk_local_cumsum) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& g = recops::binding::arg(a, "chunk_local_cumsum", "g").toTensor();
    const c10::IValue& t = recops::binding::arg(a, "chunk_local_cumsum", "out_dtype");
    return {at::empty_symint(g.sym_sizes(),
                             g.options().dtype(t.isNone() ? at::kFloat : t.toScalarType()))};
  };
  return h;
}
