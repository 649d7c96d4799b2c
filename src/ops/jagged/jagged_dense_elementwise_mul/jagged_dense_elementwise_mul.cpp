// jagged/jagged_dense_elementwise_mul/jagged_dense_elementwise_mul.cpp: the entries of the op and
// its backward (jagged_ops.md §2.4(a)). The checks, params, implementation list and golden they
// share with jagged_dense_elementwise_add: ops/jagged/common/jagged_dense_ew.h. At the end: the
// OpInfos and the argument tables.
#include "ops/jagged/jagged_dense_elementwise_mul/jagged_dense_elementwise_mul.h"

#include "ops/jagged/common/jagged_dense_ew.h"
#include "ops/jagged/common/jagged_dense_ew_def.h"

namespace recops::ops {
namespace {
constexpr const char* kOp = "jagged_dense_elementwise_mul";
constexpr const char* kBwd = "jagged_dense_elementwise_mul_bwd";
}  // namespace
}  // namespace recops::ops

namespace recops {

Status jagged_dense_elementwise_mul_shape(const JaggedDenseElementwiseMulArgs& a,
                                          Shape* out_shape) {
  return ops::jd_ew_shape(ops::kOp, "x_values", a.x_values, a.seq_offsets, a.y, out_shape);
}

Status jagged_dense_elementwise_mul(const JaggedDenseElementwiseMulArgs& a, const TensorView& out,
                                    const Context& ctx) {
  return ops::jd_ew_forward(ops::kOp, ops::JdEwMode::mul, a, out, ctx);
}

Status jagged_dense_elementwise_mul_bwd(const JaggedDenseElementwiseMulBwdArgs& a,
                                        const TensorView& dx, const TensorView& dy,
                                        const Context& ctx) {
  ops::JdEwTensors t;
  t.a = a.grad;
  t.x = a.x_values;
  t.seq_offsets = a.seq_offsets;
  t.y = a.y;
  t.out = dx;
  t.dy = dy;
  return ops::jd_ew_run(ops::kBwd, ops::JdEwMode::mul_bwd, t, ops::jd_ew_impls(), ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops {
namespace {
using BwdArgs = JaggedDenseElementwiseMulBwdArgs;

Status bwd_shapes(const BwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  RECOPS_RETURN_IF_ERROR(jd_ew_shape(kBwd, "grad", a.grad, a.seq_offsets, a.y, &s));
  outs->push_back({s, a.grad.dtype});
  outs->push_back({a.y.shape(), a.y.dtype});
  return Status::Ok();
}
Status bwd_run(const BwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_dense_elementwise_mul_bwd(a, o.views[0], o.views[1], ctx);
}

constexpr const char* kDoc = R"(Multiplies a jagged tensor by a dense batch; the result is jagged.

Args:
    x_values: ``[total_L, *E]``, fp64, fp32, fp16 or bf16.
    seq_offsets: ``[B+1]`` int32 or int64 on x_values' device, valid offsets.
    y: ``[B, S, *E]``, x_values' dtype.

Returns:
    ``[total_L, *E]`` with seq_offsets' layout: row ``(b, l)`` is ``x(b, l) * y[b, l]`` for
    ``l < S`` and 0 for ``l >= S`` (S is y's extent; S = 0 returns zeros).

Differentiable in ``x_values`` and ``y`` (the op ``jagged_dense_elementwise_mul_bwd``:
``dx = grad * y`` for ``l < S``, else 0; ``dy[b, l] = grad(b, l) * x(b, l)`` for
``l < min(L_b, S)``, else 0). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: ``y.size(0) != B``; y's trailing dims not
    x_values' E; dtypes that differ or are not floating; invalid offsets (first not 0,
    decreasing, last not total_L); tensors on different devices.
)";
}  // namespace
}  // namespace recops::ops

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using ops::BwdArgs;
  reg.add(OpInfo{ops::kOp, "jagged", core::describe_impls(ops::jd_ew_impls())});
  reg.add(OpInfo{ops::kBwd, "jagged", core::describe_impls(ops::jd_ew_impls())});
  reg.add(ops::jd_ew_forward_def<jagged_dense_elementwise_mul_shape, jagged_dense_elementwise_mul>(
              ops::kOp, ops::kDoc)
              .backward(ops::kBwd));
  reg.add(kit::Def<BwdArgs>(ops::kBwd, "jagged")
              .arg<&BwdArgs::grad>("grad", {.dense_from = 1})
              .arg<&BwdArgs::x_values>("x_values", {.dense_from = 1})
              .arg<&BwdArgs::seq_offsets>("seq_offsets")
              .arg<&BwdArgs::y>("y", {.dense_from = 2})
              .out_like("dx", "x_values")
              .out_like("dy", "y")
              .shapes(ops::bwd_shapes)
              .run(ops::bwd_run)
              .doc("-", ""));
}
