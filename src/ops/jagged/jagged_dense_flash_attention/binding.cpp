// jagged/jagged_dense_flash_attention/binding.cpp: the torch hooks the generic binding
// (src/torch/kit.h) cannot derive.
//   meta:     out [B, T, D] = [k.size(0), k.size(2), q.size(1)] (and lse [B, T] fp32 for _fwd) in
//             SymInts, for dynamic shapes (out is like no single argument).
//   backward: _bwd takes the forward's out and lse: when a gradient is needed the Autograd kernel
//             runs jagged_dense_flash_attention_fwd and saves both (the table's save_outputs),
//             so the backward calls jagged_dense_flash_attention_bwd with no second forward. Both
//             are registered ops, so torch.compile traces the backward as a graph of recops ops.
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros_like.h>

#include "torch/kit.h"

namespace {
std::vector<at::Tensor> meta_outs(const recops::binding::Args& a, bool with_lse) {
  const at::Tensor& q = a[0].toTensor();
  const at::Tensor& k = a[1].toTensor();
  TORCH_CHECK(q.dim() == 2 && k.dim() == 3, "jagged_dense_flash_attention: q must be 2-D ",
              "[total_L, D] and k 3-D [B, D, T]; got ", q.dim(), "-D and ", k.dim(), "-D");
  std::vector<at::Tensor> outs = {
      at::empty_symint({k.sym_size(0), k.sym_size(2), q.sym_size(1)}, q.options())};
  if (with_lse)
    outs.push_back(at::empty_symint({k.sym_size(0), k.sym_size(2)}, q.options().dtype(at::kFloat)));
  return outs;
}
}  // namespace

RECOPS_TORCH_HOOKS(jagged_dense_flash_attention) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) { return meta_outs(a, false); };
  // saved: q, k, v, attn_bias, seq_offsets, max_seq_len, allow_tf32, then _fwd's out and lse.
  h.backward = [](const recops::binding::Args& s, const std::vector<at::Tensor>& grads) {
    const at::Tensor& out = s[7].toTensor();
    const at::Tensor g = grads[0].defined() ? grads[0] : at::zeros_like(out);
    return recops::binding::call("jagged_dense_flash_attention_bwd",
                                 {g, s[0], s[1], s[2], s[3], s[4], s[7], s[8], s[5], s[6]});
  };
  return h;
}

RECOPS_TORCH_HOOKS(jagged_dense_flash_attention_fwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) { return meta_outs(a, true); };
  return h;
}
