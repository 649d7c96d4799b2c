// jagged/jagged2_to_padded_dense/binding.cpp: the torch hook the generic binding cannot derive:
// the forward's Meta kernel for symbolic sizes (dynamic torch.compile): out is
// [B, max_length, max_length] of values' dtype. The backward op's output is like values (its
// table says so), so it needs no hook.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(jagged2_to_padded_dense) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* kOp = "jagged2_to_padded_dense";
    const at::Tensor& values = a[0].toTensor();
    const at::Tensor& offsets = a[1].toTensor();
    const c10::SymInt max_length = a[2].toSymInt();
    TORCH_CHECK(values.dim() == 1, kOp, ": values must be 1-D [sum N_b^2]");
    TORCH_CHECK(offsets.dim() == 1, kOp, ": offsets must be 1-D [B+1]");
    TORCH_SYM_CHECK(max_length.sym_ge(0), kOp, ": max_length must be >= 0");
    return {at::empty_symint({offsets.sym_size(0) - 1, max_length, max_length}, values.options())};
  };
  return h;
}
