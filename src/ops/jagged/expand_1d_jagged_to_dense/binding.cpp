// jagged/expand_1d_jagged_to_dense/binding.cpp: the torch hook the generic binding cannot derive:
// the Meta kernel for symbolic sizes (dynamic torch.compile): out is [B, max_len] of values' dtype.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(expand_1d_jagged_to_dense) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* kOp = "expand_1d_jagged_to_dense";
    const at::Tensor& values = a[0].toTensor();
    const at::Tensor& seq_offsets = a[1].toTensor();
    const c10::SymInt max_len = a[2].toSymInt();
    TORCH_CHECK(values.dim() == 1, kOp, ": values must be 1-D [total_L]");
    TORCH_CHECK(seq_offsets.dim() == 1, kOp, ": seq_offsets must be 1-D [B+1]");
    TORCH_SYM_CHECK(max_len.sym_ge(0), kOp, ": max_len must be >= 0");
    return {at::empty_symint({seq_offsets.sym_size(0) - 1, max_len}, values.options())};
  };
  return h;
}
