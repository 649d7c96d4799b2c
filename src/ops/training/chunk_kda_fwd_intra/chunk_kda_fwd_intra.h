// training/chunk_kda_fwd_intra/chunk_kda_fwd_intra.h: the C++ API (torch-free) of
// chunk_kda_fwd_intra (training_ops.md §4.5, the KDA intra-chunk forward; fla-core's
// fla.ops.kda.chunk_intra.chunk_kda_fwd_intra). The Args struct is the argument table's struct.
// Forward only: fla forms the gradient in the KDA backward (chunk_kda_bwd_wy_dqkg_fused).
//
// Each sequence is cut into chunks of BT positions from its own start (the last may be shorter,
// L rows). For rows i, j of a chunk, value head hv (key head h = hv / (HV / H)), e = exp (exp2
// with gate_log2):
//   Aqk[i, j] = scale · Σ_d q[i, d] k[j, d] e(G[i, d] − G[j, d])   (j ≤ i, else 0)
//   M[i, j]   = β[i] · Σ_d k[i, d] k[j, d] e(G[i, d] − G[j, d])    (j < i, else 0)
//   Akk = (I + M)^-1, w = Akk (β ⊙ k ⊙ e(G)), u = Akk (β ⊙ v),
//   kg = k ⊙ e(G[L − 1] − G), qg = q ⊙ e(G).
// q, k: [B, T, H, K]; v: [B, T, HV, V]; G: [B, T, HV, K]; beta: [B, T, HV]. w, kg: [B, T, HV, K]
// in k's dtype; qg: [B, T, HV, K] in q's dtype; u: v's shape and dtype; Aqk: [B, T, HV, BT] in
// k's dtype; Akk: [B, T, HV, BT] fp32. seq_offsets [N+1] (fla's cu_seqlens): packed, B must be 1.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkKdaFwdIntraArgs {
  TensorView q;                           // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView k;                           // [B, T, H, K]
  TensorView v;                           // [B, T, HV, V], HV % H == 0
  TensorView g;                           // G: [B, T, HV, K], the chunk-local gate cumsum
  TensorView beta;                        // [B, T, HV]
  std::optional<double> scale;            // None: K^-1/2
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  int64_t chunk_size = 64;                // BT: 32 or 64
  bool gate_log2 = false;                 // G in log2 units: exp2
};

// The six outputs, in the schema's order.
struct ChunkKdaFwdIntraOut {
  TensorView w, u, qg, kg, Aqk, Akk;
};

// Shapes and dtypes of (w, u, qg, kg, Aqk, Akk).
Status chunk_kda_fwd_intra_shape(const ChunkKdaFwdIntraArgs& a, Shape shapes[6], DType dtypes[6]);
Status chunk_kda_fwd_intra(const ChunkKdaFwdIntraArgs& a, const ChunkKdaFwdIntraOut& out,
                           const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops in fp32 (fp64 for an fp64 output), each output rounded once.
Status chunk_kda_fwd_intra_plain(const ChunkKdaFwdIntraArgs& a, const ChunkKdaFwdIntraOut& out);

}  // namespace recops
