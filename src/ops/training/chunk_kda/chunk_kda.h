// training/chunk_kda/chunk_kda.h: the C++ API (torch-free) of the composed Kimi Delta Attention
// op chunk_kda (training_ops.md §4.5; fla-core's fla.ops.kda.chunk.chunk_kda) and its backward
// chunk_kda_bwd.
//
// Per sequence and value head hv (key head h = hv / (HV / H)), with the state S [K, V] starting at
// initial_state (or 0), token by token: the per-channel decay diag(exp(g_t)) scales S's rows, then
//   S ← diag(exp(g_t))·S;  S ← S + β_t·k_t ⊗ (v_t − Sᵀk_t);  o_t = scale·Sᵀq_t
// and final_state = S after the sequence's last token. g [B, T, HV, K] is the raw natural-log
// per-channel gate (not a cumsum). With use_qk_l2norm_in_kernel, q and k are first l2-normalised
// per row (§3.5, eps 1e-6). The CPU path composes the sub-ops in chunks of BT = chunk_size:
// chunk_local_cumsum → chunk_kda_fwd_intra → chunk_gated_delta_rule_fwd_h (gk) → chunk_fwd_o (gk),
// with their intermediates in the caller's workspace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkKdaArgs {
  TensorView q;                             // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView k;                             // [B, T, H, K], q's dtype
  TensorView v;                             // [B, T, HV, V], q's dtype, HV % H == 0
  TensorView g;                             // [B, T, HV, K], natural-log per-channel gates
  TensorView beta;                          // [B, T, HV] (any float dtype)
  std::optional<double> scale;              // default K^-1/2 (1 for K = 0)
  std::optional<TensorView> initial_state;  // [N, HV, K, V] (fp32 normally; any float)
  bool output_final_state = false;          // also return final_state [N, HV, K, V] fp32
  std::optional<TensorView> seq_offsets;    // [N+1] int32/int64 (fla's cu_seqlens); B = 1
  bool use_qk_l2norm_in_kernel = false;     // l2-normalise q and k rows first (eps 1e-6)
  int64_t chunk_size = 64;                  // BT: 32 or 64
};

// o: v's shape and dtype; final_state: [N, HV, K, V] fp32, or {0} when not wanted.
Status chunk_kda_shape(const ChunkKdaArgs& a, Shape* o_shape, DType* o_dtype,
                       Shape* final_state_shape);
// The scratch bytes the entry needs in ctx.workspace (the sub-ops' intermediates: G, w, u, qg, kg,
// Aqk, Akk, h, v_new, and the normalised q and k with use_qk_l2norm_in_kernel); 0 for arguments
// the entry refuses.
size_t chunk_kda_workspace_bytes(const ChunkKdaArgs& a);
// final_state: nullptr exactly when output_final_state is false.
Status chunk_kda(const ChunkKdaArgs& a, const TensorView& o, const TensorView* final_state,
                 const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the same
// composition through the sub-ops' plain baselines where they have one (cumsum and l2norm as they
// are), with its own scratch.
Status chunk_kda_plain(const ChunkKdaArgs& a, const TensorView& o, const TensorView* final_state);

// chunk_kda_bwd: the gradients of the forward's inputs (training_ops.md §4.5, as §4.4 for GDN).
// The kit's backward convention: the outputs' gradients, then the forward's arguments, then
// want_d_initial_state. The CPU path recomputes G, the intra products, h and v_new, then
// chunk_kda_bwd_dav → chunk_gated_delta_rule_bwd_dhu (gk) → chunk_kda_bwd_wy_dqkg_fused →
// chunk_kda_bwd_intra, dg = chunk_local_cumsum_bwd(dG), and l2norm_bwd with
// use_qk_l2norm_in_kernel (fla-core 0.6.0's chunk_kda_bwd order).
struct ChunkKdaBwdArgs {
  TensorView grad_o;                           // [B, T, HV, V], v's dtype
  std::optional<TensorView> grad_final_state;  // [N, HV, K, V] (read only with
                                               // output_final_state; else None or empty)
  // The forward's arguments (ChunkKdaArgs'), flat for the argument table.
  TensorView q, k, v, g, beta;
  std::optional<double> scale;
  std::optional<TensorView> initial_state;
  bool output_final_state = false;
  std::optional<TensorView> seq_offsets;
  bool use_qk_l2norm_in_kernel = false;
  int64_t chunk_size = 64;
  bool want_d_initial_state = true;  // dh0 wanted (with initial_state)
  ChunkKdaArgs forward() const {
    return {q,
            k,
            v,
            g,
            beta,
            scale,
            initial_state,
            output_final_state,
            seq_offsets,
            use_qk_l2norm_in_kernel,
            chunk_size};
  }
};
// dq, dk: q's shape and dtype; dv: v's; dg: g's; dbeta: beta's; dh0: [N, HV, K, V] fp32 (present
// exactly when initial_state is given and want_d_initial_state).
struct ChunkKdaBwdOut {
  TensorView dq, dk, dv, dg, dbeta;
  const TensorView* dh0 = nullptr;
};
Status chunk_kda_bwd_check(const ChunkKdaBwdArgs& a, bool* has_dh0);
size_t chunk_kda_bwd_workspace_bytes(const ChunkKdaBwdArgs& a);
Status chunk_kda_bwd(const ChunkKdaBwdArgs& a, const ChunkKdaBwdOut& out, const Context& ctx = {});
// The plain baseline of the backward: the same composition of the sub-ops' plain baselines.
Status chunk_kda_bwd_plain(const ChunkKdaBwdArgs& a, const ChunkKdaBwdOut& out);

}  // namespace recops
