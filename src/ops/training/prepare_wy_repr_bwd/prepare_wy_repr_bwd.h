// training/prepare_wy_repr_bwd/prepare_wy_repr_bwd.h: the C++ API (torch-free) of
// prepare_wy_repr_bwd (training_ops.md §4.3, the wy_fast row of the GDN sub-ops; fla-core's
// fla.ops.gated_delta_rule.wy_fast.prepare_wy_repr_bwd): the backward of the WY representation
// w = Ai (β⊙exp(G)⊙K), u = Ai (β⊙V) with Ai = (I + A)^-1 and A_tj = β_t (k_t·k_j) Γ_tj, to k, v,
// β and G. Forward only as an op.
//
// Each sequence is cut into chunks of BT = Ai's last dim positions from its own start (the last
// one may be shorter). Per chunk and value head hv (key head h = hv / (HV / H)), Γ_tj =
// exp(G_t − G_j), e_t = exp(G_t) (exp2 with gate_log2; every factor 1 without G):
//   ū = Aiᵀ du, w̄ = Aiᵀ dw
//   dv_t = β_t ū_t;  dk_t = β_t e_t w̄_t;  dβ_t = ū_t·v_t + e_t (w̄_t·k_t);  dG_t = β_t e_t (k_t·w̄_t)
//   dA = −Aiᵀ (du (β⊙V)ᵀ + dw (β⊙e⊙K)ᵀ) Aiᵀ, kept strictly lower (t > j)
//   dβ_t += Σ_j dA_tj (k_t·k_j) Γ_tj;  dk_t += Σ_j dA_tj β_t Γ_tj k_j;  dk_j += Σ_t dA_tj β_t Γ_tj
//   k_t dG_t += Σ_j dA_tj A_tj;  dG_j −= Σ_t dA_tj A_tj
// dk is formed per value head in fp32 (fp64 for fp64 k) and summed over each group of HV/H value
// heads to the key head, in head order, rounded once. dG is the gradient with respect to the
// natural-log G whatever gate_log2 says (fla's convention, see README).
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct PrepareWyReprBwdArgs {
  TensorView k;                           // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView v;                           // [B, T, HV, V], HV % H == 0
  TensorView beta;                        // [B, T, HV]
  std::optional<TensorView> g;            // G: [B, T, HV], the chunk-local gate cumsum
  TensorView Ai;                          // [B, T, HV, BT]: the chunks' (I + A)^-1 rows
  TensorView dw;                          // [B, T, HV, K]: the gradient of w
  TensorView du;                          // [B, T, HV, V]: the gradient of u (GDN: dv2)
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  std::optional<int64_t> chunk_size;      // None = Ai's last dim; else must equal it
  bool gate_log2 = false;                 // G in log2 units: exp2 instead of exp
};

// The outputs: dk [B, T, H, K] in k's dtype, dv v's shape and dtype, dbeta beta's shape and
// dtype, dg [B, T, HV] fp32 (present with g).
struct PrepareWyReprBwdShapes {
  Shape dk, dv, dbeta, dg;
  DType dk_dtype = DType::fp32, dv_dtype = DType::fp32, dbeta_dtype = DType::fp32;
  bool has_dg = false;
};
Status prepare_wy_repr_bwd_shape(const PrepareWyReprBwdArgs& a, PrepareWyReprBwdShapes* s);
// dg: required with g, else nullptr.
Status prepare_wy_repr_bwd(const PrepareWyReprBwdArgs& a, const TensorView& dk,
                           const TensorView& dv, const TensorView& dbeta, const TensorView* dg,
                           const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops in fp32 (fp64 for fp64 k), dA·Γ stored in k's dtype before it multiplies k
// (fla's kernel), and with GVA each value head's dk rounded to k's dtype before the group sum
// (fla's dk at HV heads, then .sum()); outputs rounded once.
Status prepare_wy_repr_bwd_plain(const PrepareWyReprBwdArgs& a, const TensorView& dk,
                                 const TensorView& dv, const TensorView& dbeta,
                                 const TensorView* dg);

}  // namespace recops
