// jagged_to_padded_dense: the entry. All validation happens here, once (the checks it shares with
// dense_to_jagged, the params and the implementation list: ops/jagged/common/row_copy.h); then the
// ordered implementation list runs the first implementation that accepts.
#include <string>

#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/jagged_to_padded_dense/impls.h"
#include "recops/jagged.h"

namespace recops::ops {
namespace {
constexpr const char* kOp = "jagged_to_padded_dense";
}  // namespace
}  // namespace recops::ops

namespace recops {

Status jagged_to_padded_dense_shape(const TensorView& values, const TensorView& seq_offsets,
                                    int64_t max_seq_len, Shape* out_shape) {
  using ops::kOp;
  RECOPS_CHECK(values.ndim >= 1, kOp, ": values must have at least 1 dim [total_L, *E], got 0-D");
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(kOp, "seq_offsets", seq_offsets));
  RECOPS_CHECK(max_seq_len >= 0, kOp, ": max_seq_len=", max_seq_len, " must be >= 0");
  Shape s = {seq_offsets.sizes[0] - 1, max_seq_len};
  for (int i = 1; i < values.ndim; ++i) s.push_back(values.sizes[i]);
  RECOPS_CHECK(static_cast<int>(s.size()) <= kMaxDims, kOp, ": values has too many dims (max ",
               kMaxDims - 1, ")");
  *out_shape = std::move(s);
  return Status::Ok();
}

Status jagged_to_padded_dense(const TensorView& values, const TensorView& seq_offsets,
                              int64_t max_seq_len, double padding_value, const TensorView& out,
                              const Context& ctx) {
  using ops::kOp;
  Shape expect;
  RECOPS_RETURN_IF_ERROR(jagged_to_padded_dense_shape(values, seq_offsets, max_seq_len, &expect));
  return ops::row_copy_run(ops::RowCopyDir::to_dense, values, seq_offsets, out, expect,
                           padding_value,
                           ops::row_copy_impls<ops::jagged_to_padded_dense_reference>(), ctx);
}

}  // namespace recops

// ---- the argument table (core/kit/op_def.h) ----
namespace recops::ops {
namespace {
struct Args {
  TensorView values;       // [total_L, *E]
  TensorView seq_offsets;  // [B+1]
  int64_t max_seq_len = 0;
  double padding_value = 0.0;
};

Status shapes(const Args& a, std::vector<kit::OutSpec>* outs) {
  Shape s;  // [B, max_seq_len, *E]
  RECOPS_RETURN_IF_ERROR(jagged_to_padded_dense_shape(a.values, a.seq_offsets, a.max_seq_len, &s));
  outs->push_back({s, a.values.dtype});
  return Status::Ok();
}

Status run(const Args& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_to_padded_dense(a.values, a.seq_offsets, a.max_seq_len, a.padding_value, o.views[0],
                                ctx);
}

constexpr const char* kDoc = R"(Pads a jagged tensor into a dense batch.

Args:
    values: ``[total_L, *E]``, any dtype recops supports (floating, integer, bool, fp8).
    seq_offsets: ``[B+1]`` int32 or int64 on values' device; ``seq_offsets[0] == 0``,
        non-decreasing, ``seq_offsets[B] == total_L``.
    max_seq_len: ``max_L >= 0``; sequences longer than it are truncated.
    padding_value: the value at positions ``l >= min(L_b, max_L)``; for integer and bool
        values it must be integral and representable.

Returns:
    ``[B, max_L, *E]`` with ``out[b, l] = values[seq_offsets[b] + l]`` for
    ``l < min(L_b, max_L)``, else ``padding_value``.

Differentiable in ``values``: the gradient is ``dense_to_jagged(grad, seq_offsets, total_L)``
(truncated rows get 0). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: offsets not starting at 0, decreasing, or
    whose last element differs from ``values.size(0)``; offsets that are not 1-D int32/int64;
    ``max_seq_len < 0``; tensors on different devices; a padding value the dtype cannot hold.
    On CUDA, offset contents are checked only with validation on (``set_validate``).
)";
}  // namespace
}  // namespace recops::ops

RECOPS_REGISTER_OPS(reg) {
  using recops::ops::Args;
  reg.add(recops::ops::row_copy_info(
      recops::ops::RowCopyDir::to_dense,
      recops::ops::row_copy_impls<recops::ops::jagged_to_padded_dense_reference>()));
  // values: trailing dims dense (the binding copies otherwise), row stride free.
  reg.add(
      recops::kit::Def<Args>("jagged_to_padded_dense", "jagged")
          .arg<&Args::values>("values", {.grad = true, .dense_from = 1})
          .arg<&Args::seq_offsets>("seq_offsets", {.py = {.def = "None", .rule = "nested values"}})
          .arg<&Args::max_seq_len>("max_seq_len", {.sym = true})
          .arg<&Args::padding_value>("padding_value", {.def = "0.0"})
          .out("out")
          .shapes(recops::ops::shapes)
          .run(recops::ops::run)
          .doc("", recops::ops::kDoc));
}
