// block_sparse_attention: the torch extras the generic binding (src/torch/kit.h) cannot derive.
//   meta:  out [Tq, Nq, D] like q and lse fp32 [Nq, Tq] in SymInts for dynamic shapes
//          (torch.compile(dynamic=True)); the real kernel checks the rules at run time.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(block_sparse_attention) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& q = recops::binding::arg(a, "block_sparse_attention", "q").toTensor();
    return {at::empty_symint(q.sym_sizes(), q.options()),
            at::empty_symint({q.sym_size(1), q.sym_size(0)}, q.options().dtype(at::kFloat))};
  };
  return h;
}
