// training/inplace_rope/inplace_rope.cpp: the entry. All validation happens here, once; then the
// ordered implementation list runs the first implementation that accepts. At the end: the
// registration (the OpInfos for `recops list` and the argument tables for the bindings).
#include "ops/training/inplace_rope/inplace_rope.h"

#include <cstdint>
#include <string>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/inplace_rope/impls.h"

namespace recops::ops::inplace_rope_ns {
namespace {
constexpr const char* kOp = "inplace_rope_";
constexpr const char* kBwd = "inplace_rope_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

bool is_float(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// The checks shared by the forward and the backward: x (named `xn`: "x" or "dy"), cos and sin.
// Fills every field of p but the destination.
Status check(const char* op, const char* xn, const TensorView& x, const TensorView& cos,
             const TensorView& sin, bool inverse, Params* p) {
  RECOPS_CHECK(is_float(x.dtype), op, ": ", xn, " must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(x.dtype));
  RECOPS_CHECK(x.ndim == 4 || x.ndim == 3, op, ": ", xn,
               " must be [B, L, H, Dh] or [T, H, Dh] (packed), got ", describe(x));
  const bool packed = x.ndim == 3;
  const char* cos_forms =
      packed ? "[T, R/2] (x is packed [T, H, Dh])" : "[L, R/2] or [B, L, R/2] (x is [B, L, H, Dh])";
  RECOPS_CHECK(cos.ndim == 2 || (!packed && cos.ndim == 3), op, ": cos must be ", cos_forms,
               ", got ", describe(cos));
  RECOPS_CHECK(sin.shape() == cos.shape(), op, ": sin must have cos's shape ",
               shape_str(cos.shape()), ", got ", describe(sin));
  RECOPS_CHECK(cos.dtype == sin.dtype && (cos.dtype == DType::fp32 || cos.dtype == x.dtype), op,
               ": cos and sin must both be fp32 or both ", xn, "'s dtype (", dtype_name(x.dtype),
               "), got cos ", dtype_name(cos.dtype), " and sin ", dtype_name(sin.dtype));
  RECOPS_CHECK(cos.device == x.device && sin.device == x.device, op, ": cos and sin must be on ",
               xn, "'s device (", describe(x), "), got cos ", describe(cos), ", sin ",
               describe(sin));
  p->B = packed ? 1 : x.sizes[0];
  p->L = x.sizes[packed ? 0 : 1];
  p->H = x.size(-2);
  p->Dh = x.size(-1);
  p->half = cos.size(-1);
  const char* lname = packed ? "T" : "L";
  RECOPS_CHECK(cos.size(-2) == p->L, op, ": cos.shape[-2] = ", cos.size(-2), " must equal ", xn,
               "'s ", lname, " = ", p->L, " (one row of angles per position)");
  if (cos.ndim == 3)
    RECOPS_CHECK(cos.sizes[0] == p->B, op, ": cos.shape[0] = ", cos.sizes[0], " must equal ", xn,
                 "'s B = ", p->B, " (or give cos as [L, R/2], shared over the batch)");
  // R = 2·half <= Dh, tested without forming 2·half (an empty cos may have a huge last dim).
  RECOPS_CHECK(
      p->half <= p->Dh / 2, op, ": the rope width R = 2 * cos.shape[-1] = ",
      p->half <= INT64_MAX / 2 ? std::to_string(2 * p->half) : "2 * " + std::to_string(p->half),
      " must be <= ", xn, "'s head dim Dh = ", p->Dh);
  RECOPS_CHECK(p->Dh <= 1 || x.stride(-1) == 1, op, ": ", xn,
               "'s last dim must have unit stride (any other dim may be strided), got ",
               describe(x), " with stride ", x.stride(-1));
  RECOPS_CHECK(p->half <= 1 || (cos.stride(-1) == 1 && sin.stride(-1) == 1), op,
               ": cos's and sin's last dims must have unit stride, got strides ", cos.stride(-1),
               " and ", sin.stride(-1));
  p->src = x.data;
  p->src_sb = packed ? 0 : x.strides[0];
  p->src_sl = x.strides[packed ? 0 : 1];
  p->src_sh = x.stride(-2);
  p->dtype = x.dtype;
  p->cos = cos.data;
  p->sin = sin.data;
  p->cs_sb = cos.ndim == 3 ? cos.strides[0] : 0;
  p->cs_sl = cos.stride(-2);
  p->sn_sb = sin.ndim == 3 ? sin.strides[0] : 0;
  p->sn_sl = sin.stride(-2);
  p->cs_dtype = cos.dtype;
  p->sign = inverse ? -1 : 1;
  p->device_index = x.device.index;
  return Status::Ok();
}

// The forward's x is written in place: two of its heads (or positions) sharing an element would
// make the result depend on the order of the writes. Every dim but the last that has more than
// one entry needs a stride of at least Dh (a sufficient rule for views of distinct rows, which is
// what slices, transposes and padded rows are).
Status check_no_overlap(const char* op, const TensorView& x) {
  if (x.numel() == 0) return Status::Ok();
  const int64_t dh = x.size(-1);
  for (int i = 0; i + 1 < x.ndim; ++i)
    RECOPS_CHECK(x.sizes[i] <= 1 || x.strides[i] >= dh, op, ": x's dim ", i, " has stride ",
                 x.strides[i], " < Dh = ", dh,
                 ", so its rows overlap; an in-place op needs distinct elements (got ", describe(x),
                 ")");
  return Status::Ok();
}

Status run(const char* op, const Params& p, DeviceType dev, const Context& ctx) {
  if (p.B == 0 || p.L == 0 || p.H == 0 || p.Dh == 0) return Status::Ok();  // empty
  if (!p.copy_nope && p.half == 0) return Status::Ok();  // in place, nothing to rotate
  return core::dispatch(op, impls(), dev, p, ctx);
}

Status check_forward(const InplaceRopeArgs& a, Params* p) {
  RECOPS_RETURN_IF_ERROR(check(kOp, "x", a.x, a.cos, a.sin, a.inverse, p));
  RECOPS_RETURN_IF_ERROR(check_no_overlap(kOp, a.x));
  p->dst = a.x.data;
  p->dst_sb = p->src_sb;
  p->dst_sl = p->src_sl;
  p->dst_sh = p->src_sh;
  p->copy_nope = false;
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::inplace_rope_ns

namespace recops {

Status inplace_rope_shape(const InplaceRopeArgs& a, Shape* out_shape) {
  ops::inplace_rope_ns::Params p;
  RECOPS_RETURN_IF_ERROR(ops::inplace_rope_ns::check_forward(a, &p));
  *out_shape = a.x.shape();
  return Status::Ok();
}

Status inplace_rope_(const InplaceRopeArgs& a, const Context& ctx) {
  using namespace ops::inplace_rope_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_forward(a, &p));
  return run(kOp, p, a.x.device.type, ctx);
}

Status inplace_rope_bwd(const InplaceRopeBwdArgs& a, const TensorView& dx, const Context& ctx) {
  using namespace ops::inplace_rope_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check(kBwd, "dy", a.dy, a.cos, a.sin, !a.inverse, &p));
  RECOPS_CHECK(dx.shape() == a.dy.shape() && dx.dtype == a.dy.dtype && dx.is_contiguous(), kBwd,
               ": dx must be contiguous with dy's shape and dtype (", describe(a.dy), "), got ",
               describe(dx));
  RECOPS_CHECK(dx.device == a.dy.device, kBwd, ": dx must be on dy's device (", describe(a.dy),
               "), got ", describe(dx));
  const bool packed = dx.ndim == 3;
  p.dst = dx.data;
  p.dst_sb = packed ? 0 : dx.strides[0];
  p.dst_sl = dx.strides[packed ? 0 : 1];
  p.dst_sh = dx.stride(-2);
  p.copy_nope = true;
  return run(kBwd, p, a.dy.device.type, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::inplace_rope_ns {
namespace {
// The kit's halves of the forward: the shape function validates once into the plan (the
// params), the run dispatches it; the output is x itself (Def::out_mutated).
Status kit_shapes(const InplaceRopeArgs& a, Params* p, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_forward(a, p));
  outs->push_back({a.x.shape(), a.x.dtype});
  return Status::Ok();
}
Status kit_run(const InplaceRopeArgs& a, const Params& p, const kit::Outputs&, const Context& ctx) {
  return run(kOp, p, a.x.device.type, ctx);
}

constexpr const char* kDoc = R"(Interleaved (GPT-J style) rotary embedding of the trailing rope
slice of every head, in place (DeepSeek V4's ``apply_rotary_pos_emb``).

Each head is laid out ``[nope | rope]``; only its last ``R = 2 * cos.shape[-1]`` channels are
read and written. Pair i of the slice (channels ``Dh - R + 2i`` and ``+1``) becomes
``(x0 * c - x1 * s, x1 * c + x0 * s)`` with ``c = cos[.., i]``, ``s = sin[.., i]``;
``inverse=True`` rotates by the opposite angle. Math in fp32 (fp64 for fp64), one rounding.

Args:
    x: ``[B, L, H, Dh]``, or ``[T, H, Dh]`` packed; fp64, fp32, fp16 or bf16. Only the last dim
        needs a unit stride (a transposed ``[B, H, L, Dh]`` view works and is written in place).
    cos: ``[L, R/2]`` (shared over the batch), ``[B, L, R/2]``, or ``[T, R/2]`` for packed x;
        fp32 or x's dtype.
    sin: cos's shape and dtype.
    inverse: the conjugate rotation.

Returns:
    ``x`` itself, modified in place.

Differentiable in ``x`` (the op ``inplace_rope_bwd``: the opposite rotation of the gradient);
cos and sin get no gradient (HF's rope has none), a cos that requires grad is treated as a
constant. As every in-place op, it refuses a leaf that requires grad: pass ``x.clone()``.
)";
}  // namespace
}  // namespace recops::ops::inplace_rope_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::inplace_rope_ns;
  using A = InplaceRopeArgs;
  using B = InplaceRopeBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A, Params>(kOp, "training")
              .arg<&A::x>("x", {.grad = true, .mutated = true})
              .arg<&A::cos>("cos", {.dense_from = -2})
              .arg<&A::sin>("sin", {.dense_from = -2})
              .arg<&A::inverse>("inverse", {.def = "False"})
              .out_mutated("x", "x")
              .shapes(kit_shapes)
              .run(kit_run)
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::dy>("dy", {.dense_from = -2})
              .arg<&B::cos>("cos", {.dense_from = -2})
              .arg<&B::sin>("sin", {.dense_from = -2})
              .arg<&B::inverse>("inverse", {.def = "False"})
              .out_like("dx", "dy")
              .shapes_like<&B::dy>()
              .run_one<&inplace_rope_bwd>()
              .doc("-", ""));
}
