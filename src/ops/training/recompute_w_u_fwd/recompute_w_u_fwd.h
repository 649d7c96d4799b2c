// training/recompute_w_u_fwd/recompute_w_u_fwd.h: the C++ API (torch-free) of recompute_w_u_fwd
// (training_ops.md §4.3, the GDN sub-op; fla-core's
// fla.ops.gated_delta_rule.wy_fast.recompute_w_u_fwd). The Args struct is the argument table's
// struct. Forward only: fla forms the gradient in the wy_fast backward (prepare_wy_repr_bwd).
//
// Each sequence is cut into chunks of BT positions from its own start (the last one may be
// shorter, L rows). For position t of a chunk starting at c0, value head hv (key head
// h = hv / (HV / H)):
//   u[t, hv] = Σ_{j < L} Ai[t, hv, j] · beta[c0 + j, hv] · v[c0 + j, hv]
//   w[t, hv] = Σ_{j < L} Ai[t, hv, j] · beta[c0 + j, hv] · exp(G[c0 + j, hv]) · k[c0 + j, h]
// (exp2 with gate_log2; no factor without G). Every column j < L of Ai's row is read (solve_tril
// writes zeros above the diagonal); columns past a tail chunk are not.
// k: [B, T, H, K]; v: [B, T, HV, V]; beta, G: [B, T, HV]; Ai: [B, T, HV, BT] (solve_tril's
// output, fp32; fp64/fp16/bf16 accepted). w: [B, T, HV, K] in k's dtype; u: v's shape and dtype.
// seq_offsets [N+1] (fla's cu_seqlens): packed sequences, B must be 1.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct RecomputeWUFwdArgs {
  TensorView k;                           // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView v;                           // [B, T, HV, V], HV % H == 0
  TensorView beta;                        // [B, T, HV]
  TensorView Ai;                          // [B, T, HV, BT]: the chunks' (I + A)^-1 rows
  std::optional<TensorView> g;            // G: [B, T, HV], the chunk-local gate cumsum
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  std::optional<int64_t> chunk_size;      // None = Ai's last dim; else must equal it
  bool gate_log2 = false;                 // G in log2 units: exp2(G)
};

// w: [B, T, HV, K] in k's dtype; u: v's shape and dtype.
Status recompute_w_u_fwd_shape(const RecomputeWUFwdArgs& a, Shape* w_shape, DType* w_dtype,
                               Shape* u_shape, DType* u_dtype);
Status recompute_w_u_fwd(const RecomputeWUFwdArgs& a, const TensorView& w, const TensorView& u,
                         const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops with fp32 sums and products (fp64 for an fp64 output), rounded once.
Status recompute_w_u_fwd_plain(const RecomputeWUFwdArgs& a, const TensorView& w,
                               const TensorView& u);

}  // namespace recops
