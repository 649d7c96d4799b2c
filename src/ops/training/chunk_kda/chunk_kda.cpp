// training/chunk_kda/chunk_kda.cpp: the entry of chunk_kda and chunk_kda_bwd. All validation
// happens here, once (the sub-ops the CPU path calls check their own arguments again); then the
// ordered implementation list runs the first implementation that accepts (cpu_generic, reference;
// no CUDA path yet: its sub-ops chunk_kda_bwd_dav, chunk_kda_bwd_intra and
// chunk_kda_bwd_wy_dqkg_fused, and the gk options of fwd_h, fwd_o and bwd_dhu, are CPU-only). At
// the end: the OpInfo and the argument table (the forward with .backward(chunk_kda_bwd), and the
// backward).
#include "ops/training/chunk_kda/chunk_kda.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_kda/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_kda_ns {
namespace {
constexpr const char* kOp = "chunk_kda";
constexpr const char* kBwd = "chunk_kda_bwd";
constexpr training::GdnEntry kEntry{kOp, "q"};
constexpr training::GdnEntry kBwdEntry{kBwd, "q"};
using training::is_float;

const std::vector<core::Impl<Params>>& impls() {
  static const auto list = core::with_cpu_impls<Params>({}, run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: the offsets' values are checked by the run).
Status check_args(const ChunkKdaArgs& a, const Context* ctx, Params* p) {
  const TensorView& q = a.q;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(q, "[B, T, H, K]"));
  const int64_t B = q.sizes[0], T = q.sizes[1], H = q.sizes[2], K = q.sizes[3];
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("k", a.k, q, q.shape(), "[B, T, H, K] (q's)", q.dtype));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("v", a.v, q, {B, T, -1, -1}, "[B, T, HV, V] (q's B, T)", q.dtype));
  const int64_t HV = a.v.sizes[2], V = a.v.sizes[3];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("v", HV, H));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("g", a.g, q, {B, T, HV, K}, "[B, T, HV, K] (v's HV, q's K)"));
  RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("beta", a.beta, q, {B, T, HV}, "[B, T, HV] (v's HV)"));
  const int64_t bt = a.chunk_size;
  RECOPS_CHECK(bt == 32 || bt == 64, kOp, ": chunk_size=", bt,
               " must be 32 or 64 (chunk_kda_fwd_intra's chunk sizes)");
  if (a.scale) RECOPS_CHECK(std::isfinite(*a.scale), kOp, ": scale=", *a.scale, " must be finite");
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, q, B, T, ctx, &N, p));
  if (a.initial_state)
    RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("initial_state", *a.initial_state, q, {N, HV, K, V},
                                               "[N, HV, K, V] (N sequences)"));
  p->q = q.data, p->k = a.k.data, p->v = a.v.data, p->g = a.g.data, p->beta = a.beta.data;
  p->h0 = a.initial_state ? a.initial_state->data : nullptr;
  p->q_dtype = q.dtype, p->k_dtype = a.k.dtype, p->v_dtype = a.v.dtype;
  p->g_dtype = a.g.dtype, p->beta_dtype = a.beta.dtype;
  p->h0_dtype = a.initial_state ? a.initial_state->dtype : DType::fp32;
  p->o_dtype = a.v.dtype;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
  p->BT = bt;
  p->N = N;
  // The chunk states' NT: ceil(T / BT) per batch row; with offsets the sync-free bound
  // ceil(T / BT) + N (§4.2), which fwd_h takes by default.
  p->NT = training::chunk_count(T, bt) + (a.seq_offsets ? N : 0);
  p->scale = a.scale ? *a.scale : (K > 0 ? 1.0 / std::sqrt(static_cast<double>(K)) : 1.0);
  p->l2norm = a.use_qk_l2norm_in_kernel;
  p->args = a;
  p->args.scale = p->scale;
  return Status::Ok();
}

Status prepare(const ChunkKdaArgs& a, const TensorView& o, const TensorView* ht, const Context& ctx,
               Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "q", a.q, "o", o));
  RECOPS_CHECK(o.shape() == a.v.shape() && o.dtype == a.v.dtype && o.is_contiguous(), kOp,
               ": o must be contiguous with v's shape ", shape_str(a.v.shape()), " and dtype ",
               dtype_name(a.v.dtype), "; got ", describe(o));
  RECOPS_CHECK(a.output_final_state == (ht != nullptr), kOp,
               ": final_state must be given exactly when output_final_state is true");
  if (ht) {
    const Shape want = {p->N, p->HV, p->K, p->V};
    RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "q", a.q, "final_state", *ht));
    RECOPS_CHECK(ht->shape() == want && ht->dtype == DType::fp32 && ht->is_contiguous(), kOp,
                 ": final_state must be contiguous ", shape_str(want),
                 " ([N, HV, K, V]) of fp32; got ", describe(*ht));
  }
  p->o = o.data;
  p->ht = ht ? ht->data : nullptr;
  p->o_view = o;
  if (ht) p->ht_view = *ht;
  return Status::Ok();
}

size_t align(size_t n) {
  return (n + 255) / 256 * 256;
}

// The backward's rules beyond the forward's (check_args): grad_o like o, grad_final_state
// [N, HV, K, V] floating with output_final_state (else None or empty), the outputs' views.
Status check_bwd(const ChunkKdaBwdArgs& a, const Context* ctx, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a.forward(), ctx, p));
  p->bwd = true;
  const TensorView& q = a.q;
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "q", q, "grad_o", a.grad_o));
  RECOPS_CHECK(
      a.grad_o.shape() == a.v.shape() && a.grad_o.dtype == a.v.dtype && a.grad_o.is_contiguous(),
      kBwd, ": grad_o must be contiguous with v's shape ", shape_str(a.v.shape()), " and dtype ",
      dtype_name(a.v.dtype), "; got ", describe(a.grad_o));
  if (a.grad_final_state && a.output_final_state) {
    const TensorView& d = *a.grad_final_state;
    const Shape want = {p->N, p->HV, p->K, p->V};
    RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "q", q, "grad_final_state", d));
    RECOPS_CHECK(d.shape() == want && is_float(d.dtype) && d.is_contiguous(), kBwd,
                 ": grad_final_state must be contiguous ", shape_str(want),
                 " ([N, HV, K, V]) of fp64, fp32, fp16 or bf16; got ", describe(d));
    p->dht = d.data;
    p->dht_dtype = d.dtype;
    p->dht_view = d;
  } else if (a.grad_final_state) {
    RECOPS_CHECK(a.grad_final_state->numel() == 0, kBwd,
                 ": grad_final_state must be None or empty when output_final_state is false; got ",
                 describe(*a.grad_final_state));
  }
  p->d_o = a.grad_o.data;
  return Status::Ok();
}

Status prepare_bwd(const ChunkKdaBwdArgs& a, const ChunkKdaBwdOut& o, const Context& ctx,
                   Params* p) {
  RECOPS_RETURN_IF_ERROR(check_bwd(a, &ctx, p));
  RECOPS_RETURN_IF_ERROR(kBwdEntry.check_out("dq", o.dq, a.q, a.q.shape(), a.q.dtype, "of"));
  RECOPS_RETURN_IF_ERROR(kBwdEntry.check_out("dk", o.dk, a.q, a.k.shape(), a.k.dtype, "of"));
  RECOPS_RETURN_IF_ERROR(kBwdEntry.check_out("dv", o.dv, a.q, a.v.shape(), a.v.dtype, "of"));
  RECOPS_RETURN_IF_ERROR(kBwdEntry.check_out("dg", o.dg, a.q, a.g.shape(), a.g.dtype, "of"));
  RECOPS_RETURN_IF_ERROR(
      kBwdEntry.check_out("dbeta", o.dbeta, a.q, a.beta.shape(), a.beta.dtype, "of"));
  const bool want = a.initial_state.has_value() && a.want_d_initial_state;
  RECOPS_CHECK(want == (o.dh0 != nullptr), kBwd,
               ": dh0 must be given exactly when initial_state is given and wanted");
  if (o.dh0)
    RECOPS_RETURN_IF_ERROR(
        kBwdEntry.check_out("dh0", *o.dh0, a.q, {p->N, p->HV, p->K, p->V}, DType::fp32, "of"));
  p->dq = o.dq.data, p->dk = o.dk.data, p->dv = o.dv.data, p->dg = o.dg.data;
  p->dbeta = o.dbeta.data;
  p->dh0 = o.dh0 ? o.dh0->data : nullptr;
  p->out = o;
  return Status::Ok();
}

// Nothing to write in the backward: every gradient has no element (the extents may then be
// huge, e.g. K = V = 0 with HV = 0, so nothing may walk them).
bool bwd_empty(const ChunkKdaBwdOut& o) {
  return o.dq.numel() == 0 && o.dk.numel() == 0 && o.dv.numel() == 0 && o.dg.numel() == 0 &&
         o.dbeta.numel() == 0 && (!o.dh0 || o.dh0->numel() == 0);
}

// Nothing to write: o and final_state have no elements.
bool empty(const Params& p) {
  return training::any_zero({p.B, p.T, p.HV, p.V}) &&
         (!p.ht || training::any_zero({p.N, p.HV, p.K, p.V}));
}
}  // namespace

Layout workspace_layout(const Params& p) {
  Layout l;
  size_t at = 0;
  // Extents may be huge next to a 0 one: products through training::extent_product (0, or
  // saturated, which the workspace check then refuses).
  auto part = [&](std::initializer_list<int64_t> extents, DType t) {
    const size_t off = at;
    const int64_t elems = training::extent_product(extents);
    at += elems > (int64_t{1} << 56) ? (size_t{1} << 62)
                                     : align(static_cast<size_t>(elems) * dtype_size(t));
    return off;
  };
  if (p.l2norm) {
    l.qn = part({p.B, p.T, p.H, p.K}, p.q_dtype);
    l.kn = part({p.B, p.T, p.H, p.K}, p.k_dtype);
  }
  l.G = part({p.B, p.T, p.HV, p.K}, DType::fp32);
  l.w = part({p.B, p.T, p.HV, p.K}, p.k_dtype);
  l.u = part({p.B, p.T, p.HV, p.V}, p.v_dtype);
  l.qg = part({p.B, p.T, p.HV, p.K}, p.q_dtype);
  l.kg = part({p.B, p.T, p.HV, p.K}, p.k_dtype);
  l.Aqk = part({p.B, p.T, p.HV, p.BT}, p.k_dtype);
  l.Akk = part({p.B, p.T, p.HV, p.BT}, DType::fp32);
  l.h = part({p.B, p.NT, p.HV, p.K, p.V}, p.k_dtype);
  l.v_new = part({p.B, p.T, p.HV, p.V}, p.v_dtype);
  if (p.bwd) {
    l.dAqk = part({p.B, p.T, p.HV, p.BT}, DType::fp32);
    l.dv_local = part({p.B, p.T, p.HV, p.V}, p.v_dtype);
    l.dh = part({p.B, p.NT, p.HV, p.K, p.V}, p.q_dtype);
    l.dv2 = part({p.B, p.T, p.HV, p.V}, p.v_dtype);
    l.dq1 = part({p.B, p.T, p.H, p.K}, DType::fp32);
    l.dk1 = part({p.B, p.T, p.H, p.K}, DType::fp32);
    l.dbeta1 = part({p.B, p.T, p.HV}, DType::fp32);
    l.dG1 = part({p.B, p.T, p.HV, p.K}, DType::fp32);
    l.dAkk = part({p.B, p.T, p.HV, p.BT}, DType::fp32);
    l.dq2 = part({p.B, p.T, p.H, p.K}, DType::fp32);
    l.dk2 = part({p.B, p.T, p.H, p.K}, DType::fp32);
    l.dbeta2 = part({p.B, p.T, p.HV}, DType::fp32);
    l.dG2 = part({p.B, p.T, p.HV, p.K}, DType::fp32);
    if (p.l2norm) {
      l.dqn = part({p.B, p.T, p.H, p.K}, p.q_dtype);
      l.dkn = part({p.B, p.T, p.H, p.K}, p.k_dtype);
    }
  }
  l.total = at;
  return l;
}

}  // namespace recops::ops::chunk_kda_ns

namespace recops {

Status chunk_kda_shape(const ChunkKdaArgs& a, Shape* o_shape, DType* o_dtype,
                       Shape* final_state_shape) {
  using namespace ops::chunk_kda_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  *o_shape = a.v.shape();
  *o_dtype = a.v.dtype;
  *final_state_shape = a.output_final_state ? Shape{p.N, p.HV, p.K, p.V} : Shape{0};
  return Status::Ok();
}

size_t chunk_kda_workspace_bytes(const ChunkKdaArgs& a) {
  using namespace ops::chunk_kda_ns;
  Params p;
  if (!check_args(a, nullptr, &p).ok()) return 0;
  return workspace_layout(p).total;
}

Status chunk_kda(const ChunkKdaArgs& a, const TensorView& o, const TensorView* final_state,
                 const Context& ctx) {
  using namespace ops::chunk_kda_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, o, final_state, ctx, &p));
  const size_t need = workspace_layout(p).total;
  RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), kOp,
               ": the workspace must hold ", need, " bytes (chunk_kda_workspace_bytes); got ",
               ctx.workspace_bytes);
  p.workspace = ctx.workspace;
  p.workspace_bytes = ctx.workspace_bytes;
  if (empty(p)) return Status::Ok();
  return core::dispatch(kOp, impls(), a.q.device.type, p, ctx);
}

Status chunk_kda_plain(const ChunkKdaArgs& a, const TensorView& o, const TensorView* final_state) {
  using namespace ops::chunk_kda_ns;
  RECOPS_CHECK(a.q.device.is_cpu(), "chunk_kda_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, o, final_state, ctx, &p));
  std::vector<unsigned char> scratch(std::max<size_t>(1, workspace_layout(p).total));
  p.workspace = scratch.data();
  p.workspace_bytes = scratch.size();
  p.plain = true;
  if (empty(p)) return Status::Ok();
  return run_cpu(p, ctx);
}

Status chunk_kda_bwd_check(const ChunkKdaBwdArgs& a, bool* has_dh0) {
  using namespace ops::chunk_kda_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_bwd(a, nullptr, &p));
  *has_dh0 = a.initial_state.has_value() && a.want_d_initial_state;
  return Status::Ok();
}

size_t chunk_kda_bwd_workspace_bytes(const ChunkKdaBwdArgs& a) {
  using namespace ops::chunk_kda_ns;
  Params p;
  if (!check_bwd(a, nullptr, &p).ok()) return 0;
  return workspace_layout(p).total;
}

Status chunk_kda_bwd(const ChunkKdaBwdArgs& a, const ChunkKdaBwdOut& out, const Context& ctx) {
  using namespace ops::chunk_kda_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare_bwd(a, out, ctx, &p));
  const size_t need = workspace_layout(p).total;
  RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), kBwd,
               ": the workspace must hold ", need, " bytes (chunk_kda_bwd_workspace_bytes); got ",
               ctx.workspace_bytes);
  p.workspace = ctx.workspace;
  p.workspace_bytes = ctx.workspace_bytes;
  if (bwd_empty(out)) return Status::Ok();
  return core::dispatch(kBwd, impls(), a.q.device.type, p, ctx);
}

Status chunk_kda_bwd_plain(const ChunkKdaBwdArgs& a, const ChunkKdaBwdOut& out) {
  using namespace ops::chunk_kda_ns;
  RECOPS_CHECK(a.q.device.is_cpu(), "chunk_kda_bwd_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare_bwd(a, out, ctx, &p));
  std::vector<unsigned char> scratch(std::max<size_t>(1, workspace_layout(p).total));
  p.workspace = scratch.data();
  p.workspace_bytes = scratch.size();
  p.plain = true;
  if (bwd_empty(out)) return Status::Ok();
  return run_cpu(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_kda_ns {
namespace {
Status shapes(const ChunkKdaArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape o, ht;
  DType dt = DType::fp32;
  RECOPS_RETURN_IF_ERROR(chunk_kda_shape(a, &o, &dt, &ht));
  outs->push_back({o, dt});
  outs->push_back({ht, DType::fp32, a.output_final_state});
  return Status::Ok();
}
Status run(const ChunkKdaArgs& a, const kit::Outputs& o, const Context& ctx) {
  return chunk_kda(a, o.views[0], o.get(1), ctx);
}
size_t workspace(const ChunkKdaArgs& a, const kit::Outputs&) {
  return chunk_kda_workspace_bytes(a);
}

Status bwd_shapes(const ChunkKdaBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  bool has_dh0 = false;
  RECOPS_RETURN_IF_ERROR(chunk_kda_bwd_check(a, &has_dh0));
  outs->push_back({a.q.shape(), a.q.dtype});
  outs->push_back({a.k.shape(), a.k.dtype});
  outs->push_back({a.v.shape(), a.v.dtype});
  outs->push_back({a.g.shape(), a.g.dtype});
  outs->push_back({a.beta.shape(), a.beta.dtype});
  outs->push_back({has_dh0 ? a.initial_state->shape() : Shape{0}, DType::fp32, has_dh0});
  return Status::Ok();
}
Status bwd_run(const ChunkKdaBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  ChunkKdaBwdOut out{o.views[0], o.views[1], o.views[2], o.views[3], o.views[4], o.get(5)};
  return chunk_kda_bwd(a, out, ctx);
}
size_t bwd_workspace(const ChunkKdaBwdArgs& a, const kit::Outputs&) {
  return chunk_kda_bwd_workspace_bytes(a);
}

constexpr const char* kDoc =
    R"(The chunked Kimi Delta Attention (fla-core's ``fla.ops.kda.chunk.chunk_kda``), forward.

Per sequence and value head hv (key head ``hv // (HV // H)``), with the state S ``[K, V]``
starting at initial_state (or 0), token by token::

    S = exp(g[t])[:, None] * S          (a per-channel decay of S's K rows)
    S = S + beta[t] * outer(k[t], v[t] - S^T k[t])
    o[t] = scale * S^T q[t]

and final_state is S after the sequence's last token. It is computed in chunks of ``chunk_size``
positions by the sub-ops chunk_local_cumsum, chunk_kda_fwd_intra, chunk_gated_delta_rule_fwd_h
(with ``gk``) and chunk_fwd_o (with ``gk``); the intermediates w, u, qg, kg, Aqk, h and v_new are
stored in the input dtype, Akk and the state in fp32. CPU only for now.

Args:
    q: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    k: ``[B, T, H, K]``, q's dtype.
    v: ``[B, T, HV, V]``, q's dtype, HV a multiple of H.
    g: ``[B, T, HV, K]``: the raw per-channel log decays, natural-log units (normally <= 0; not a
        cumsum; fla's ``use_gate_in_kernel`` activation is not applied).
    beta: ``[B, T, HV]``.
    scale: default ``K ** -0.5``.
    initial_state: optional ``[N, HV, K, V]`` (fp32; any float dtype is read).
    output_final_state: also return final_state.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    use_qk_l2norm_in_kernel: l2-normalise the rows of q and k first (eps 1e-6 added to the sum
        of squares).
    chunk_size: 32 or 64.

Returns:
    ``(o, final_state)``: o ``[B, T, HV, V]`` in v's dtype; final_state ``[N, HV, K, V]`` fp32,
    or an empty ``[0]`` tensor when output_final_state is False.

Differentiable in q, k, v, g, beta and initial_state (the op ``chunk_kda_bwd``, which recomputes
the forward's intermediates and runs the KDA backward sub-ops). Double backward raises.
)";
}  // namespace
}  // namespace recops::ops::chunk_kda_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_kda_ns;
  using A = ChunkKdaArgs;
  using D = ChunkKdaBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(
      kit::Def<A>(kOp, "training")
          .arg<&A::q>("q", {.grad = true, .dense_from = 0})
          .arg<&A::k>("k", {.grad = true, .dense_from = 0})
          .arg<&A::v>("v", {.grad = true, .dense_from = 0})
          .arg<&A::g>("g", {.grad = true, .dense_from = 0})
          .arg<&A::beta>("beta", {.grad = true, .dense_from = 0})
          .arg<&A::scale>("scale", {.def = "None"})
          .arg<&A::initial_state>("initial_state", {.def = "None", .grad = true, .dense_from = 0})
          .arg<&A::output_final_state>("output_final_state", {.def = "False"})
          .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
          .arg<&A::use_qk_l2norm_in_kernel>("use_qk_l2norm_in_kernel", {.def = "False"})
          .arg<&A::chunk_size>("chunk_size", {.def = "64"})
          .out("o")
          .out("final_state")
          .shapes(shapes)
          .run(run)
          .workspace(workspace)
          .backward(kBwd)
          .doc("", kDoc));
  reg.add(kit::Def<D>(kBwd, "training")
              .arg<&D::grad_o>("grad_o", {.dense_from = 0})
              .arg<&D::grad_final_state>("grad_final_state", {.dense_from = 0})
              .arg<&D::q>("q", {.dense_from = 0})
              .arg<&D::k>("k", {.dense_from = 0})
              .arg<&D::v>("v", {.dense_from = 0})
              .arg<&D::g>("g", {.dense_from = 0})
              .arg<&D::beta>("beta", {.dense_from = 0})
              .arg<&D::scale>("scale", {.def = "None"})
              .arg<&D::initial_state>("initial_state", {.def = "None", .dense_from = 0})
              .arg<&D::output_final_state>("output_final_state", {.def = "False"})
              .arg<&D::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&D::use_qk_l2norm_in_kernel>("use_qk_l2norm_in_kernel", {.def = "False"})
              .arg<&D::chunk_size>("chunk_size", {.def = "64"})
              .arg<&D::want_d_initial_state>("want_d_initial_state", {.def = "True"})
              .out("dq")
              .out("dk")
              .out("dv")
              .out("dg")
              .out("dbeta")
              .out("dh0")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .workspace(bwd_workspace)
              .doc("-", ""));
}
