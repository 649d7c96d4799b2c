// training/l2norm/l2norm.cpp: the entry of l2norm and l2norm_bwd. All validation happens here,
// once (the family's shared checks, common/row_norm_entry.h); then the ordered implementation
// list runs the first implementation that accepts. At the end: the OpInfos and argument tables.
#include "ops/training/l2norm/l2norm.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/common/row_norm_entry.h"
#include "ops/training/l2norm/impls.h"

namespace recops::ops::l2norm_ns {
namespace {
using training::check_like;
using training::check_out_dtype;
using training::check_rows_x;

constexpr const char* kOp = "l2norm";
constexpr const char* kBwd = "l2norm_bwd";

#ifdef RECOPS_WITH_CUDA
std::string cuda_accepts(const Params& p) {
  if (p.dtype == DType::fp64) return "fp64 runs on the CPU only (the golden's dtype)";
  if (p.y_dtype != p.dtype) return "out_dtype other than x's dtype runs on the CPU only";
  return core::cuda_capability_at_least<80, Params>(p);
}
#endif

const std::vector<core::Impl<Params>>& impls() {
  static const auto list = core::with_cpu_impls<Params>(
      {
#ifdef RECOPS_WITH_CUDA
          {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason, cuda_accepts, run_cuda},
#endif
      },
      run_cpu, run_reference);
  return list;
}

Status run(const char* op, Params p, const TensorView& x, double eps, const TensorView& out,
           const Context& ctx) {
  p.x = x.data;
  p.out = out.data;
  p.dtype = x.dtype;
  p.D = x.sizes[x.ndim - 1];
  p.rows = x.numel() / p.D;
  p.eps = eps;
  p.device_index = x.device.index;
  if (p.rows == 0) return Status::Ok();  // no rows: nothing to launch
  return core::dispatch(op, impls(), x.device.type, p, ctx);
}
}  // namespace
}  // namespace recops::ops::l2norm_ns

namespace recops {

Status l2norm_shape(const L2normArgs& a, Shape* y_shape, DType* y_dtype) {
  using namespace ops::l2norm_ns;
  RECOPS_RETURN_IF_ERROR(check_rows_x(kOp, a.x, a.eps));
  RECOPS_RETURN_IF_ERROR(check_out_dtype(kOp, a.out_dtype));
  *y_shape = a.x.shape();
  *y_dtype = a.out_dtype.value_or(a.x.dtype);
  return Status::Ok();
}

Status l2norm(const L2normArgs& a, const TensorView& y, const Context& ctx) {
  using namespace ops::l2norm_ns;
  Shape s;
  DType t;
  RECOPS_RETURN_IF_ERROR(l2norm_shape(a, &s, &t));
  RECOPS_RETURN_IF_ERROR(check_like(kOp, "y", y, a.x, s, t));
  Params p;
  p.y_dtype = t;
  return run(kOp, p, a.x, a.eps, y, ctx);
}

Status l2norm_bwd(const L2normBwdArgs& a, const TensorView& dx, const Context& ctx) {
  using namespace ops::l2norm_ns;
  RECOPS_RETURN_IF_ERROR(check_rows_x(kBwd, a.x, a.eps));
  RECOPS_RETURN_IF_ERROR(check_out_dtype(kBwd, a.out_dtype));
  const DType t = a.out_dtype.value_or(a.x.dtype);
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "grad_y", a.grad_y, a.x, a.x.shape(), t));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dx", dx, a.x, a.x.shape(), a.x.dtype));
  Params p;
  p.backward = true;
  p.grad = a.grad_y.data;
  p.y_dtype = t;
  return run(kBwd, p, a.x, a.eps, dx, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::l2norm_ns {
namespace {
Status fwd_shapes(const L2normArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  DType t;
  RECOPS_RETURN_IF_ERROR(l2norm_shape(a, &s, &t));
  outs->push_back({s, t});
  return Status::Ok();
}

constexpr const char* kDoc = R"(L2 normalisation over the last dim (fla): ``y = x * r``.

Args:
    x: ``[..., D]``, D >= 1, fp64, fp32, fp16 or bf16.
    eps: added to the sum of squares, ``r = 1 / sqrt(sum(x^2) + eps)`` (not to the mean, and
        not a floor on the norm as in ``F.normalize``).
    out_dtype: y's dtype (default x's).

Returns:
    like ``x``, in out_dtype. Statistics in fp32 (fp64 for fp64), one rounding.

Differentiable in x (the op ``l2norm_bwd``, which recomputes y from x, in fp64).
Double backward raises.
)";
}  // namespace
}  // namespace recops::ops::l2norm_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::l2norm_ns;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(kit::Def<L2normArgs>(kOp, "training")
              .arg<&L2normArgs::x>("x", {.grad = true, .dense_from = 0})
              .arg<&L2normArgs::eps>("eps", {.def = "1e-06"})
              .arg<&L2normArgs::out_dtype>("out_dtype", {.def = "None"})
              .out("y")
              .shapes(fwd_shapes)
              .run_one<&l2norm>()
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<L2normBwdArgs>(kBwd, "training")
              .arg<&L2normBwdArgs::grad_y>("grad_y", {.dense_from = 0})
              .arg<&L2normBwdArgs::x>("x", {.dense_from = 0})
              .arg<&L2normBwdArgs::eps>("eps", {.def = "1e-06"})
              .arg<&L2normBwdArgs::out_dtype>("out_dtype", {.def = "None"})
              .out_like("dx", "x")
              .shapes_like<&L2normBwdArgs::x>()
              .run_one<&l2norm_bwd>()
              .doc("-", ""));
}
