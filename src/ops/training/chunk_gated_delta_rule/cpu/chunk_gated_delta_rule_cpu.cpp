// training/chunk_gated_delta_rule/cpu/chunk_gated_delta_rule_cpu.cpp: the CPU path, a composition
// of the GDN sub-ops through their public torch-free entries (training_ops.md §4.4), with every
// intermediate in the caller's workspace (params.h's Layout):
//   [qn, kn = l2norm(q), l2norm(k)]     (use_qk_l2norm_in_kernel; q's dtype)
//   G  = chunk_local_cumsum(g)          fp32 [B, T, HV], natural-log units
//   A  = chunk_scaled_dot_kkt(k, β, G)  fp32 [B, T, HV, BT]
//   Ai = solve_tril(A)                  fp32 (I + A)⁻¹ per chunk
//   w, u = recompute_w_u_fwd(k, v, β, Ai, G)        k's / v's dtype
//   h, v_new, final_state = chunk_gated_delta_rule_fwd_h(k, w, u, G, h0)
//   o  = chunk_fwd_o(q, k, v_new, h, G, scale)
// With p.plain (the double standard's baseline), the sub-ops' own plain baselines where they
// have one. Each sub-op runs its best implementation for the device (the call's implementation
// filter names this op's implementations, not theirs).
#include <cstdint>

#include "ops/training/chunk_fwd_o/chunk_fwd_o.h"
#include "ops/training/chunk_gated_delta_rule/impls.h"
#include "ops/training/chunk_gated_delta_rule_fwd_h/chunk_gated_delta_rule_fwd_h.h"
#include "ops/training/chunk_local_cumsum/chunk_local_cumsum.h"
#include "ops/training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h"
#include "ops/training/l2norm/l2norm.h"
#include "ops/training/recompute_w_u_fwd/recompute_w_u_fwd.h"
#include "ops/training/solve_tril/solve_tril.h"

namespace recops::ops::chunk_gated_delta_rule_ns {

Status run_cpu(const Params& p, const Context& ctx) {
  const ChunkGatedDeltaRuleArgs& a = p.args;
  const Layout l = workspace_layout(p);
  if (p.workspace_bytes < l.total || (l.total > 0 && p.workspace == nullptr))
    return Status(StatusCode::internal,
                  "chunk_gated_delta_rule: cpu_generic without its workspace");
  unsigned char* ws = static_cast<unsigned char*>(p.workspace);
  const Device dev = a.q.device;
  auto view = [&](size_t off, DType t, const Shape& s) { return TensorView(ws + off, t, dev, s); };
  Context sub;  // the sub-ops' context: this call's threads and stream, no filter, no workspace
  sub.stream = ctx.stream;
  sub.num_threads = ctx.num_threads;
  const int64_t B = p.B, T = p.T, H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT;

  TensorView q = a.q, k = a.k;
  if (p.l2norm) {
    const TensorView qn = view(l.qn, p.q_dtype, {B, T, H, K});
    const TensorView kn = view(l.kn, p.k_dtype, {B, T, H, K});
    L2normArgs la;
    la.eps = p.l2norm_eps;
    la.x = a.q;
    RECOPS_RETURN_IF_ERROR(l2norm(la, qn, sub));
    la.x = a.k;
    RECOPS_RETURN_IF_ERROR(l2norm(la, kn, sub));
    q = qn, k = kn;
  }

  const TensorView G = view(l.G, DType::fp32, {B, T, HV});
  ChunkLocalCumsumArgs ca;
  ca.g = a.g;
  ca.chunk_size = BT;
  ca.seq_offsets = a.seq_offsets;
  RECOPS_RETURN_IF_ERROR(chunk_local_cumsum(ca, G, sub));

  const TensorView A = view(l.A, DType::fp32, {B, T, HV, BT});
  ChunkScaledDotKktArgs ka;
  ka.k = k;
  ka.beta = a.beta;
  ka.g = G;
  ka.seq_offsets = a.seq_offsets;
  ka.chunk_size = BT;
  RECOPS_RETURN_IF_ERROR(p.plain ? chunk_scaled_dot_kkt_plain(ka, A)
                                 : chunk_scaled_dot_kkt(ka, A, sub));

  const TensorView Ai = view(l.Ai, DType::fp32, {B, T, HV, BT});
  SolveTrilArgs sa;
  sa.A = A;
  sa.seq_offsets = a.seq_offsets;
  RECOPS_RETURN_IF_ERROR(solve_tril(sa, Ai, sub));

  const TensorView w = view(l.w, p.k_dtype, {B, T, HV, K});
  const TensorView u = view(l.u, p.v_dtype, {B, T, HV, V});
  RecomputeWUFwdArgs ra;
  ra.k = k;
  ra.v = a.v;
  ra.beta = a.beta;
  ra.Ai = Ai;
  ra.g = G;
  ra.seq_offsets = a.seq_offsets;
  RECOPS_RETURN_IF_ERROR(p.plain ? recompute_w_u_fwd_plain(ra, w, u)
                                 : recompute_w_u_fwd(ra, w, u, sub));

  const TensorView h = view(l.h, p.k_dtype, {B, p.NT, HV, K, V});
  const TensorView v_new = view(l.v_new, p.v_dtype, {B, T, HV, V});
  ChunkGatedDeltaRuleFwdHArgs fa;
  fa.k = k;
  fa.w = w;
  fa.u = u;
  fa.g = G;
  fa.initial_state = a.initial_state;
  fa.output_final_state = a.output_final_state;
  fa.seq_offsets = a.seq_offsets;
  fa.chunk_size = BT;
  const TensorView* ht = p.ht_view ? &*p.ht_view : nullptr;
  RECOPS_RETURN_IF_ERROR(p.plain ? chunk_gated_delta_rule_fwd_h_plain(fa, h, v_new, ht)
                                 : chunk_gated_delta_rule_fwd_h(fa, h, v_new, ht, sub));

  ChunkFwdOArgs oa;
  oa.q = q;
  oa.k = k;
  oa.v_new = v_new;
  oa.h = h;
  oa.g = G;
  oa.scale = p.scale;
  oa.seq_offsets = a.seq_offsets;
  oa.chunk_size = BT;
  return p.plain ? chunk_fwd_o_plain(oa, p.o_view) : chunk_fwd_o(oa, p.o_view, sub);
}

}  // namespace recops::ops::chunk_gated_delta_rule_ns
