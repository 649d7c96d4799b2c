// training/common/gdn_compose_steps.h: the steps that the compositions of chunk_gated_delta_rule
// and chunk_kda (each op's compose.cpp) share, through the sub-ops' public torch-free entries on
// the tensors' device: the optional l2norm of q and k and its backward, the chunk-local cumsum of
// g and its backward, the state pass (chunk_gated_delta_rule_fwd_h), the output (chunk_fwd_o)
// and the state backward (chunk_gated_delta_rule_bwd_dhu) with the gate cumsum G given as g
// ([B, T, HV], GDN) or gk ([B, T, HV, K], KDA).
// Each step reads the call's arguments from p.args and honours p.plain (the sub-ops' plain
// baselines where they have one) as the compositions do.
#pragma once

#include "ops/training/chunk_fwd_o/chunk_fwd_o.h"
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/chunk_gated_delta_rule_bwd_dhu.h"
#include "ops/training/chunk_gated_delta_rule_fwd_h/chunk_gated_delta_rule_fwd_h.h"
#include "ops/training/chunk_local_cumsum/chunk_local_cumsum.h"
#include "ops/training/common/gdn_composed_params.h"
#include "ops/training/l2norm/l2norm.h"

namespace recops::ops::training {

// How the composition passes the gate cumsum G to fwd_h and fwd_o.
enum class GateForm { g, gk };

// With p.l2norm: qn, kn = the l2-normalised rows of the inputs q, k, and *q, *k point at them
// (else nothing runs and *q, *k stay the inputs).
template <class A, class O>
Status compose_l2norm(const ComposedParams<A, O>& p, const TensorView& qn, const TensorView& kn,
                      const Context& sub, TensorView* q, TensorView* k) {
  *q = p.args.q, *k = p.args.k;
  if (!p.l2norm) return Status::Ok();
  L2normArgs la;
  la.eps = p.l2norm_eps;
  la.x = p.args.q;
  RECOPS_RETURN_IF_ERROR(l2norm(la, qn, sub));
  la.x = p.args.k;
  RECOPS_RETURN_IF_ERROR(l2norm(la, kn, sub));
  *q = qn, *k = kn;
  return Status::Ok();
}

// The backward of compose_l2norm: the outputs dq, dk from dqn, dkn (the gradients of the
// normalised rows, in q's and k's dtypes).
template <class A, class O>
Status compose_l2norm_bwd(const ComposedParams<A, O>& p, const TensorView& dqn,
                          const TensorView& dkn, const Context& sub) {
  L2normBwdArgs nb;
  nb.eps = p.l2norm_eps;
  nb.grad_y = dqn;
  nb.x = p.args.q;
  RECOPS_RETURN_IF_ERROR(l2norm_bwd(nb, p.out->dq, sub));
  nb.grad_y = dkn;
  nb.x = p.args.k;
  return l2norm_bwd(nb, p.out->dk, sub);
}

// G = chunk_local_cumsum(g), fp32, natural-log units.
template <class A, class O>
Status compose_cumsum(const ComposedParams<A, O>& p, const TensorView& G, const Context& sub) {
  ChunkLocalCumsumArgs ca;
  ca.g = p.args.g;
  ca.chunk_size = p.BT;
  ca.seq_offsets = p.args.seq_offsets;
  return chunk_local_cumsum(ca, G, sub);
}

// The output dg = chunk_local_cumsum_bwd(dG) (the reverse chunk-local cumsum), in g's dtype.
template <class A, class O>
Status compose_cumsum_bwd(const ComposedParams<A, O>& p, const TensorView& dG, const Context& sub) {
  ChunkLocalCumsumBwdArgs cb;
  cb.dout = dG;
  cb.g = p.args.g;
  cb.chunk_size = p.BT;
  cb.seq_offsets = p.args.seq_offsets;
  return chunk_local_cumsum_bwd(cb, p.out->dg, sub);
}

// h, v_new = chunk_gated_delta_rule_fwd_h(k, w, u, G as `form`, h0); final_state into p.ht_view
// when it is wanted and this is the forward (the backward only recomputes h and v_new).
template <class A, class O>
Status compose_fwd_h(const ComposedParams<A, O>& p, GateForm form, const TensorView& k,
                     const TensorView& w, const TensorView& u, const TensorView& G,
                     const TensorView& h, const TensorView& v_new, const Context& sub) {
  ChunkGatedDeltaRuleFwdHArgs fa;
  fa.k = k;
  fa.w = w;
  fa.u = u;
  (form == GateForm::g ? fa.g : fa.gk) = G;
  fa.initial_state = p.args.initial_state;
  fa.output_final_state = p.args.output_final_state && !p.bwd;
  fa.seq_offsets = p.args.seq_offsets;
  fa.chunk_size = p.BT;
  const TensorView* ht = p.ht_view && !p.bwd ? &*p.ht_view : nullptr;
  return p.plain ? chunk_gated_delta_rule_fwd_h_plain(fa, h, v_new, ht)
                 : chunk_gated_delta_rule_fwd_h(fa, h, v_new, ht, sub);
}

// The output o (p.o_view) = chunk_fwd_o(q, k, v_new, h, G as `form`, scale).
template <class A, class O>
Status compose_fwd_o(const ComposedParams<A, O>& p, GateForm form, const TensorView& q,
                     const TensorView& k, const TensorView& v_new, const TensorView& h,
                     const TensorView& G, const Context& sub) {
  ChunkFwdOArgs oa;
  oa.q = q;
  oa.k = k;
  oa.v_new = v_new;
  oa.h = h;
  (form == GateForm::g ? oa.g : oa.gk) = G;
  oa.scale = p.scale;
  oa.seq_offsets = p.args.seq_offsets;
  oa.chunk_size = p.BT;
  return p.plain ? chunk_fwd_o_plain(oa, p.o_view) : chunk_fwd_o(oa, p.o_view, sub);
}

// The state backward: dh, dv2 (and dh0 when given, exactly when h0 is) = chunk_gated_delta_rule_
// bwd_dhu(q, k, w, do, dv_local, G as `form`, h0, dht = p.dht_view, scale).
template <class A, class O>
Status compose_bwd_dhu(const ComposedParams<A, O>& p, GateForm form, const TensorView& q,
                       const TensorView& k, const TensorView& w, const TensorView& d_o,
                       const TensorView& dv_local, const TensorView& G, const TensorView& dh,
                       const TensorView* dh0, const TensorView& dv2, const Context& sub) {
  ChunkGatedDeltaRuleBwdDhuArgs ha;
  ha.q = q;
  ha.k = k;
  ha.w = w;
  ha.do_ = d_o;
  ha.dv_local = dv_local;
  (form == GateForm::g ? ha.g : ha.gk) = G;
  if (dh0) ha.h0 = p.args.initial_state;
  ha.dht = p.dht_view;
  ha.scale = p.scale;
  ha.seq_offsets = p.args.seq_offsets;
  ha.chunk_size = p.BT;
  return p.plain ? chunk_gated_delta_rule_bwd_dhu_plain(ha, dh, dh0, dv2)
                 : chunk_gated_delta_rule_bwd_dhu(ha, dh, dh0, dv2, sub);
}

}  // namespace recops::ops::training
