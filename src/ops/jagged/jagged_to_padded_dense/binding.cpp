// jagged_to_padded_dense: the torch hooks the generic binding (src/torch/kit.h) cannot derive.
//   backward: grad_values = dense_to_jagged(grad, seq_offsets, total_L)   [total_L, *E]
//             (rows truncated by max_seq_len get 0; only seq_offsets and total_L are kept)
//   meta:     [B, max_seq_len, *E] in SymInts, for dynamic shapes (B = seq_offsets.size(0) - 1)
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
constexpr const char* kOp = "jagged_to_padded_dense";
}

RECOPS_TORCH_HOOKS(jagged_to_padded_dense) {
  recops::binding::TorchHooks h;
  h.save = [](const recops::binding::Args& a) -> recops::binding::Args {
    const at::Tensor& values = a[0].toTensor();
    // 0-D values are refused by the op itself, with its own message.
    return {a[1], values.dim() >= 1 ? values.sym_size(0) : c10::SymInt(0)};
  };
  h.backward = [](const recops::binding::Args& saved, const std::vector<at::Tensor>& grads) {
    // grads[0]: [B, max_seq_len, *E]
    return recops::binding::call("dense_to_jagged", {grads[0], saved[0], saved[1]});
  };
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& values = a[0].toTensor();
    const at::Tensor& seq_offsets = a[1].toTensor();
    const c10::SymInt max_seq_len = a[2].toSymInt();
    TORCH_CHECK(values.dim() >= 1, kOp, ": values must have at least 1 dim [total_L, *E], got 0-D");
    TORCH_CHECK(seq_offsets.dim() == 1, kOp, ": seq_offsets must be 1-D [B+1], got ",
                seq_offsets.dim(), "-D");
    TORCH_CHECK(seq_offsets.scalar_type() == at::kInt || seq_offsets.scalar_type() == at::kLong,
                kOp, ": seq_offsets must be int32 or int64, got ", seq_offsets.scalar_type());
    TORCH_SYM_CHECK(max_seq_len.sym_ge(0), kOp, ": max_seq_len must be >= 0");
    std::vector<c10::SymInt> shape = {seq_offsets.sym_size(0) - 1, max_seq_len};
    for (int64_t i = 1; i < values.dim(); ++i) shape.push_back(values.sym_size(i));
    return {at::empty_symint(shape, values.options())};
  };
  return h;
}
