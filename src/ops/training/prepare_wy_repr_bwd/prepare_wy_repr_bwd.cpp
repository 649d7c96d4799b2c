// training/prepare_wy_repr_bwd/prepare_wy_repr_bwd.cpp: the entry of prepare_wy_repr_bwd. All
// validation happens here, once; then the ordered implementation list runs the first
// implementation that accepts (cuda_sm80 in CUDA builds, cpu_generic, reference). At the end: the
// OpInfo and the argument table (forward only).
#include "ops/training/prepare_wy_repr_bwd/prepare_wy_repr_bwd.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"
#include "ops/training/prepare_wy_repr_bwd/impls.h"

namespace recops::ops::prepare_wy_repr_bwd_ns {
namespace {
constexpr const char* kOp = "prepare_wy_repr_bwd";
constexpr training::GdnEntry kEntry{kOp, "k"};

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: offsets values are checked by the run).
Status check_args(const PrepareWyReprBwdArgs& a, const Context* ctx, Params* p) {
  const TensorView& k = a.k;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(k, "[B, T, H, K]"));
  const int64_t B = k.sizes[0], T = k.sizes[1], H = k.sizes[2], K = k.sizes[3];
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("v", "[B, T, HV, V]", a.v, k, {B, T, -1, -1}, "B, T of k"));
  const int64_t HV = a.v.sizes[2], V = a.v.sizes[3];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("v", HV, H));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("beta", "[B, T, HV]", a.beta, k, {B, T, HV}, "B, T of k; HV of v"));
  if (a.g)
    RECOPS_RETURN_IF_ERROR(
        kEntry.check_sized("g", "[B, T, HV]", *a.g, k, {B, T, HV}, "B, T of k; HV of v"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("Ai", "[B, T, HV, BT]", a.Ai, k, {B, T, HV, -1}, "B, T of k; HV of v"));
  const int64_t bt = a.Ai.sizes[3];
  RECOPS_CHECK(bt == 16 || bt == 32 || bt == 64, kOp,
               ": Ai's last dim (the chunk size BT) must be 16, 32 or 64; got ", bt);
  RECOPS_CHECK(!a.chunk_size || *a.chunk_size == bt, kOp, ": chunk_size=", *a.chunk_size,
               " must equal Ai's last dim ", bt);
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("dw", "[B, T, HV, K]", a.dw, k, {B, T, HV, K}, "B, T, K of k; HV of v"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("du", "[B, T, HV, V]", a.du, k, {B, T, HV, V}, "v's sizes"));
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, k, B, T, ctx, &N, p));
  p->k = k.data;
  p->v = a.v.data;
  p->beta = a.beta.data;
  p->g = a.g ? a.g->data : nullptr;
  p->Ai = a.Ai.data;
  p->dw = a.dw.data;
  p->du = a.du.data;
  p->k_dtype = k.dtype;
  p->v_dtype = a.v.dtype;
  p->beta_dtype = a.beta.dtype;
  p->g_dtype = a.g ? a.g->dtype : DType::fp32;
  p->Ai_dtype = a.Ai.dtype;
  p->dw_dtype = a.dw.dtype;
  p->du_dtype = a.du.dtype;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
  p->BT = bt;
  p->N = N;
  p->gate_log2 = a.gate_log2;
  p->device_index = k.device.index;
  return Status::Ok();
}

Status check_out(const char* name, const TensorView& o, const TensorView& k, const Shape& want,
                 DType dtype, const char* rule) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "k", k, name, o));
  RECOPS_CHECK(o.shape() == want && o.dtype == dtype && o.is_contiguous(), kOp, ": ", name,
               " must be contiguous ", dtype_name(dtype), shape_str(want), " (", rule, "); got ",
               describe(o));
  return Status::Ok();
}

Status prepare(const PrepareWyReprBwdArgs& a, const TensorView& dk, const TensorView& dv,
               const TensorView& dbeta, const TensorView* dg, const Context& ctx, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  RECOPS_RETURN_IF_ERROR(check_out("dk", dk, a.k, a.k.shape(), a.k.dtype, "k's shape and dtype"));
  RECOPS_RETURN_IF_ERROR(check_out("dv", dv, a.k, a.v.shape(), a.v.dtype, "v's shape and dtype"));
  RECOPS_RETURN_IF_ERROR(
      check_out("dbeta", dbeta, a.k, a.beta.shape(), a.beta.dtype, "beta's shape and dtype"));
  RECOPS_CHECK((dg != nullptr) == a.g.has_value(), kOp, ": dg is ",
               a.g ? "required with g" : "produced only with g");
  if (dg)
    RECOPS_RETURN_IF_ERROR(
        check_out("dg", *dg, a.k, {p->B, p->T, p->HV}, DType::fp32, "[B, T, HV], g's sizes"));
  p->dk = dk.data;
  p->dv = dv.data;
  p->dbeta = dbeta.data;
  p->dg = dg ? static_cast<float*>(dg->data) : nullptr;
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::prepare_wy_repr_bwd_ns

namespace recops {

Status prepare_wy_repr_bwd_shape(const PrepareWyReprBwdArgs& a, PrepareWyReprBwdShapes* s) {
  using namespace ops::prepare_wy_repr_bwd_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  s->dk = a.k.shape();
  s->dk_dtype = a.k.dtype;
  s->dv = a.v.shape();
  s->dv_dtype = a.v.dtype;
  s->dbeta = a.beta.shape();
  s->dbeta_dtype = a.beta.dtype;
  s->has_dg = a.g.has_value();
  s->dg = s->has_dg ? Shape{p.B, p.T, p.HV} : Shape{0};
  return Status::Ok();
}

Status prepare_wy_repr_bwd(const PrepareWyReprBwdArgs& a, const TensorView& dk,
                           const TensorView& dv, const TensorView& dbeta, const TensorView* dg,
                           const Context& ctx) {
  using namespace ops::prepare_wy_repr_bwd_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, dk, dv, dbeta, dg, ctx, &p));
  if (ops::training::any_zero({p.B, p.T, p.HV}))
    return Status::Ok();  // empty: every output has no element
  return core::dispatch(kOp, impls(), a.k.device.type, p, ctx);
}

Status prepare_wy_repr_bwd_plain(const PrepareWyReprBwdArgs& a, const TensorView& dk,
                                 const TensorView& dv, const TensorView& dbeta,
                                 const TensorView* dg) {
  using namespace ops::prepare_wy_repr_bwd_ns;
  RECOPS_CHECK(a.k.device.is_cpu(), "prepare_wy_repr_bwd_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, dk, dv, dbeta, dg, ctx, &p));
  p.plain = true;
  if (ops::training::any_zero({p.B, p.T, p.HV})) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::prepare_wy_repr_bwd_ns {
namespace {
Status shapes(const PrepareWyReprBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  PrepareWyReprBwdShapes s;
  RECOPS_RETURN_IF_ERROR(prepare_wy_repr_bwd_shape(a, &s));
  outs->push_back({s.dk, s.dk_dtype});
  outs->push_back({s.dv, s.dv_dtype});
  outs->push_back({s.dbeta, s.dbeta_dtype});
  outs->push_back({s.dg, DType::fp32, s.has_dg});
  return Status::Ok();
}

Status run(const PrepareWyReprBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return prepare_wy_repr_bwd(a, o.views[0], o.views[1], o.views[2], o.get(3), ctx);
}

constexpr const char* kDoc =
    R"(The backward of the GDN WY representation (fla-core's
``fla.ops.gated_delta_rule.wy_fast.prepare_wy_repr_bwd``): from the gradients dw, du of
``w = Ai (beta * exp(g) * k)`` and ``u = Ai (beta * v)``, with ``Ai = (I + A)^-1`` and
``A[t, j] = beta_t * (k_t . k_j) * exp(g_t - g_j)`` (j < t in the chunk), the gradients of k, v,
beta and g, through w, u and through A.

Per chunk of BT = ``Ai.shape[-1]`` positions (cut from each sequence's start) and value head hv
(key head ``hv // (HV // H)``), with e = exp(g) and Gamma[t, j] = exp(g_t - g_j) (``exp2`` with
``gate_log2``; 1 without ``g``)::

    ub = Ai^T du,  wb = Ai^T dw
    dv = beta * ub;  dk = beta * e * wb;  dbeta = sum(ub * v) + e * sum(wb * k)
    dg = beta * e * sum(k * wb)
    dA = -Ai^T (du (beta v)^T + dw (beta e k)^T) Ai^T, strictly lower
    dbeta_t += sum_j dA_tj (k_t . k_j) Gamma_tj
    dk_t += sum_j dA_tj beta_t Gamma_tj k_j;  dk_j += sum_t dA_tj beta_t Gamma_tj k_t
    dg_t += sum_j dA_tj A_tj;  dg_j -= sum_t dA_tj A_tj

dk is summed over each group of value heads to H key heads (fp32, rounded once). dg is the
gradient with respect to the natural-log g, also with ``gate_log2`` (fla's convention: its GDN
backward reverse-cumsums it with scale 1). The CPU computes in fp32 (fp64 for fp64 k).

Args:
    k: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    v: ``[B, T, HV, V]``, HV a multiple of H.
    beta: ``[B, T, HV]``.
    g: optional ``[B, T, HV]``: G, the chunk-local cumsum of the log gates (natural-log units;
        log2 with gate_log2).
    Ai: ``[B, T, HV, BT]`` (``solve_tril``'s output, fp32; fp64/fp16/bf16 accepted), BT in
        {16, 32, 64}: row t holds its chunk's row of ``(I + A)^-1``.
    dw: ``[B, T, HV, K]``, the gradient of w.
    du: ``[B, T, HV, V]``, the gradient of u (GDN: dv2 of chunk_gated_delta_rule_bwd_dhu).
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1;
        chunks restart at each sequence start; zero-length sequences are allowed.
    chunk_size: None, or Ai's last dim (checked).
    gate_log2: g is in log2 units.

Returns:
    (dk, dv, dbeta, dg): dk like k, dv like v, dbeta like beta, dg ``[B, T, HV]`` fp32 (an empty
    ``[0]`` tensor without g).

Forward only (inputs that require grad raise).
)";
}  // namespace
}  // namespace recops::ops::prepare_wy_repr_bwd_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::prepare_wy_repr_bwd_ns;
  using A = PrepareWyReprBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::v>("v", {.dense_from = 0})
              .arg<&A::beta>("beta", {.dense_from = 0})
              .arg<&A::g>("g", {.dense_from = 0})
              .arg<&A::Ai>("Ai", {.dense_from = 0})
              .arg<&A::dw>("dw", {.dense_from = 0})
              .arg<&A::du>("du", {.dense_from = 0})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "None"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .out_like("dk", "k")
              .out_like("dv", "v")
              .out_like("dbeta", "beta")
              .out("dg")
              .shapes(shapes)
              .run(run)
              .forward_only()
              .doc("", kDoc));
}
