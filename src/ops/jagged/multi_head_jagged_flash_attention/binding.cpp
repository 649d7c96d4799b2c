// jagged/multi_head_jagged_flash_attention/binding.cpp: the torch hooks the generic binding
// (src/torch/kit.h) cannot derive.
// - The backward op takes out and lse: when a gradient is needed the Autograd kernel runs the _fwd
//   op and saves both (the table's save_outputs), so the backward calls _bwd with no second
//   forward. Both are registered ops, so torch.compile traces the backward.
// - _fwd's lse [H, total_L] in SymInts for dynamic shapes (out is q's shape).
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros_like.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(multi_head_jagged_flash_attention) {
  recops::binding::TorchHooks h;
  h.backward = [](const recops::binding::Args& s, const std::vector<at::Tensor>& grads) {
    // s: q, k, v, seq_offsets, max_seq_len, allow_tf32, then _fwd's out and lse
    const at::Tensor g = grads[0].defined() ? grads[0] : at::zeros_like(s[6].toTensor());
    return recops::binding::call("multi_head_jagged_flash_attention_bwd",
                                 {g, s[0], s[1], s[2], s[3], s[6], s[7], s[4], s[5]});
  };
  return h;
}

RECOPS_TORCH_HOOKS(multi_head_jagged_flash_attention_fwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& q =
        recops::binding::arg(a, "multi_head_jagged_flash_attention_fwd", "q").toTensor();
    const std::vector<c10::SymInt> lse = {q.sym_size(0), q.sym_size(1)};
    return {at::empty_symint(q.sym_sizes(), q.options()),
            at::empty_symint(lse, q.options().dtype(at::kFloat))};
  };
  return h;
}
