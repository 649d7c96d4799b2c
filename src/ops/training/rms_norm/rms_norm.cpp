// training/rms_norm/rms_norm.cpp: the entry of rms_norm, rms_norm_bwd, rms_norm_rstd and
// rms_norm_rstd_bwd. All validation happens here, once; then the ordered implementation list runs
// the first implementation that accepts. At the end: the OpInfos and the argument tables.
#include "ops/training/rms_norm/rms_norm.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/training/common/row_norm.h"
#include "ops/training/common/row_norm_entry.h"
#include "ops/training/rms_norm/impls.h"

namespace recops::ops::rms_norm_ns {
namespace {
using training::check_like;
using training::check_out_dtype;
using training::check_rows_x;

constexpr const char* kOp = "rms_norm";
constexpr const char* kBwd = "rms_norm_bwd";
constexpr const char* kRstd = "rms_norm_rstd";
constexpr const char* kRstdBwd = "rms_norm_rstd_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      training::row_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

Status check_weight(const char* op, const TensorView& x, const std::optional<TensorView>& w,
                    double weight_offset) {
  RECOPS_CHECK(std::isfinite(weight_offset), op, ": weight_offset=", weight_offset,
               " must be finite");
  if (!w) return Status::Ok();
  const int64_t D = x.sizes[x.ndim - 1];
  RECOPS_CHECK(w->ndim == 1 && w->sizes[0] == D, op, ": weight must be [D] = [", D,
               "] (x's last dim); got ", describe(*w));
  RECOPS_CHECK(w->dtype == x.dtype, op, ": weight must have x's dtype (", dtype_name(x.dtype),
               "); got ", dtype_name(w->dtype));
  RECOPS_CHECK(w->is_contiguous(), op, ": weight must be contiguous; got ", describe(*w));
  return core::check_same_device(op, "x", x, "weight", *w);
}

Shape r_shape_of(const TensorView& x) {
  Shape s = x.shape();
  s.back() = 1;
  return s;
}

Params params_of(Mode mode, const TensorView& x, double eps, const TensorView& out) {
  Params p;
  p.mode = mode;
  p.x = x.data;
  p.out = out.data;
  p.dtype = x.dtype;
  p.D = x.sizes[x.ndim - 1];
  p.rows = x.numel() / p.D;
  p.eps = eps;
  p.device_index = x.device.index;
  return p;
}

Status run(const char* op, const Params& p, DeviceType dev, const Context& ctx) {
  if (p.rows == 0) return Status::Ok();  // no rows: nothing to launch
  return core::dispatch(op, impls(), dev, p, ctx);
}
}  // namespace
}  // namespace recops::ops::rms_norm_ns

namespace recops {

Status rms_norm_shape(const RmsNormArgs& a, Shape* y_shape) {
  using namespace ops::rms_norm_ns;
  RECOPS_RETURN_IF_ERROR(check_rows_x(kOp, a.x, a.eps));
  RECOPS_RETURN_IF_ERROR(check_weight(kOp, a.x, a.weight, a.weight_offset));
  *y_shape = a.x.shape();
  return Status::Ok();
}

Status rms_norm(const RmsNormArgs& a, const TensorView& y, const Context& ctx) {
  using namespace ops::rms_norm_ns;
  Shape s;
  RECOPS_RETURN_IF_ERROR(rms_norm_shape(a, &s));
  RECOPS_RETURN_IF_ERROR(check_like(kOp, "y", y, a.x, s, a.x.dtype));
  Params p = params_of(Mode::norm, a.x, a.eps, y);
  p.weight = a.weight ? a.weight->data : nullptr;
  p.weight_offset = a.weight_offset;
  return run(kOp, p, a.x.device.type, ctx);
}

size_t rms_norm_bwd_workspace_bytes(const RmsNormBwdArgs& a) {
  if (!a.weight || !a.want_dweight || a.x.ndim < 1 || a.x.sizes[a.x.ndim - 1] < 1) return 0;
  const int64_t D = a.x.sizes[a.x.ndim - 1];
  const int64_t P = ops::training::norm_partials(a.x.numel() / D, D);
  return static_cast<size_t>(P * D) * (a.x.dtype == DType::fp64 ? 8 : 4);
}

Status rms_norm_bwd(const RmsNormBwdArgs& a, const TensorView& dx, const TensorView* dweight,
                    const Context& ctx) {
  using namespace ops::rms_norm_ns;
  RECOPS_RETURN_IF_ERROR(check_rows_x(kBwd, a.x, a.eps));
  RECOPS_RETURN_IF_ERROR(check_weight(kBwd, a.x, a.weight, a.weight_offset));
  RECOPS_CHECK(
      a.grad_y.shape() == a.x.shape() && a.grad_y.dtype == a.x.dtype && a.grad_y.is_contiguous(),
      kBwd, ": grad_y must be contiguous with x's shape and dtype (", describe(a.x), "); got ",
      describe(a.grad_y));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "x", a.x, "grad_y", a.grad_y));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dx", dx, a.x, a.x.shape(), a.x.dtype));
  const bool with_dw = a.weight && a.want_dweight;
  RECOPS_CHECK(with_dw == (dweight != nullptr), kBwd, ": dweight must be given exactly when ",
               "weight is given and want_dweight is true");
  Params p = params_of(Mode::norm_bwd, a.x, a.eps, dx);
  p.grad = a.grad_y.data;
  p.weight = a.weight ? a.weight->data : nullptr;
  p.weight_offset = a.weight_offset;
  if (with_dw) {
    RECOPS_RETURN_IF_ERROR(
        check_like(kBwd, "dweight", *dweight, a.x, a.weight->shape(), a.weight->dtype));
    const size_t need = rms_norm_bwd_workspace_bytes(a);
    RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), kBwd,
                 ": the workspace must hold ", need, " bytes (rms_norm_bwd_workspace_bytes); got ",
                 ctx.workspace_bytes);
    p.dweight = dweight->data;
    p.workspace = ctx.workspace;
    if (p.rows == 0) {  // no rows: dweight = 0
      return core::dispatch(kBwd, impls(), a.x.device.type, p, ctx);
    }
  }
  return run(kBwd, p, a.x.device.type, ctx);
}

Status rms_norm_rstd_shape(const RmsNormRstdArgs& a, Shape* r_shape, DType* r_dtype) {
  using namespace ops::rms_norm_ns;
  RECOPS_RETURN_IF_ERROR(check_rows_x(kRstd, a.x, a.eps));
  RECOPS_RETURN_IF_ERROR(check_out_dtype(kRstd, a.out_dtype));
  *r_shape = r_shape_of(a.x);
  *r_dtype = a.out_dtype.value_or(DType::fp32);
  return Status::Ok();
}

Status rms_norm_rstd(const RmsNormRstdArgs& a, const TensorView& r, const Context& ctx) {
  using namespace ops::rms_norm_ns;
  Shape s;
  DType t;
  RECOPS_RETURN_IF_ERROR(rms_norm_rstd_shape(a, &s, &t));
  RECOPS_RETURN_IF_ERROR(check_like(kRstd, "r", r, a.x, s, t));
  Params p = params_of(Mode::rstd, a.x, a.eps, r);
  p.r_dtype = t;
  return run(kRstd, p, a.x.device.type, ctx);
}

Status rms_norm_rstd_bwd(const RmsNormRstdBwdArgs& a, const TensorView& dx, const Context& ctx) {
  using namespace ops::rms_norm_ns;
  RECOPS_RETURN_IF_ERROR(check_rows_x(kRstdBwd, a.x, a.eps));
  RECOPS_RETURN_IF_ERROR(check_out_dtype(kRstdBwd, a.out_dtype));
  const DType t = a.out_dtype.value_or(DType::fp32);
  const Shape rs = r_shape_of(a.x);
  RECOPS_CHECK(a.grad_r.shape() == rs && a.grad_r.dtype == t && a.grad_r.is_contiguous(), kRstdBwd,
               ": grad_r must be contiguous ", dtype_name(t), shape_str(rs),
               " (r's shape and dtype); got ", describe(a.grad_r));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kRstdBwd, "x", a.x, "grad_r", a.grad_r));
  RECOPS_RETURN_IF_ERROR(check_like(kRstdBwd, "dx", dx, a.x, a.x.shape(), a.x.dtype));
  Params p = params_of(Mode::rstd_bwd, a.x, a.eps, dx);
  p.grad = a.grad_r.data;
  p.r_dtype = t;
  return run(kRstdBwd, p, a.x.device.type, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::rms_norm_ns {
namespace {
Status bwd_shapes(const RmsNormBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_rows_x(kBwd, a.x, a.eps));
  RECOPS_RETURN_IF_ERROR(check_weight(kBwd, a.x, a.weight, a.weight_offset));
  const bool with_dw = a.weight && a.want_dweight;
  outs->push_back({a.x.shape(), a.x.dtype});
  outs->push_back({with_dw ? a.weight->shape() : Shape{0}, a.x.dtype, with_dw});
  return Status::Ok();
}
Status bwd_run(const RmsNormBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return rms_norm_bwd(a, o.views[0], o.get(1), ctx);
}
size_t bwd_workspace(const RmsNormBwdArgs& a, const kit::Outputs&) {
  return rms_norm_bwd_workspace_bytes(a);
}
Status rstd_shapes(const RmsNormRstdArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  DType t;
  RECOPS_RETURN_IF_ERROR(rms_norm_rstd_shape(a, &s, &t));
  outs->push_back({s, t});
  return Status::Ok();
}

constexpr const char* kDoc = R"(RMSNorm over the last dim: ``y = x * r * (weight_offset + weight)``.

Args:
    x: ``[..., D]``, D >= 1, fp64, fp32, fp16 or bf16.
    weight: ``[D]`` of x's dtype, or None (no scale: ``y = x * r``).
    eps: added to the mean of squares, ``r = 1 / sqrt(mean(x^2) + eps)``.
    weight_offset: added to weight (1.0 for the Gemma form); unused without weight.

Returns:
    like ``x``. Statistics in fp32 (fp64 for fp64), one rounding to x's dtype (no rounding of
    the normalised x before the weight).

Differentiable in x and weight (the op ``rms_norm_bwd``, which recomputes r from x; dweight is
summed over rows in two fixed-order fp32 stages). Double backward raises.
)";

constexpr const char* kRstdDoc = R"(The RMS statistic alone: ``r = 1 / sqrt(mean(x^2) + eps)``.

Args:
    x: ``[..., D]``, D >= 1, fp64, fp32, fp16 or bf16.
    eps: added to the mean of squares.
    out_dtype: r's dtype (default fp32; MindSpeed's RmsnormWithoutWeight is ``x.dtype``).

Returns:
    ``[..., 1]`` in out_dtype.

Differentiable in x (the op ``rms_norm_rstd_bwd``: ``dx = -dr * r^3 * x / D``).
)";
}  // namespace
}  // namespace recops::ops::rms_norm_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::rms_norm_ns;
  for (const char* op : {kOp, kBwd, kRstd, kRstdBwd})
    reg.add(OpInfo{op, "training", core::describe_impls(impls())});
  reg.add(kit::Def<RmsNormArgs>(kOp, "training")
              .arg<&RmsNormArgs::x>("x", {.grad = true, .dense_from = 0})
              .arg<&RmsNormArgs::weight>("weight", {.def = "None", .grad = true, .dense_from = 0})
              .arg<&RmsNormArgs::eps>("eps", {.def = "1e-06"})
              .arg<&RmsNormArgs::weight_offset>("weight_offset", {.def = "0.0"})
              .out_like("y", "x")
              .shapes_from<&rms_norm_shape, &RmsNormArgs::x>()
              .run_one<&rms_norm>()
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<RmsNormBwdArgs>(kBwd, "training")
              .arg<&RmsNormBwdArgs::grad_y>("grad_y", {.dense_from = 0})
              .arg<&RmsNormBwdArgs::x>("x", {.dense_from = 0})
              .arg<&RmsNormBwdArgs::weight>("weight", {.def = "None", .dense_from = 0})
              .arg<&RmsNormBwdArgs::eps>("eps", {.def = "1e-06"})
              .arg<&RmsNormBwdArgs::weight_offset>("weight_offset", {.def = "0.0"})
              .arg<&RmsNormBwdArgs::want_dweight>("want_dweight", {.def = "True"})
              .out_like("dx", "x")
              .out("dweight")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .workspace(bwd_workspace)
              .doc("-", ""));
  reg.add(kit::Def<RmsNormRstdArgs>(kRstd, "training")
              .arg<&RmsNormRstdArgs::x>("x", {.grad = true, .dense_from = 0})
              .arg<&RmsNormRstdArgs::eps>("eps", {.def = "1e-06"})
              .arg<&RmsNormRstdArgs::out_dtype>("out_dtype", {.def = "None"})
              .out("r")
              .shapes(rstd_shapes)
              .run_one<&rms_norm_rstd>()
              .backward(kRstdBwd)
              .doc("", kRstdDoc));
  reg.add(kit::Def<RmsNormRstdBwdArgs>(kRstdBwd, "training")
              .arg<&RmsNormRstdBwdArgs::grad_r>("grad_r", {.dense_from = 0})
              .arg<&RmsNormRstdBwdArgs::x>("x", {.dense_from = 0})
              .arg<&RmsNormRstdBwdArgs::eps>("eps", {.def = "1e-06"})
              .arg<&RmsNormRstdBwdArgs::out_dtype>("out_dtype", {.def = "None"})
              .out_like("dx", "x")
              .shapes_like<&RmsNormRstdBwdArgs::x>()
              .run_one<&rms_norm_rstd_bwd>()
              .doc("-", ""));
}
