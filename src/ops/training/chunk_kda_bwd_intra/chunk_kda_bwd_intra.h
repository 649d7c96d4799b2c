// training/chunk_kda_bwd_intra/chunk_kda_bwd_intra.h: the C++ API (torch-free) of
// chunk_kda_bwd_intra (training_ops.md §4.5, KDA; fla-core's
// fla.ops.kda.chunk_intra.chunk_kda_bwd_intra): the backward of chunk_kda_fwd_intra's two score
// matrices, added to the incoming gradients. Forward only as an op.
//
// Each sequence is cut into chunks of BT positions from its own start (the last may be shorter,
// L rows). For rows i, j of a chunk, value head hv (key head h = hv / (HV / H)), channel d,
// e = exp (exp2 with gate_log2), Γ_ij,d = e(G_id − G_jd):
//   Â_ij = Σ_d q_id k_jd Γ_ij,d (j ≤ i);  M_ij = β_i Σ_d k_id k_jd Γ_ij,d (j < i)
// with dAqk = ∂ℓ/∂Â (chunk_kda_bwd_dav's dAqk, lower part read) and dAkk = ∂ℓ/∂M
// (chunk_kda_bwd_wy_dqkg_fused's dA, strictly lower part read):
//   dq_i  += Σ_{j ≤ i} dAqk_ij k_j ⊙ Γ_ij
//   dk_j  += Σ_{i ≥ j} dAqk_ij q_i ⊙ Γ_ij + Σ_{i > j} dAkk_ij β_i k_i ⊙ Γ_ij
//   dk_i  += β_i Σ_{j < i} dAkk_ij k_j ⊙ Γ_ij
//   dβ_i  += Σ_{j < i} dAkk_ij Σ_d k_id k_jd Γ_ij,d
//   dG    += the gradient with respect to the natural-log G (no ln 2 factor with gate_log2:
//            chunk_kda_bwd_wy_dqkg_fused's units)
// dq and dk (key heads) get the terms of every value head of their group, summed in head order in
// fp64 with the incoming value and rounded once; dβ and dG per value head.
// q, k, dq, dk: [B, T, H, K]; g, dg: [B, T, HV, K]; beta, dbeta: [B, T, HV]; dAqk, dAkk:
// [B, T, HV, BT]. Outputs: dq, dk [B, T, H, K], dbeta [B, T, HV], dg [B, T, HV, K], all fp32.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkKdaBwdIntraArgs {
  TensorView q;                           // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView k;                           // [B, T, H, K]
  TensorView g;                           // G: [B, T, HV, K], the per-channel chunk-local cumsum
  TensorView beta;                        // [B, T, HV], HV % H == 0
  TensorView dAqk;                        // [B, T, HV, BT]: ∂ℓ/∂Â (lower part read)
  TensorView dAkk;                        // [B, T, HV, BT]: ∂ℓ/∂M (strictly lower part read)
  TensorView dq;                          // incoming [B, T, H, K]
  TensorView dk;                          // incoming [B, T, H, K]
  TensorView dbeta;                       // incoming [B, T, HV]
  TensorView dg;                          // incoming [B, T, HV, K]
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  int64_t chunk_size = 64;                // BT: 16, 32 or 64, = dAqk's last dim
  bool gate_log2 = false;                 // G in log2 units: exp2 instead of exp
};

// The outputs, in the schema's order, all fp32: dq, dk [B, T, H, K], dbeta [B, T, HV],
// dg [B, T, HV, K].
struct ChunkKdaBwdIntraOut {
  TensorView dq, dk, dbeta, dg;
};

Status chunk_kda_bwd_intra_shape(const ChunkKdaBwdIntraArgs& a, Shape shapes[4]);
Status chunk_kda_bwd_intra(const ChunkKdaBwdIntraArgs& a, const ChunkKdaBwdIntraOut& out,
                           const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops in fp32 (fp64 for fp64 q), outputs rounded once (fla's kernel keeps every
// intermediate in fp32).
Status chunk_kda_bwd_intra_plain(const ChunkKdaBwdIntraArgs& a, const ChunkKdaBwdIntraOut& out);

}  // namespace recops
