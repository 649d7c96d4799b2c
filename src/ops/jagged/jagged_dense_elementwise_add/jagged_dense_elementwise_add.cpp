// jagged/jagged_dense_elementwise_add/jagged_dense_elementwise_add.cpp: the entry (jagged_ops.md
// §2.3). The checks, params, implementation list and golden it shares with
// jagged_dense_elementwise_mul: ops/jagged/common/jagged_dense_ew.h. At the end: the OpInfo and the
// argument table.
#include "ops/jagged/jagged_dense_elementwise_add/jagged_dense_elementwise_add.h"

#include "ops/jagged/common/jagged_dense_ew.h"
#include "ops/jagged/common/jagged_dense_ew_def.h"

namespace recops::ops {
namespace {
constexpr const char* kOp = "jagged_dense_elementwise_add";
}  // namespace
}  // namespace recops::ops

namespace recops {

Status jagged_dense_elementwise_add_shape(const JaggedDenseElementwiseAddArgs& a,
                                          Shape* out_shape) {
  return ops::jd_ew_shape(ops::kOp, "x_values", a.x_values, a.seq_offsets, a.y, out_shape);
}

Status jagged_dense_elementwise_add(const JaggedDenseElementwiseAddArgs& a, const TensorView& out,
                                    const Context& ctx) {
  return ops::jd_ew_forward(ops::kOp, ops::JdEwMode::add, a, out, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops {
namespace {
constexpr const char* kDoc = R"(Adds a dense batch to a jagged tensor; the result is jagged.

Args:
    x_values: ``[total_L, *E]``, fp64, fp32, fp16 or bf16.
    seq_offsets: ``[B+1]`` int32 or int64 on x_values' device, valid offsets.
    y: ``[B, S, *E]``, x_values' dtype.

Returns:
    ``[total_L, *E]`` with seq_offsets' layout: row ``(b, l)`` is ``x(b, l) + y[b, l]`` for
    ``l < S`` and ``x(b, l)`` for ``l >= S`` (S is y's extent; S = 0 returns x).

Differentiable in ``x_values`` (``dx = grad``) and ``y`` (``dy =
jagged_to_padded_dense(grad, seq_offsets, S, 0)``). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: ``y.size(0) != B``; y's trailing dims not
    x_values' E; dtypes that differ or are not floating; invalid offsets (first not 0,
    decreasing, last not total_L); tensors on different devices.
)";
}  // namespace
}  // namespace recops::ops

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  reg.add(OpInfo{ops::kOp, "jagged", core::describe_impls(ops::jd_ew_impls())});
  reg.add(ops::jd_ew_forward_def<jagged_dense_elementwise_add_shape, jagged_dense_elementwise_add>(
      ops::kOp, ops::kDoc));
}
