// training/chunk_kda_bwd_wy_dqkg_fused/chunk_kda_bwd_wy_dqkg_fused.h: the C++ API (torch-free) of
// chunk_kda_bwd_wy_dqkg_fused (training_ops.md §4.5, KDA; fla-core's
// fla.ops.kda.chunk_bwd.chunk_kda_bwd_wy_dqkg_fused): the Kimi Delta Attention backward through the
// chunk states (chunk_bwd_dqkwg's state terms) and through the WY representation w, u
// (prepare_wy_repr_bwd's w/u terms), with every scalar decay replaced by the per-channel one.
// Forward only as an op.
//
// Each sequence is cut into chunks of BT = chunk_size positions from its own start (the last one
// may be shorter); L is a chunk's last position. For chunk c, value head hv (key head
// h = hv / (HV / H)), G_t the per-channel gate cumsum [K], e_t = exp(G_t), f_t = exp(G_L − G_t)
// (exp2 with gate_log2), ⊙ per channel:
//   dq_t  = scale · e_t ⊙ (h_c do_t)                         (per value head)
//   dk1_t = f_t ⊙ (dh_c v_new_t);  dw_t = −h_c dv2_t
//   ū = Akkᵀ dv2, w̄ = Akkᵀ dw (over the chunk's rows)
//   dv_t  = β_t ū_t;  dk_t = dk1_t + β_t e_t ⊙ w̄_t;  dβ_t = ū_t·v_t + (e_t ⊙ k_t)·w̄_t
//   dG_t  = q_t ⊙ dq_t − k_t ⊙ dk1_t + β_t e_t ⊙ k_t ⊙ w̄_t
//           (+ at t = L: exp(G_L) ⊙ diag(h_c dh_cᵀ) + Σ_t' k_t' ⊙ dk1_t')
//   dA    = −Akkᵀ (dv2 (β⊙V)ᵀ + dw (β⊙e⊙K)ᵀ) Akkᵀ, strictly lower (t > j), 0 elsewhere
// with h_c the state before chunk c and dh_c the gradient of the state after it ([K, V] each).
// dq and dk are formed per value head in fp32 (fp64 for fp64 q) and summed over each group of
// HV/H value heads to the key head, in head order. dG is the gradient with respect to the
// natural-log G whatever gate_log2 says (fla's convention, see README). The intra-chunk terms
// (through Aqk and through M in Akk = (I + M)^-1) are not part of this op: dA is returned for them.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkKdaBwdWyDqkgFusedArgs {
  TensorView q;                           // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView k;                           // [B, T, H, K]
  TensorView v;                           // [B, T, HV, V], HV % H == 0
  TensorView v_new;                       // [B, T, HV, V]
  TensorView g;                           // G: [B, T, HV, K], the per-channel chunk-local cumsum
  TensorView beta;                        // [B, T, HV]
  TensorView Akk;                         // [B, T, HV, BT]: the chunks' (I + M)^-1 rows
  TensorView h;                           // [B, NT, HV, K, V]: the state before each chunk
  TensorView d_o;                         // do: [B, T, HV, V]
  TensorView dh;                          // [B, NT, HV, K, V]: the gradient of the state after it
  TensorView dv2;                         // [B, T, HV, V]: the gradient of v_new (fla's dv)
  std::optional<double> scale;            // default K^-1/2 (1 for K = 0)
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  int64_t chunk_size = 64;                // BT: 16, 32 or 64, = Akk's last dim
  bool gate_log2 = false;                 // G in log2 units: exp2 instead of exp
};

// The outputs: dq, dk [B, T, H, K] fp32, dv v's sizes and dtype, dbeta [B, T, HV] fp32,
// dg [B, T, HV, K] fp32, dA [B, T, HV, BT] fp32.
struct ChunkKdaBwdWyDqkgFusedShapes {
  Shape dq, dk, dv, dbeta, dg, dA;
  DType dv_dtype = DType::fp32;
};
Status chunk_kda_bwd_wy_dqkg_fused_shape(const ChunkKdaBwdWyDqkgFusedArgs& a,
                                         ChunkKdaBwdWyDqkgFusedShapes* s);

// The outputs of one call.
struct ChunkKdaBwdWyDqkgFusedOut {
  TensorView dq, dk, dv, dbeta, dg, dA;
};
Status chunk_kda_bwd_wy_dqkg_fused(const ChunkKdaBwdWyDqkgFusedArgs& a,
                                   const ChunkKdaBwdWyDqkgFusedOut& out, const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops in fp32 (fp64 for fp64 q), outputs rounded once. fla's kernel keeps every
// intermediate (dw, Akkᵀdv2, Akkᵀdw, the dA products) in fp32, so there is no storage rounding of
// an intermediate to mimic; the inputs already carry the bf16 storage of h and v_new.
Status chunk_kda_bwd_wy_dqkg_fused_plain(const ChunkKdaBwdWyDqkgFusedArgs& a,
                                         const ChunkKdaBwdWyDqkgFusedOut& out);

}  // namespace recops
