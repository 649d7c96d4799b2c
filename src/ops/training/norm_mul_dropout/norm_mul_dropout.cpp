// training/norm_mul_dropout/norm_mul_dropout.cpp: the entry of norm_mul_dropout and
// norm_mul_dropout_bwd. All validation happens here, once; then the ordered implementation list
// runs the first implementation that accepts. At the end: the OpInfos and argument tables.
#include "ops/training/norm_mul_dropout/norm_mul_dropout.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/training/common/row_norm.h"
#include "ops/training/common/row_norm_entry.h"
#include "ops/training/norm_mul_dropout/impls.h"

namespace recops::ops::norm_mul_dropout_ns {
namespace {
using training::check_like;
using training::check_rows_x;

constexpr const char* kOp = "norm_mul_dropout";
constexpr const char* kBwd = "norm_mul_dropout_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      training::row_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

Shape out_shape_of(const TensorView& x, bool concat_ux) {
  Shape s = x.shape();
  if (concat_ux) s.back() *= 3;
  return s;
}

// Every rule of the arguments the forward and the backward share; *p gets them.
template <class A>
Status check_args(const char* op, const A& a, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_rows_x(op, a.x, a.eps));
  RECOPS_RETURN_IF_ERROR(check_like(op, "u", a.u, a.x, a.x.shape(), a.x.dtype));
  const int64_t D = a.x.sizes[a.x.ndim - 1];
  int64_t heads = 1;
  if (a.group_norm) {
    RECOPS_CHECK(a.num_heads >= 1, op, ": num_heads=", a.num_heads, " must be >= 1");
    const int64_t L = a.linear_dim == -1 ? D / a.num_heads : a.linear_dim;
    int64_t heads_cols = 0;
    RECOPS_CHECK(L >= 1 && !__builtin_mul_overflow(a.num_heads, L, &heads_cols) && heads_cols == D,
                 op, ": num_heads * linear_dim must equal D=", D, "; got num_heads=", a.num_heads,
                 ", linear_dim=", a.linear_dim);
    heads = a.num_heads;
  }
  const int64_t nw = a.group_norm ? heads : D;
  const char* rule = a.group_norm ? " ([num_heads] with group_norm)" : " (x's last dim)";
  for (const auto& [name, t] : {std::pair<const char*, const TensorView&>{"weight", a.weight},
                                std::pair<const char*, const TensorView&>{"bias", a.bias}}) {
    RECOPS_CHECK(t.ndim == 1 && t.sizes[0] == nw && t.dtype == a.x.dtype && t.is_contiguous(), op,
                 ": ", name, " must be contiguous ", dtype_name(a.x.dtype), "[", nw, "]", rule,
                 "; got ", describe(t));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "x", a.x, name, t));
  }
  RECOPS_CHECK(std::isfinite(a.dropout_ratio) && a.dropout_ratio >= 0 && a.dropout_ratio < 1, op,
               ": dropout_ratio=", a.dropout_ratio, " must be in [0, 1)");
  p->x = a.x.data;
  p->u = a.u.data;
  p->weight = a.weight.data;
  p->bias = a.bias.data;
  p->group_norm = a.group_norm;
  p->concat_ux = a.concat_ux;
  p->ratio = static_cast<float>(a.dropout_ratio);
  p->dropout = a.training && p->ratio > 0;
  p->seed = static_cast<uint64_t>(a.seed);
  p->offset = static_cast<uint64_t>(a.offset);
  p->dtype = a.x.dtype;
  p->D = D;
  p->heads = heads;
  p->rows = a.x.numel() / D;
  p->eps = a.eps;
  p->device_index = a.x.device.index;
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::norm_mul_dropout_ns

namespace recops {

Status norm_mul_dropout_shape(const NormMulDropoutArgs& a, Shape* out_shape) {
  using namespace ops::norm_mul_dropout_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &p));
  *out_shape = out_shape_of(a.x, a.concat_ux);
  return Status::Ok();
}

Status norm_mul_dropout(const NormMulDropoutArgs& a, const TensorView& out, const Context& ctx) {
  using namespace ops::norm_mul_dropout_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &p));
  RECOPS_RETURN_IF_ERROR(
      check_like(kOp, "out", out, a.x, out_shape_of(a.x, a.concat_ux), a.x.dtype));
  p.out = out.data;
  if (p.rows == 0) return Status::Ok();  // no rows: nothing to launch
  return core::dispatch(kOp, impls(), a.x.device.type, p, ctx);
}

size_t norm_mul_dropout_bwd_workspace_bytes(const NormMulDropoutBwdArgs& a) {
  if (a.x.ndim < 1 || a.x.sizes[a.x.ndim - 1] < 1 || a.weight.ndim != 1) return 0;
  const int64_t D = a.x.sizes[a.x.ndim - 1], nw = a.weight.sizes[0];
  if (nw < 1) return 0;
  const int64_t P = ops::training::norm_partials(a.x.numel() / D, nw);
  return static_cast<size_t>(2 * P * nw) * sizeof(double);
}

Status norm_mul_dropout_bwd(const NormMulDropoutBwdArgs& a, const TensorView& dx,
                            const TensorView& du, const TensorView& dweight,
                            const TensorView& dbias, const Context& ctx) {
  using namespace ops::norm_mul_dropout_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, &p));
  RECOPS_RETURN_IF_ERROR(
      check_like(kBwd, "grad_out", a.grad_out, a.x, out_shape_of(a.x, a.concat_ux), a.x.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dx", dx, a.x, a.x.shape(), a.x.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "du", du, a.x, a.x.shape(), a.x.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dweight", dweight, a.x, a.weight.shape(), a.x.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dbias", dbias, a.x, a.weight.shape(), a.x.dtype));
  const size_t need = norm_mul_dropout_bwd_workspace_bytes(a);
  RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), kBwd,
               ": the workspace must hold ", need,
               " bytes (norm_mul_dropout_bwd_workspace_bytes); got ", ctx.workspace_bytes);
  p.backward = true;
  p.grad = a.grad_out.data;
  p.out = dx.data;
  p.du = du.data;
  p.dweight = dweight.data;
  p.dbias = dbias.data;
  p.workspace = ctx.workspace;
  return core::dispatch(kBwd, impls(), a.x.device.type, p, ctx);  // no rows: dweight, dbias = 0
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::norm_mul_dropout_ns {
namespace {
Status fwd_shapes(const NormMulDropoutArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  RECOPS_RETURN_IF_ERROR(norm_mul_dropout_shape(a, &s));
  outs->push_back({s, a.x.dtype});
  return Status::Ok();
}
Status fwd_run(const NormMulDropoutArgs& a, const kit::Outputs& o, const Context& ctx) {
  return norm_mul_dropout(a, o.views[0], ctx);
}
Status bwd_shapes(const NormMulDropoutBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, &p));
  outs->push_back({a.x.shape(), a.x.dtype});
  outs->push_back({a.x.shape(), a.x.dtype});
  outs->push_back({a.weight.shape(), a.x.dtype});
  outs->push_back({a.weight.shape(), a.x.dtype});
  return Status::Ok();
}
Status bwd_run(const NormMulDropoutBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return norm_mul_dropout_bwd(a, o.views[0], o.views[1], o.views[2], o.views[3], ctx);
}
size_t bwd_workspace(const NormMulDropoutBwdArgs& a, const kit::Outputs&) {
  return norm_mul_dropout_bwd_workspace_bytes(a);
}

constexpr const char* kDoc =
    R"(HSTU's output step: ``out = dropout(u * (layer_norm(x) * weight + bias))``.

Args:
    x, u: ``[..., D]``, D >= 1, same shape and dtype (fp64, fp32, fp16 or bf16).
    weight, bias: ``[D]``, or ``[num_heads]`` with group_norm (one scalar per head group).
    eps: added to the (biased) variance of each group.
    dropout_ratio: p in [0, 1); a kept value is scaled by 1 / (1 - p).
    training: False (or p = 0): no dropout.
    concat_ux: return ``dropout([u, x, y])``, ``[..., 3D]``, each part with its own mask.
    group_norm, num_heads, linear_dim: normalise each of num_heads groups of linear_dim columns
        (linear_dim -1: D / num_heads); num_heads * linear_dim must be D.
    seed, offset: the dropout mask's key (README: a splitmix64 hash of seed and
        offset + row * W + col; identical on every device; not torch's dropout mask).

Returns:
    ``[..., D]`` or ``[..., 3D]`` in x's dtype. Computed in fp64, one rounding.

Differentiable in x, u, weight and bias (the op ``norm_mul_dropout_bwd``: the statistics are
recomputed and the mask regenerated from seed and offset). Double backward raises.
)";

template <class A>
kit::Def<A>& common_args(kit::Def<A>& d, bool grad) {
  return d.template arg<&A::x>("x", {.grad = grad, .dense_from = 0})
      .template arg<&A::u>("u", {.grad = grad, .dense_from = 0})
      .template arg<&A::weight>("weight", {.grad = grad, .dense_from = 0})
      .template arg<&A::bias>("bias", {.grad = grad, .dense_from = 0})
      .template arg<&A::eps>("eps", {.def = "1e-05"})
      .template arg<&A::dropout_ratio>("dropout_ratio", {.def = "0.0"})
      .template arg<&A::training>("training", {.def = "True"})
      .template arg<&A::concat_ux>("concat_ux", {.def = "False"})
      .template arg<&A::group_norm>("group_norm", {.def = "False"})
      .template arg<&A::num_heads>("num_heads", {.def = "1"})
      .template arg<&A::linear_dim>("linear_dim", {.def = "-1"})
      .template arg<&A::seed>("seed", {.def = "0"})
      .template arg<&A::offset>("offset", {.def = "0"});
}
}  // namespace
}  // namespace recops::ops::norm_mul_dropout_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::norm_mul_dropout_ns;
  using A = NormMulDropoutArgs;
  using B = NormMulDropoutBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  kit::Def<A> fwd(kOp, "training");
  common_args(fwd, true).out("out").shapes(fwd_shapes).run(fwd_run).backward(kBwd).doc("", kDoc);
  reg.add(fwd);
  kit::Def<B> bwd(kBwd, "training");
  bwd.arg<&B::grad_out>("grad_out", {.dense_from = 0});
  common_args(bwd, false)
      .out_like("dx", "x")
      .out_like("du", "x")
      .out("dweight")
      .out("dbias")
      .shapes(bwd_shapes)
      .run(bwd_run)
      .workspace(bwd_workspace)
      .doc("-", "");
  reg.add(bwd);
}
