// jagged/jagged_dense_bmm/jagged_dense_bmm.cpp: the registration of jagged_dense_bmm and its
// backward (jagged_ops.md §2.6): the OpInfos and the argument tables. The entries (checks, params,
// implementation list) are shared with jagged_jagged_bmm in ops/jagged/common/bmm.cpp; the golden
// is this folder's reference.cpp.
#include "ops/jagged/jagged_dense_bmm/jagged_dense_bmm.h"

#include "core/kit/op_def.h"
#include "ops/jagged/common/bmm.h"

namespace recops::ops::bmm {
namespace {
constexpr const char* kOp = "jagged_dense_bmm";
constexpr const char* kBwd = "jagged_dense_bmm_bwd";
using Args = JaggedDenseBmmArgs;
using BwdArgs = JaggedDenseBmmBwdArgs;

Status bwd_shapes(const BwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape z;
  RECOPS_RETURN_IF_ERROR(
      jagged_dense_bmm_shape({a.x_values, a.seq_offsets, a.y, a.max_seq_len, a.allow_tf32}, &z));
  outs->push_back({a.x_values.shape(), a.x_values.dtype});
  outs->push_back({a.y.shape(), a.y.dtype});
  return Status::Ok();
}
Status bwd_run(const BwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_dense_bmm_bwd(a, o.views[0], o.views[1], ctx);
}

constexpr const char* kDoc = R"(Multiplies each sequence of a jagged tensor by its own dense matrix.

Args:
    x_values: ``[total_L, K]``, fp32, fp16, bf16 or fp64.
    seq_offsets: ``[B+1]`` int32 or int64 on x_values' device, valid offsets.
    y: ``[B, K, N]``, x_values' dtype (any strides: a transposed view is not copied).
    max_seq_len: ``max_L >= 0``; only rows ``l < n_b = min(L_b, max_L)`` take part.
    allow_tf32: fp32 on CUDA may round the products' inputs to TF32 (the CPU ignores it).

Returns:
    ``z [total_L, N]`` with seq_offsets' layout: ``z(b, l) = x(b, l) @ y[b]`` for ``l < n_b``,
    0 for the truncated rows. fp32 accumulation (fp64 for fp64).

Differentiable in ``x_values`` and ``y`` (the op ``jagged_dense_bmm_bwd``:
``dx = jagged_dense_bmm(grad, seq_offsets, y^T)``, ``dy = jagged_jagged_bmm(x, grad)``).
Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: y not ``[B, K, N]``; dtypes that differ or
    are not floating; invalid offsets (first not 0, decreasing, last not total_L);
    ``max_seq_len < 0``; tensors on different devices.
)";
}  // namespace
}  // namespace recops::ops::bmm

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::bmm;
  const auto& impls = bmm_impls(BmmMode::jagged_dense);
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls)});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls)});
  reg.add(kit::Def<Args>(kOp, "jagged")
              .arg<&Args::x_values>("x_values", {.grad = true, .dense_from = 1})
              .arg<&Args::seq_offsets>("seq_offsets")
              .arg<&Args::y>("y", {.grad = true})
              .arg<&Args::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&Args::allow_tf32>("allow_tf32", {.def = "False"})
              .out("z")
              .shapes_from<&jagged_dense_bmm_shape, &Args::x_values>()
              .run_one<&jagged_dense_bmm>()
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<BwdArgs>(kBwd, "jagged")
              .arg<&BwdArgs::grad>("grad", {.dense_from = 1})
              .arg<&BwdArgs::x_values>("x_values", {.dense_from = 1})
              .arg<&BwdArgs::seq_offsets>("seq_offsets")
              .arg<&BwdArgs::y>("y")
              .arg<&BwdArgs::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&BwdArgs::allow_tf32>("allow_tf32", {.def = "False"})
              .out_like("dx", "x_values")
              .out_like("dy", "y")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .workspace(+[](const BwdArgs& a, const kit::Outputs&) {
                return jagged_dense_bmm_bwd_workspace_bytes(a);
              })
              .doc("-", ""));
}
