// training/chunk_fwd_o/chunk_fwd_o.h: the C++ API (torch-free) of chunk_fwd_o (training_ops.md
// §4.3, the GDN sub-op; fla-core's fla.ops.common.chunk_o.chunk_fwd_o). The Args struct is the
// argument table's struct. Forward only, as fla's.
//
// Each sequence is cut into chunks of BT = chunk_size positions from its own start (the last one
// may be shorter). For position t of chunk c (first position c0), value head hv (key head
// h = hv / (HV / H)):
//   o[t, hv] = scale · exp(G_t) · h[c, hv]ᵀ q[t, h]
//            + scale · Σ_{c0 ≤ j ≤ t} exp(G_t − G_j) · (q[t, h] · k[j, h]) · v_new[j, hv]
// (exp2 with gate_log2; both exponential factors are 1 without G). Chunk numbering of h: without
// seq_offsets chunk c of batch row b is h[b, c] (NT = ceil(T / BT)); with seq_offsets (B = 1) the
// chunks of all sequences are numbered in order, sequence by sequence (zero-length sequences own
// none): chunk c of sequence n is h[0, Σ_{m<n} ceil(len_m / BT) + c].
// q, k: [B, T, H, K]; v_new: [B, T, HV, V]; h: [B, NT, HV, K, V]; G: [B, T, HV]; o: [B, T, HV, V]
// in q's dtype. scale defaults to K^-1/2.
// With gk (KDA's per-channel gate cumsum G [B, T, HV, K], training_ops.md §4.5; exclusive with g):
//   o[t, hv] = scale · (q[t, h] ⊙ exp(G_t))ᵀ h[c, hv]
//            + Σ_{c0 ≤ j ≤ t} [scale · Σ_d q[t, h, d] · k[j, h, d] · exp(G_td − G_jd)]
//                             · v_new[j, hv]
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkFwdOArgs {
  TensorView q;                  // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView k;                  // [B, T, H, K]
  TensorView v_new;              // [B, T, HV, V], HV % H == 0
  TensorView h;                  // [B, NT, HV, K, V]: the state before each chunk
  std::optional<TensorView> g;   // G: [B, T, HV], the chunk-local gate cumsum
  std::optional<TensorView> gk;  // [B, T, HV, K]: KDA's per-channel chunk-local gate cumsum
  std::optional<double> scale;   // default K^-1/2 (1 for K = 0)
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  int64_t chunk_size = 64;                // BT: 16, 32 or 64
  bool gate_log2 = false;                 // G in log2 units: exp2 instead of exp
};
// o: [B, T, HV, V], q's dtype.
Status chunk_fwd_o_shape(const ChunkFwdOArgs& a, Shape* out_shape, DType* out_dtype);
Status chunk_fwd_o(const ChunkFwdOArgs& a, const TensorView& o, const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops in fp32 (fp64 for fp64 q), rounded once to o's dtype.
Status chunk_fwd_o_plain(const ChunkFwdOArgs& a, const TensorView& o);

}  // namespace recops
