// training/common/gdn_composed.h: the entry that the composed Gated DeltaNet op
// (chunk_gated_delta_rule, g [B, T, HV]) and the composed Kimi Delta Attention op (chunk_kda,
// g [B, T, HV, K]) share: every rule on the forward's and the backward's arguments (check_args,
// prepare, check_bwd, prepare_bwd), the workspace checks, the bodies of their C++ API functions
// and their argument tables. An op supplies a traits struct Op:
//   Args, BwdArgs, BwdOut, Params (a training::ComposedParams);
//   kOp, kBwd (the two ops' names); kGatePerChannel (g has a trailing K);
//   kMinChunk (16: chunk_size 16, 32 or 64; 32: 32 or 64) and kChunkNote (said after the rule);
//   impls() (the ordered implementation list), run_cpu, workspace_total(const Params&).
// Each message names the op, the argument and the rule.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::training {

template <class Op>
struct GdnComposed {
  using Args = typename Op::Args;
  using BwdArgs = typename Op::BwdArgs;
  using BwdOut = typename Op::BwdOut;
  using P = typename Op::Params;
  static constexpr const char* kOp = Op::kOp;
  static constexpr const char* kBwd = Op::kBwd;
  static constexpr GdnEntry kEntry{Op::kOp, "q"};
  static constexpr GdnEntry kBwdEntry{Op::kBwd, "q"};

  // Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's
  // context, or nullptr in the shape function (no data read: the offsets' values are checked by
  // the run).
  static Status check_args(const Args& a, const Context* ctx, P* p) {
    const TensorView& q = a.q;
    RECOPS_RETURN_IF_ERROR(kEntry.lead(q, "[B, T, H, K]"));
    const int64_t B = q.sizes[0], T = q.sizes[1], H = q.sizes[2], K = q.sizes[3];
    RECOPS_RETURN_IF_ERROR(
        kEntry.check_tensor("k", a.k, q, q.shape(), "[B, T, H, K] (q's)", q.dtype));
    RECOPS_RETURN_IF_ERROR(
        kEntry.check_tensor("v", a.v, q, {B, T, -1, -1}, "[B, T, HV, V] (q's B, T)", q.dtype));
    const int64_t HV = a.v.sizes[2], V = a.v.sizes[3];
    RECOPS_RETURN_IF_ERROR(kEntry.gva("v", HV, H));
    if constexpr (Op::kGatePerChannel)
      RECOPS_RETURN_IF_ERROR(
          kEntry.check_tensor("g", a.g, q, {B, T, HV, K}, "[B, T, HV, K] (v's HV, q's K)"));
    else
      RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("g", a.g, q, {B, T, HV}, "[B, T, HV] (v's HV)"));
    RECOPS_RETURN_IF_ERROR(
        kEntry.check_tensor("beta", a.beta, q, {B, T, HV}, "[B, T, HV] (v's HV)"));
    const int64_t bt = a.chunk_size;
    if constexpr (Op::kMinChunk == 16)
      RECOPS_RETURN_IF_ERROR(kEntry.chunk_size(bt));
    else
      RECOPS_CHECK(bt == 32 || bt == 64, kOp, ": chunk_size=", bt, " must be 32 or 64",
                   Op::kChunkNote);
    if (a.scale)
      RECOPS_CHECK(std::isfinite(*a.scale), kOp, ": scale=", *a.scale, " must be finite");
    int64_t N = B;
    RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, q, B, T, ctx, &N, p));
    if (a.initial_state)
      RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("initial_state", *a.initial_state, q,
                                                 {N, HV, K, V}, "[N, HV, K, V] (N sequences)"));
    p->q = q.data, p->k = a.k.data, p->v = a.v.data, p->g = a.g.data, p->beta = a.beta.data;
    p->h0 = a.initial_state ? a.initial_state->data : nullptr;
    p->q_dtype = q.dtype, p->k_dtype = a.k.dtype, p->v_dtype = a.v.dtype;
    p->g_dtype = a.g.dtype, p->beta_dtype = a.beta.dtype;
    p->h0_dtype = a.initial_state ? a.initial_state->dtype : DType::fp32;
    p->o_dtype = a.v.dtype;
    p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
    p->BT = bt;
    p->N = N;
    p->device_index = q.device.index;
    // The chunk states' NT: ceil(T / BT) per batch row; with offsets the sync-free bound
    // ceil(T / BT) + N (§4.2), which fwd_h takes by default.
    p->NT = chunk_count(T, bt) + (a.seq_offsets ? N : 0);
    p->scale = a.scale ? *a.scale : (K > 0 ? 1.0 / std::sqrt(static_cast<double>(K)) : 1.0);
    p->l2norm = a.use_qk_l2norm_in_kernel;
    p->args = a;
    p->args.scale = p->scale;
    return Status::Ok();
  }

  static Status prepare(const Args& a, const TensorView& o, const TensorView* ht,
                        const Context& ctx, P* p) {
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

  // The backward's rules beyond the forward's (check_args): grad_o like o, grad_final_state
  // [N, HV, K, V] floating with output_final_state (else None or empty), the outputs' views.
  static Status check_bwd(const BwdArgs& a, const Context* ctx, P* p) {
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
      RECOPS_CHECK(
          a.grad_final_state->numel() == 0, kBwd,
          ": grad_final_state must be None or empty when output_final_state is false; got ",
          describe(*a.grad_final_state));
    }
    p->d_o = a.grad_o.data;
    return Status::Ok();
  }

  static Status prepare_bwd(const BwdArgs& a, const BwdOut& o, const Context& ctx, P* p) {
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
  static bool bwd_empty(const BwdOut& o) {
    return o.dq.numel() == 0 && o.dk.numel() == 0 && o.dv.numel() == 0 && o.dg.numel() == 0 &&
           o.dbeta.numel() == 0 && (!o.dh0 || o.dh0->numel() == 0);
  }

  // Nothing to write: o and final_state have no elements.
  static bool empty(const P& p) {
    return any_zero({p.B, p.T, p.HV, p.V}) && (!p.ht || any_zero({p.N, p.HV, p.K, p.V}));
  }

  // The caller's workspace holds the layout's `need` bytes (the message names op's
  // *_workspace_bytes).
  static Status take_workspace(const char* op, const Context& ctx, size_t need, P* p) {
    RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), op,
                 ": the workspace must hold ", need, " bytes (", op, "_workspace_bytes); got ",
                 ctx.workspace_bytes);
    p->workspace = ctx.workspace;
    p->workspace_bytes = ctx.workspace_bytes;
    return Status::Ok();
  }

  // The plain baseline's own scratch (p->plain: cpu/ composes the sub-ops' plain baselines).
  static void own_scratch(std::vector<unsigned char>* scratch, P* p) {
    scratch->resize(std::max<size_t>(1, Op::workspace_total(*p)));
    p->workspace = scratch->data();
    p->workspace_bytes = scratch->size();
    p->plain = true;
  }

  // ---- the bodies of the C++ API (the op's header) ----
  static Status shape(const Args& a, Shape* o_shape, DType* o_dtype, Shape* final_state_shape) {
    P p;
    RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
    *o_shape = a.v.shape();
    *o_dtype = a.v.dtype;
    *final_state_shape = a.output_final_state ? Shape{p.N, p.HV, p.K, p.V} : Shape{0};
    return Status::Ok();
  }

  static size_t workspace_bytes(const Args& a) {
    P p;
    if (!check_args(a, nullptr, &p).ok()) return 0;
    return Op::workspace_total(p);
  }

  static Status forward(const Args& a, const TensorView& o, const TensorView* final_state,
                        const Context& ctx) {
    P p;
    RECOPS_RETURN_IF_ERROR(prepare(a, o, final_state, ctx, &p));
    RECOPS_RETURN_IF_ERROR(take_workspace(kOp, ctx, Op::workspace_total(p), &p));
    if (empty(p)) return Status::Ok();
    return core::dispatch(kOp, Op::impls(), a.q.device.type, p, ctx);
  }

  static Status plain(const Args& a, const TensorView& o, const TensorView* final_state) {
    RECOPS_CHECK(a.q.device.is_cpu(), kOp, "_plain: CPU tensors only");
    const Context ctx;
    P p;
    RECOPS_RETURN_IF_ERROR(prepare(a, o, final_state, ctx, &p));
    std::vector<unsigned char> scratch;
    own_scratch(&scratch, &p);
    if (empty(p)) return Status::Ok();
    return Op::run_cpu(p, ctx);
  }

  static Status bwd_check(const BwdArgs& a, bool* has_dh0) {
    P p;
    RECOPS_RETURN_IF_ERROR(check_bwd(a, nullptr, &p));
    *has_dh0 = a.initial_state.has_value() && a.want_d_initial_state;
    return Status::Ok();
  }

  static size_t bwd_workspace_bytes(const BwdArgs& a) {
    P p;
    if (!check_bwd(a, nullptr, &p).ok()) return 0;
    return Op::workspace_total(p);
  }

  static Status backward(const BwdArgs& a, const BwdOut& out, const Context& ctx) {
    P p;
    RECOPS_RETURN_IF_ERROR(prepare_bwd(a, out, ctx, &p));
    RECOPS_RETURN_IF_ERROR(take_workspace(kBwd, ctx, Op::workspace_total(p), &p));
    if (bwd_empty(out)) return Status::Ok();
    return core::dispatch(kBwd, Op::impls(), a.q.device.type, p, ctx);
  }

  static Status bwd_plain(const BwdArgs& a, const BwdOut& out) {
    RECOPS_CHECK(a.q.device.is_cpu(), kBwd, "_plain: CPU tensors only");
    const Context ctx;
    P p;
    RECOPS_RETURN_IF_ERROR(prepare_bwd(a, out, ctx, &p));
    std::vector<unsigned char> scratch;
    own_scratch(&scratch, &p);
    if (bwd_empty(out)) return Status::Ok();
    return Op::run_cpu(p, ctx);
  }

  // ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
  static Status kit_shapes(const Args& a, std::vector<kit::OutSpec>* outs) {
    Shape o, ht;
    DType dt = DType::fp32;
    RECOPS_RETURN_IF_ERROR(shape(a, &o, &dt, &ht));
    outs->push_back({o, dt});
    outs->push_back({ht, DType::fp32, a.output_final_state});
    return Status::Ok();
  }
  static Status kit_run(const Args& a, const kit::Outputs& o, const Context& ctx) {
    return forward(a, o.views[0], o.get(1), ctx);
  }
  static size_t kit_workspace(const Args& a, const kit::Outputs&) { return workspace_bytes(a); }

  static Status kit_bwd_shapes(const BwdArgs& a, std::vector<kit::OutSpec>* outs) {
    bool has_dh0 = false;
    RECOPS_RETURN_IF_ERROR(bwd_check(a, &has_dh0));
    outs->push_back({a.q.shape(), a.q.dtype});
    outs->push_back({a.k.shape(), a.k.dtype});
    outs->push_back({a.v.shape(), a.v.dtype});
    outs->push_back({a.g.shape(), a.g.dtype});
    outs->push_back({a.beta.shape(), a.beta.dtype});
    outs->push_back({has_dh0 ? a.initial_state->shape() : Shape{0}, DType::fp32, has_dh0});
    return Status::Ok();
  }
  static Status kit_bwd_run(const BwdArgs& a, const kit::Outputs& o, const Context& ctx) {
    BwdOut out{o.views[0], o.views[1], o.views[2], o.views[3], o.views[4], o.get(5)};
    return backward(a, out, ctx);
  }
  static size_t kit_bwd_workspace(const BwdArgs& a, const kit::Outputs&) {
    return bwd_workspace_bytes(a);
  }

  // The two OpInfos and argument tables (the forward with .backward(kBwd); `doc` its docstring).
  static void register_ops(kit::Registry& reg, const char* doc) {
    using A = Args;
    using D = BwdArgs;
    reg.add(OpInfo{kOp, "training", core::describe_impls(Op::impls())});
    reg.add(OpInfo{kBwd, "training", core::describe_impls(Op::impls())});
    reg.add(
        kit::Def<A>(kOp, "training")
            .template arg<&A::q>("q", {.grad = true, .dense_from = 0})
            .template arg<&A::k>("k", {.grad = true, .dense_from = 0})
            .template arg<&A::v>("v", {.grad = true, .dense_from = 0})
            .template arg<&A::g>("g", {.grad = true, .dense_from = 0})
            .template arg<&A::beta>("beta", {.grad = true, .dense_from = 0})
            .template arg<&A::scale>("scale", {.def = "None"})
            .template arg<&A::initial_state>("initial_state",
                                             {.def = "None", .grad = true, .dense_from = 0})
            .template arg<&A::output_final_state>("output_final_state", {.def = "False"})
            .template arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
            .template arg<&A::use_qk_l2norm_in_kernel>("use_qk_l2norm_in_kernel", {.def = "False"})
            .template arg<&A::chunk_size>("chunk_size", {.def = "64"})
            .out("o")
            .out("final_state")
            .shapes(kit_shapes)
            .run(kit_run)
            .workspace(kit_workspace)
            .backward(kBwd)
            .doc("", doc));
    reg.add(
        kit::Def<D>(kBwd, "training")
            .template arg<&D::grad_o>("grad_o", {.dense_from = 0})
            .template arg<&D::grad_final_state>("grad_final_state", {.dense_from = 0})
            .template arg<&D::q>("q", {.dense_from = 0})
            .template arg<&D::k>("k", {.dense_from = 0})
            .template arg<&D::v>("v", {.dense_from = 0})
            .template arg<&D::g>("g", {.dense_from = 0})
            .template arg<&D::beta>("beta", {.dense_from = 0})
            .template arg<&D::scale>("scale", {.def = "None"})
            .template arg<&D::initial_state>("initial_state", {.def = "None", .dense_from = 0})
            .template arg<&D::output_final_state>("output_final_state", {.def = "False"})
            .template arg<&D::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
            .template arg<&D::use_qk_l2norm_in_kernel>("use_qk_l2norm_in_kernel", {.def = "False"})
            .template arg<&D::chunk_size>("chunk_size", {.def = "64"})
            .template arg<&D::want_d_initial_state>("want_d_initial_state", {.def = "True"})
            .out("dq")
            .out("dk")
            .out("dv")
            .out("dg")
            .out("dbeta")
            .out("dh0")
            .shapes(kit_bwd_shapes)
            .run(kit_bwd_run)
            .workspace(kit_bwd_workspace)
            .doc("-", ""));
  }
};

}  // namespace recops::ops::training
