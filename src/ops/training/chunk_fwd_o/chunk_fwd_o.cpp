// training/chunk_fwd_o/chunk_fwd_o.cpp: the entry of chunk_fwd_o. All validation happens here,
// once; then the ordered implementation list runs the first implementation that accepts
// (cuda_sm80 in CUDA builds, cpu_generic, reference). At the end: the OpInfo and the argument table
// (forward only).
#include "ops/training/chunk_fwd_o/chunk_fwd_o.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_fwd_o/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_fwd_o_ns {
namespace {
constexpr const char* kOp = "chunk_fwd_o";
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
Status check_args(const ChunkFwdOArgs& a, const Context* ctx, Params* p) {
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
  // h: [B, NT, HV, K, V]. Without offsets NT = ceil(T / BT) exactly (chunk c of row b is h[b, c]);
  // with offsets NT is at least the chunk count of all sequences (checked where the values are
  // read); trailing chunks beyond it (a sync-free bound, §4.2) are not read.
  const int64_t nt = a.seq_offsets ? -1 : ops::training::chunk_count(T, bt);
  RECOPS_RETURN_IF_ERROR(kEntry.check_tensor(
      "h", a.h, q, {B, nt, HV, K, V}, "[B, NT, HV, K, V] (NT = ceil(T / chunk_size) per row)"));
  if (a.seq_offsets && ctx)
    RECOPS_RETURN_IF_ERROR(kEntry.chunk_count(*a.seq_offsets, N, bt, a.h.sizes[1], "h's NT", *ctx));
  if (a.g) RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("g", *a.g, q, {B, T, HV}, "[B, T, HV]"));
  // gk: KDA's per-channel G (training_ops.md §4.5). fla has no kernel taking both a scalar and a
  // per-channel gate for this product (chunk_fwd_o takes g, chunk_gla_fwd_o_gk only gk): refused.
  RECOPS_CHECK(!(a.g && a.gk), kOp,
               ": g and gk are mutually exclusive (g: the GDN scalar gate cumsum [B, T, HV]; gk: "
               "KDA's per-channel gate cumsum [B, T, HV, K]); pass one of them");
  if (a.gk)
    RECOPS_RETURN_IF_ERROR(kEntry.check_sized("gk", "[B, T, HV, K]", *a.gk, q, {B, T, HV, K},
                                              "B, T, K of q; HV of v_new"));
  if (a.scale) RECOPS_CHECK(std::isfinite(*a.scale), kOp, ": scale=", *a.scale, " must be finite");
  p->q = q.data;
  p->k = a.k.data;
  p->v = a.v_new.data;
  p->h = a.h.data;
  p->g = a.g ? a.g->data : nullptr;
  p->gk = a.gk ? a.gk->data : nullptr;
  p->q_dtype = q.dtype, p->k_dtype = a.k.dtype, p->v_dtype = a.v_new.dtype;
  p->h_dtype = a.h.dtype;
  p->g_dtype = a.g ? a.g->dtype : DType::fp32;
  p->gk_dtype = a.gk ? a.gk->dtype : DType::fp32;
  p->o_dtype = q.dtype;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
  p->NT = a.h.sizes[1];
  p->BT = bt;
  p->N = N;
  p->scale = a.scale ? *a.scale : (K > 0 ? 1.0 / std::sqrt(static_cast<double>(K)) : 1.0);
  p->gate_log2 = a.gate_log2;
  p->device_index = q.device.index;
  return Status::Ok();
}

Status prepare(const ChunkFwdOArgs& a, const TensorView& o, const Context& ctx, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  RECOPS_RETURN_IF_ERROR(kEntry.check_out("o", o, a.q, {p->B, p->T, p->HV, p->V}, a.q.dtype,
                                          "([B, T, HV, V]) of q's dtype"));
  p->o = o.data;
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::chunk_fwd_o_ns

namespace recops {

Status chunk_fwd_o_shape(const ChunkFwdOArgs& a, Shape* out_shape, DType* out_dtype) {
  using namespace ops::chunk_fwd_o_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  *out_shape = {p.B, p.T, p.HV, p.V};
  *out_dtype = a.q.dtype;
  return Status::Ok();
}

Status chunk_fwd_o(const ChunkFwdOArgs& a, const TensorView& o, const Context& ctx) {
  using namespace ops::chunk_fwd_o_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, o, ctx, &p));
  if (ops::training::any_zero({p.B, p.T, p.HV, p.V})) return Status::Ok();  // empty: nothing to run
  return core::dispatch(kOp, impls(), a.q.device.type, p, ctx);
}

Status chunk_fwd_o_plain(const ChunkFwdOArgs& a, const TensorView& o) {
  using namespace ops::chunk_fwd_o_ns;
  RECOPS_CHECK(a.q.device.is_cpu(), "chunk_fwd_o_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, o, ctx, &p));
  p.plain = true;
  if (ops::training::any_zero({p.B, p.T, p.HV, p.V})) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_fwd_o_ns {
namespace {
Status shapes(const ChunkFwdOArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  DType t;
  RECOPS_RETURN_IF_ERROR(chunk_fwd_o_shape(a, &s, &t));
  outs->push_back({s, t});
  return Status::Ok();
}

constexpr const char* kDoc =
    R"(The GDN chunk output (fla-core's ``fla.ops.common.chunk_o.chunk_fwd_o``): the inter-chunk
term from the state before the chunk plus the causal intra-chunk attention.

Each sequence is cut into chunks of ``chunk_size`` positions from its own start (the last one may
be shorter). For position t of chunk c (first position c0) and value head hv (key head
``hv // (HV // H)``)::

    o[t, hv] = scale * exp(g[t, hv]) * h[c, hv]^T q[t, h]
             + scale * sum_{c0 <= j <= t} exp(g[t, hv] - g[j, hv]) * dot(q[t, h], k[j, h]) * v_new[j, hv]

(``exp2`` with ``gate_log2``; no gate factors without ``g``). With ``gk`` (KDA's per-channel
gate, instead of ``g``) the factors move inside the sums over the key channel d::

    o[t, hv] = scale * sum_d q[t, h, d] * exp(gk[t, hv, d]) * h[c, hv, d, :]
             + sum_{c0 <= j <= t} (scale * sum_d q[t, h, d] * k[j, h, d]
                                   * exp(gk[t, hv, d] - gk[j, hv, d])) * v_new[j, hv]

Chunk numbering of h: without
seq_offsets chunk c of batch row b is ``h[b, c]``; with seq_offsets the chunks of all sequences
in order (zero-length sequences own none), as fla's ``prepare_chunk_indices``.

Args:
    q, k: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    v_new: ``[B, T, HV, V]``, HV a multiple of H.
    h: ``[B, NT, HV, K, V]``: the state before each chunk (NT = ceil(T / chunk_size), or with
        seq_offsets at least the total chunk count; later chunks are not read).
    g: optional ``[B, T, HV]``: G, the chunk-local cumsum of the log gates, natural-log units
        (log2 with gate_log2).
    scale: default ``K ** -0.5``.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    chunk_size: 16, 32 or 64.
    gate_log2: g (or gk) is in log2 units.
    gk: optional ``[B, T, HV, K]``: KDA's per-channel G (chunk-local cumsum of the per-channel
        log gates); not together with g. Served on the CPU and by cuda_sm80.

Returns:
    o: ``[B, T, HV, V]`` in q's dtype (computed in fp32, fp64 for fp64 q).

Forward only (inputs that require grad raise): fla's backward of the GDN output is formed by
other sub-ops (chunk_bwd_dv_local, chunk_bwd_dqkwg).
)";
}  // namespace
}  // namespace recops::ops::chunk_fwd_o_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_fwd_o_ns;
  using A = ChunkFwdOArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::q>("q", {.dense_from = 0})
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::v_new>("v_new", {.dense_from = 0})
              .arg<&A::h>("h", {.dense_from = 0})
              .arg<&A::g>("g", {.def = "None", .dense_from = 0})
              .arg<&A::scale>("scale", {.def = "None"})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .arg<&A::gk>("gk", {.def = "None", .dense_from = 0})
              .out("o")
              .shapes(shapes)
              .run_one<&chunk_fwd_o>()
              .forward_only()
              .doc("", kDoc));
}
