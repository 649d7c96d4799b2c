// training/chunk_kda_bwd_wy_dqkg_fused/chunk_kda_bwd_wy_dqkg_fused.cpp: the entry of
// chunk_kda_bwd_wy_dqkg_fused. All validation happens here, once; then the ordered implementation
// list runs the first implementation that accepts (cuda_sm80 in CUDA builds, cpu_generic,
// reference). At the end: the OpInfo and the argument table (forward only).
#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/chunk_kda_bwd_wy_dqkg_fused.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns {
namespace {
constexpr const char* kOp = "chunk_kda_bwd_wy_dqkg_fused";
constexpr training::GdnEntry kEntry{kOp, "q"};

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: the offsets' values and the varlen chunk count
// are checked by the run).
Status check_args(const ChunkKdaBwdWyDqkgFusedArgs& a, const Context* ctx, Params* p) {
  const TensorView& q = a.q;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(q, "[B, T, H, K]"));
  const int64_t B = q.sizes[0], T = q.sizes[1], H = q.sizes[2], K = q.sizes[3];
  RECOPS_RETURN_IF_ERROR(kEntry.check_sized("k", "[B, T, H, K]", a.k, q, {B, T, H, K}, "q's"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("v", "[B, T, HV, V]", a.v, q, {B, T, -1, -1}, "q's B and T"));
  const int64_t HV = a.v.sizes[2], V = a.v.sizes[3];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("v", HV, H));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("v_new", "[B, T, HV, V]", a.v_new, q, {B, T, HV, V}, "v's"));
  RECOPS_RETURN_IF_ERROR(kEntry.check_sized("g", "[B, T, HV, K]", a.g, q, {B, T, HV, K},
                                            "per-channel gate: v's HV, q's K"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("beta", "[B, T, HV]", a.beta, q, {B, T, HV}, "v's B, T, HV"));
  const int64_t bt = a.chunk_size;
  RECOPS_RETURN_IF_ERROR(kEntry.chunk_size(bt));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("Akk", "[B, T, HV, BT]", a.Akk, q, {B, T, HV, bt}, "BT = chunk_size"));
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, q, B, T, ctx, &N, p));
  // h, dh: [B, NT, HV, K, V]. Without offsets NT = ceil(T / BT) exactly; with offsets NT is at
  // least the chunk count of all sequences (checked where the values are read); later chunks (a
  // sync-free bound, §4.2) are not read.
  const int64_t nt = a.seq_offsets ? -1 : ops::training::chunk_count(T, bt);
  RECOPS_RETURN_IF_ERROR(kEntry.check_sized("h", "[B, NT, HV, K, V]", a.h, q, {B, nt, HV, K, V},
                                            "NT = ceil(T / chunk_size) per row"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("dh", "[B, NT, HV, K, V]", a.dh, q, a.h.shape(), "h's sizes"));
  if (a.seq_offsets && ctx)
    RECOPS_RETURN_IF_ERROR(kEntry.chunk_count(*a.seq_offsets, N, bt, a.h.sizes[1], "h's NT", *ctx));
  RECOPS_RETURN_IF_ERROR(kEntry.check_sized("do", "[B, T, HV, V]", a.d_o, q, {B, T, HV, V}, "v's"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("dv2", "[B, T, HV, V]", a.dv2, q, {B, T, HV, V}, "v's"));
  if (a.scale) RECOPS_CHECK(std::isfinite(*a.scale), kOp, ": scale=", *a.scale, " must be finite");
  p->q = q.data, p->k = a.k.data, p->v = a.v.data, p->v_new = a.v_new.data;
  p->g = a.g.data, p->beta = a.beta.data, p->A = a.Akk.data, p->h = a.h.data;
  p->d_o = a.d_o.data, p->dh = a.dh.data, p->dv2 = a.dv2.data;
  p->q_dtype = q.dtype, p->k_dtype = a.k.dtype, p->v_dtype = a.v.dtype;
  p->vn_dtype = a.v_new.dtype, p->g_dtype = a.g.dtype, p->beta_dtype = a.beta.dtype;
  p->A_dtype = a.Akk.dtype, p->h_dtype = a.h.dtype, p->do_dtype = a.d_o.dtype;
  p->dh_dtype = a.dh.dtype, p->dv2_dtype = a.dv2.dtype;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
  p->NT = a.h.sizes[1];
  p->BT = bt;
  p->N = N;
  p->scale = a.scale ? *a.scale : (K > 0 ? 1.0 / std::sqrt(static_cast<double>(K)) : 1.0);
  p->gate_log2 = a.gate_log2;
  p->device_index = q.device.index;
  return Status::Ok();
}

Status prepare(const ChunkKdaBwdWyDqkgFusedArgs& a, const ChunkKdaBwdWyDqkgFusedOut& o,
               const Context& ctx, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  const int64_t B = p->B, T = p->T, HV = p->HV;
  const DType f32 = DType::fp32;
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dq", o.dq, a.q, {B, T, p->H, p->K}, f32, "([B, T, H, K]) of dtype"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dk", o.dk, a.q, {B, T, p->H, p->K}, f32, "([B, T, H, K]) of dtype"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dv", o.dv, a.q, a.v.shape(), a.v.dtype, "(v's sizes) of v's dtype"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dbeta", o.dbeta, a.q, {B, T, HV}, f32, "([B, T, HV]) of dtype"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dg", o.dg, a.q, {B, T, HV, p->K}, f32, "([B, T, HV, K]) of dtype"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("dA", o.dA, a.q, {B, T, HV, p->BT}, f32, "([B, T, HV, BT]) of dtype"));
  p->dq = static_cast<float*>(o.dq.data);
  p->dk = static_cast<float*>(o.dk.data);
  p->dv = o.dv.data;
  p->dbeta = static_cast<float*>(o.dbeta.data);
  p->dg = static_cast<float*>(o.dg.data);
  p->dA = static_cast<float*>(o.dA.data);
  return Status::Ok();
}

// Every output has no element (then the extents may be huge and the chunk loops must not run).
bool all_empty(const ChunkKdaBwdWyDqkgFusedOut& o) {
  return o.dq.numel() == 0 && o.dk.numel() == 0 && o.dv.numel() == 0 && o.dbeta.numel() == 0 &&
         o.dg.numel() == 0 && o.dA.numel() == 0;
}
}  // namespace
}  // namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns

namespace recops {

Status chunk_kda_bwd_wy_dqkg_fused_shape(const ChunkKdaBwdWyDqkgFusedArgs& a,
                                         ChunkKdaBwdWyDqkgFusedShapes* s) {
  using namespace ops::chunk_kda_bwd_wy_dqkg_fused_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  s->dq = s->dk = {p.B, p.T, p.H, p.K};
  s->dv = a.v.shape();
  s->dv_dtype = a.v.dtype;
  s->dbeta = {p.B, p.T, p.HV};
  s->dg = {p.B, p.T, p.HV, p.K};
  s->dA = {p.B, p.T, p.HV, p.BT};
  return Status::Ok();
}

Status chunk_kda_bwd_wy_dqkg_fused(const ChunkKdaBwdWyDqkgFusedArgs& a,
                                   const ChunkKdaBwdWyDqkgFusedOut& out, const Context& ctx) {
  using namespace ops::chunk_kda_bwd_wy_dqkg_fused_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, out, ctx, &p));
  if (all_empty(out)) return Status::Ok();  // nothing to write
  return core::dispatch(kOp, impls(), a.q.device.type, p, ctx);
}

Status chunk_kda_bwd_wy_dqkg_fused_plain(const ChunkKdaBwdWyDqkgFusedArgs& a,
                                         const ChunkKdaBwdWyDqkgFusedOut& out) {
  using namespace ops::chunk_kda_bwd_wy_dqkg_fused_ns;
  RECOPS_CHECK(a.q.device.is_cpu(), "chunk_kda_bwd_wy_dqkg_fused_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, out, ctx, &p));
  p.plain = true;
  if (all_empty(out)) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns {
namespace {
Status shapes(const ChunkKdaBwdWyDqkgFusedArgs& a, std::vector<kit::OutSpec>* outs) {
  ChunkKdaBwdWyDqkgFusedShapes s;
  RECOPS_RETURN_IF_ERROR(chunk_kda_bwd_wy_dqkg_fused_shape(a, &s));
  outs->push_back({s.dq, DType::fp32});
  outs->push_back({s.dk, DType::fp32});
  outs->push_back({s.dv, s.dv_dtype});
  outs->push_back({s.dbeta, DType::fp32});
  outs->push_back({s.dg, DType::fp32});
  outs->push_back({s.dA, DType::fp32});
  return Status::Ok();
}

Status run(const ChunkKdaBwdWyDqkgFusedArgs& a, const kit::Outputs& o, const Context& ctx) {
  const auto& v = o.views;
  return chunk_kda_bwd_wy_dqkg_fused(a, {v[0], v[1], v[2], v[3], v[4], v[5]}, ctx);
}

constexpr const char* kDoc =
    R"(The KDA backward through the chunk states and the WY representation (fla-core's
``fla.ops.kda.chunk_bwd.chunk_kda_bwd_wy_dqkg_fused``), per chunk of ``chunk_size`` positions.

Each sequence is cut into chunks from its own start (the last one may be shorter; L is a chunk's
last position). For chunk c and value head hv (key head ``hv // (HV // H)``), with the
per-channel ``G = g[:, hv, :]``, ``e_t = exp(G_t)``, ``f_t = exp(G_L - G_t)`` (``exp2`` with
``gate_log2``), products per channel::

    dq_t  = scale * e_t * (h_c @ do_t)
    dk1_t = f_t * (dh_c @ v_new_t);   dw_t = -h_c @ dv2_t
    ub = Akk^T dv2;   wb = Akk^T dw               (over the chunk's rows)
    dv_t  = beta_t ub_t
    dk_t  = dk1_t + beta_t e_t wb_t
    dbeta_t = dot(ub_t, v_t) + dot(e_t k_t, wb_t)
    dg_t  = q_t dq_t - k_t dk1_t + beta_t e_t k_t wb_t
            (+ at t = L: exp(G_L) diag(h_c dh_c^T) + sum_t' k_t' dk1_t')
    dA    = -Akk^T (dv2 (beta v)^T + dw (beta e k)^T) Akk^T, strictly lower

dq and dk are fp32, formed per value head and summed over each group of HV/H value heads. dg is
the gradient with respect to the natural-log G, also with ``gate_log2`` (fla's convention). The
intra-chunk terms (through Aqk and through M of Akk = (I + M)^-1) are not included; dA is the
gradient of M for them.

Args:
    q, k: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    v, v_new: ``[B, T, HV, V]``, HV a multiple of H.
    g: ``[B, T, HV, K]``: G, the per-channel chunk-local cumsum of the log gates.
    beta: ``[B, T, HV]``.
    Akk: ``[B, T, HV, BT]``: row t holds its chunk's row of (I + M)^-1.
    h: ``[B, NT, HV, K, V]``: the state before each chunk (chunk_fwd_o's numbering).
    do: ``[B, T, HV, V]``: the gradient of o.
    dh: ``[B, NT, HV, K, V]``: the gradient of the state after each chunk.
    dv2: ``[B, T, HV, V]``: the gradient of v_new (fla's ``dv``).
    scale: default ``K ** -0.5``.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    chunk_size: 16, 32 or 64; Akk's last dim.
    gate_log2: g is in log2 units.

Returns:
    (dq, dk, dv, dbeta, dg, dA): dq, dk ``[B, T, H, K]`` fp32; dv v's sizes and dtype; dbeta
    ``[B, T, HV]`` fp32; dg ``[B, T, HV, K]`` fp32; dA ``[B, T, HV, BT]`` fp32.

Forward only (inputs that require grad raise).
)";
}  // namespace
}  // namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns;
  using A = ChunkKdaBwdWyDqkgFusedArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::q>("q", {.dense_from = 0})
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::v>("v", {.dense_from = 0})
              .arg<&A::v_new>("v_new", {.dense_from = 0})
              .arg<&A::g>("g", {.dense_from = 0})
              .arg<&A::beta>("beta", {.dense_from = 0})
              .arg<&A::Akk>("Akk", {.dense_from = 0})
              .arg<&A::h>("h", {.dense_from = 0})
              .arg<&A::d_o>("do", {.dense_from = 0})
              .arg<&A::dh>("dh", {.dense_from = 0})
              .arg<&A::dv2>("dv2", {.dense_from = 0})
              .arg<&A::scale>("scale", {.def = "None"})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .out("dq")
              .out("dk")
              .out_like("dv", "v")
              .out("dbeta")
              .out("dg")
              .out("dA")
              .shapes(shapes)
              .run(run)
              .forward_only()
              .doc("", kDoc));
}
