// training/layer_norm/layer_norm.cpp: the entry of layer_norm, swish_layer_norm and their
// backward ops. All validation happens here, once (the family's shared checks,
// common/row_norm_entry.h, and the weight and bias rules); then the ordered implementation list
// runs the first implementation that accepts. At the end: the OpInfos and argument tables.
#include "ops/training/layer_norm/layer_norm.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/training/common/row_norm.h"
#include "ops/training/common/row_norm_entry.h"
#include "ops/training/layer_norm/impls.h"

namespace recops::ops::layer_norm_ns {
namespace {
using training::check_like;
using training::check_rows_x;

constexpr const char* kLn = "layer_norm";
constexpr const char* kLnBwd = "layer_norm_bwd";
constexpr const char* kSwish = "swish_layer_norm";
constexpr const char* kSwishBwd = "swish_layer_norm_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      training::row_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// weight or bias: [D], x's dtype, contiguous, on x's device.
Status check_vec(const char* op, const char* name, const TensorView& x,
                 const std::optional<TensorView>& t) {
  if (!t) return Status::Ok();
  const int64_t D = x.sizes[x.ndim - 1];
  RECOPS_CHECK(t->ndim == 1 && t->sizes[0] == D && t->dtype == x.dtype && t->is_contiguous(), op,
               ": ", name, " must be contiguous ", dtype_name(x.dtype), "[", D,
               "] (x's last dim and dtype); got ", describe(*t));
  return core::check_same_device(op, "x", x, name, *t);
}

// Every rule of the arguments the forwards and the backwards share; *p gets them.
template <class A>
Status check_args(const char* op, const A& a, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_rows_x(op, a.x, a.eps));
  RECOPS_RETURN_IF_ERROR(check_vec(op, "weight", a.x, a.weight));
  RECOPS_RETURN_IF_ERROR(check_vec(op, "bias", a.x, a.bias));
  p->x = a.x.data;
  p->weight = a.weight ? a.weight->data : nullptr;
  p->bias = a.bias ? a.bias->data : nullptr;
  p->dtype = a.x.dtype;
  p->D = a.x.sizes[a.x.ndim - 1];
  p->rows = a.x.numel() / p->D;
  p->eps = a.eps;
  p->device_index = a.x.device.index;
  return Status::Ok();
}

Status forward(const char* op, bool swish, const LayerNormArgs& a, const TensorView& y,
               const Context& ctx) {
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(op, a, &p));
  RECOPS_RETURN_IF_ERROR(check_like(op, "y", y, a.x, a.x.shape(), a.x.dtype));
  p.swish = swish;
  p.out = y.data;
  if (p.rows == 0) return Status::Ok();  // no rows: nothing to launch
  return core::dispatch(op, impls(), a.x.device.type, p, ctx);
}

Status backward(const char* op, bool swish, const LayerNormBwdArgs& a, const TensorView& dx,
                const TensorView* dweight, const TensorView* dbias, const Context& ctx) {
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(op, a, &p));
  RECOPS_RETURN_IF_ERROR(check_like(op, "grad_y", a.grad_y, a.x, a.x.shape(), a.x.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(op, "dx", dx, a.x, a.x.shape(), a.x.dtype));
  const bool with_dw = a.weight && a.want_dweight, with_db = a.bias && a.want_dbias;
  RECOPS_CHECK(with_dw == (dweight != nullptr), op,
               ": dweight must be given exactly when weight is given and want_dweight is true");
  RECOPS_CHECK(with_db == (dbias != nullptr), op,
               ": dbias must be given exactly when bias is given and want_dbias is true");
  p.backward = true;
  p.swish = swish;
  p.grad = a.grad_y.data;
  p.out = dx.data;
  if (with_dw) {
    RECOPS_RETURN_IF_ERROR(check_like(op, "dweight", *dweight, a.x, {p.D}, a.x.dtype));
    p.dweight = dweight->data;
  }
  if (with_db) {
    RECOPS_RETURN_IF_ERROR(check_like(op, "dbias", *dbias, a.x, {p.D}, a.x.dtype));
    p.dbias = dbias->data;
  }
  if (with_dw || with_db) {
    const size_t need = layer_norm_bwd_workspace_bytes(a);
    RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), op,
                 ": the workspace must hold ", need,
                 " bytes (layer_norm_bwd_workspace_bytes); got ", ctx.workspace_bytes);
    p.workspace = ctx.workspace;
  } else if (p.rows == 0) {
    return Status::Ok();  // no rows and no column sums: nothing to launch
  }
  return core::dispatch(op, impls(), a.x.device.type, p, ctx);  // no rows: dweight, dbias = 0
}
}  // namespace
}  // namespace recops::ops::layer_norm_ns

namespace recops {

Status layer_norm_shape(const LayerNormArgs& a, Shape* y_shape) {
  using namespace ops::layer_norm_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kLn, a, &p));
  *y_shape = a.x.shape();
  return Status::Ok();
}

Status swish_layer_norm_shape(const LayerNormArgs& a, Shape* y_shape) {
  using namespace ops::layer_norm_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kSwish, a, &p));
  *y_shape = a.x.shape();
  return Status::Ok();
}

Status layer_norm(const LayerNormArgs& a, const TensorView& y, const Context& ctx) {
  return ops::layer_norm_ns::forward(ops::layer_norm_ns::kLn, false, a, y, ctx);
}

Status swish_layer_norm(const LayerNormArgs& a, const TensorView& y, const Context& ctx) {
  return ops::layer_norm_ns::forward(ops::layer_norm_ns::kSwish, true, a, y, ctx);
}

size_t layer_norm_bwd_workspace_bytes(const LayerNormBwdArgs& a) {
  const int n = (a.weight && a.want_dweight ? 1 : 0) + (a.bias && a.want_dbias ? 1 : 0);
  if (n == 0 || a.x.ndim < 1 || a.x.sizes[a.x.ndim - 1] < 1) return 0;
  const int64_t D = a.x.sizes[a.x.ndim - 1];
  const int64_t P = ops::training::norm_partials(a.x.numel() / D, D);
  return static_cast<size_t>(n * P * D) * sizeof(double);  // fp64 partials (README)
}

Status layer_norm_bwd(const LayerNormBwdArgs& a, const TensorView& dx, const TensorView* dweight,
                      const TensorView* dbias, const Context& ctx) {
  return ops::layer_norm_ns::backward(ops::layer_norm_ns::kLnBwd, false, a, dx, dweight, dbias,
                                      ctx);
}

Status swish_layer_norm_bwd(const LayerNormBwdArgs& a, const TensorView& dx,
                            const TensorView* dweight, const TensorView* dbias,
                            const Context& ctx) {
  return ops::layer_norm_ns::backward(ops::layer_norm_ns::kSwishBwd, true, a, dx, dweight, dbias,
                                      ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::layer_norm_ns {
namespace {
template <const char* const* kOp>
Status bwd_shapes(const LayerNormBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(*kOp, a, &p));
  const bool with_dw = a.weight && a.want_dweight, with_db = a.bias && a.want_dbias;
  outs->push_back({a.x.shape(), a.x.dtype});
  outs->push_back({with_dw ? Shape{p.D} : Shape{0}, a.x.dtype, with_dw});
  outs->push_back({with_db ? Shape{p.D} : Shape{0}, a.x.dtype, with_db});
  return Status::Ok();
}
constexpr const char* kLnName = kLnBwd;
constexpr const char* kSwishName = kSwishBwd;
Status ln_bwd_run(const LayerNormBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return layer_norm_bwd(a, o.views[0], o.get(1), o.get(2), ctx);
}
Status swish_bwd_run(const LayerNormBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return swish_layer_norm_bwd(a, o.views[0], o.get(1), o.get(2), ctx);
}
size_t bwd_workspace(const LayerNormBwdArgs& a, const kit::Outputs&) {
  return layer_norm_bwd_workspace_bytes(a);
}

constexpr const char* kLnDoc =
    R"(LayerNorm over the last dim: ``y = (x - mean) * r * weight + bias``.

Args:
    x: ``[..., D]``, D >= 1, fp64, fp32, fp16 or bf16.
    weight, bias: ``[D]`` of x's dtype, or None (1 and 0).
    eps: added to the (biased) variance, ``r = 1 / sqrt(var + eps)``.

Returns:
    like ``x``. Computed in fp64 (the centring and the bias cancel), one rounding.

Differentiable in x, weight and bias (the op ``layer_norm_bwd``, which recomputes the mean and
r from x; dweight and dbias are summed over rows in two fixed-order fp64 stages). Double
backward raises.
)";

constexpr const char* kSwishDoc =
    R"(Swish LayerNorm (HSTU): ``y = sigmoid(layer_norm(x, weight, bias, eps)) * x``.

Args:
    x: ``[..., D]``, D >= 1, fp64, fp32, fp16 or bf16.
    weight, bias: ``[D]`` of x's dtype, or None (1 and 0).
    eps: added to the (biased) variance.

Returns:
    like ``x``. Computed in fp64, one rounding.

Differentiable in x, weight and bias (the op ``swish_layer_norm_bwd``, which recomputes the
statistics from x). Double backward raises.
)";

template <const char* const* kOp, Status (*kShape)(const LayerNormArgs&, Shape*),
          Status (*kRun)(const LayerNormArgs&, const TensorView&, const Context&)>
kit::Def<LayerNormArgs> fwd_def(const char* bwd, const char* doc) {
  using A = LayerNormArgs;
  return kit::Def<A>(*kOp, "training")
      .arg<&A::x>("x", {.grad = true, .dense_from = 0})
      .arg<&A::weight>("weight", {.def = "None", .grad = true, .dense_from = 0})
      .arg<&A::bias>("bias", {.def = "None", .grad = true, .dense_from = 0})
      .arg<&A::eps>("eps", {.def = "1e-05"})
      .out_like("y", "x")
      .template shapes_from<kShape, &A::x>()
      .template run_one<kRun>()
      .backward(bwd)
      .doc("", doc);
}

template <const char* const* kOp>
kit::Def<LayerNormBwdArgs> bwd_def(Status (*run)(const LayerNormBwdArgs&, const kit::Outputs&,
                                                 const Context&)) {
  using B = LayerNormBwdArgs;
  return kit::Def<B>(*kOp, "training")
      .arg<&B::grad_y>("grad_y", {.dense_from = 0})
      .arg<&B::x>("x", {.dense_from = 0})
      .arg<&B::weight>("weight", {.def = "None", .dense_from = 0})
      .arg<&B::bias>("bias", {.def = "None", .dense_from = 0})
      .arg<&B::eps>("eps", {.def = "1e-05"})
      .arg<&B::want_dweight>("want_dweight", {.def = "True"})
      .arg<&B::want_dbias>("want_dbias", {.def = "True"})
      .out_like("dx", "x")
      .out("dweight")
      .out("dbias")
      .shapes(bwd_shapes<kOp>)
      .run(run)
      .workspace(bwd_workspace)
      .doc("-", "");
}
constexpr const char* kLnFwdName = kLn;
constexpr const char* kSwishFwdName = kSwish;
}  // namespace
}  // namespace recops::ops::layer_norm_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::layer_norm_ns;
  for (const char* op : {kLn, kLnBwd, kSwish, kSwishBwd})
    reg.add(OpInfo{op, "training", core::describe_impls(impls())});
  reg.add(fwd_def<&kLnFwdName, &layer_norm_shape, &layer_norm>(kLnBwd, kLnDoc));
  reg.add(bwd_def<&kLnName>(ln_bwd_run));
  reg.add(
      fwd_def<&kSwishFwdName, &swish_layer_norm_shape, &swish_layer_norm>(kSwishBwd, kSwishDoc));
  reg.add(bwd_def<&kSwishName>(swish_bwd_run));
}
