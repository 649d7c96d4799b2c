// training/chunk_kda_bwd_intra/chunk_kda_bwd_intra.cpp: the entry of chunk_kda_bwd_intra. All
// validation happens here, once; then the ordered implementation list runs the first
// implementation that accepts (cuda_sm80 in CUDA builds, cpu_generic, reference). At the end: the
// OpInfo and the argument table (forward only).
#include "ops/training/chunk_kda_bwd_intra/chunk_kda_bwd_intra.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_kda_bwd_intra/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_kda_bwd_intra_ns {
namespace {
constexpr const char* kOp = "chunk_kda_bwd_intra";
constexpr training::GdnEntry kEntry{kOp, "q"};

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: the offsets' values are checked by the run).
Status check_args(const ChunkKdaBwdIntraArgs& a, const Context* ctx, Params* p) {
  const TensorView& q = a.q;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(q, "[B, T, H, K]"));
  const int64_t B = q.sizes[0], T = q.sizes[1], H = q.sizes[2], K = q.sizes[3];
  RECOPS_RETURN_IF_ERROR(kEntry.check_sized("k", "[B, T, H, K]", a.k, q, {B, T, H, K}, "q's"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("g", "[B, T, HV, K]", a.g, q, {B, T, -1, K}, "q's B, T and K"));
  const int64_t HV = a.g.sizes[2];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("g", HV, H));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("beta", "[B, T, HV]", a.beta, q, {B, T, HV}, "g's B, T, HV"));
  const int64_t bt = a.chunk_size;
  RECOPS_RETURN_IF_ERROR(kEntry.chunk_size(bt));
  RECOPS_RETURN_IF_ERROR(kEntry.check_sized("dAqk", "[B, T, HV, BT]", a.dAqk, q, {B, T, HV, bt},
                                            "g's B, T, HV; BT = chunk_size"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("dAkk", "[B, T, HV, BT]", a.dAkk, q, {B, T, HV, bt}, "dAqk's"));
  RECOPS_RETURN_IF_ERROR(kEntry.check_sized("dq", "[B, T, H, K]", a.dq, q, {B, T, H, K}, "q's"));
  RECOPS_RETURN_IF_ERROR(kEntry.check_sized("dk", "[B, T, H, K]", a.dk, q, {B, T, H, K}, "q's"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("dbeta", "[B, T, HV]", a.dbeta, q, {B, T, HV}, "beta's"));
  RECOPS_RETURN_IF_ERROR(kEntry.check_sized("dg", "[B, T, HV, K]", a.dg, q, {B, T, HV, K}, "g's"));
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, q, B, T, ctx, &N, p));
  p->q = q.data, p->k = a.k.data, p->g = a.g.data, p->beta = a.beta.data;
  p->dAqk = a.dAqk.data, p->dAkk = a.dAkk.data;
  p->dq_in = a.dq.data, p->dk_in = a.dk.data, p->dbeta_in = a.dbeta.data, p->dg_in = a.dg.data;
  p->q_dtype = q.dtype, p->k_dtype = a.k.dtype, p->g_dtype = a.g.dtype;
  p->beta_dtype = a.beta.dtype, p->dAqk_dtype = a.dAqk.dtype, p->dAkk_dtype = a.dAkk.dtype;
  p->dq_dtype = a.dq.dtype, p->dk_dtype = a.dk.dtype, p->dbeta_dtype = a.dbeta.dtype;
  p->dg_dtype = a.dg.dtype;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K;
  p->BT = bt;
  p->N = N;
  p->gate_log2 = a.gate_log2;
  p->device_index = q.device.index;
  return Status::Ok();
}

Status prepare(const ChunkKdaBwdIntraArgs& a, const ChunkKdaBwdIntraOut& o, const Context& ctx,
               Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  const int64_t B = p->B, T = p->T, HV = p->HV;
  const DType f32 = DType::fp32;
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dq", o.dq, a.q, {B, T, p->H, p->K}, f32, "([B, T, H, K]) of dtype"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dk", o.dk, a.q, {B, T, p->H, p->K}, f32, "([B, T, H, K]) of dtype"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dbeta", o.dbeta, a.q, {B, T, HV}, f32, "([B, T, HV]) of dtype"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dg", o.dg, a.q, {B, T, HV, p->K}, f32, "([B, T, HV, K]) of dtype"));
  p->dq = static_cast<float*>(o.dq.data);
  p->dk = static_cast<float*>(o.dk.data);
  p->dbeta = static_cast<float*>(o.dbeta.data);
  p->dg = static_cast<float*>(o.dg.data);
  return Status::Ok();
}

bool all_empty(const ChunkKdaBwdIntraOut& o) {
  return o.dq.numel() == 0 && o.dk.numel() == 0 && o.dbeta.numel() == 0 && o.dg.numel() == 0;
}
}  // namespace
}  // namespace recops::ops::chunk_kda_bwd_intra_ns

namespace recops {

Status chunk_kda_bwd_intra_shape(const ChunkKdaBwdIntraArgs& a, Shape shapes[4]) {
  using namespace ops::chunk_kda_bwd_intra_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  shapes[0] = shapes[1] = {p.B, p.T, p.H, p.K};
  shapes[2] = {p.B, p.T, p.HV};
  shapes[3] = {p.B, p.T, p.HV, p.K};
  return Status::Ok();
}

Status chunk_kda_bwd_intra(const ChunkKdaBwdIntraArgs& a, const ChunkKdaBwdIntraOut& out,
                           const Context& ctx) {
  using namespace ops::chunk_kda_bwd_intra_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, out, ctx, &p));
  if (all_empty(out)) return Status::Ok();  // nothing to write
  return core::dispatch(kOp, impls(), a.q.device.type, p, ctx);
}

Status chunk_kda_bwd_intra_plain(const ChunkKdaBwdIntraArgs& a, const ChunkKdaBwdIntraOut& out) {
  using namespace ops::chunk_kda_bwd_intra_ns;
  RECOPS_CHECK(a.q.device.is_cpu(), "chunk_kda_bwd_intra_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, out, ctx, &p));
  p.plain = true;
  if (all_empty(out)) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_kda_bwd_intra_ns {
namespace {
Status shapes(const ChunkKdaBwdIntraArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s[4];
  RECOPS_RETURN_IF_ERROR(chunk_kda_bwd_intra_shape(a, s));
  for (const Shape& x : s) outs->push_back({x, DType::fp32});
  return Status::Ok();
}

Status run(const ChunkKdaBwdIntraArgs& a, const kit::Outputs& o, const Context& ctx) {
  const auto& v = o.views;
  return chunk_kda_bwd_intra(a, {v[0], v[1], v[2], v[3]}, ctx);
}

constexpr const char* kDoc =
    R"(The backward of the KDA intra-chunk scores (fla-core's
``fla.ops.kda.chunk_intra.chunk_kda_bwd_intra``), per chunk of ``chunk_size`` positions, added to
the incoming gradients.

Each sequence is cut into chunks from its own start (the last one may be shorter). For rows i, j
of a chunk, value head hv (key head ``hv // (HV // H)``), ``E_ij = exp(G_i - G_j)`` per channel
(``exp2`` with ``gate_log2``), the forward scores are
``Ahat_ij = sum_d q_i k_j E_ij`` (j <= i) and ``M_ij = beta_i sum_d k_i k_j E_ij`` (j < i).
With dAqk the gradient of Ahat (chunk_kda_bwd_dav's) and dAkk that of M
(chunk_kda_bwd_wy_dqkg_fused's dA)::

    dq_i    += sum_{j <= i} dAqk_ij k_j E_ij
    dk_j    += sum_{i >= j} dAqk_ij q_i E_ij + sum_{i > j} dAkk_ij beta_i k_i E_ij
    dk_i    += beta_i sum_{j < i} dAkk_ij k_j E_ij
    dbeta_i += sum_{j < i} dAkk_ij sum_d k_i k_j E_ij
    dg      += the gradient with respect to the natural-log G (also with gate_log2)

dq and dk are at the H key heads: the terms of every value head of a group are summed (in fp64,
in head order) with the incoming value and rounded once.

Args:
    q, k: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    g: ``[B, T, HV, K]``: G, the per-channel chunk-local cumsum of the log gates.
    beta: ``[B, T, HV]``, HV a multiple of H.
    dAqk, dAkk: ``[B, T, HV, BT]``: the gradients of Ahat and M.
    dq, dk: ``[B, T, H, K]``; dbeta: ``[B, T, HV]``; dg: ``[B, T, HV, K]``: incoming gradients.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    chunk_size: 16, 32 or 64; dAqk's last dim.
    gate_log2: g is in log2 units.

Returns:
    (dq, dk, dbeta, dg), all fp32, of the incoming gradients' sizes.

Forward only (inputs that require grad raise).
)";
}  // namespace
}  // namespace recops::ops::chunk_kda_bwd_intra_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_kda_bwd_intra_ns;
  using A = ChunkKdaBwdIntraArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::q>("q", {.dense_from = 0})
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::g>("g", {.dense_from = 0})
              .arg<&A::beta>("beta", {.dense_from = 0})
              .arg<&A::dAqk>("dAqk", {.dense_from = 0})
              .arg<&A::dAkk>("dAkk", {.dense_from = 0})
              .arg<&A::dq>("dq", {.dense_from = 0})
              .arg<&A::dk>("dk", {.dense_from = 0})
              .arg<&A::dbeta>("dbeta", {.dense_from = 0})
              .arg<&A::dg>("dg", {.dense_from = 0})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .out("dq_out")
              .out("dk_out")
              .out("dbeta_out")
              .out("dg_out")
              .shapes(shapes)
              .run(run)
              .forward_only()
              .doc("", kDoc));
}
