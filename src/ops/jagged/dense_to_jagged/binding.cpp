// dense_to_jagged: the torch hooks the generic binding (src/torch/kit.h) cannot derive.
//   backward: grad_dense = jagged_to_padded_dense(grad, seq_offsets, S, 0)   [B, S, *E]
//             (positions l >= L_b get 0; only seq_offsets and S are kept)
//   _dense_to_jagged_meta, meta: [total_L, *E] in SymInts, for dynamic shapes
// dense_to_jagged itself has no C++ Meta kernel: with total_L omitted its size is seq_offsets[B],
// an unbacked SymInt that only Python can create (fake.py, which calls _dense_to_jagged_meta).
#include <ATen/ops/empty.h>

#include "ops/jagged/common/row_copy_binding.h"

namespace {
constexpr const char* kDenseToJagged = "dense_to_jagged";
}

RECOPS_TORCH_HOOKS(dense_to_jagged) {
  // grads[0]: [total_L, *E]; saved: seq_offsets, S = dense.size(1)
  return recops::ops::row_copy_grad_hooks(1, "jagged_to_padded_dense", 0.0);
}

RECOPS_TORCH_HOOKS(_dense_to_jagged_meta) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& dense = a[0].toTensor();
    const at::Tensor& seq_offsets = a[1].toTensor();
    const c10::SymInt total_L = a[2].toSymInt();
    TORCH_CHECK(dense.dim() >= 2, kDenseToJagged,
                ": dense must have at least 2 dims [B, S, *E], got ", dense.dim(), "-D");
    recops::ops::check_seq_offsets_meta(kDenseToJagged, seq_offsets);
    TORCH_SYM_CHECK(dense.sym_size(0).sym_eq(seq_offsets.sym_size(0) - 1), kDenseToJagged,
                    ": dense's batch must be B = seq_offsets.numel() - 1");
    TORCH_SYM_CHECK(total_L.sym_ge(0), kDenseToJagged, ": total_L must be >= 0");
    std::vector<c10::SymInt> shape = {total_L};
    for (int64_t i = 2; i < dense.dim(); ++i) shape.push_back(dense.sym_size(i));
    return {at::empty_symint(shape, dense.options())};
  };
  return h;
}
