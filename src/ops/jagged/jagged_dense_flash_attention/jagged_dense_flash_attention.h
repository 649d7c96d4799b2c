// jagged/jagged_dense_flash_attention/jagged_dense_flash_attention.h: the op's C++ API (torch-free;
// jagged_ops.md §2.9). The Args structs are the argument tables' structs.
//
// Per sequence b and target column t, over rows l < n_b = min(L_b, max_seq_len):
//   s[l,t] = q(b,l) . k[b,:,t] + attn_bias[b,l,t];  lse[b,t] = log sum_l exp(s[l,t])  (fp32)
//   out[b,t] = sum_l exp(s[l,t] - lse[b,t]) v(b,l);  n_b = 0: out[b] = 0, lse[b] = -inf
// q, v: [total_L, D] (row stride free, last stride 1); k: [B, D, T]; attn_bias: [B, S, T] with
// S >= max_seq_len; out [B, T, D] in q's dtype. fp64, fp32, fp16, bf16 (one dtype per call).
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct JaggedDenseFlashAttentionArgs {
  TensorView q;            // [total_L, D]
  TensorView k;            // [B, D, T]
  TensorView v;            // [total_L, D]
  TensorView attn_bias;    // [B, S, T], S >= max_seq_len
  TensorView seq_offsets;  // [B+1] int32 or int64
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;  // CUDA fp32 only; the CPU paths compute in fp32
};

// out [B, T, D] (q's dtype); lse [B, T] fp32.
Status jagged_dense_flash_attention_shape(const JaggedDenseFlashAttentionArgs& a, Shape* out_shape);
Status jagged_dense_flash_attention(const JaggedDenseFlashAttentionArgs& a, const TensorView& out,
                                    const Context& ctx = {});
Status jagged_dense_flash_attention_fwd(const JaggedDenseFlashAttentionArgs& a,
                                        const TensorView& out, const TensorView& lse,
                                        const Context& ctx = {});

struct JaggedDenseFlashAttentionBwdArgs {
  TensorView grad;  // [B, T, D], like out
  TensorView q, k, v, attn_bias, seq_offsets;
  TensorView out;  // [B, T, D], the forward's
  TensorView lse;  // [B, T] fp32, the forward's
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;
};
// dq, dv like q (truncated rows 0); dk like k; dbias like attn_bias (rows l >= n_b are 0).
Status jagged_dense_flash_attention_bwd(const JaggedDenseFlashAttentionBwdArgs& a,
                                        const TensorView& dq, const TensorView& dk,
                                        const TensorView& dv, const TensorView& dbias,
                                        const Context& ctx = {});

// The double standard's plain same-precision baselines (accuracy.md; CPU tensors, for the CLI):
// the formulas in fp32 (fp64 for fp64) in plain order, p and ds rounded to the dtype before the
// products, as a straightforward composition would.
Status jagged_dense_flash_attention_plain(const JaggedDenseFlashAttentionArgs& a,
                                          const TensorView& out, const TensorView& lse);
Status jagged_dense_flash_attention_bwd_plain(const JaggedDenseFlashAttentionBwdArgs& a,
                                              const TensorView& dq, const TensorView& dk,
                                              const TensorView& dv, const TensorView& dbias);

}  // namespace recops
