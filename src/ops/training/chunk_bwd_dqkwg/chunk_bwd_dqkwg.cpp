// training/chunk_bwd_dqkwg/chunk_bwd_dqkwg.cpp: the entry of chunk_bwd_dqkwg. All validation
// happens here, once; then the ordered implementation list runs the first implementation that
// accepts (cuda_sm80 in CUDA builds, cpu_generic, reference). At the end: the OpInfo and the
// argument table (forward only).
#include "ops/training/chunk_bwd_dqkwg/chunk_bwd_dqkwg.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_bwd_dqkwg/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_bwd_dqkwg_ns {
namespace {
constexpr const char* kOp = "chunk_bwd_dqkwg";
constexpr training::GdnEntry kEntry{kOp, "q"};
using training::is_float;

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: the offsets' values and the varlen chunk count
// are checked by the run).
Status check_args(const ChunkBwdDqkwgArgs& a, const Context* ctx, Params* p) {
  const TensorView& q = a.q;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(q, "[B, T, H, K]"));
  const int64_t B = q.sizes[0], T = q.sizes[1], H = q.sizes[2], K = q.sizes[3];
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("k", a.k, q, {B, T, H, K}, "[B, T, H, K] (q's sizes)"));
  RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("v_new", a.v_new, q, {B, T, -1, -1}, "[B, T, HV, V]"));
  const int64_t HV = a.v_new.sizes[2], V = a.v_new.sizes[3];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("v_new", HV, H));
  const int64_t bt = a.chunk_size;
  RECOPS_RETURN_IF_ERROR(kEntry.chunk_size(bt));
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, q, B, T, ctx, &N, p));
  // h, dh: [B, NT, HV, K, V]. Without offsets NT = ceil(T / BT) exactly; with offsets NT is at
  // least the chunk count of all sequences (checked where the values are read); later chunks (a
  // sync-free bound, §4.2) are not read.
  const int64_t nt = a.seq_offsets ? -1 : ops::training::chunk_count(T, bt);
  RECOPS_RETURN_IF_ERROR(kEntry.check_tensor(
      "h", a.h, q, {B, nt, HV, K, V}, "[B, NT, HV, K, V] (NT = ceil(T / chunk_size) per row)"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("dh", a.dh, q, a.h.shape(), "[B, NT, HV, K, V] (h's sizes)"));
  if (a.seq_offsets && ctx)
    RECOPS_RETURN_IF_ERROR(kEntry.chunk_count(*a.seq_offsets, N, bt, a.h.sizes[1], "h's NT", *ctx));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("do", a.d_o, q, {B, T, HV, V}, "[B, T, HV, V] (v_new's)"));
  RECOPS_CHECK(a.w.has_value() == a.dv2.has_value(), kOp,
               ": w and dv2 are given together or not at all (dw = -h_c dv2 in w's shape); got ",
               a.w ? "w without dv2" : "dv2 without w");
  if (a.w) {
    RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("w", *a.w, q, {B, T, HV, K}, "[B, T, HV, K]"));
    RECOPS_RETURN_IF_ERROR(
        kEntry.check_tensor("dv2", *a.dv2, q, {B, T, HV, V}, "[B, T, HV, V] (v_new's)"));
  }
  if (a.g) RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("g", *a.g, q, {B, T, HV}, "[B, T, HV]"));
  if (a.scale) RECOPS_CHECK(std::isfinite(*a.scale), kOp, ": scale=", *a.scale, " must be finite");
  p->q = q.data;
  p->k = a.k.data;
  p->v = a.v_new.data;
  p->g = a.g ? a.g->data : nullptr;
  p->h = a.h.data;
  p->dh = a.dh.data;
  p->d_o = a.d_o.data;
  p->dv2 = a.dv2 ? a.dv2->data : nullptr;
  p->q_dtype = q.dtype, p->k_dtype = a.k.dtype, p->v_dtype = a.v_new.dtype;
  p->g_dtype = a.g ? a.g->dtype : DType::fp32;
  p->h_dtype = a.h.dtype, p->dh_dtype = a.dh.dtype, p->do_dtype = a.d_o.dtype;
  p->dv2_dtype = a.dv2 ? a.dv2->dtype : DType::fp32;
  p->dq_dtype = q.dtype, p->dk_dtype = a.k.dtype;
  p->dw_dtype = a.w ? a.w->dtype : DType::fp32;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
  p->NT = a.h.sizes[1];
  p->BT = bt;
  p->N = N;
  p->scale = a.scale ? *a.scale : (K > 0 ? 1.0 / std::sqrt(static_cast<double>(K)) : 1.0);
  p->gate_log2 = a.gate_log2;
  p->device_index = q.device.index;
  return Status::Ok();
}

Status prepare(const ChunkBwdDqkwgArgs& a, const TensorView& dq, const TensorView& dk,
               const TensorView* dw, const TensorView* dg, const Context& ctx, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  const Shape qs{p->B, p->T, p->H, p->K};
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dq", dq, a.q, qs, a.q.dtype, "([B, T, H, K]) of q's dtype"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dk", dk, a.q, qs, a.k.dtype, "([B, T, H, K]) of k's dtype"));
  RECOPS_CHECK((dw != nullptr) == a.w.has_value(), kOp, ": dw is ",
               a.w ? "required with w" : "produced only with w");
  RECOPS_CHECK((dg != nullptr) == a.g.has_value(), kOp, ": dg is ",
               a.g ? "required with g" : "produced only with g");
  if (dw)
    RECOPS_RETURN_IF_ERROR(kEntry.check_out("dw", *dw, a.q, {p->B, p->T, p->HV, p->K}, a.w->dtype,
                                            "([B, T, HV, K]) of w's dtype"));
  if (dg)
    RECOPS_RETURN_IF_ERROR(kEntry.check_out("dg", *dg, a.q, {p->B, p->T, p->HV}, DType::fp32,
                                            "([B, T, HV]) of dtype"));
  p->dq = dq.data;
  p->dk = dk.data;
  p->dw = dw ? dw->data : nullptr;
  p->dg = dg ? static_cast<float*>(dg->data) : nullptr;
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::chunk_bwd_dqkwg_ns

namespace recops {

Status chunk_bwd_dqkwg_shape(const ChunkBwdDqkwgArgs& a, ChunkBwdDqkwgShapes* s) {
  using namespace ops::chunk_bwd_dqkwg_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  s->dq = s->dk = {p.B, p.T, p.H, p.K};
  s->dq_dtype = a.q.dtype;
  s->dk_dtype = a.k.dtype;
  s->has_dw = a.w.has_value();
  s->dw = s->has_dw ? Shape{p.B, p.T, p.HV, p.K} : Shape{0};
  s->dw_dtype = s->has_dw ? a.w->dtype : DType::fp32;
  s->has_dg = a.g.has_value();
  s->dg = s->has_dg ? Shape{p.B, p.T, p.HV} : Shape{0};
  return Status::Ok();
}

namespace {
// Every output has no element. The extents may then be huge (K = V = 0 without g leaves T bounded
// by no tensor), so the chunk loops must not run.
bool all_empty(const TensorView& dq, const TensorView& dk, const TensorView* dw,
               const TensorView* dg) {
  return dq.numel() == 0 && dk.numel() == 0 && (!dw || dw->numel() == 0) &&
         (!dg || dg->numel() == 0);
}
}  // namespace

Status chunk_bwd_dqkwg(const ChunkBwdDqkwgArgs& a, const TensorView& dq, const TensorView& dk,
                       const TensorView* dw, const TensorView* dg, const Context& ctx) {
  using namespace ops::chunk_bwd_dqkwg_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, dq, dk, dw, dg, ctx, &p));
  if (all_empty(dq, dk, dw, dg)) return Status::Ok();  // nothing to write
  return core::dispatch(kOp, impls(), a.q.device.type, p, ctx);
}

Status chunk_bwd_dqkwg_plain(const ChunkBwdDqkwgArgs& a, const TensorView& dq, const TensorView& dk,
                             const TensorView* dw, const TensorView* dg) {
  using namespace ops::chunk_bwd_dqkwg_ns;
  RECOPS_CHECK(a.q.device.is_cpu(), "chunk_bwd_dqkwg_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, dq, dk, dw, dg, ctx, &p));
  p.plain = true;
  if (all_empty(dq, dk, dw, dg)) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_bwd_dqkwg_ns {
namespace {
Status shapes(const ChunkBwdDqkwgArgs& a, std::vector<kit::OutSpec>* outs) {
  ChunkBwdDqkwgShapes s;
  RECOPS_RETURN_IF_ERROR(chunk_bwd_dqkwg_shape(a, &s));
  outs->push_back({s.dq, s.dq_dtype});
  outs->push_back({s.dk, s.dk_dtype});
  outs->push_back({s.dw, s.dw_dtype, s.has_dw});
  outs->push_back({s.dg, DType::fp32, s.has_dg});
  return Status::Ok();
}

Status run(const ChunkBwdDqkwgArgs& a, const kit::Outputs& o, const Context& ctx) {
  return chunk_bwd_dqkwg(a, o.views[0], o.views[1], o.get(2), o.get(3), ctx);
}

constexpr const char* kDoc =
    R"(The GDN backward to q, k, w and the gate cumsum (fla-core's
``fla.ops.common.chunk_o.chunk_bwd_dqkwg``), per chunk of ``chunk_size`` positions.

Each sequence is cut into chunks from its own start (the last one may be shorter; L is a chunk's
last position). For chunk c and value head hv (key head ``hv // (HV // H)``), with
``G = g[:, hv]`` and ``Γ_ij = exp(G_i - G_j)`` (``exp2`` with ``gate_log2``; 1 without ``g``)::

    ds_ij = scale * Γ_ij * dot(do_i, v_new_j)                    for j <= i in the chunk
    dq_i  = scale * exp(G_i) * h_c @ do_i + sum_j ds_ij k_j
    dk_j  = exp(G_L - G_j) * dh_c @ v_new_j + sum_i ds_ij q_i
    dw_t  = -h_c @ dv2_t
    dg_t  = dot(q_t, dq_t) - dot(k_t, dk_t)
            (+ at t = L: exp(G_L) <dh_c, h_c> + sum_t' dot(k_t', exp(G_L - G_t') dh_c @ v_new_t'))

dq and dk are formed per value head in fp32 and summed over each group of HV/H value heads.
dg is the gradient with respect to the natural-log G, also with ``gate_log2`` (fla's
convention: its reverse chunk_local_cumsum then gives the raw gates' gradient).

Args:
    q, k: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    v_new: ``[B, T, HV, V]``, HV a multiple of H.
    w: ``[B, T, HV, K]`` or None (then no dw; given with dv2).
    g: optional ``[B, T, HV]``: G, the chunk-local cumsum of the log gates.
    h: ``[B, NT, HV, K, V]``: the state before each chunk (chunk_fwd_o's numbering).
    dh: ``[B, NT, HV, K, V]``: the gradient of the state after each chunk.
    do: ``[B, T, HV, V]``: the gradient of o.
    dv2: ``[B, T, HV, V]`` or None (with w).
    scale: default ``K ** -0.5``.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    chunk_size: 16, 32 or 64.
    gate_log2: g is in log2 units.

Returns:
    (dq, dk, dw, dg): dq ``[B, T, H, K]`` in q's dtype, dk ``[B, T, H, K]`` in k's dtype, dw
    ``[B, T, HV, K]`` in w's dtype (empty ``[0]`` without w), dg ``[B, T, HV]`` fp32 (empty
    ``[0]`` without g).

Forward only (inputs that require grad raise).
)";
}  // namespace
}  // namespace recops::ops::chunk_bwd_dqkwg_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_bwd_dqkwg_ns;
  using A = ChunkBwdDqkwgArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::q>("q", {.dense_from = 0})
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::v_new>("v_new", {.dense_from = 0})
              .arg<&A::w>("w", {.dense_from = 0})
              .arg<&A::g>("g", {.dense_from = 0})
              .arg<&A::h>("h", {.dense_from = 0})
              .arg<&A::dh>("dh", {.dense_from = 0})
              .arg<&A::d_o>("do", {.dense_from = 0})
              .arg<&A::dv2>("dv2", {.dense_from = 0})
              .arg<&A::scale>("scale", {.def = "None"})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .out_like("dq", "q")
              .out_like("dk", "k")
              .out("dw")
              .out("dg")
              .shapes(shapes)
              .run(run)
              .forward_only()
              .doc("", kDoc));
}
