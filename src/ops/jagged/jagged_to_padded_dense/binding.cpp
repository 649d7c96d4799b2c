// jagged_to_padded_dense: the torch hooks the generic binding (src/torch/kit.h) cannot derive.
//   backward: grad_values = dense_to_jagged(grad, seq_offsets, total_L)   [total_L, *E]
//             (rows truncated by max_seq_len get 0; only seq_offsets and total_L are kept)
//   meta:     [B, max_seq_len, *E] in SymInts, for dynamic shapes (B = seq_offsets.size(0) - 1)
#include <ATen/ops/empty.h>

#include "ops/jagged/common/row_copy_binding.h"

namespace {
constexpr const char* kJaggedToPaddedDense = "jagged_to_padded_dense";
}

RECOPS_TORCH_HOOKS(jagged_to_padded_dense) {
  // grads[0]: [B, max_seq_len, *E]; saved: seq_offsets, total_L = values.size(0)
  recops::binding::TorchHooks h = recops::ops::row_copy_grad_hooks(0, "dense_to_jagged", {});
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& values = a[0].toTensor();
    const at::Tensor& seq_offsets = a[1].toTensor();
    const c10::SymInt max_seq_len = a[2].toSymInt();
    TORCH_CHECK(values.dim() >= 1, kJaggedToPaddedDense,
                ": values must have at least 1 dim [total_L, *E], got 0-D");
    recops::ops::check_seq_offsets_meta(kJaggedToPaddedDense, seq_offsets);
    TORCH_SYM_CHECK(max_seq_len.sym_ge(0), kJaggedToPaddedDense, ": max_seq_len must be >= 0");
    std::vector<c10::SymInt> shape = {seq_offsets.sym_size(0) - 1, max_seq_len};
    for (int64_t i = 1; i < values.dim(); ++i) shape.push_back(values.sym_size(i));
    return {at::empty_symint(shape, values.options())};
  };
  return h;
}
