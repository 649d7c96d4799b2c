// training/mhc_pre_bmm/mhc_pre_bmm.cpp: the entry. All validation happens here, once; then the
// ordered implementation list runs the first implementation that accepts. At the end: the
// registration (the OpInfos for `recops list` and the argument tables for the bindings).
#include "ops/training/mhc_pre_bmm/mhc_pre_bmm.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/mhc_pre_bmm/impls.h"

namespace recops::ops::mhc_pre_bmm_ns {
namespace {
constexpr const char* kOp = "mhc_pre_bmm";
constexpr const char* kBwd = "mhc_pre_bmm_bwd";

// CPU only for now: no CUDA implementation has been validated on a GPU yet (README, Limits).
const std::vector<core::Impl<Params>>& impls() {
  static const auto list = core::with_cpu_impls<Params>({}, run_cpu, run_reference);
  return list;
}

bool is_float_dtype(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// A tensor `t` named `name` that must be contiguous with `shape` and `dtype`, on X's device.
Status check_tensor(const char* op, const char* name, const TensorView& t, const Shape& shape,
                    DType dtype, const TensorView& X) {
  RECOPS_CHECK(t.shape() == shape && t.dtype == dtype && t.is_contiguous(), op, ": ", name,
               " must be contiguous, ", dtype_name(dtype), " with shape ", shape_str(shape),
               "; got ", describe(t));
  RECOPS_CHECK(t.device == X.device, op, ": ", name, " must be on X's device (", describe(X),
               "), got ", describe(t));
  return Status::Ok();
}

// The forward's arguments (shared by the backward); sets y's shape and dtype.
Status check_args(const char* op, const MhcPreBmmArgs& a, Shape* y_shape, DType* y_dtype) {
  const TensorView& X = a.X;
  RECOPS_CHECK(is_float_dtype(X.dtype), op, ": X must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(X.dtype));
  RECOPS_CHECK(X.ndim >= 2, op, ": X must have at least two dims ([..., n, C]), got ", describe(X));
  RECOPS_CHECK(X.is_contiguous(), op, ": X must be contiguous");
  Shape h_shape(X.sizes, X.sizes + X.ndim - 1);  // [..., n]
  const DType cd = X.dtype == DType::fp64 ? DType::fp64 : DType::fp32;
  RECOPS_RETURN_IF_ERROR(check_tensor(op, "h_pre", a.h_pre, h_shape, cd, X));
  RECOPS_CHECK(!a.out_dtype || is_float_dtype(*a.out_dtype), op,
               ": out_dtype must be fp64, fp32, fp16 or bf16, got ", dtype_name(*a.out_dtype));
  *y_shape = Shape(X.sizes, X.sizes + X.ndim - 2);
  y_shape->push_back(X.size(-1));
  *y_dtype = a.out_dtype.value_or(DType::fp32);
  return Status::Ok();
}

Params params_of(const MhcPreBmmArgs& a, DType y_dtype) {
  Params p;
  p.h_pre = a.h_pre.data;
  p.X = a.X.data;
  p.x_dtype = a.X.dtype;
  p.coef_dtype = a.h_pre.dtype;
  p.y_dtype = y_dtype;
  p.n = a.X.size(-2);
  p.C = a.X.size(-1);
  p.tokens = 1;  // the product of X's leading dims
  for (int d = 0; d < a.X.ndim - 2; ++d) p.tokens = TensorView::mul_sat(p.tokens, a.X.sizes[d]);
  return p;
}
}  // namespace
}  // namespace recops::ops::mhc_pre_bmm_ns

namespace recops {

Status mhc_pre_bmm_shape(const MhcPreBmmArgs& a, Shape* out_shape, DType* out_dtype) {
  return ops::mhc_pre_bmm_ns::check_args(ops::mhc_pre_bmm_ns::kOp, a, out_shape, out_dtype);
}

Status mhc_pre_bmm(const MhcPreBmmArgs& a, const TensorView& y, const Context& ctx) {
  using namespace ops::mhc_pre_bmm_ns;
  Shape ys;
  DType yt;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &ys, &yt));
  RECOPS_RETURN_IF_ERROR(check_tensor(kOp, "y", y, ys, yt, a.X));
  Params p = params_of(a, yt);
  p.y = y.data;
  // n = 0 still writes y (zeros: a sum over no streams).
  if (p.tokens == 0 || p.C == 0) return Status::Ok();
  return core::dispatch(kOp, impls(), a.X.device.type, p, ctx);
}

Status mhc_pre_bmm_bwd(const MhcPreBmmBwdArgs& a, const TensorView& dh_pre, const TensorView& dX,
                       const Context& ctx) {
  using namespace ops::mhc_pre_bmm_ns;
  const MhcPreBmmArgs f{a.h_pre, a.X, a.out_dtype};
  Shape ys;
  DType yt;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, f, &ys, &yt));
  RECOPS_RETURN_IF_ERROR(check_tensor(kBwd, "dy", a.dy, ys, yt, a.X));
  RECOPS_RETURN_IF_ERROR(check_tensor(kBwd, "dh_pre", dh_pre, a.h_pre.shape(), a.h_pre.dtype, a.X));
  RECOPS_RETURN_IF_ERROR(check_tensor(kBwd, "dX", dX, a.X.shape(), a.X.dtype, a.X));
  Params p = params_of(f, yt);
  p.dy = a.dy.data;
  p.dh_pre = dh_pre.data;
  p.dX = dX.data;
  p.backward = true;
  // C = 0 still writes dh_pre (zeros: a sum over no channels).
  if (p.tokens == 0 || p.n == 0) return Status::Ok();
  return core::dispatch(kBwd, impls(), a.X.device.type, p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::mhc_pre_bmm_ns {
namespace {
constexpr const char* kDoc = R"(mHC pre-mix (DeepSeek V4 hyper-connections): collapses the n
residual streams into a block's input, ``y[..., :] = sum_i h_pre[..., i] * X[..., i, :]``.

Args:
    h_pre: ``[..., n]`` fp32 (fp64 when X is fp64), the pre weights.
    X: ``[..., n, C]`` residual streams, fp64, fp32, fp16 or bf16.
    out_dtype: y's dtype (default fp32; DeepSeek V4 casts to X's dtype).

Returns:
    y ``[..., C]`` (fp32 arithmetic, fp64 for fp64 X; one rounding).

Differentiable in h_pre and X (the op ``mhc_pre_bmm_bwd``): ``dX_i = dy * h_pre_i`` in X's
dtype, ``dh_pre_i = <dy, X_i>`` in fp32, a per-token sum in a fixed order (no atomics).
)";

Status fwd_shapes(const MhcPreBmmArgs& a, std::vector<kit::OutSpec>* outs) {
  kit::OutSpec s;
  RECOPS_RETURN_IF_ERROR(mhc_pre_bmm_shape(a, &s.shape, &s.dtype));
  outs->push_back(s);
  return Status::Ok();
}
Status bwd_shapes(const MhcPreBmmBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape ys;
  DType yt;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, {a.h_pre, a.X, a.out_dtype}, &ys, &yt));
  RECOPS_CHECK(a.dy.shape() == ys && a.dy.dtype == yt, kBwd, ": dy must have y's shape ",
               shape_str(ys), " and dtype ", dtype_name(yt), ", got ", describe(a.dy));
  outs->push_back({a.h_pre.shape(), a.h_pre.dtype});
  outs->push_back({a.X.shape(), a.X.dtype});
  return Status::Ok();
}
Status bwd_run(const MhcPreBmmBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return mhc_pre_bmm_bwd(a, o.views[0], o.views[1], ctx);
}
}  // namespace
}  // namespace recops::ops::mhc_pre_bmm_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::mhc_pre_bmm_ns;
  using A = MhcPreBmmArgs;
  using B = MhcPreBmmBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::h_pre>("h_pre", {.grad = true, .dense_from = 0})
              .arg<&A::X>("X", {.grad = true, .dense_from = 0})
              .arg<&A::out_dtype>("out_dtype", {.def = "None"})
              .out("y")
              .shapes(fwd_shapes)
              .run_one<&mhc_pre_bmm>()
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::dy>("dy", {.dense_from = 0})
              .arg<&B::h_pre>("h_pre", {.dense_from = 0})
              .arg<&B::X>("X", {.dense_from = 0})
              .arg<&B::out_dtype>("out_dtype", {.def = "None"})
              .out_like("dh_pre", "h_pre")
              .out_like("dX", "X")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
