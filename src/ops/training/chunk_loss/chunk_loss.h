// training/chunk_loss/chunk_loss.h: the C++ API (torch-free) of chunk_loss and chunk_loss_bwd, the
// fused linear cross-entropy of training_ops.md §3.2. The Args structs are the argument tables'.
//
// Z = hidden · weightᵀ (+ bias) [N, V] is never stored whole: token chunks of Nc rows (and vocab
// tiles of Vc columns when vocab_chunk > 0) go through the cross-entropy of §3.1 (the scalars and
// the reduction as fused_cross_entropy's; token_weight is its per-token `weight`). loss and z_loss
// as fused_cross_entropy's. The backward recomputes Z per chunk and returns d_hidden, d_weight and
// d_bias with the upstream gradient folded into G = ∂L/∂Z before the GEMMs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ops/training/common/cross_entropy.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkLossArgs : CeScalars {
  TensorView hidden;                       // [N, D], D >= 1, fp64/fp32/fp16/bf16, contiguous
  TensorView weight;                       // [V, D], V >= 1, hidden's dtype, contiguous
  TensorView labels;                       // [N], int32 or int64
  std::optional<TensorView> bias;          // [V], hidden's dtype; absent: 0
  std::optional<TensorView> token_weight;  // [N], fp32 or hidden's dtype; absent: 1
  int64_t token_chunk = 0;                 // rows per chunk (0: from the workspace budget)
  int64_t vocab_chunk = 0;                 // columns per vocab tile (0: no tiling, Vc = V)
  // dW/db accumulation across token chunks: None or fp32 (fp64 for fp64); hidden's dtype opts in
  // to the low-precision accumulation (Liger's default).
  std::optional<DType> accum_dtype;
};

// The chunking the entry chooses (and the workspace it implies).
struct ChunkLossPlan {
  int64_t Nc = 0;  // rows per token chunk
  int64_t Vc = 0;  // columns per vocab tile
};
// grads: the plan of a call that writes the gradients (chunk_loss_fwd with "sum"/"mean",
// chunk_loss_bwd); on CUDA their chunks can be larger (the README's schedule).
Status chunk_loss_plan(const ChunkLossArgs& a, ChunkLossPlan* plan, bool grads = false);

// loss, z_loss: [] ("sum", "mean") or [N] ("none"), fp32 (fp64 for fp64).
Status chunk_loss_shape(const ChunkLossArgs& a, Shape* loss_shape, DType* stat_dtype);
// Scratch on hidden's device (ctx.workspace of chunk_loss).
size_t chunk_loss_workspace_bytes(const ChunkLossArgs& a);
Status chunk_loss(const ChunkLossArgs& a, const TensorView& loss, const TensorView& z_loss,
                  const Context& ctx = {});

struct ChunkLossBwdArgs : ChunkLossArgs {
  TensorView grad_loss;    // loss's shape and dtype
  bool want_dbias = true;  // d_bias is written when bias is given and this is true
};
size_t chunk_loss_bwd_workspace_bytes(const ChunkLossBwdArgs& a);
// d_hidden: hidden's shape and dtype; d_weight: weight's; d_bias: bias's (nullptr when not wanted).
Status chunk_loss_bwd(const ChunkLossBwdArgs& a, const TensorView& d_hidden,
                      const TensorView& d_weight, const TensorView* d_bias,
                      const Context& ctx = {});

// chunk_loss_fwd: chunk_loss's loss and z_loss and, for reduction "sum" and "mean", the gradients
// chunk_loss_bwd gives for grad_loss = 1, from one pass over the logits (the Autograd kernel runs
// it when a gradient is needed and scales the saved gradients by grad_loss in the backward: 6·N·D·V
// flops in all where the forward and chunk_loss_bwd take 8). d_hidden and d_weight are required
// for "sum"/"mean" and must be nullptr for "none" (whose per-row gradient the forward cannot
// know); d_bias exactly when bias is given and they are.
size_t chunk_loss_fwd_workspace_bytes(const ChunkLossArgs& a);
Status chunk_loss_fwd(const ChunkLossArgs& a, const TensorView& loss, const TensorView& z_loss,
                      const TensorView* d_hidden, const TensorView* d_weight,
                      const TensorView* d_bias, const Context& ctx = {});

// The double standard's plain same-precision baselines (accuracy.md; CPU tensors only): the
// golden's loops with the logits and G rounded to the input dtype and the GEMM sums in fp32 (fp64
// for fp64), as F.linear + F.cross_entropy in that dtype would.
Status chunk_loss_plain(const ChunkLossArgs& a, const TensorView& loss, const TensorView& z_loss);
Status chunk_loss_bwd_plain(const ChunkLossBwdArgs& a, const TensorView& d_hidden,
                            const TensorView& d_weight, const TensorView* d_bias);

}  // namespace recops
