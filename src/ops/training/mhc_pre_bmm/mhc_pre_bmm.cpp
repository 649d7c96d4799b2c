// training/mhc_pre_bmm/mhc_pre_bmm.cpp: the entry. All validation happens here, once; then the
// ordered implementation list runs the first implementation that accepts. At the end: the
// registration (the OpInfos for `recops list` and the argument tables for the bindings).
#include "ops/training/mhc_pre_bmm/mhc_pre_bmm.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/common/mhc_entry.h"
#include "ops/training/mhc_pre_bmm/impls.h"

namespace recops::ops::mhc_pre_bmm_ns {
namespace {
using training::check_like;
using training::check_out_dtype;
using training::check_streams;
using training::mhc_coef_dtype;
using training::mhc_lead_plus;
using training::mhc_tokens;

constexpr const char* kOp = "mhc_pre_bmm";
constexpr const char* kBwd = "mhc_pre_bmm_bwd";

// cuda_sm80 (CUDA builds), cpu_generic, reference (README, Implementations).
const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// The forward's arguments (shared by the backward); sets y's shape and dtype.
Status check_args(const char* op, const MhcPreBmmArgs& a, Shape* y_shape, DType* y_dtype) {
  const TensorView& X = a.X;
  RECOPS_RETURN_IF_ERROR(check_streams(op, X));
  RECOPS_RETURN_IF_ERROR(
      check_like(op, "h_pre", a.h_pre, X, mhc_lead_plus(X, {X.size(-2)}), mhc_coef_dtype(X.dtype)));
  RECOPS_RETURN_IF_ERROR(check_out_dtype(op, a.out_dtype));
  *y_shape = mhc_lead_plus(X, {X.size(-1)});
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
  p.tokens = mhc_tokens(a.X);
  p.device_index = a.X.device.index;
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
  RECOPS_RETURN_IF_ERROR(check_like(kOp, "y", y, a.X, ys, yt));
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
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dy", a.dy, a.X, ys, yt));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dh_pre", dh_pre, a.X, a.h_pre.shape(), a.h_pre.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dX", dX, a.X, a.X.shape(), a.X.dtype));
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
    y ``[..., C]`` (fp64 arithmetic on the CPU; one rounding).

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
