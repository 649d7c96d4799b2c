// tests/fuzz/fuzz_gdn_entries.cpp: the Gated DeltaNet sub-ops' public C++ entries on the CPU
// (chunk_local_cumsum, chunk_scaled_dot_kkt, solve_tril, recompute_w_u_fwd,
// chunk_gated_delta_rule_fwd_h, chunk_fwd_o, chunk_bwd_dv_local, chunk_gated_delta_rule_bwd_dhu,
// chunk_bwd_dqkwg, prepare_wy_repr_bwd), the composed chunk_gated_delta_rule, and the two KDA ops
// with a per-channel gate G [B, T, HV, K] (chunk_kda_fwd_intra, chunk_kda_bwd_wy_dqkg_fused), with
// B, T, heads (GVA groups, sometimes mismatched), widths, chunk sizes, seq_offsets, chunk counts,
// optional tensors, dtypes and strides derived from the fuzz input. Each call must return an error
// Status or run; a crash, a hang or a sanitizer report is a finding. Its own target, so that the
// seeds of fuzz_training_entries keep their meaning. The op is picked from the input's last byte
// modulo 13 (11 before the KDA ops joined; see tests/fuzz/corpus/README.md). KDA's gk option of
// fwd_h, fwd_o and bwd_dhu is a last, optional decision of those ops (old inputs decode as
// before); the KDA ops added later (chunk_kda_bwd_dav, chunk_kda_bwd_intra, chunk_kda and its
// backward) are in fuzz_kda_entries, as a 14th selector value would change every input's op.
#include <algorithm>

#include "fuzz_gdn_util.h"
#include "ops/training/chunk_bwd_dqkwg/chunk_bwd_dqkwg.h"
#include "ops/training/chunk_bwd_dv_local/chunk_bwd_dv_local.h"
#include "ops/training/chunk_fwd_o/chunk_fwd_o.h"
#include "ops/training/chunk_gated_delta_rule/chunk_gated_delta_rule.h"
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/chunk_gated_delta_rule_bwd_dhu.h"
#include "ops/training/chunk_gated_delta_rule_fwd_h/chunk_gated_delta_rule_fwd_h.h"
#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/chunk_kda_bwd_wy_dqkg_fused.h"
#include "ops/training/chunk_kda_fwd_intra/chunk_kda_fwd_intra.h"
#include "ops/training/chunk_local_cumsum/chunk_local_cumsum.h"
#include "ops/training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h"
#include "ops/training/prepare_wy_repr_bwd/prepare_wy_repr_bwd.h"
#include "ops/training/recompute_w_u_fwd/recompute_w_u_fwd.h"
#include "ops/training/solve_tril/solve_tril.h"

namespace {

using namespace recops_fuzz;
using recops::DType;
using recops::Shape;

// KDA's per-channel gate cumsum gk [B, T, HV, K] of chunk_gated_delta_rule_fwd_h, chunk_fwd_o and
// chunk_gated_delta_rule_bwd_dhu: a decision read after all the others of the op (false once the
// input is used up), so that inputs from before gk decode as they did. A gk too large for the
// arena is left out.
void maybe_gk(FuzzedDataProvider& fdp, Arena& ar, const Dims& d, std::optional<TensorView>* gk) {
  if (!fdp.ConsumeBool()) return;
  TensorView t;
  if (channel_gate(fdp, ar, d, &t)) *gk = t;
}

void fuzz_cumsum(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkLocalCumsumArgs a;
  const bool per_channel = fdp.ConsumeBool();
  if (!btx(fdp, ar, d, d.HV, per_channel ? d.K : -1, DType::fp32, &a.g)) return;
  a.chunk_size = d.BT;
  a.reverse = fdp.ConsumeBool();
  a.scale = real_arg(fdp, 1.0);
  a.seq_offsets = d.seq_offsets;
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) a.out_dtype = train_dtype(fdp);
  Shape s;
  DType t;
  if (!recops::chunk_local_cumsum_shape(a, &s, &t).ok()) return;
  TensorView out;
  if (!ar.output(s, t, &out)) return;
  (void)recops::chunk_local_cumsum(a, out, ctx_arg(fdp));
}

void fuzz_kkt(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkScaledDotKktArgs a;
  bool ok = true;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.k) || !btx(fdp, ar, d, d.HV, -1, d.t, &a.beta)) return;
  if (!maybe_gate(fdp, ar, d, &a.g)) return;
  a.seq_offsets = d.seq_offsets;
  a.chunk_size = d.BT;
  a.gate_log2 = fdp.ConsumeBool();
  if (!ok) return;
  Shape s;
  if (!recops::chunk_scaled_dot_kkt_shape(a, &s).ok()) return;
  TensorView A;
  if (!ar.output(s, DType::fp32, &A)) return;
  if (plain(fdp)) {
    (void)recops::chunk_scaled_dot_kkt_plain(a, A);
    return;
  }
  (void)recops::chunk_scaled_dot_kkt(a, A, ctx_arg(fdp));
}

void fuzz_solve_tril(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::SolveTrilArgs a;
  if (!btx(fdp, ar, d, d.HV, d.BT, DType::fp32, &a.A)) return;
  a.seq_offsets = d.seq_offsets;
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) a.out_dtype = train_dtype(fdp);
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) a.chunk_size = size_arg(fdp, 1, 64);
  Shape s;
  DType t;
  if (!recops::solve_tril_shape(a, &s, &t).ok()) return;
  TensorView Ai;
  if (!ar.output(s, t, &Ai)) return;
  (void)recops::solve_tril(a, Ai, ctx_arg(fdp));
}

void fuzz_w_u(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::RecomputeWUFwdArgs a;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.k) || !btx(fdp, ar, d, d.HV, d.V, d.t, &a.v) ||
      !btx(fdp, ar, d, d.HV, -1, d.t, &a.beta) || !btx(fdp, ar, d, d.HV, d.BT, DType::fp32, &a.Ai))
    return;
  if (!maybe_gate(fdp, ar, d, &a.g)) return;
  a.seq_offsets = d.seq_offsets;
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) a.chunk_size = size_arg(fdp, 1, 64);
  a.gate_log2 = fdp.ConsumeBool();
  Shape sw, su;
  DType tw, tu;
  if (!recops::recompute_w_u_fwd_shape(a, &sw, &tw, &su, &tu).ok()) return;
  TensorView w, u;
  if (!ar.output(sw, tw, &w) || !ar.output(su, tu, &u)) return;
  if (plain(fdp)) {
    (void)recops::recompute_w_u_fwd_plain(a, w, u);
    return;
  }
  (void)recops::recompute_w_u_fwd(a, w, u, ctx_arg(fdp));
}

void fuzz_fwd_h(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkGatedDeltaRuleFwdHArgs a;
  bool ok = true;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.k) || !btx(fdp, ar, d, d.HV, d.K, d.t, &a.w) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.u))
    return;
  if (!maybe_gate(fdp, ar, d, &a.g)) return;
  a.initial_state = opt(fdp, ar, {d.N, d.HV, d.K, d.V}, DType::fp32, &ok);
  a.output_final_state = fdp.ConsumeBool();
  a.seq_offsets = d.seq_offsets;
  a.chunk_size = d.BT;
  a.gate_log2 = fdp.ConsumeBool();
  if (fdp.ConsumeBool()) a.num_chunks = d.NT;
  a.fp32_chunk_states = fdp.ConsumeBool();
  if (!ok) return;
  recops::ChunkGatedDeltaRuleFwdHShapes s;
  if (!recops::chunk_gated_delta_rule_fwd_h_shape(a, &s).ok()) return;
  TensorView h, v_new, fs;
  if (!ar.output(s.h, s.h_dtype, &h) || !ar.output(s.v_new, s.v_new_dtype, &v_new)) return;
  const bool with_fs = a.output_final_state != (fdp.ConsumeIntegralInRange<int>(0, 15) == 0);
  if (with_fs && !ar.output(s.final_state, DType::fp32, &fs)) return;
  if (plain(fdp)) {
    maybe_gk(fdp, ar, d, &a.gk);
    (void)recops::chunk_gated_delta_rule_fwd_h_plain(a, h, v_new, with_fs ? &fs : nullptr);
    return;
  }
  const recops::Context ctx = ctx_arg(fdp);
  maybe_gk(fdp, ar, d, &a.gk);
  (void)recops::chunk_gated_delta_rule_fwd_h(a, h, v_new, with_fs ? &fs : nullptr, ctx);
}

void fuzz_fwd_o(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkFwdOArgs a;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.q) || !btx(fdp, ar, d, d.H, d.K, d.t, &a.k) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.v_new) ||
      !ar.view({d.B, d.NT, d.HV, d.K, d.V}, dtype_or_any(fdp, d.t, 12), &a.h))
    return;
  if (!maybe_gate(fdp, ar, d, &a.g)) return;
  a.scale = scale_arg(fdp);
  a.seq_offsets = d.seq_offsets;
  a.chunk_size = d.BT;
  a.gate_log2 = fdp.ConsumeBool();
  Shape s;
  DType t;
  if (!recops::chunk_fwd_o_shape(a, &s, &t).ok()) return;
  TensorView o;
  if (!ar.output(s, t, &o)) return;
  if (plain(fdp)) {
    maybe_gk(fdp, ar, d, &a.gk);
    (void)recops::chunk_fwd_o_plain(a, o);
    return;
  }
  const recops::Context ctx = ctx_arg(fdp);
  maybe_gk(fdp, ar, d, &a.gk);
  (void)recops::chunk_fwd_o(a, o, ctx);
}

void fuzz_dv_local(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkBwdDvLocalArgs a;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.q) || !btx(fdp, ar, d, d.H, d.K, d.t, &a.k) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.do_))
    return;
  if (!maybe_gate(fdp, ar, d, &a.g)) return;
  a.scale = scale_arg(fdp);
  a.seq_offsets = d.seq_offsets;
  a.chunk_size = d.BT;
  a.gate_log2 = fdp.ConsumeBool();
  Shape s;
  DType t;
  if (!recops::chunk_bwd_dv_local_shape(a, &s, &t).ok()) return;
  TensorView dv;
  if (!ar.output(s, t, &dv)) return;
  (void)recops::chunk_bwd_dv_local(a, dv, ctx_arg(fdp));
}

void fuzz_dhu(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkGatedDeltaRuleBwdDhuArgs a;
  bool ok = true;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.q) || !btx(fdp, ar, d, d.H, d.K, d.t, &a.k) ||
      !btx(fdp, ar, d, d.HV, d.K, d.t, &a.w) || !btx(fdp, ar, d, d.HV, d.V, d.t, &a.do_) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.dv_local))
    return;
  if (!maybe_gate(fdp, ar, d, &a.g)) return;
  a.h0 = opt(fdp, ar, {d.N, d.HV, d.K, d.V}, DType::fp32, &ok);
  a.dht = opt(fdp, ar, {d.N, d.HV, d.K, d.V}, DType::fp32, &ok);
  a.scale = scale_arg(fdp);
  a.seq_offsets = d.seq_offsets;
  a.chunk_size = d.BT;
  a.gate_log2 = fdp.ConsumeBool();
  a.fp32_chunk_states = fdp.ConsumeBool();
  if (!ok) return;
  recops::ChunkGatedDeltaRuleBwdDhuShapes s;
  if (!recops::chunk_gated_delta_rule_bwd_dhu_shape(a, &s).ok()) return;
  TensorView dh, dh0, dv2;
  if (!ar.output(s.dh, s.dh_dtype, &dh) || !ar.output(s.dv2, s.dv2_dtype, &dv2)) return;
  const bool with_dh0 = s.has_dh0 != (fdp.ConsumeIntegralInRange<int>(0, 15) == 0);
  if (with_dh0 && !ar.output(s.dh0, DType::fp32, &dh0)) return;
  if (plain(fdp)) {
    maybe_gk(fdp, ar, d, &a.gk);
    (void)recops::chunk_gated_delta_rule_bwd_dhu_plain(a, dh, with_dh0 ? &dh0 : nullptr, dv2);
    return;
  }
  const recops::Context ctx = ctx_arg(fdp);
  maybe_gk(fdp, ar, d, &a.gk);
  (void)recops::chunk_gated_delta_rule_bwd_dhu(a, dh, with_dh0 ? &dh0 : nullptr, dv2, ctx);
}

void fuzz_dqkwg(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkBwdDqkwgArgs a;
  bool ok = true;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.q) || !btx(fdp, ar, d, d.H, d.K, d.t, &a.k) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.v_new) || !btx(fdp, ar, d, d.HV, d.V, d.t, &a.d_o) ||
      !ar.view({d.B, d.NT, d.HV, d.K, d.V}, dtype_or_any(fdp, d.t, 12), &a.h) ||
      !ar.view({d.B, d.NT, d.HV, d.K, d.V}, dtype_or_any(fdp, d.t, 12), &a.dh))
    return;
  if (!maybe_gate(fdp, ar, d, &a.g)) return;
  a.w = opt(fdp, ar, {d.B, d.T, d.HV, d.K}, d.t, &ok);
  a.dv2 = opt(fdp, ar, {d.B, d.T, d.HV, d.V}, d.t, &ok);
  a.scale = scale_arg(fdp);
  a.seq_offsets = d.seq_offsets;
  a.chunk_size = d.BT;
  a.gate_log2 = fdp.ConsumeBool();
  if (!ok) return;
  recops::ChunkBwdDqkwgShapes s;
  if (!recops::chunk_bwd_dqkwg_shape(a, &s).ok()) return;
  TensorView dq, dk, dw, dg;
  if (!ar.output(s.dq, s.dq_dtype, &dq) || !ar.output(s.dk, s.dk_dtype, &dk)) return;
  const bool with_dw = s.has_dw != (fdp.ConsumeIntegralInRange<int>(0, 15) == 0);
  const bool with_dg = s.has_dg != (fdp.ConsumeIntegralInRange<int>(0, 15) == 0);
  if (with_dw && !ar.output(s.dw, s.dw_dtype, &dw)) return;
  if (with_dg && !ar.output(s.dg, DType::fp32, &dg)) return;
  (void)recops::chunk_bwd_dqkwg(a, dq, dk, with_dw ? &dw : nullptr, with_dg ? &dg : nullptr,
                                ctx_arg(fdp));
}

void fuzz_wy_bwd(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::PrepareWyReprBwdArgs a;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.k) || !btx(fdp, ar, d, d.HV, d.V, d.t, &a.v) ||
      !btx(fdp, ar, d, d.HV, -1, d.t, &a.beta) ||
      !btx(fdp, ar, d, d.HV, d.BT, DType::fp32, &a.Ai) || !btx(fdp, ar, d, d.HV, d.K, d.t, &a.dw) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.du))
    return;
  if (!maybe_gate(fdp, ar, d, &a.g)) return;
  a.seq_offsets = d.seq_offsets;
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) a.chunk_size = size_arg(fdp, 1, 64);
  a.gate_log2 = fdp.ConsumeBool();
  recops::PrepareWyReprBwdShapes s;
  if (!recops::prepare_wy_repr_bwd_shape(a, &s).ok()) return;
  TensorView dk, dv, dbeta, dg;
  if (!ar.output(s.dk, s.dk_dtype, &dk) || !ar.output(s.dv, s.dv_dtype, &dv) ||
      !ar.output(s.dbeta, s.dbeta_dtype, &dbeta))
    return;
  const bool with_dg = s.has_dg != (fdp.ConsumeIntegralInRange<int>(0, 15) == 0);
  if (with_dg && !ar.output(s.dg, DType::fp32, &dg)) return;
  if (plain(fdp)) {
    (void)recops::prepare_wy_repr_bwd_plain(a, dk, dv, dbeta, with_dg ? &dg : nullptr);
    return;
  }
  (void)recops::prepare_wy_repr_bwd(a, dk, dv, dbeta, with_dg ? &dg : nullptr, ctx_arg(fdp));
}

void fuzz_composed(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkGatedDeltaRuleArgs a;
  bool ok = true;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.q) || !btx(fdp, ar, d, d.H, d.K, d.t, &a.k) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.v) || !gate(fdp, ar, d, &a.g) ||
      !btx(fdp, ar, d, d.HV, -1, d.t, &a.beta))
    return;
  a.scale = scale_arg(fdp);
  a.initial_state = opt(fdp, ar, {d.N, d.HV, d.K, d.V}, DType::fp32, &ok);
  a.output_final_state = fdp.ConsumeBool();
  a.seq_offsets = d.seq_offsets;
  a.use_qk_l2norm_in_kernel = fdp.ConsumeBool();
  a.chunk_size = d.BT;
  if (!ok) return;
  Shape so, sf;
  DType to;
  if (!recops::chunk_gated_delta_rule_shape(a, &so, &to, &sf).ok()) return;
  TensorView o, fs;
  if (!ar.output(so, to, &o)) return;
  const bool with_fs = a.output_final_state != (fdp.ConsumeIntegralInRange<int>(0, 15) == 0);
  if (with_fs && !ar.output(sf, DType::fp32, &fs)) return;
  if (plain(fdp)) {
    (void)recops::chunk_gated_delta_rule_plain(a, o, with_fs ? &fs : nullptr);
    return;
  }
  recops::Context ctx = ctx_arg(fdp);
  if (fdp.ConsumeIntegralInRange<int>(0, 2) == 0) {  // the backward, with the same arguments
    recops::ChunkGatedDeltaRuleBwdArgs b;
    b.q = a.q, b.k = a.k, b.v = a.v, b.g = a.g, b.beta = a.beta, b.scale = a.scale;
    b.initial_state = a.initial_state, b.output_final_state = a.output_final_state;
    b.seq_offsets = a.seq_offsets, b.use_qk_l2norm_in_kernel = a.use_qk_l2norm_in_kernel;
    b.chunk_size = a.chunk_size;
    b.want_d_initial_state = fdp.ConsumeBool();
    if (!ar.view(a.v.shape(), dtype_or_any(fdp, a.v.dtype, 12), &b.grad_o)) return;
    b.grad_final_state = opt(fdp, ar, {d.N, d.HV, d.K, d.V}, DType::fp32, &ok);
    if (!ok) return;
    bool has_dh0 = false;
    if (!recops::chunk_gated_delta_rule_bwd_check(b, &has_dh0).ok()) return;
    recops::ChunkGatedDeltaRuleBwdOut out;
    TensorView dh0;
    if (!ar.output(a.q.shape(), a.q.dtype, &out.dq) ||
        !ar.output(a.k.shape(), a.k.dtype, &out.dk) ||
        !ar.output(a.v.shape(), a.v.dtype, &out.dv) ||
        !ar.output(a.g.shape(), a.g.dtype, &out.dg) ||
        !ar.output(a.beta.shape(), a.beta.dtype, &out.dbeta))
      return;
    if (has_dh0 != (fdp.ConsumeIntegralInRange<int>(0, 15) == 0)) {
      if (!ar.output({d.N, d.HV, d.K, d.V}, DType::fp32, &dh0)) return;
      out.dh0 = &dh0;
    }
    if (plain(fdp)) {
      (void)recops::chunk_gated_delta_rule_bwd_plain(b, out);
      return;
    }
    const size_t need = recops::chunk_gated_delta_rule_bwd_workspace_bytes(b);
    if (need > (size_t{1} << 26)) return;  // beyond the harness's memory
    std::vector<uint8_t> ws(need);
    ctx.workspace = need ? ws.data() : nullptr;
    ctx.workspace_bytes = need;
    (void)recops::chunk_gated_delta_rule_bwd(b, out, ctx);
    return;
  }
  std::vector<uint8_t> ws;
  if (!workspace(fdp, recops::chunk_gated_delta_rule_workspace_bytes(a), &ws, &ctx)) return;
  (void)recops::chunk_gated_delta_rule(a, o, with_fs ? &fs : nullptr, ctx);
}

void fuzz_kda_fwd_intra(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkKdaFwdIntraArgs a;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.q) || !btx(fdp, ar, d, d.H, d.K, d.t, &a.k) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.v) || !channel_gate(fdp, ar, d, &a.g) ||
      !btx(fdp, ar, d, d.HV, -1, d.t, &a.beta))
    return;
  a.scale = scale_arg(fdp);
  a.seq_offsets = d.seq_offsets;
  a.chunk_size = kda_chunk(fdp, d);
  a.gate_log2 = fdp.ConsumeBool();
  Shape s[6];
  DType t[6];
  if (!recops::chunk_kda_fwd_intra_shape(a, s, t).ok()) return;
  recops::ChunkKdaFwdIntraOut o;
  TensorView* outs[6] = {&o.w, &o.u, &o.qg, &o.kg, &o.Aqk, &o.Akk};
  for (int i = 0; i < 6; ++i)
    if (!ar.output(s[i], t[i], outs[i])) return;
  if (plain(fdp)) {
    (void)recops::chunk_kda_fwd_intra_plain(a, o);
    return;
  }
  (void)recops::chunk_kda_fwd_intra(a, o, ctx_arg(fdp));
}

void fuzz_kda_bwd(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkKdaBwdWyDqkgFusedArgs a;
  a.chunk_size = kda_chunk(fdp, d);
  // Akk's last extent: chunk_size, sometimes the other BT (a mismatch) or anything small.
  const int64_t abt = fdp.ConsumeIntegralInRange<int>(0, 7) ? a.chunk_size : extent(fdp, 70);
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.q) || !btx(fdp, ar, d, d.H, d.K, d.t, &a.k) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.v) || !btx(fdp, ar, d, d.HV, d.V, d.t, &a.v_new) ||
      !channel_gate(fdp, ar, d, &a.g) || !btx(fdp, ar, d, d.HV, -1, d.t, &a.beta) ||
      !btx(fdp, ar, d, d.HV, abt, DType::fp32, &a.Akk) ||
      !ar.view({d.B, d.NT, d.HV, d.K, d.V}, dtype_or_any(fdp, d.t, 12), &a.h) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.d_o))
    return;
  // dh: h's sizes, sometimes one chunk more or fewer.
  const int64_t nt = fdp.ConsumeIntegralInRange<int>(0, 11)
                         ? d.NT
                         : std::max<int64_t>(0, d.NT + fdp.ConsumeIntegralInRange<int64_t>(-1, 1));
  if (!ar.view({d.B, nt, d.HV, d.K, d.V}, dtype_or_any(fdp, d.t, 12), &a.dh) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.dv2))
    return;
  a.scale = scale_arg(fdp);
  a.seq_offsets = d.seq_offsets;
  a.gate_log2 = fdp.ConsumeBool();
  recops::ChunkKdaBwdWyDqkgFusedShapes s;
  if (!recops::chunk_kda_bwd_wy_dqkg_fused_shape(a, &s).ok()) return;
  recops::ChunkKdaBwdWyDqkgFusedOut o;
  if (!ar.output(s.dq, DType::fp32, &o.dq) || !ar.output(s.dk, DType::fp32, &o.dk) ||
      !ar.output(s.dv, s.dv_dtype, &o.dv) || !ar.output(s.dbeta, DType::fp32, &o.dbeta) ||
      !ar.output(s.dg, DType::fp32, &o.dg) || !ar.output(s.dA, DType::fp32, &o.dA))
    return;
  if (plain(fdp)) {
    (void)recops::chunk_kda_bwd_wy_dqkg_fused_plain(a, o);
    return;
  }
  (void)recops::chunk_kda_bwd_wy_dqkg_fused(a, o, ctx_arg(fdp));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  try {
    const int which = fdp.ConsumeIntegralInRange<int>(0, 12);
    Arena ar(fdp);
    Dims d;
    if (!dims(fdp, ar, &d)) return 0;
    switch (which) {
      case 0: fuzz_cumsum(fdp, ar, d); break;
      case 1: fuzz_kkt(fdp, ar, d); break;
      case 2: fuzz_solve_tril(fdp, ar, d); break;
      case 3: fuzz_w_u(fdp, ar, d); break;
      case 4: fuzz_fwd_h(fdp, ar, d); break;
      case 5: fuzz_fwd_o(fdp, ar, d); break;
      case 6: fuzz_dv_local(fdp, ar, d); break;
      case 7: fuzz_dhu(fdp, ar, d); break;
      case 8: fuzz_dqkwg(fdp, ar, d); break;
      case 9: fuzz_wy_bwd(fdp, ar, d); break;
      case 10: fuzz_composed(fdp, ar, d); break;
      case 11: fuzz_kda_fwd_intra(fdp, ar, d); break;
      default: fuzz_kda_bwd(fdp, ar, d); break;
    }
  } catch (const recops::Error&) {
    // Tensor::empty refusing a size is the harness's limit, not a finding.
  }
  return 0;
}
