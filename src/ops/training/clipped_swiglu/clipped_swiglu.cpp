// training/clipped_swiglu/clipped_swiglu.cpp: the entry. All validation happens here, once; then
// the ordered implementation list runs the first implementation that accepts. At the end: the
// registration (the OpInfos for `recops list` and the argument tables for the bindings).
#include "ops/training/clipped_swiglu/clipped_swiglu.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/clipped_swiglu/impls.h"

namespace recops::ops::clipped_swiglu_ns {
namespace {
constexpr const char* kOp = "clipped_swiglu";
constexpr const char* kBwd = "clipped_swiglu_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// x and the scalars, shared by the forward and the backward.
Status check_x(const char* op, const ClippedSwigluArgs& a) {
  const TensorView& x = a.x;
  RECOPS_CHECK(x.dtype == DType::fp64 || x.dtype == DType::fp32 || x.dtype == DType::fp16 ||
                   x.dtype == DType::bf16,
               op, ": x must be fp64, fp32, fp16 or bf16, got ", dtype_name(x.dtype));
  RECOPS_CHECK(x.ndim >= 1, op, ": x must have at least one dim ([..., 2I])");
  RECOPS_CHECK(x.sizes[x.ndim - 1] % 2 == 0, op, ": x's last dim must be even ([..., 2I]), got ",
               x.sizes[x.ndim - 1]);
  RECOPS_CHECK(x.is_contiguous(), op, ": x must be contiguous");
  RECOPS_CHECK(!std::isnan(a.limit) && a.limit >= 0, op, ": limit must be >= 0 (or +inf), got ",
               a.limit);
  RECOPS_CHECK(std::isfinite(a.alpha), op, ": alpha must be finite, got ", a.alpha);
  RECOPS_CHECK(std::isfinite(a.linear_offset), op, ": linear_offset must be finite, got ",
               a.linear_offset);
  return Status::Ok();
}

// A tensor `t` named `name` that must be contiguous with `shape`, x's dtype and device.
Status check_like(const char* op, const char* name, const TensorView& t, const Shape& shape,
                  const TensorView& x) {
  RECOPS_CHECK(t.shape() == shape && t.dtype == x.dtype && t.is_contiguous(), op, ": ", name,
               " must be contiguous, ", dtype_name(x.dtype), " with shape ", shape_str(shape),
               "; got ", describe(t));
  RECOPS_CHECK(t.device == x.device, op, ": ", name, " must be on x's device (", describe(x),
               "), got ", describe(t));
  return Status::Ok();
}

Shape half_shape(const TensorView& x) {
  Shape s = x.shape();
  s.back() /= 2;
  return s;
}

Status run(const char* op, const ClippedSwigluArgs& a, const TensorView* dy, const TensorView& out,
           const Context& ctx) {
  Params p;
  p.x = a.x.data;
  p.dy = dy ? dy->data : nullptr;
  p.out = out.data;
  p.dtype = a.x.dtype;
  p.I = a.x.sizes[a.x.ndim - 1] / 2;
  p.rows = p.I == 0 ? 0 : a.x.numel() / (2 * p.I);
  p.alpha = a.alpha;
  p.limit = a.limit;
  p.linear_offset = a.linear_offset;
  p.interleaved = a.interleaved;
  p.backward = dy != nullptr;
  p.device_index = a.x.device.index;
  if (p.rows == 0 || p.I == 0) return Status::Ok();  // empty: nothing to launch
  return core::dispatch(op, impls(), a.x.device.type, p, ctx);
}
}  // namespace
}  // namespace recops::ops::clipped_swiglu_ns

namespace recops {

Status clipped_swiglu_shape(const ClippedSwigluArgs& a, Shape* out_shape) {
  using namespace ops::clipped_swiglu_ns;
  RECOPS_RETURN_IF_ERROR(check_x(kOp, a));
  *out_shape = half_shape(a.x);
  return Status::Ok();
}

Status clipped_swiglu(const ClippedSwigluArgs& a, const TensorView& y, const Context& ctx) {
  using namespace ops::clipped_swiglu_ns;
  RECOPS_RETURN_IF_ERROR(check_x(kOp, a));
  RECOPS_RETURN_IF_ERROR(check_like(kOp, "y", y, half_shape(a.x), a.x));
  return run(kOp, a, nullptr, y, ctx);
}

Status clipped_swiglu_bwd(const ClippedSwigluBwdArgs& a, const TensorView& dx, const Context& ctx) {
  using namespace ops::clipped_swiglu_ns;
  RECOPS_RETURN_IF_ERROR(check_x(kBwd, a));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dy", a.dy, half_shape(a.x), a.x));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dx", dx, a.x.shape(), a.x));
  return run(kBwd, a, &a.dy, dx, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::clipped_swiglu_ns {
namespace {
constexpr const char* kDoc = R"(Clipped SwiGLU (gpt-oss; DeepSeek V4 with ``alpha=1``,
``linear_offset=0``, ``interleaved=False``):
``y = min(g, L) * sigmoid(alpha * min(g, L)) * (clamp(u, -L, L) + linear_offset)``.

Args:
    x: ``[..., 2I]``, fp64, fp32, fp16 or bf16 (the binding makes it contiguous).
    alpha: the sigmoid's slope.
    limit: L >= 0; ``float('inf')`` disables clipping.
    linear_offset: added to the clamped linear part.
    interleaved: gate = channel 2i, linear = 2i+1 (gpt-oss); False: gate = x[..., :I],
        linear = x[..., I:].

Returns:
    y ``[..., I]`` in x's dtype (fp32 arithmetic for 16-bit inputs, one rounding).

Differentiable in ``x`` (the op ``clipped_swiglu_bwd``, which recomputes the sigmoid). NaN
propagates through the clamps as in torch.
)";
}  // namespace
}  // namespace recops::ops::clipped_swiglu_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::clipped_swiglu_ns;
  using A = ClippedSwigluArgs;
  using B = ClippedSwigluBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::x>("x", {.grad = true, .dense_from = 0})
              .arg<&A::alpha>("alpha", {.def = "1.702"})
              .arg<&A::limit>("limit", {.def = "7.0"})
              .arg<&A::linear_offset>("linear_offset", {.def = "1.0"})
              .arg<&A::interleaved>("interleaved", {.def = "True"})
              .out("y")
              .shapes_from<&clipped_swiglu_shape, &A::x>()
              .run_one<&clipped_swiglu>()
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::dy>("dy", {.dense_from = 0})
              .arg<&B::x>("x", {.dense_from = 0})
              .arg<&B::alpha>("alpha", {.def = "1.702"})
              .arg<&B::limit>("limit", {.def = "7.0"})
              .arg<&B::linear_offset>("linear_offset", {.def = "1.0"})
              .arg<&B::interleaved>("interleaved", {.def = "True"})
              .out_like("dx", "x")
              .shapes_like<&B::x>()
              .run_one<&clipped_swiglu_bwd>()
              .doc("-", ""));
}
