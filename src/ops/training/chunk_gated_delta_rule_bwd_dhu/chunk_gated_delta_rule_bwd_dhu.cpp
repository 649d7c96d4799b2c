// training/chunk_gated_delta_rule_bwd_dhu/chunk_gated_delta_rule_bwd_dhu.cpp: the entry of
// chunk_gated_delta_rule_bwd_dhu. All validation happens here, once; then the ordered
// implementation list runs the first implementation that accepts (cuda_sm80 in CUDA builds,
// cpu_generic, reference). At the end: the OpInfo and the argument table (forward only).
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/chunk_gated_delta_rule_bwd_dhu.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns {
namespace {
constexpr const char* kOp = "chunk_gated_delta_rule_bwd_dhu";
constexpr training::GdnEntry kEntry{kOp, "q"};
using training::is_float;

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: the offsets' values are checked by the run).
Status check_args(const ChunkGatedDeltaRuleBwdDhuArgs& a, const Context* ctx, Params* p) {
  const TensorView& q = a.q;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(q, "[B, T, H, K]"));
  const int64_t B = q.sizes[0], T = q.sizes[1], H = q.sizes[2], K = q.sizes[3];
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("k", a.k, q, {B, T, H, K}, "[B, T, H, K] (q's sizes)"));
  RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("do", a.do_, q, {B, T, -1, -1}, "[B, T, HV, V]"));
  const int64_t HV = a.do_.sizes[2], V = a.do_.sizes[3];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("do", HV, H));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("w", a.w, q, {B, T, HV, K}, "[B, T, HV, K] (do's HV, q's K)"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("dv_local", a.dv_local, q, {B, T, HV, V}, "[B, T, HV, V] (do's sizes)"));
  const int64_t bt = a.chunk_size;
  RECOPS_RETURN_IF_ERROR(kEntry.chunk_size(bt));
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, q, B, T, ctx, &N, p));
  if (a.g) RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("g", *a.g, q, {B, T, HV}, "[B, T, HV]"));
  if (a.gk)
    RECOPS_RETURN_IF_ERROR(kEntry.check_sized("gk", "[B, T, HV, K]", *a.gk, q, {B, T, HV, K},
                                              "q's B, T, K and do's HV"));
  if (a.h0)
    RECOPS_RETURN_IF_ERROR(
        kEntry.check_tensor("h0", *a.h0, q, {N, HV, K, V}, "[N, HV, K, V] (N sequences)"));
  if (a.dht)
    RECOPS_RETURN_IF_ERROR(
        kEntry.check_tensor("dht", *a.dht, q, {N, HV, K, V}, "[N, HV, K, V] (N sequences)"));
  if (a.scale) RECOPS_CHECK(std::isfinite(*a.scale), kOp, ": scale=", *a.scale, " must be finite");
  p->q = q.data;
  p->k = a.k.data;
  p->w = a.w.data;
  p->do_ = a.do_.data;
  p->dv = a.dv_local.data;
  p->g = a.g ? a.g->data : nullptr;
  p->gk = a.gk ? a.gk->data : nullptr;
  p->dht = a.dht ? a.dht->data : nullptr;
  p->q_dtype = q.dtype, p->k_dtype = a.k.dtype, p->w_dtype = a.w.dtype;
  p->do_dtype = a.do_.dtype, p->dv_dtype = a.dv_local.dtype;
  p->g_dtype = a.g ? a.g->dtype : DType::fp32;
  p->gk_dtype = a.gk ? a.gk->dtype : DType::fp32;
  p->dht_dtype = a.dht ? a.dht->dtype : DType::fp32;
  p->dh_dtype = a.fp32_chunk_states ? DType::fp32 : q.dtype;
  p->dv2_dtype = a.dv_local.dtype;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
  // dh's NT: ceil(T / BT) per batch row; with offsets the sync-free bound ceil(T / BT) + N
  // (§4.2: no data read to size it; Σ ceil(len_n / BT) ≤ ceil(T / BT) + N − 1).
  p->NT = ops::training::chunk_count(T, bt) + (a.seq_offsets ? N : 0);
  p->BT = bt;
  p->N = N;
  p->scale = a.scale ? *a.scale : (K > 0 ? 1.0 / std::sqrt(static_cast<double>(K)) : 1.0);
  p->gate_log2 = a.gate_log2;
  p->device_index = q.device.index;
  return Status::Ok();
}

Status prepare(const ChunkGatedDeltaRuleBwdDhuArgs& a, const TensorView& dh, const TensorView* dh0,
               const TensorView& dv2, const Context& ctx, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  RECOPS_RETURN_IF_ERROR(kEntry.check_out("dh", dh, a.q, {p->B, p->NT, p->HV, p->K, p->V},
                                          p->dh_dtype, "([B, NT, HV, K, V]) of"));
  RECOPS_RETURN_IF_ERROR(kEntry.check_out("dv2", dv2, a.q, {p->B, p->T, p->HV, p->V}, p->dv2_dtype,
                                          "([B, T, HV, V]) of dv_local's dtype"));
  RECOPS_CHECK((dh0 != nullptr) == a.h0.has_value(), kOp,
               ": dh0 must be given exactly when h0 is (", a.h0 ? "h0 given" : "no h0", ")");
  if (dh0) {
    RECOPS_RETURN_IF_ERROR(kEntry.check_out("dh0", *dh0, a.q, {p->N, p->HV, p->K, p->V},
                                            DType::fp32, "([N, HV, K, V]) of"));
    p->dh0 = dh0->data;
  }
  p->dh = dh.data;
  p->dv2 = dv2.data;
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns

namespace recops {

Status chunk_gated_delta_rule_bwd_dhu_shape(const ChunkGatedDeltaRuleBwdDhuArgs& a,
                                            ChunkGatedDeltaRuleBwdDhuShapes* s) {
  using namespace ops::chunk_gated_delta_rule_bwd_dhu_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  s->dh = {p.B, p.NT, p.HV, p.K, p.V};
  s->dh_dtype = p.dh_dtype;
  s->has_dh0 = a.h0.has_value();
  s->dh0 = s->has_dh0 ? Shape{p.N, p.HV, p.K, p.V} : Shape{0};
  s->dv2 = {p.B, p.T, p.HV, p.V};
  s->dv2_dtype = p.dv2_dtype;
  return Status::Ok();
}

Status chunk_gated_delta_rule_bwd_dhu(const ChunkGatedDeltaRuleBwdDhuArgs& a, const TensorView& dh,
                                      const TensorView* dh0, const TensorView& dv2,
                                      const Context& ctx) {
  using namespace ops::chunk_gated_delta_rule_bwd_dhu_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, dh, dh0, dv2, ctx, &p));
  if (dh.numel() == 0 && (!dh0 || dh0->numel() == 0) && dv2.numel() == 0) return Status::Ok();
  return core::dispatch(kOp, impls(), a.q.device.type, p, ctx);
}

Status chunk_gated_delta_rule_bwd_dhu_plain(const ChunkGatedDeltaRuleBwdDhuArgs& a,
                                            const TensorView& dh, const TensorView* dh0,
                                            const TensorView& dv2) {
  using namespace ops::chunk_gated_delta_rule_bwd_dhu_ns;
  RECOPS_CHECK(a.q.device.is_cpu(), "chunk_gated_delta_rule_bwd_dhu_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, dh, dh0, dv2, ctx, &p));
  p.plain = true;
  if (dh.numel() == 0 && (!dh0 || dh0->numel() == 0) && dv2.numel() == 0) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns {
namespace {
Status shapes(const ChunkGatedDeltaRuleBwdDhuArgs& a, std::vector<kit::OutSpec>* outs) {
  ChunkGatedDeltaRuleBwdDhuShapes s;
  RECOPS_RETURN_IF_ERROR(chunk_gated_delta_rule_bwd_dhu_shape(a, &s));
  outs->push_back({s.dh, s.dh_dtype});
  outs->push_back({s.dh0, DType::fp32, s.has_dh0});
  outs->push_back({s.dv2, s.dv2_dtype});
  return Status::Ok();
}

Status run(const ChunkGatedDeltaRuleBwdDhuArgs& a, const kit::Outputs& o, const Context& ctx) {
  return chunk_gated_delta_rule_bwd_dhu(a, o.views[0], o.get(1), o.views[2], ctx);
}

constexpr const char* kDoc =
    R"(The GDN backward through the chunk states (fla-core's
``fla.ops.common.chunk_delta_h.chunk_gated_delta_rule_bwd_dhu``): the per-chunk state gradients
dh, the initial state's gradient dh0 and the full value gradient dv2.

Per sequence and value head hv (key head ``hv // (HV // H)``), with ``dS = dht`` (or 0) and the
chunks c from last to first (L the chunk's last position)::

    dh[c]  = dS                       # the gradient of the state after chunk c (= h[c + 1])
    dv2[t] = dv_local[t] + exp(g[L] - g[t]) * dS^T k[t]                        (t in chunk c)
    dS     = exp(g[L]) * exp(gk[L])[:, None] * dS
             + scale * sum_t exp(g[t]) q[t] (x) do[t] - sum_t w[t] (x) dv2[t]

and ``dh0`` = the final dS (``exp2`` with ``gate_log2``; no gate factors without ``g``; no
``exp(gk[L])`` row decay without ``gk``). With gk (KDA) q and k are the gated qg and kg, so gk
adds no per-position factor; g and gk may be given together. Chunk
numbering of dh: as h's (chunk_fwd_o): ``dh[b, c]``; with seq_offsets the chunks of all
sequences in order (zero-length sequences own none), as fla's ``prepare_chunk_indices``.

Args:
    q, k: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    w: ``[B, T, HV, K]``, HV a multiple of H.
    do: ``[B, T, HV, V]``: the gradient of o.
    dv_local: ``[B, T, HV, V]``: the intra-chunk value gradient (chunk_bwd_dv_local).
    g: optional ``[B, T, HV]``: G, the chunk-local cumsum of the log gates, natural-log units
        (log2 with gate_log2).
    gk: optional ``[B, T, HV, K]``: KDA's per-channel chunk-local gate cumsum (same units as g);
        only each chunk's last row is read. The table's last argument (pass it by keyword).
        Served on the CPU and by cuda_sm80.
    h0: optional ``[N, HV, K, V]``: the initial state; only its presence is used (dh0 is
        returned when it is given).
    dht: optional ``[N, HV, K, V]``: the gradient of the final state (0 when absent).
    scale: default ``K ** -0.5``.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    chunk_size: 16, 32 or 64 (the forward's).
    gate_log2: g is in log2 units.
    fp32_chunk_states: dh in fp32 instead of q's dtype.

Returns:
    ``(dh, dh0, dv2)``: dh ``[B, NT, HV, K, V]`` in q's dtype (NT = ceil(T / chunk_size); with
    seq_offsets the sync-free bound ceil(T / chunk_size) + N, the chunks beyond the sequences'
    count written as 0); dh0 ``[N, HV, K, V]`` fp32, or an empty ``[0]`` tensor without h0; dv2
    like dv_local. The running dS is kept in fp32 (fp64 for fp64 q).

Forward only (inputs that require grad raise): it is itself a step of the GDN backward.
)";
}  // namespace
}  // namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns;
  using A = ChunkGatedDeltaRuleBwdDhuArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::q>("q", {.dense_from = 0})
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::w>("w", {.dense_from = 0})
              .arg<&A::do_>("do", {.dense_from = 0})
              .arg<&A::dv_local>("dv_local", {.dense_from = 0})
              .arg<&A::g>("g", {.def = "None", .dense_from = 0})
              .arg<&A::h0>("h0", {.def = "None", .dense_from = 0})
              .arg<&A::dht>("dht", {.def = "None", .dense_from = 0})
              .arg<&A::scale>("scale", {.def = "None"})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .arg<&A::fp32_chunk_states>("fp32_chunk_states", {.def = "False"})
              .arg<&A::gk>("gk", {.def = "None", .dense_from = 0})
              .out("dh")
              .out("dh0")
              .out_like("dv2", "dv_local")
              .shapes(shapes)
              .run(run)
              .forward_only()
              .doc("", kDoc));
}
