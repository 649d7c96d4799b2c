// training/chunk_kda/compose.cpp: the composition of the KDA sub-ops (cpu_generic and cuda_sm80
// alike: each sub-op dispatches on the tensors' device) through their public torch-free entries
// (training_ops.md §4.5; fla-core 0.6.0's chunk_kda_fwd and chunk_kda_bwd), with every
// intermediate in the caller's workspace (params.h's Layout):
//   [qn, kn = l2norm(q), l2norm(k)]                  (use_qk_l2norm_in_kernel; q's dtype)
//   G = chunk_local_cumsum(g)                        fp32 [B, T, HV, K], natural-log units
//   w, u, qg, kg, Aqk, Akk = chunk_kda_fwd_intra(q, k, v, G, β, scale)
//   h, v_new, final_state = chunk_gated_delta_rule_fwd_h(kg, w, u, gk = G, h0)
//   o = chunk_fwd_o(q, k, v_new, h, gk = G, scale)
// The backward (p.bwd, chunk_kda_bwd) recomputes the same intermediates up to h and v_new, then:
//   dAqk, dv = chunk_kda_bwd_dav(v_new, do, Aqk, scale)
//   dh, dh0, dv2 = chunk_gated_delta_rule_bwd_dhu(qg, kg, w, gk = G, h0, dht, do, dv, scale)
//   dq1, dk1, dv, dβ1, dG1, dAkk = chunk_kda_bwd_wy_dqkg_fused(q, k, v, v_new, G, β, Akk, h, do,
//                                                              dh, dv2, scale)
//   dq2, dk2, dβ2, dG2 = chunk_kda_bwd_intra(q, k, G, β, dAqk, dAkk, dq1, dk1, dβ1, dG1)
//   dg = chunk_local_cumsum_bwd(dG2);  dq, dk = dq2, dk2 (or l2norm_bwd of them);  dβ = dβ2
// The fp32 dq2, dk2 and dβ2 are rounded once to their outputs' dtypes (with l2norm, dq2 and dk2 to
// q's and k's dtypes before l2norm_bwd). With p.plain (the double
// standard's baseline), the sub-ops' own plain baselines where they have one. Each sub-op runs its
// best CPU implementation (the call's implementation filter names this op's implementations, not
// theirs).
#include <cstdint>

#include "ops/training/chunk_gated_delta_rule_bwd_dhu/chunk_gated_delta_rule_bwd_dhu.h"
#include "ops/training/chunk_kda/compose.h"
#include "ops/training/chunk_kda_bwd_dav/chunk_kda_bwd_dav.h"
#include "ops/training/chunk_kda_bwd_intra/chunk_kda_bwd_intra.h"
#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/chunk_kda_bwd_wy_dqkg_fused.h"
#include "ops/training/chunk_kda_fwd_intra/chunk_kda_fwd_intra.h"
#include "ops/training/common/gdn_compose_steps.h"

namespace recops::ops::chunk_kda_ns {
namespace {

// The views of the workspace's parts.
struct Scratch {
  Layout l;
  unsigned char* ws;
  Device dev;
  TensorView operator()(size_t off, DType t, const Shape& s) const {
    return TensorView(ws + off, t, dev, s);
  }
};

// The backward after the recompute: q, k the (normalised) inputs, the rest the intermediates.
Status backward(const Params& p, const Context& sub, const Caster& cast, const Scratch& view,
                const TensorView& q, const TensorView& k, const TensorView& G,
                const ChunkKdaFwdIntraOut& in, const TensorView& h, const TensorView& v_new) {
  const ChunkKdaArgs& a = p.args;
  const ChunkKdaBwdOut& out = *p.out;
  const Layout& l = view.l;
  const int64_t B = p.B, T = p.T, H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT;
  const TensorView d_o(const_cast<void*>(p.d_o), p.v_dtype, view.dev, {B, T, HV, V});

  const TensorView dAqk = view(l.dAqk, DType::fp32, {B, T, HV, BT});
  const TensorView dv_local = view(l.dv_local, p.v_dtype, {B, T, HV, V});
  ChunkKdaBwdDavArgs da;
  da.v_new = v_new;
  da.d_o = d_o;
  da.Aqk = in.Aqk;
  da.scale = p.scale;
  da.seq_offsets = a.seq_offsets;
  da.chunk_size = BT;
  RECOPS_RETURN_IF_ERROR(p.plain ? chunk_kda_bwd_dav_plain(da, {dAqk, dv_local})
                                 : chunk_kda_bwd_dav(da, {dAqk, dv_local}, sub));

  const TensorView dh = view(l.dh, p.q_dtype, {B, p.NT, HV, K, V});
  const TensorView dv2 = view(l.dv2, p.v_dtype, {B, T, HV, V});
  RECOPS_RETURN_IF_ERROR(training::compose_bwd_dhu(p, training::GateForm::gk, in.qg, in.kg, in.w,
                                                   d_o, dv_local, G, dh, out.dh0, dv2, sub));

  const TensorView dq1 = view(l.dq1, DType::fp32, {B, T, H, K});
  const TensorView dk1 = view(l.dk1, DType::fp32, {B, T, H, K});
  const TensorView db1 = view(l.dbeta1, DType::fp32, {B, T, HV});
  const TensorView dG1 = view(l.dG1, DType::fp32, {B, T, HV, K});
  const TensorView dAkk = view(l.dAkk, DType::fp32, {B, T, HV, BT});
  ChunkKdaBwdWyDqkgFusedArgs wa;
  wa.q = q;
  wa.k = k;
  wa.v = a.v;
  wa.v_new = v_new;
  wa.g = G;
  wa.beta = a.beta;
  wa.Akk = in.Akk;
  wa.h = h;
  wa.d_o = d_o;
  wa.dh = dh;
  wa.dv2 = dv2;
  wa.scale = p.scale;
  wa.seq_offsets = a.seq_offsets;
  wa.chunk_size = BT;
  const ChunkKdaBwdWyDqkgFusedOut wo{dq1, dk1, out.dv, db1, dG1, dAkk};
  RECOPS_RETURN_IF_ERROR(p.plain ? chunk_kda_bwd_wy_dqkg_fused_plain(wa, wo)
                                 : chunk_kda_bwd_wy_dqkg_fused(wa, wo, sub));

  const TensorView dq2 = view(l.dq2, DType::fp32, {B, T, H, K});
  const TensorView dk2 = view(l.dk2, DType::fp32, {B, T, H, K});
  const TensorView db2 = view(l.dbeta2, DType::fp32, {B, T, HV});
  const TensorView dG2 = view(l.dG2, DType::fp32, {B, T, HV, K});
  ChunkKdaBwdIntraArgs ia;
  ia.q = q;
  ia.k = k;
  ia.g = G;
  ia.beta = a.beta;
  ia.dAqk = dAqk;
  ia.dAkk = dAkk;
  ia.dq = dq1;
  ia.dk = dk1;
  ia.dbeta = db1;
  ia.dg = dG1;
  ia.seq_offsets = a.seq_offsets;
  ia.chunk_size = BT;
  RECOPS_RETURN_IF_ERROR(p.plain ? chunk_kda_bwd_intra_plain(ia, {dq2, dk2, db2, dG2})
                                 : chunk_kda_bwd_intra(ia, {dq2, dk2, db2, dG2}, sub));

  RECOPS_RETURN_IF_ERROR(training::compose_cumsum_bwd(p, dG2, sub));
  RECOPS_RETURN_IF_ERROR(cast(out.dbeta, db2, sub));

  if (!p.l2norm) {
    RECOPS_RETURN_IF_ERROR(cast(out.dq, dq2, sub));
    return cast(out.dk, dk2, sub);
  }
  // With l2norm: dq2 and dk2 are rounded once to q's and k's dtypes (as fla's kernels store them
  // and as chunk_gated_delta_rule does), and l2norm's backward runs in those dtypes (its CUDA path
  // reads grad_y in x's dtype).
  const TensorView dqn = view(l.dqn, p.q_dtype, {B, T, H, K});
  const TensorView dkn = view(l.dkn, p.k_dtype, {B, T, H, K});
  RECOPS_RETURN_IF_ERROR(cast(dqn, dq2, sub));
  RECOPS_RETURN_IF_ERROR(cast(dkn, dk2, sub));
  return training::compose_l2norm_bwd(p, dqn, dkn, sub);
}

}  // namespace

Status compose(const Params& p, const Context& ctx, const Caster& cast) {
  const ChunkKdaArgs& a = p.args;
  const Scratch view{workspace_layout(p), static_cast<unsigned char*>(p.workspace), a.q.device};
  const Layout& l = view.l;
  if (p.workspace_bytes < l.total || (l.total > 0 && p.workspace == nullptr))
    return Status(StatusCode::internal, "chunk_kda: the composition without its workspace");
  Context sub;  // the sub-ops' context: this call's threads and stream, no filter, no workspace
  sub.stream = ctx.stream;
  sub.num_threads = ctx.num_threads;
  const int64_t B = p.B, T = p.T, H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT;

  TensorView q, k;
  RECOPS_RETURN_IF_ERROR(training::compose_l2norm(
      p, view(l.qn, p.q_dtype, {B, T, H, K}), view(l.kn, p.k_dtype, {B, T, H, K}), sub, &q, &k));
  const TensorView G = view(l.G, DType::fp32, {B, T, HV, K});
  RECOPS_RETURN_IF_ERROR(training::compose_cumsum(p, G, sub));

  const ChunkKdaFwdIntraOut in{
      view(l.w, p.k_dtype, {B, T, HV, K}),    view(l.u, p.v_dtype, {B, T, HV, V}),
      view(l.qg, p.q_dtype, {B, T, HV, K}),   view(l.kg, p.k_dtype, {B, T, HV, K}),
      view(l.Aqk, p.k_dtype, {B, T, HV, BT}), view(l.Akk, DType::fp32, {B, T, HV, BT})};
  ChunkKdaFwdIntraArgs ia;
  ia.q = q;
  ia.k = k;
  ia.v = a.v;
  ia.g = G;
  ia.beta = a.beta;
  ia.scale = p.scale;
  ia.seq_offsets = a.seq_offsets;
  ia.chunk_size = BT;
  RECOPS_RETURN_IF_ERROR(p.plain ? chunk_kda_fwd_intra_plain(ia, in)
                                 : chunk_kda_fwd_intra(ia, in, sub));

  const TensorView h = view(l.h, p.k_dtype, {B, p.NT, HV, K, V});
  const TensorView v_new = view(l.v_new, p.v_dtype, {B, T, HV, V});
  RECOPS_RETURN_IF_ERROR(
      training::compose_fwd_h(p, training::GateForm::gk, in.kg, in.w, in.u, G, h, v_new, sub));
  if (p.bwd) return backward(p, sub, cast, view, q, k, G, in, h, v_new);
  return training::compose_fwd_o(p, training::GateForm::gk, q, k, v_new, h, G, sub);
}

}  // namespace recops::ops::chunk_kda_ns
