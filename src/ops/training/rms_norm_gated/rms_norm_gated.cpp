// training/rms_norm_gated/rms_norm_gated.cpp: the entry of rms_norm_gated and rms_norm_gated_bwd.
// All validation happens here, once (the family's shared checks, common/row_norm_entry.h, and
// this op's z, weight, bias, activation and group_size rules); then the ordered implementation
// list runs the first implementation that accepts. At the end: the OpInfos and argument tables.
#include "ops/training/rms_norm_gated/rms_norm_gated.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/training/common/row_norm.h"
#include "ops/training/common/row_norm_entry.h"
#include "ops/training/rms_norm_gated/impls.h"

namespace recops::ops::rms_norm_gated_ns {
namespace {
using training::check_like;
using training::check_rows_x;

constexpr const char* kOp = "rms_norm_gated";
constexpr const char* kBwd = "rms_norm_gated_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      training::row_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference, run_cpu_avx2);
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

// Every rule of the arguments the forward and the backward share; *p gets them.
template <class A>
Status check_args(const char* op, const A& a, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_rows_x(op, a.x, a.eps));
  RECOPS_RETURN_IF_ERROR(check_like(op, "z", a.z, a.x, a.x.shape(), a.x.dtype));
  RECOPS_RETURN_IF_ERROR(check_vec(op, "weight", a.x, a.weight));
  RECOPS_RETURN_IF_ERROR(check_vec(op, "bias", a.x, a.bias));
  const int act = static_cast<int>(a.activation);
  RECOPS_CHECK(act >= 0 && act <= 2, op, ": activation=", act,
               " must be silu (0), sigmoid (1) or swish (2, = silu)");
  const int64_t D = a.x.sizes[a.x.ndim - 1];
  RECOPS_CHECK(a.group_size >= 0 && (a.group_size == 0 || D % a.group_size == 0), op,
               ": group_size=", a.group_size, " must be 0 (= D) or divide D=", D);
  p->x = a.x.data;
  p->z = a.z.data;
  p->weight = a.weight ? a.weight->data : nullptr;
  p->bias = a.bias ? a.bias->data : nullptr;
  p->sigmoid = a.activation == GateActivation::sigmoid;
  p->norm_before_gate = a.norm_before_gate;
  p->dtype = a.x.dtype;
  p->D = D;
  p->rows = a.x.numel() / D;
  p->group = a.group_size == 0 ? D : a.group_size;
  p->eps = a.eps;
  p->device_index = a.x.device.index;
  return Status::Ok();
}

int with_partials(const RmsNormGatedBwdArgs& a) {
  return (a.weight && a.want_dweight ? 1 : 0) + (a.bias && a.want_dbias ? 1 : 0);
}
}  // namespace
}  // namespace recops::ops::rms_norm_gated_ns

namespace recops {

Status rms_norm_gated_shape(const RmsNormGatedArgs& a, Shape* y_shape) {
  using namespace ops::rms_norm_gated_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &p));
  *y_shape = a.x.shape();
  return Status::Ok();
}

Status rms_norm_gated(const RmsNormGatedArgs& a, const TensorView& y, const Context& ctx) {
  using namespace ops::rms_norm_gated_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &p));
  RECOPS_RETURN_IF_ERROR(check_like(kOp, "y", y, a.x, a.x.shape(), a.x.dtype));
  p.out = y.data;
  if (p.rows == 0) return Status::Ok();  // no rows: nothing to launch
  return core::dispatch(kOp, impls(), a.x.device.type, p, ctx);
}

size_t rms_norm_gated_bwd_workspace_bytes(const RmsNormGatedBwdArgs& a) {
  const int n = ops::rms_norm_gated_ns::with_partials(a);
  if (n == 0 || a.x.ndim < 1 || a.x.sizes[a.x.ndim - 1] < 1) return 0;
  const int64_t D = a.x.sizes[a.x.ndim - 1];
  const int64_t P = ops::training::norm_partials(a.x.numel() / D, D);
  return static_cast<size_t>(n * P * D) * sizeof(double);  // fp64 partials (README)
}

Status rms_norm_gated_bwd(const RmsNormGatedBwdArgs& a, const TensorView& dx, const TensorView& dz,
                          const TensorView* dweight, const TensorView* dbias, const Context& ctx) {
  using namespace ops::rms_norm_gated_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, &p));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "grad_y", a.grad_y, a.x, a.x.shape(), a.x.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dx", dx, a.x, a.x.shape(), a.x.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dz", dz, a.x, a.x.shape(), a.x.dtype));
  const bool with_dw = a.weight && a.want_dweight, with_db = a.bias && a.want_dbias;
  RECOPS_CHECK(with_dw == (dweight != nullptr), kBwd,
               ": dweight must be given exactly when weight is given and want_dweight is true");
  RECOPS_CHECK(with_db == (dbias != nullptr), kBwd,
               ": dbias must be given exactly when bias is given and want_dbias is true");
  p.backward = true;
  p.grad = a.grad_y.data;
  p.out = dx.data;
  p.dz = dz.data;
  if (with_dw) {
    RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dweight", *dweight, a.x, {p.D}, a.x.dtype));
    p.dweight = dweight->data;
  }
  if (with_db) {
    RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dbias", *dbias, a.x, {p.D}, a.x.dtype));
    p.dbias = dbias->data;
  }
  if (with_dw || with_db) {
    const size_t need = rms_norm_gated_bwd_workspace_bytes(a);
    RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), kBwd,
                 ": the workspace must hold ", need,
                 " bytes (rms_norm_gated_bwd_workspace_bytes); got ", ctx.workspace_bytes);
    p.workspace = ctx.workspace;
  } else if (p.rows == 0) {
    return Status::Ok();  // no rows and no column sums: nothing to launch
  }
  return core::dispatch(kBwd, impls(), a.x.device.type, p, ctx);  // no rows: dweight, dbias = 0
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::rms_norm_gated_ns {
namespace {
Status bwd_shapes(const RmsNormGatedBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, &p));
  const bool with_dw = a.weight && a.want_dweight, with_db = a.bias && a.want_dbias;
  outs->push_back({a.x.shape(), a.x.dtype});
  outs->push_back({a.x.shape(), a.x.dtype});
  outs->push_back({with_dw ? Shape{p.D} : Shape{0}, a.x.dtype, with_dw});
  outs->push_back({with_db ? Shape{p.D} : Shape{0}, a.x.dtype, with_db});
  return Status::Ok();
}
Status bwd_run(const RmsNormGatedBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return rms_norm_gated_bwd(a, o.views[0], o.views[1], o.get(2), o.get(3), ctx);
}
size_t bwd_workspace(const RmsNormGatedBwdArgs& a, const kit::Outputs&) {
  return rms_norm_gated_bwd_workspace_bytes(a);
}

constexpr const char* kActNames = "silu sigmoid swish";

constexpr const char* kDoc =
    R"(Gated RMSNorm over groups of the last dim (fla FusedRMSNormGated, Mamba2).

With ``a(z) = z * sigmoid(z)`` (silu, swish) or ``sigmoid(z)`` and, per group of group_size
columns, ``r = 1 / sqrt(mean(v^2) + eps)``:
``norm_before_gate=True``: ``y = (x * r * weight + bias) * a(z)`` (v = x);
``norm_before_gate=False``: ``y = v * r * weight + bias`` with ``v = x * a(z)``.

Args:
    x: ``[..., D]``, D >= 1, fp64, fp32, fp16 or bf16.
    z: the gate, like x.
    weight, bias: ``[D]`` of x's dtype, or None (1 and 0).
    eps: added to the mean of squares (fla's module default is 1e-5; Qwen3-Next uses 1e-6).
    activation: "silu" (also "swish") or "sigmoid".
    group_size: columns per normalisation group; divides D; 0 means D.
    norm_before_gate: normalise x then gate (True), or gate then normalise (False).

Returns:
    like ``x``. Computed in fp64 (the bias and the gate-first form cancel), one rounding.

Differentiable in x, z, weight and bias (the op ``rms_norm_gated_bwd``, which recomputes r from
x and z, in fp64; dweight and dbias are summed over rows in two fixed-order fp64 stages).
Double backward raises.
)";
}  // namespace
}  // namespace recops::ops::rms_norm_gated_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::rms_norm_gated_ns;
  using A = RmsNormGatedArgs;
  using B = RmsNormGatedBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::x>("x", {.grad = true, .dense_from = 0})
              .arg<&A::z>("z", {.grad = true, .dense_from = 0})
              .arg<&A::weight>("weight", {.def = "None", .grad = true, .dense_from = 0})
              .arg<&A::bias>("bias", {.def = "None", .grad = true, .dense_from = 0})
              .arg<&A::eps>("eps", {.def = "1e-06"})
              .arg<&A::activation>("activation", {.def = "0", .py = {.names = kActNames}})
              .arg<&A::group_size>("group_size", {.def = "0"})
              .arg<&A::norm_before_gate>("norm_before_gate", {.def = "True"})
              .out_like("y", "x")
              .shapes_from<&rms_norm_gated_shape, &A::x>()
              .run_one<&rms_norm_gated>()
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::grad_y>("grad_y", {.dense_from = 0})
              .arg<&B::x>("x", {.dense_from = 0})
              .arg<&B::z>("z", {.dense_from = 0})
              .arg<&B::weight>("weight", {.def = "None", .dense_from = 0})
              .arg<&B::bias>("bias", {.def = "None", .dense_from = 0})
              .arg<&B::eps>("eps", {.def = "1e-06"})
              .arg<&B::activation>("activation", {.def = "0"})
              .arg<&B::group_size>("group_size", {.def = "0"})
              .arg<&B::norm_before_gate>("norm_before_gate", {.def = "True"})
              .arg<&B::want_dweight>("want_dweight", {.def = "True"})
              .arg<&B::want_dbias>("want_dbias", {.def = "True"})
              .out_like("dx", "x")
              .out_like("dz", "x")
              .out("dweight")
              .out("dbias")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .workspace(bwd_workspace)
              .doc("-", ""));
}
