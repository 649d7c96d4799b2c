// training/recompute_w_u_fwd/recompute_w_u_fwd.cpp: the entry of recompute_w_u_fwd. All
// validation happens here, once; then the ordered implementation list runs the first
// implementation that accepts (cuda_sm80 in CUDA builds, cpu_generic, reference). At the end: the
// OpInfo and the argument table (forward only).
#include "ops/training/recompute_w_u_fwd/recompute_w_u_fwd.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"
#include "ops/training/recompute_w_u_fwd/impls.h"

namespace recops::ops::recompute_w_u_fwd_ns {
namespace {
constexpr const char* kOp = "recompute_w_u_fwd";
constexpr training::GdnEntry kEntry{kOp, "k"};

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: offsets values are checked by the run).
Status check_args(const RecomputeWUFwdArgs& a, const Context* ctx, Params* p) {
  const TensorView& k = a.k;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(k, "[B, T, H, K]"));
  const int64_t B = k.sizes[0], T = k.sizes[1], H = k.sizes[2], K = k.sizes[3];
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("v", "[B, T, HV, V]", a.v, k, {B, T, -1, -1}, "B, T of k"));
  const int64_t HV = a.v.sizes[2], V = a.v.sizes[3];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("v", HV, H));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("beta", "[B, T, HV]", a.beta, k, {B, T, HV}, "B, T of k; HV of v"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("Ai", "[B, T, HV, BT]", a.Ai, k, {B, T, HV, -1}, "B, T of k; HV of v"));
  const int64_t bt = a.Ai.sizes[3];
  RECOPS_CHECK(bt == 16 || bt == 32 || bt == 64, kOp,
               ": Ai's last dim (the chunk size BT) must be 16, 32 or 64; got ", bt);
  RECOPS_CHECK(!a.chunk_size || *a.chunk_size == bt, kOp, ": chunk_size=", *a.chunk_size,
               " must equal Ai's last dim ", bt);
  if (a.g)
    RECOPS_RETURN_IF_ERROR(
        kEntry.check_sized("g", "[B, T, HV]", *a.g, k, {B, T, HV}, "B, T of k; HV of v"));
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, k, B, T, ctx, &N, p));
  p->k = k.data;
  p->v = a.v.data;
  p->beta = a.beta.data;
  p->Ai = a.Ai.data;
  p->g = a.g ? a.g->data : nullptr;
  p->k_dtype = k.dtype;
  p->v_dtype = a.v.dtype;
  p->beta_dtype = a.beta.dtype;
  p->Ai_dtype = a.Ai.dtype;
  p->g_dtype = a.g ? a.g->dtype : DType::fp32;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
  p->BT = bt;
  p->N = N;
  p->gate_log2 = a.gate_log2;
  p->device_index = k.device.index;
  return Status::Ok();
}

Status check_out(const char* name, const TensorView& k, const TensorView& o, const Shape& want,
                 DType t, const char* rule) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "k", k, name, o));
  RECOPS_CHECK(o.shape() == want && o.dtype == t && o.is_contiguous(), kOp, ": ", name,
               " must be contiguous ", dtype_name(t), shape_str(want), " (", rule, "); got ",
               describe(o));
  return Status::Ok();
}

Status prepare(const RecomputeWUFwdArgs& a, const TensorView& w, const TensorView& u,
               const Context& ctx, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  RECOPS_RETURN_IF_ERROR(
      check_out("w", a.k, w, {p->B, p->T, p->HV, p->K}, a.k.dtype, "[B, T, HV, K], k's dtype"));
  RECOPS_RETURN_IF_ERROR(check_out("u", a.k, u, a.v.shape(), a.v.dtype, "v's shape and dtype"));
  p->w = w.data;
  p->u = u.data;
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::recompute_w_u_fwd_ns

namespace recops {

Status recompute_w_u_fwd_shape(const RecomputeWUFwdArgs& a, Shape* w_shape, DType* w_dtype,
                               Shape* u_shape, DType* u_dtype) {
  using namespace ops::recompute_w_u_fwd_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  *w_shape = {p.B, p.T, p.HV, p.K};
  *w_dtype = a.k.dtype;
  *u_shape = a.v.shape();
  *u_dtype = a.v.dtype;
  return Status::Ok();
}

Status recompute_w_u_fwd(const RecomputeWUFwdArgs& a, const TensorView& w, const TensorView& u,
                         const Context& ctx) {
  using namespace ops::recompute_w_u_fwd_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, w, u, ctx, &p));
  // Nothing to write (the extents may then be huge: K = V = 0 leaves T bounded by no tensor).
  if (w.numel() == 0 && u.numel() == 0) return Status::Ok();
  return core::dispatch(kOp, impls(), a.k.device.type, p, ctx);
}

Status recompute_w_u_fwd_plain(const RecomputeWUFwdArgs& a, const TensorView& w,
                               const TensorView& u) {
  using namespace ops::recompute_w_u_fwd_ns;
  RECOPS_CHECK(a.k.device.is_cpu(), "recompute_w_u_fwd_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, w, u, ctx, &p));
  p.plain = true;
  if (w.numel() == 0 && u.numel() == 0) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::recompute_w_u_fwd_ns {
namespace {
Status shapes(const RecomputeWUFwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape ws, us;
  DType wt, ut;
  RECOPS_RETURN_IF_ERROR(recompute_w_u_fwd_shape(a, &ws, &wt, &us, &ut));
  outs->push_back({ws, wt});
  outs->push_back({us, ut});
  return Status::Ok();
}

Status run(const RecomputeWUFwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return recompute_w_u_fwd(a, o.views[0], o.views[1], ctx);
}

constexpr const char* kDoc =
    R"(The GDN WY representation ``w = Ai (beta * exp(g) * k)``, ``u = Ai (beta * v)`` per chunk
(fla-core's ``fla.ops.gated_delta_rule.wy_fast.recompute_w_u_fwd``).

Each sequence is cut into chunks of BT = ``Ai.shape[-1]`` positions from its own start (the last
one may be shorter, L rows). For position t of a chunk starting at c0 and value head hv (key head
``h = hv // (HV // H)``):
``u[t, hv] = sum_{j < L} Ai[t, hv, j] * beta[c0 + j, hv] * v[c0 + j, hv]`` and
``w[t, hv] = sum_{j < L} Ai[t, hv, j] * beta[c0 + j, hv] * exp(g[c0 + j, hv]) * k[c0 + j, h]``
(``exp2`` with ``gate_log2``; no factor without ``g``). Every column j < L of Ai's row is read
(solve_tril leaves zeros above the diagonal). The CPU sums in fp32 (fp64 for fp64 k or v).

Args:
    k: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    v: ``[B, T, HV, V]``, HV a multiple of H.
    beta: ``[B, T, HV]``.
    Ai: ``[B, T, HV, BT]`` (``solve_tril``'s output, fp32; fp64/fp16/bf16 accepted), BT in
        {16, 32, 64}: row t holds its chunk's row of ``(I + A)^-1``.
    g: optional ``[B, T, HV]``: G, the chunk-local cumsum of the log gates (natural-log units;
        log2 with gate_log2).
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1;
        chunks restart at each sequence start; zero-length sequences are allowed.
    chunk_size: None, or Ai's last dim (checked).
    gate_log2: g is in log2 units.

Returns:
    (w, u): w ``[B, T, HV, K]`` in k's dtype, u like v.

Forward only (inputs that require grad raise): the gradient is formed by the wy_fast backward
(prepare_wy_repr_bwd).
)";
}  // namespace
}  // namespace recops::ops::recompute_w_u_fwd_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::recompute_w_u_fwd_ns;
  using A = RecomputeWUFwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::v>("v", {.dense_from = 0})
              .arg<&A::beta>("beta", {.dense_from = 0})
              .arg<&A::Ai>("Ai", {.dense_from = 0})
              .arg<&A::g>("g", {.def = "None", .dense_from = 0})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "None"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .out("w")
              .out_like("u", "v")
              .shapes(shapes)
              .run(run)
              .forward_only()
              .doc("", kDoc));
}
