// training/chunk_bwd_dqkwg/chunk_bwd_dqkwg.h: the C++ API (torch-free) of chunk_bwd_dqkwg
// (training_ops.md §4.3, the GDN sub-op; fla-core's fla.ops.common.chunk_o.chunk_bwd_dqkwg): the
// gradients of q, k, w and the gate cumsum G from the chunked GDN output. Forward only as an op.
//
// Each sequence is cut into chunks of BT = chunk_size positions from its own start (the last one
// may be shorter); L is a chunk's last position. For chunk c, value head hv (key head
// h = hv / (HV / H)), Γ_ij = exp(G_i − G_j) (exp2 with gate_log2; every factor 1 without G):
//   ds_ij = scale · Γ_ij · (do_i · v_new_j)                     for j ≤ i in the chunk
//   dq_i  = scale · exp(G_i) · h_c do_i + Σ_j ds_ij k_j          (per value head)
//   dk_j  = exp(G_L − G_j) · dh_c v_new_j + Σ_i ds_ij q_i        (per value head)
//   dw_t  = −h_c dv2_t
//   dG_t  = q_t·dq_t − k_t·dk_t  (+ at t = L: exp(G_L)·⟨dh_c, h_c⟩ + Σ_t' k_t'·exp(G_L − G_t')·dh_c
//           v_new_t')
// with h_c the state before chunk c and dh_c the gradient of the state after it ([K, V] each).
// dq and dk are formed per value head in fp32 (fp64 for fp64 q) and summed over each group of
// HV/H value heads to the key head, in head order, rounded once. dG is the gradient with respect
// to the natural-log G whatever gate_log2 says (fla's convention, see README).
// Chunk numbering of h and dh as chunk_fwd_o's: without seq_offsets chunk c of batch row b is
// [b, c] (NT = ceil(T / BT)); with seq_offsets (B = 1) the chunks of all sequences in order.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkBwdDqkwgArgs {
  TensorView q;                           // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView k;                           // [B, T, H, K]
  TensorView v_new;                       // [B, T, HV, V], HV % H == 0
  std::optional<TensorView> w;            // [B, T, HV, K]: given with dv2 (dw's shape and dtype)
  std::optional<TensorView> g;            // G: [B, T, HV], the chunk-local gate cumsum
  TensorView h;                           // [B, NT, HV, K, V]: the state before each chunk
  TensorView dh;                          // [B, NT, HV, K, V]: the gradient of the state after it
  TensorView d_o;                         // do: [B, T, HV, V], the gradient of o
  std::optional<TensorView> dv2;          // [B, T, HV, V]: the full dv (given with w)
  std::optional<double> scale;            // default K^-1/2 (1 for K = 0)
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  int64_t chunk_size = 64;                // BT: 16, 32 or 64
  bool gate_log2 = false;                 // G in log2 units: exp2 instead of exp
};

// The outputs: dq [B, T, H, K] in q's dtype, dk [B, T, H, K] in k's dtype, dw [B, T, HV, K] in w's
// dtype (present with w), dG [B, T, HV] fp32 (present with g).
struct ChunkBwdDqkwgShapes {
  Shape dq, dk, dw, dg;
  DType dq_dtype = DType::fp32, dk_dtype = DType::fp32, dw_dtype = DType::fp32;
  bool has_dw = false, has_dg = false;
};
Status chunk_bwd_dqkwg_shape(const ChunkBwdDqkwgArgs& a, ChunkBwdDqkwgShapes* s);
// dw: required with w, else nullptr; dg: required with g, else nullptr.
Status chunk_bwd_dqkwg(const ChunkBwdDqkwgArgs& a, const TensorView& dq, const TensorView& dk,
                       const TensorView* dw, const TensorView* dg, const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops in fp32 (fp64 for fp64 q), ds stored in k's dtype before it multiplies k and q
// (fla's kernel), and with GVA each value head's dq and dk rounded to the output dtype before the
// group sum (fla's dq at HV heads, then .sum()); outputs rounded once.
Status chunk_bwd_dqkwg_plain(const ChunkBwdDqkwgArgs& a, const TensorView& dq, const TensorView& dk,
                             const TensorView* dw, const TensorView* dg);

}  // namespace recops
