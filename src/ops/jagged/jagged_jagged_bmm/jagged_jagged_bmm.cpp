// jagged/jagged_jagged_bmm/jagged_jagged_bmm.cpp: the registration of jagged_jagged_bmm and its
// backward (jagged_ops.md §2.7): the OpInfos and the argument tables. The entries (checks, params,
// implementation list) are shared with jagged_dense_bmm in ops/jagged/common/bmm.cpp; the golden
// is this folder's reference.cpp.
#include "ops/jagged/jagged_jagged_bmm/jagged_jagged_bmm.h"

#include "core/kit/op_def.h"
#include "ops/jagged/common/bmm.h"

namespace recops::ops::bmm {
namespace {
constexpr const char* kOp = "jagged_jagged_bmm";
constexpr const char* kBwd = "jagged_jagged_bmm_bwd";
using Args = JaggedJaggedBmmArgs;
using BwdArgs = JaggedJaggedBmmBwdArgs;

Status bwd_shapes(const BwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape z;
  RECOPS_RETURN_IF_ERROR(jagged_jagged_bmm_shape(
      {a.x_values, a.y_values, a.seq_offsets, a.max_seq_len, a.allow_tf32}, &z));
  outs->push_back({a.x_values.shape(), a.x_values.dtype});
  outs->push_back({a.y_values.shape(), a.y_values.dtype});
  return Status::Ok();
}
Status bwd_run(const BwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_jagged_bmm_bwd(a, o.views[0], o.views[1], ctx);
}

constexpr const char* kDoc =
    R"(Per sequence, the product of two jagged tensors over the jagged axis.

Args:
    x_values: ``[total_L, M]``, fp32, fp16, bf16 or fp64.
    y_values: ``[total_L, N]``, x_values' dtype.
    seq_offsets: ``[B+1]`` int32 or int64 on x_values' device, valid offsets.
    max_seq_len: ``max_L >= 0``; only rows ``l < n_b = min(L_b, max_L)`` take part.
    allow_tf32: fp32 on CUDA may round the products' inputs to TF32 (the CPU ignores it).

Returns:
    ``z [B, M, N]``: ``z[b] = sum_{l < n_b} x(b, l)^T y(b, l)``; an empty sequence gives a zero
    block. fp32 accumulation (fp64 for fp64), summed in a fixed order (deterministic).

Differentiable in ``x_values`` and ``y_values`` (the op ``jagged_jagged_bmm_bwd``:
``dx = jagged_dense_bmm(y, seq_offsets, grad^T)``, ``dy = jagged_dense_bmm(x, seq_offsets, grad)``;
truncated rows get 0). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: x_values and y_values of different rows or
    dtypes, or not floating; invalid offsets (first not 0, decreasing, last not total_L);
    ``max_seq_len < 0``; tensors on different devices.
)";
}  // namespace
}  // namespace recops::ops::bmm

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::bmm;
  const auto& impls = bmm_impls(BmmMode::jagged_jagged);
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls)});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls)});
  reg.add(kit::Def<Args>(kOp, "jagged")
              .arg<&Args::x_values>("x_values", {.grad = true, .dense_from = 1})
              .arg<&Args::y_values>("y_values", {.grad = true, .dense_from = 1})
              .arg<&Args::seq_offsets>("seq_offsets")
              .arg<&Args::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&Args::allow_tf32>("allow_tf32", {.def = "False"})
              .out("z")
              .shapes_from<&jagged_jagged_bmm_shape, &Args::x_values>()
              .run_one<&jagged_jagged_bmm>()
              .workspace(+[](const Args& a, const kit::Outputs&) {
                return jagged_jagged_bmm_workspace_bytes(a);
              })
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<BwdArgs>(kBwd, "jagged")
              .arg<&BwdArgs::grad>("grad")
              .arg<&BwdArgs::x_values>("x_values", {.dense_from = 1})
              .arg<&BwdArgs::y_values>("y_values", {.dense_from = 1})
              .arg<&BwdArgs::seq_offsets>("seq_offsets")
              .arg<&BwdArgs::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&BwdArgs::allow_tf32>("allow_tf32", {.def = "False"})
              .out_like("dx", "x_values")
              .out_like("dy", "y_values")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
