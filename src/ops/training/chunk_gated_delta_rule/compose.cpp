// training/chunk_gated_delta_rule/compose.cpp: the composition of the GDN sub-ops (cpu_generic
// and cuda_sm80 alike: each sub-op dispatches on the tensors' device) through their public
// torch-free entries (training_ops.md §4.4), with every intermediate in the caller's workspace
// (params.h's Layout):
//   [qn, kn = l2norm(q), l2norm(k)]     (use_qk_l2norm_in_kernel; q's dtype)
//   G  = chunk_local_cumsum(g)          fp32 [B, T, HV], natural-log units
//   A  = chunk_scaled_dot_kkt(k, β, G)  fp32 [B, T, HV, BT]
//   Ai = solve_tril(A)                  fp32 (I + A)⁻¹ per chunk
//   w, u = recompute_w_u_fwd(k, v, β, Ai, G)        k's / v's dtype
//   h, v_new, final_state = chunk_gated_delta_rule_fwd_h(k, w, u, G, h0)
//   o  = chunk_fwd_o(q, k, v_new, h, G, scale)
// The backward (p.bwd, chunk_gated_delta_rule_bwd) recomputes the same intermediates up to h and
// v_new, then (training_ops.md §4.4):
//   dv_local = chunk_bwd_dv_local(q, k, G, do)
//   dh, dh0, dv2 = chunk_gated_delta_rule_bwd_dhu(q, k, w, G, h0, dht, do, dv_local)
//   dq, dk, dw, dG = chunk_bwd_dqkwg(q, k, v_new, w, G, h, dh, do, dv2)
//   dk2, dv, dbeta, dG2 = prepare_wy_repr_bwd(k, v, β, G, Ai, dw, dv2)
//   dk += dk2;  dg = chunk_local_cumsum_bwd(dG + dG2);  [dq, dk = l2norm_bwd(...)]
// With p.plain (the double standard's baseline), the sub-ops' own plain baselines where they
// have one. Each sub-op runs its best implementation for the device (the call's implementation
// filter names this op's implementations, not theirs).
#include <cstdint>

#include "ops/training/chunk_bwd_dqkwg/chunk_bwd_dqkwg.h"
#include "ops/training/chunk_bwd_dv_local/chunk_bwd_dv_local.h"
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/chunk_gated_delta_rule_bwd_dhu.h"
#include "ops/training/chunk_gated_delta_rule/compose.h"
#include "ops/training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h"
#include "ops/training/common/gdn_compose_steps.h"
#include "ops/training/prepare_wy_repr_bwd/prepare_wy_repr_bwd.h"
#include "ops/training/recompute_w_u_fwd/recompute_w_u_fwd.h"
#include "ops/training/solve_tril/solve_tril.h"

namespace recops::ops::chunk_gated_delta_rule_ns {
namespace {

// The backward after the recompute: q, k the (normalised) inputs, the rest the intermediates.
Status backward(const Params& p, const Context& sub, const Adder& add, const TensorView& q,
                const TensorView& k, const TensorView& G, const TensorView& Ai, const TensorView& w,
                const TensorView& h, const TensorView& v_new) {
  const ChunkGatedDeltaRuleArgs& a = p.args;
  const ChunkGatedDeltaRuleBwdOut& out = *p.out;
  const Layout l = workspace_layout(p);
  unsigned char* ws = static_cast<unsigned char*>(p.workspace);
  const Device dev = a.q.device;
  auto view = [&](size_t off, DType t, const Shape& s) { return TensorView(ws + off, t, dev, s); };
  const int64_t B = p.B, T = p.T, H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT;
  const TensorView d_o(const_cast<void*>(p.d_o), p.v_dtype, dev, {B, T, HV, V});

  const TensorView dv_local = view(l.dv_local, p.v_dtype, {B, T, HV, V});
  ChunkBwdDvLocalArgs la;
  la.q = q;
  la.k = k;
  la.g = G;
  la.do_ = d_o;
  la.scale = p.scale;
  la.seq_offsets = a.seq_offsets;
  la.chunk_size = BT;
  RECOPS_RETURN_IF_ERROR(p.plain ? chunk_bwd_dv_local_plain(la, dv_local)
                                 : chunk_bwd_dv_local(la, dv_local, sub));

  const TensorView dh = view(l.dh, p.q_dtype, {B, p.NT, HV, K, V});
  const TensorView dv2 = view(l.dv2, p.v_dtype, {B, T, HV, V});
  RECOPS_RETURN_IF_ERROR(training::compose_bwd_dhu(p, training::GateForm::g, q, k, w, d_o, dv_local,
                                                   G, dh, out.dh0, dv2, sub));

  // dq, dk of the (normalised) q, k: the outputs themselves without l2norm.
  const TensorView dqn = p.l2norm ? view(l.dqn, p.q_dtype, {B, T, H, K}) : out.dq;
  const TensorView dkn = p.l2norm ? view(l.dkn, p.k_dtype, {B, T, H, K}) : out.dk;
  const TensorView dk1 = view(l.dk2, p.k_dtype, {B, T, H, K});  // dqkwg's dk, before the sum
  const TensorView dw = view(l.dw, p.k_dtype, {B, T, HV, K});
  const TensorView dG = view(l.dG, DType::fp32, {B, T, HV});
  ChunkBwdDqkwgArgs qa;
  qa.q = q;
  qa.k = k;
  qa.v_new = v_new;
  qa.w = w;
  qa.g = G;
  qa.h = h;
  qa.dh = dh;
  qa.d_o = d_o;
  qa.dv2 = dv2;
  qa.scale = p.scale;
  qa.seq_offsets = a.seq_offsets;
  qa.chunk_size = BT;
  RECOPS_RETURN_IF_ERROR(p.plain ? chunk_bwd_dqkwg_plain(qa, dqn, dk1, &dw, &dG)
                                 : chunk_bwd_dqkwg(qa, dqn, dk1, &dw, &dG, sub));

  const TensorView dG2 = view(l.dG2, DType::fp32, {B, T, HV});
  const TensorView dk2 = dkn;  // written by prepare_wy_repr_bwd, then dk1 added
  PrepareWyReprBwdArgs wa;
  wa.k = k;
  wa.v = a.v;
  wa.beta = a.beta;
  wa.g = G;
  wa.Ai = Ai;
  wa.dw = dw;
  wa.du = dv2;
  wa.seq_offsets = a.seq_offsets;
  wa.chunk_size = BT;
  RECOPS_RETURN_IF_ERROR(p.plain ? prepare_wy_repr_bwd_plain(wa, dk2, out.dv, out.dbeta, &dG2)
                                 : prepare_wy_repr_bwd(wa, dk2, out.dv, out.dbeta, &dG2, sub));
  RECOPS_RETURN_IF_ERROR(add(dkn, dk2, dk1, sub));
  RECOPS_RETURN_IF_ERROR(add(dG, dG, dG2, sub));

  RECOPS_RETURN_IF_ERROR(training::compose_cumsum_bwd(p, dG, sub));
  return p.l2norm ? training::compose_l2norm_bwd(p, dqn, dkn, sub) : Status::Ok();
}

}  // namespace

Status compose(const Params& p, const Context& ctx, const Adder& add) {
  const ChunkGatedDeltaRuleArgs& a = p.args;
  const Layout l = workspace_layout(p);
  if (p.workspace_bytes < l.total || (l.total > 0 && p.workspace == nullptr))
    return Status(StatusCode::internal,
                  "chunk_gated_delta_rule: the composition without its workspace");
  unsigned char* ws = static_cast<unsigned char*>(p.workspace);
  const Device dev = a.q.device;
  auto view = [&](size_t off, DType t, const Shape& s) { return TensorView(ws + off, t, dev, s); };
  Context sub;  // the sub-ops' context: this call's threads and stream, no filter, no workspace
  sub.stream = ctx.stream;
  sub.num_threads = ctx.num_threads;
  const int64_t B = p.B, T = p.T, H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT;

  TensorView q, k;
  RECOPS_RETURN_IF_ERROR(training::compose_l2norm(
      p, view(l.qn, p.q_dtype, {B, T, H, K}), view(l.kn, p.k_dtype, {B, T, H, K}), sub, &q, &k));
  const TensorView G = view(l.G, DType::fp32, {B, T, HV});
  RECOPS_RETURN_IF_ERROR(training::compose_cumsum(p, G, sub));

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
  RECOPS_RETURN_IF_ERROR(
      training::compose_fwd_h(p, training::GateForm::g, k, w, u, G, h, v_new, sub));
  if (p.bwd) return backward(p, sub, add, q, k, G, Ai, w, h, v_new);
  return training::compose_fwd_o(p, training::GateForm::g, q, k, v_new, h, G, sub);
}

}  // namespace recops::ops::chunk_gated_delta_rule_ns
