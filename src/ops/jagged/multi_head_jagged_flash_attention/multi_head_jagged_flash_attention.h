// jagged/multi_head_jagged_flash_attention/multi_head_jagged_flash_attention.h: the op's C++ API
// (torch-free). The Args structs are the argument tables' structs.
//
// multi_head_jagged_flash_attention:      out = softmax(q kᵀ) v / max_seq_len per head h and
//                                         sequence b over rows and keys < n_b (jagged_ops.md §2.10)
// multi_head_jagged_flash_attention_fwd:  (out, lse), lse = log Σ_n exp(s[m,n]) in fp32
// multi_head_jagged_flash_attention_bwd:  (dq, dk, dv) from grad, the inputs, out and lse
// q, k, v, out, grad: [H, total_L, D], one floating dtype (fp64, fp32, fp16, bf16), last stride 1.
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct MultiHeadJaggedFlashAttentionArgs {
  TensorView q;            // [H, total_L, D]
  TensorView k;            // [H, total_L, D]
  TensorView v;            // [H, total_L, D]
  TensorView seq_offsets;  // [B+1] int32 or int64
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;  // accepted for SLL compatibility; no path here uses TF32
};

// out: q's shape and dtype.
Status multi_head_jagged_flash_attention_shape(const MultiHeadJaggedFlashAttentionArgs& a,
                                               Shape* out_shape);
Status multi_head_jagged_flash_attention(const MultiHeadJaggedFlashAttentionArgs& a,
                                         const TensorView& out, const Context& ctx = {});
// out as above; lse: fp32 [H, total_L] (−inf on rows m >= n_b).
Status multi_head_jagged_flash_attention_fwd(const MultiHeadJaggedFlashAttentionArgs& a,
                                             const TensorView& out, const TensorView& lse,
                                             const Context& ctx = {});

struct MultiHeadJaggedFlashAttentionBwdArgs {
  TensorView grad;  // [H, total_L, D], like out
  TensorView q;
  TensorView k;
  TensorView v;
  TensorView seq_offsets;
  TensorView out;  // the forward's out
  TensorView lse;  // the forward's lse, fp32 [H, total_L]
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;
};
// dq, dk, dv: contiguous, like q, k, v.
Status multi_head_jagged_flash_attention_bwd(const MultiHeadJaggedFlashAttentionBwdArgs& a,
                                             const TensorView& dq, const TensorView& dk,
                                             const TensorView& dv, const Context& ctx = {});

// The double standard's plain same-precision baseline (CPU tensors only; the CLI's judge):
// the formula with accumulation in the input precision (fp32, fp64 for fp64) and p, ds rounded
// to the input dtype before the products, as a framework composition would.
Status multi_head_jagged_flash_attention_fwd_plain(const MultiHeadJaggedFlashAttentionArgs& a,
                                                   const TensorView& out, const TensorView& lse);
Status multi_head_jagged_flash_attention_bwd_plain(const MultiHeadJaggedFlashAttentionBwdArgs& a,
                                                   const TensorView& dq, const TensorView& dk,
                                                   const TensorView& dv);

}  // namespace recops
