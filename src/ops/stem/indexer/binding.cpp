// stem_indexer, stem_indexer_metadata: the torch extras the generic binding (src/torch/kit.h)
// cannot derive.
//   meta:  the shapes in SymInts for dynamic shapes (torch.compile(dynamic=True)); the real
//          kernels check the rules at run time.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(stem_indexer) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "stem_indexer";
    using recops::binding::arg;
    const at::Tensor& qflat = arg(a, op, "qflat").toTensor();
    const at::Tensor& kflat = arg(a, op, "kflat").toTensor();
    const auto opts = qflat.options().dtype(at::kInt);
    // sparse_indices [B, Nq, Qmax, Kmax], sparse_seq_len [B, Nq, Qmax]
    return {at::empty_symint(
                {qflat.sym_size(0), qflat.sym_size(1), qflat.sym_size(2), kflat.sym_size(2)}, opts),
            at::empty_symint({qflat.sym_size(0), qflat.sym_size(1), qflat.sym_size(2)}, opts)};
  };
  return h;
}

RECOPS_TORCH_HOOKS(stem_indexer_metadata) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "stem_indexer_metadata";
    using recops::binding::arg;
    const at::Tensor& q_seq_lens = arg(a, op, "q_seq_lens").toTensor();
    const int64_t kv_heads = arg(a, op, "kv_heads").toInt();
    // [2·B·kv_heads + 17]
    return {at::empty_symint({q_seq_lens.sym_size(0) * (2 * kv_heads) + 17},
                             q_seq_lens.options().dtype(at::kInt))};
  };
  return h;
}
