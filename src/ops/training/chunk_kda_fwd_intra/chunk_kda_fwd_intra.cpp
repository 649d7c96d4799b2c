// training/chunk_kda_fwd_intra/chunk_kda_fwd_intra.cpp: the entry of chunk_kda_fwd_intra. All
// validation happens here, once; then the ordered implementation list runs the first
// implementation that accepts (cuda_sm80 in CUDA builds, cpu_generic, reference). At the end: the
// OpInfo and the argument table (forward only).
#include "ops/training/chunk_kda_fwd_intra/chunk_kda_fwd_intra.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_kda_fwd_intra/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_kda_fwd_intra_ns {
namespace {
constexpr const char* kOp = "chunk_kda_fwd_intra";
constexpr training::GdnEntry kEntry{kOp, "q"};

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: offsets values are checked by the run).
Status check_args(const ChunkKdaFwdIntraArgs& a, const Context* ctx, Params* p) {
  const TensorView& q = a.q;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(q, "[B, T, H, K]"));
  const int64_t B = q.sizes[0], T = q.sizes[1], H = q.sizes[2], K = q.sizes[3];
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("k", "[B, T, H, K]", a.k, q, {B, T, H, K}, "q's sizes"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("v", "[B, T, HV, V]", a.v, q, {B, T, -1, -1}, "B, T of q"));
  const int64_t HV = a.v.sizes[2], V = a.v.sizes[3];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("v", HV, H));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("g", "[B, T, HV, K]", a.g, q, {B, T, HV, K}, "B, T, K of q; HV of v"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("beta", "[B, T, HV]", a.beta, q, {B, T, HV}, "B, T of q; HV of v"));
  const int64_t bt = a.chunk_size;
  RECOPS_CHECK(bt == 32 || bt == 64, kOp, ": chunk_size=", bt,
               " must be 32 or 64 (the KDA intra-chunk kernel's chunk sizes)");
  if (a.scale) RECOPS_CHECK(std::isfinite(*a.scale), kOp, ": scale=", *a.scale, " must be finite");
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, q, B, T, ctx, &N, p));
  p->q = q.data;
  p->k = a.k.data;
  p->v = a.v.data;
  p->g = a.g.data;
  p->beta = a.beta.data;
  p->q_dtype = q.dtype, p->k_dtype = a.k.dtype, p->v_dtype = a.v.dtype;
  p->g_dtype = a.g.dtype, p->beta_dtype = a.beta.dtype;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
  p->BT = bt;
  p->N = N;
  p->scale = a.scale ? *a.scale : (K > 0 ? 1.0 / std::sqrt(static_cast<double>(K)) : 1.0);
  p->gate_log2 = a.gate_log2;
  p->device_index = q.device.index;
  return Status::Ok();
}

void out_specs(const ChunkKdaFwdIntraArgs& a, const Params& p, Shape s[6], DType t[6]) {
  const Shape hk{p.B, p.T, p.HV, p.K}, ha{p.B, p.T, p.HV, p.BT};
  s[0] = hk, t[0] = a.k.dtype;           // w
  s[1] = a.v.shape(), t[1] = a.v.dtype;  // u
  s[2] = hk, t[2] = a.q.dtype;           // qg
  s[3] = hk, t[3] = a.k.dtype;           // kg
  s[4] = ha, t[4] = a.k.dtype;           // Aqk
  s[5] = ha, t[5] = DType::fp32;         // Akk
}

Status prepare(const ChunkKdaFwdIntraArgs& a, const ChunkKdaFwdIntraOut& o, const Context& ctx,
               Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  Shape s[6];
  DType t[6];
  out_specs(a, *p, s, t);
  const TensorView* views[6] = {&o.w, &o.u, &o.qg, &o.kg, &o.Aqk, &o.Akk};
  static constexpr const char* kNames[6] = {"w", "u", "qg", "kg", "Aqk", "Akk"};
  static constexpr const char* kRules[6] = {
      "([B, T, HV, K]) of k's dtype",  "(v's shape) of v's dtype",
      "([B, T, HV, K]) of q's dtype",  "([B, T, HV, K]) of k's dtype",
      "([B, T, HV, BT]) of k's dtype", "([B, T, HV, BT]) of dtype"};
  for (int i = 0; i < 6; ++i)
    RECOPS_RETURN_IF_ERROR(kEntry.check_out(kNames[i], *views[i], a.q, s[i], t[i], kRules[i]));
  p->w = o.w.data, p->u = o.u.data, p->qg = o.qg.data, p->kg = o.kg.data;
  p->Aqk = o.Aqk.data, p->Akk = o.Akk.data;
  return Status::Ok();
}

bool nothing_to_write(const ChunkKdaFwdIntraOut& o) {
  return o.w.numel() == 0 && o.u.numel() == 0 && o.Aqk.numel() == 0;
}
}  // namespace
}  // namespace recops::ops::chunk_kda_fwd_intra_ns

namespace recops {

Status chunk_kda_fwd_intra_shape(const ChunkKdaFwdIntraArgs& a, Shape shapes[6], DType dtypes[6]) {
  using namespace ops::chunk_kda_fwd_intra_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  out_specs(a, p, shapes, dtypes);
  return Status::Ok();
}

Status chunk_kda_fwd_intra(const ChunkKdaFwdIntraArgs& a, const ChunkKdaFwdIntraOut& out,
                           const Context& ctx) {
  using namespace ops::chunk_kda_fwd_intra_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, out, ctx, &p));
  // Nothing to write (the extents may then be huge: a 0 extent leaves others bounded by nothing).
  if (nothing_to_write(out)) return Status::Ok();
  return core::dispatch(kOp, impls(), a.q.device.type, p, ctx);
}

Status chunk_kda_fwd_intra_plain(const ChunkKdaFwdIntraArgs& a, const ChunkKdaFwdIntraOut& out) {
  using namespace ops::chunk_kda_fwd_intra_ns;
  RECOPS_CHECK(a.q.device.is_cpu(), "chunk_kda_fwd_intra_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, out, ctx, &p));
  p.plain = true;
  if (nothing_to_write(out)) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_kda_fwd_intra_ns {
namespace {
Status shapes(const ChunkKdaFwdIntraArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s[6];
  DType t[6];
  RECOPS_RETURN_IF_ERROR(chunk_kda_fwd_intra_shape(a, s, t));
  for (int i = 0; i < 6; ++i) outs->push_back({s[i], t[i]});
  return Status::Ok();
}

Status run(const ChunkKdaFwdIntraArgs& a, const kit::Outputs& o, const Context& ctx) {
  const ChunkKdaFwdIntraOut out{o.views[0], o.views[1], o.views[2],
                                o.views[3], o.views[4], o.views[5]};
  return chunk_kda_fwd_intra(a, out, ctx);
}

constexpr const char* kDoc =
    R"(The KDA (Kimi Delta Attention) intra-chunk forward (fla-core's
``fla.ops.kda.chunk_intra.chunk_kda_fwd_intra``): GDN with a per-channel gate G ``[B, T, HV, K]``.

Each sequence is cut into chunks of BT = ``chunk_size`` positions from its own start (the last
may be shorter, L rows). For rows i, j of a chunk and value head hv (key head
``h = hv // (HV // H)``), with ``e = exp`` (``exp2`` with gate_log2):
``Aqk[i, j] = scale * sum_d q[i, d] k[j, d] e(G[i, d] - G[j, d])`` for j <= i (else 0);
``M[i, j] = beta[i] * sum_d k[i, d] k[j, d] e(G[i, d] - G[j, d])`` for j < i;
``Akk = (I + M)^-1``; ``w = Akk (beta * k * e(G))``; ``u = Akk (beta * v)``;
``kg = k * e(G[L - 1] - G)``; ``qg = q * e(G)``. Aqk and Akk rows hold the chunk's row; columns
past the diagonal or a tail chunk's end are 0. The CPU computes in fp32 (fp64 for fp64 k), the
exponent factored per 16-row sub-block so that no factor exceeds 1.

Args:
    q: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    k: ``[B, T, H, K]``.
    v: ``[B, T, HV, V]``, HV a multiple of H.
    g: ``[B, T, HV, K]``: G, the chunk-local cumsum of the per-channel log gates (natural-log
        units; log2 with gate_log2).
    beta: ``[B, T, HV]``.
    scale: default ``K ** -0.5``.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1;
        chunks restart at each sequence start; zero-length sequences are allowed.
    chunk_size: 32 or 64.
    gate_log2: g is in log2 units.

Returns:
    (w, u, qg, kg, Aqk, Akk): w, kg ``[B, T, HV, K]`` in k's dtype, u like v, qg ``[B, T, HV, K]``
    in q's dtype, Aqk ``[B, T, HV, BT]`` in k's dtype, Akk ``[B, T, HV, BT]`` fp32.

Forward only (inputs that require grad raise): the gradient is formed by the KDA backward.
)";
}  // namespace
}  // namespace recops::ops::chunk_kda_fwd_intra_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_kda_fwd_intra_ns;
  using A = ChunkKdaFwdIntraArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::q>("q", {.dense_from = 0})
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::v>("v", {.dense_from = 0})
              .arg<&A::g>("g", {.dense_from = 0})
              .arg<&A::beta>("beta", {.dense_from = 0})
              .arg<&A::scale>("scale", {.def = "None"})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .out("w")
              .out_like("u", "v")
              .out("qg")
              .out("kg")
              .out("Aqk")
              .out("Akk")
              .shapes(shapes)
              .run(run)
              .forward_only()
              .doc("", kDoc));
}
