// training/chunk_gated_delta_rule_bwd_dhu/chunk_gated_delta_rule_bwd_dhu.h: the C++ API
// (torch-free) of chunk_gated_delta_rule_bwd_dhu (training_ops.md §4.3, the GDN sub-op; fla-core's
// fla.ops.common.chunk_delta_h.chunk_gated_delta_rule_bwd_dhu). The Args struct is the argument
// table's struct. Forward only (it is itself a piece of the GDN backward).
//
// Per sequence and value head hv (key head h = hv / (HV / H)), with dS [K, V] = dht (or 0), the
// chunks c from the last to the first (L the chunk's last valid position):
//   dh[c] = dS                        (the gradient of the state *after* chunk c = h[c + 1])
//   dv2_t = dv_local_t + exp(G_L − G_t) · dSᵀ k_t                      (t in chunk c)
//   dS    ← exp(G_L) · diag(exp(Gk_L)) · dS + scale · Σ_t exp(G_t) · q_t ⊗ do_t − Σ_t w_t ⊗ dv2_t
// and dh0 = the final dS (the gradient of the initial state; only when h0 is given). exp2 with
// gate_log2; no gate factors without G; no diag(exp(Gk_L)) without gk (KDA's per-channel gate:
// row i of dS decays by exp(Gk_L[i]); q and k come in already gated, qg and kg, so gk adds no
// per-position factor; g and gk may be given together, as in fla). Chunk numbering of dh: as h's
// (chunk_fwd_o's README): without seq_offsets dh[b, c]; with seq_offsets the chunks of all
// sequences in order.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkGatedDeltaRuleBwdDhuArgs {
  TensorView q;                   // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView k;                   // [B, T, H, K]
  TensorView w;                   // [B, T, HV, K], HV % H == 0
  TensorView do_;                 // do: [B, T, HV, V]
  TensorView dv_local;            // [B, T, HV, V]
  std::optional<TensorView> g;    // G: [B, T, HV], the chunk-local gate cumsum
  std::optional<TensorView> gk;   // [B, T, HV, K]: KDA's per-channel chunk-local gate cumsum
  std::optional<TensorView> h0;   // [N, HV, K, V]: present → dh0 is returned (not read)
  std::optional<TensorView> dht;  // [N, HV, K, V]: the final state's gradient
  std::optional<double> scale;    // default K^-1/2 (1 for K = 0)
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  int64_t chunk_size = 64;                // BT: 16, 32 or 64
  bool gate_log2 = false;                 // G in log2 units: exp2 instead of exp
  bool fp32_chunk_states = false;         // dh in fp32 instead of q's dtype (§2.4)
};

// dh: [B, NT, HV, K, V] in q's dtype (fp32 with fp32_chunk_states); NT = ceil(T / BT) without
// offsets, the sync-free bound ceil(T / BT) + N with them (chunks beyond the sequences' count
// are written as 0). dh0: [N, HV, K, V] fp32, present only with h0. dv2: dv_local's sizes and
// dtype.
struct ChunkGatedDeltaRuleBwdDhuShapes {
  Shape dh, dh0, dv2;
  DType dh_dtype = DType::fp32, dv2_dtype = DType::fp32;
  bool has_dh0 = false;
};
Status chunk_gated_delta_rule_bwd_dhu_shape(const ChunkGatedDeltaRuleBwdDhuArgs& a,
                                            ChunkGatedDeltaRuleBwdDhuShapes* s);
// dh0: nullptr exactly when h0 is absent.
Status chunk_gated_delta_rule_bwd_dhu(const ChunkGatedDeltaRuleBwdDhuArgs& a, const TensorView& dh,
                                      const TensorView* dh0, const TensorView& dv2,
                                      const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops in fp32 (fp64 for fp64 q), with dS rounded to k's dtype where it multiplies k
// and dv2 rounded to its dtype where it multiplies w (as a framework composition and fla's
// kernel round them).
Status chunk_gated_delta_rule_bwd_dhu_plain(const ChunkGatedDeltaRuleBwdDhuArgs& a,
                                            const TensorView& dh, const TensorView* dh0,
                                            const TensorView& dv2);

}  // namespace recops
