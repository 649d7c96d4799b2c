// training/fused_cross_entropy/fused_cross_entropy.h: the C++ API (torch-free) of
// fused_cross_entropy, fused_cross_entropy_fwd and fused_cross_entropy_bwd (training_ops.md §3.1).
// The Args structs are the argument tables' structs.
//
// Per row i of logits [N, V] whose label y_i != ignore_index (z' = c tanh(z / c) when softcap
// c > 0, else z):
//   lse_i = log sum_j exp(z'_ij)
//   l_i   = (1 - eps)(lse_i - z'_iy) + eps (lse_i - mean_j z'_ij) + lambda lse_i^2
//   loss: w_i l_i per row ("none"), their sum ("sum"), or the sum / Dn ("mean", Dn = sum of w_i
//   over rows not ignored; L = 0 when Dn = 0). z_loss: the lambda lse_i^2 term alone, weighted
//   and reduced alike. Ignored rows: loss 0, lse 0, gradient 0.
//   bwd: dz_ij = s_i [(1 + 2 lambda lse_i) p_ij - (1 - eps)[j = y_i] - eps / V] (x (1 - tanh^2(z /
//   c)) with softcap), p_ij = exp(z'_ij - lse_i), s_i = g w_i (sum), g w_i / Dn (mean), g_i w_i
//   (none).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ops/training/common/cross_entropy.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct FusedCrossEntropyArgs : CeScalars {
  TensorView logits;                 // [N, V], V >= 1, fp64/fp32/fp16/bf16, contiguous
  TensorView labels;                 // [N], int32 or int64
  std::optional<TensorView> weight;  // [N], fp32 or logits' dtype; absent: 1
  // Not implemented yet (refused when true): the Liger-style gradient written by the forward, and
  // the gradient written over logits.
  bool precompute_grad = false;
  bool inplace = false;
};

// loss and z_loss: [] ("sum", "mean") or [N] ("none"); lse: [N]. All in the statistics' dtype:
// fp32, fp64 for fp64 logits.
Status fused_cross_entropy_shape(const FusedCrossEntropyArgs& a, Shape* loss_shape,
                                 DType* stat_dtype);
// Scratch on the logits' device for fused_cross_entropy (lse and per-row partials) and
// fused_cross_entropy_fwd (per-row partials of "sum"/"mean").
size_t fused_cross_entropy_workspace_bytes(const FusedCrossEntropyArgs& a, bool with_lse_output);
// loss and z_loss; lse goes to the workspace (ctx.workspace: the bytes above, with_lse = false).
Status fused_cross_entropy(const FusedCrossEntropyArgs& a, const TensorView& loss,
                           const TensorView& z_loss, const Context& ctx = {});
// The same and lse [N] (ctx.workspace: the bytes above, with_lse = true).
Status fused_cross_entropy_fwd(const FusedCrossEntropyArgs& a, const TensorView& loss,
                               const TensorView& z_loss, const TensorView& lse,
                               const Context& ctx = {});

struct FusedCrossEntropyBwdArgs : CeScalars {
  TensorView grad_loss;              // loss's shape and dtype
  TensorView logits;                 // the forward's
  TensorView labels;                 // the forward's
  std::optional<TensorView> weight;  // the forward's
  TensorView lse;                    // the forward's lse [N]
};
// Scratch on the logits' device ("mean": the device scalar Dn; else 0).
size_t fused_cross_entropy_bwd_workspace_bytes(const FusedCrossEntropyBwdArgs& a);
// grad_logits: logits' shape and dtype.
Status fused_cross_entropy_bwd(const FusedCrossEntropyBwdArgs& a, const TensorView& grad_logits,
                               const Context& ctx = {});

}  // namespace recops
