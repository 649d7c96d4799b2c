// training/chunk_bwd_dv_local/chunk_bwd_dv_local.cpp: the entry of chunk_bwd_dv_local. All
// validation happens here, once; then the ordered implementation list runs the first
// implementation that accepts (cuda_sm80 in CUDA builds, cpu_generic, reference). At the end: the
// OpInfo and the argument table (forward only).
#include "ops/training/chunk_bwd_dv_local/chunk_bwd_dv_local.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_bwd_dv_local/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_bwd_dv_local_ns {
namespace {
constexpr const char* kOp = "chunk_bwd_dv_local";
constexpr training::GdnEntry kEntry{kOp, "q"};
using training::is_float;

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: the offsets' values are checked by the run).
Status check_args(const ChunkBwdDvLocalArgs& a, const Context* ctx, Params* p) {
  const TensorView& q = a.q;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(q, "[B, T, H, K]"));
  const int64_t B = q.sizes[0], T = q.sizes[1], H = q.sizes[2], K = q.sizes[3];
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("k", a.k, q, {B, T, H, K}, "[B, T, H, K] (q's sizes)"));
  RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("do", a.do_, q, {B, T, -1, -1}, "[B, T, HV, V]"));
  const int64_t HV = a.do_.sizes[2], V = a.do_.sizes[3];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("do", HV, H));
  if (a.g) RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("g", *a.g, q, {B, T, HV}, "[B, T, HV]"));
  const int64_t bt = a.chunk_size;
  RECOPS_RETURN_IF_ERROR(kEntry.chunk_size(bt));
  if (a.scale) RECOPS_CHECK(std::isfinite(*a.scale), kOp, ": scale=", *a.scale, " must be finite");
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, q, B, T, ctx, &N, p));
  p->q = q.data;
  p->k = a.k.data;
  p->g = a.g ? a.g->data : nullptr;
  p->dout = a.do_.data;
  p->q_dtype = q.dtype, p->k_dtype = a.k.dtype, p->do_dtype = a.do_.dtype;
  p->g_dtype = a.g ? a.g->dtype : DType::fp32;
  p->dv_dtype = a.do_.dtype;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
  p->BT = bt;
  p->N = N;
  p->scale = a.scale ? *a.scale : (K > 0 ? 1.0 / std::sqrt(static_cast<double>(K)) : 1.0);
  p->gate_log2 = a.gate_log2;
  p->device_index = q.device.index;
  return Status::Ok();
}

Status prepare(const ChunkBwdDvLocalArgs& a, const TensorView& dv, const Context& ctx, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  RECOPS_RETURN_IF_ERROR(kEntry.check_out("dv", dv, a.q, {p->B, p->T, p->HV, p->V}, a.do_.dtype,
                                          "([B, T, HV, V]) of do's dtype"));
  p->dv = dv.data;
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::chunk_bwd_dv_local_ns

namespace recops {

Status chunk_bwd_dv_local_shape(const ChunkBwdDvLocalArgs& a, Shape* out_shape, DType* out_dtype) {
  using namespace ops::chunk_bwd_dv_local_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  *out_shape = {p.B, p.T, p.HV, p.V};
  *out_dtype = a.do_.dtype;
  return Status::Ok();
}

Status chunk_bwd_dv_local(const ChunkBwdDvLocalArgs& a, const TensorView& dv, const Context& ctx) {
  using namespace ops::chunk_bwd_dv_local_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, dv, ctx, &p));
  if (ops::training::any_zero({p.B, p.T, p.HV, p.V})) return Status::Ok();  // empty: nothing to run
  return core::dispatch(kOp, impls(), a.q.device.type, p, ctx);
}

Status chunk_bwd_dv_local_plain(const ChunkBwdDvLocalArgs& a, const TensorView& dv) {
  using namespace ops::chunk_bwd_dv_local_ns;
  RECOPS_CHECK(a.q.device.is_cpu(), "chunk_bwd_dv_local_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, dv, ctx, &p));
  p.plain = true;
  if (ops::training::any_zero({p.B, p.T, p.HV, p.V})) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_bwd_dv_local_ns {
namespace {
Status shapes(const ChunkBwdDvLocalArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  DType t;
  RECOPS_RETURN_IF_ERROR(chunk_bwd_dv_local_shape(a, &s, &t));
  outs->push_back({s, t});
  return Status::Ok();
}

constexpr const char* kDoc =
    R"(The GDN intra-chunk value gradient (fla-core's ``fla.ops.common.chunk_o.chunk_bwd_dv_local``):
the part of dv that flows through the causal intra-chunk attention of the GDN output.

Each sequence is cut into chunks of ``chunk_size`` positions from its own start (the last one may
be shorter). For position j of a chunk (last position c1) and value head hv (key head
``hv // (HV // H)``)::

    dv[j, hv] = scale * sum_{j <= i <= c1} exp(g[i, hv] - g[j, hv]) * dot(q[i, h], k[j, h]) * do[i, hv]

(``exp2`` with ``gate_log2``; no gate factor without ``g``).

Args:
    q, k: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    g: ``[B, T, HV]`` or None: G, the chunk-local cumsum of the log gates, natural-log units
        (log2 with gate_log2).
    do: ``[B, T, HV, V]``, HV a multiple of H: the gradient of the GDN output.
    scale: default ``K ** -0.5``.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    chunk_size: 16, 32 or 64.
    gate_log2: g is in log2 units.

Returns:
    dv_local: ``[B, T, HV, V]`` in do's dtype (computed in fp32, fp64 for fp64 do).

Forward only (inputs that require grad raise): a piece of the GDN backward, without a gradient of
its own.
)";
}  // namespace
}  // namespace recops::ops::chunk_bwd_dv_local_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_bwd_dv_local_ns;
  using A = ChunkBwdDvLocalArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::q>("q", {.dense_from = 0})
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::g>("g", {.dense_from = 0})
              .arg<&A::do_>("do", {.dense_from = 0})
              .arg<&A::scale>("scale", {.def = "None"})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .out_like("dv_local", "do")
              .shapes(shapes)
              .run_one<&chunk_bwd_dv_local>()
              .forward_only()
              .doc("", kDoc));
}
