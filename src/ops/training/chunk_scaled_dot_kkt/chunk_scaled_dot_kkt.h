// training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h: the C++ API (torch-free) of
// chunk_scaled_dot_kkt (training_ops.md §4.3, the GDN sub-op; fla-core's
// fla.ops.common.chunk_scaled_dot_kkt.chunk_scaled_dot_kkt_fwd). The Args struct is the argument
// table's struct. Forward only: fla takes its gradient inside the wy_fast backward.
//
// Each sequence is cut into chunks of BT = chunk_size positions from its own start (the last one
// may be shorter). For position t of a chunk starting at c0, value head hv (key head
// h = hv / (HV / H)) and column j in [0, BT):
//   A[t, hv, j] = beta[t, hv] · (k[t, h] · k[c0 + j, h]) · Γ   when c0 + j < t,   else 0,
//   Γ = exp(G[t, hv] − G[c0 + j, hv])  (exp2 with gate_log2; 1 without G).
// k: [B, T, H, K]; beta: [B, T, HV]; G: [B, T, HV] (the chunk-local cumsum of the gates);
// A: [B, T, HV, BT] fp32. seq_offsets [N+1] (fla's cu_seqlens): packed sequences, B must be 1.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkScaledDotKktArgs {
  TensorView k;                           // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView beta;                        // [B, T, HV], HV % H == 0
  std::optional<TensorView> g;            // G: [B, T, HV], the chunk-local gate cumsum
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  int64_t chunk_size = 64;                // BT: 16, 32 or 64
  bool gate_log2 = false;                 // G in log2 units: Γ = exp2(G_t − G_j)
};
// A: [B, T, HV, chunk_size], fp32.
Status chunk_scaled_dot_kkt_shape(const ChunkScaledDotKktArgs& a, Shape* out_shape);
Status chunk_scaled_dot_kkt(const ChunkScaledDotKktArgs& a, const TensorView& A,
                            const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops with fp32 dots, fp32 exponentials and fp32 products (fp64 for fp64 k).
Status chunk_scaled_dot_kkt_plain(const ChunkScaledDotKktArgs& a, const TensorView& A);

}  // namespace recops
