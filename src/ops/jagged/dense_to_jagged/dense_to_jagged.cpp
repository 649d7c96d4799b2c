// dense_to_jagged: the entry (the shape function and its checks). The checks it shares with
// jagged_to_padded_dense, the params and the implementation list: ops/jagged/common/row_copy.h.
#include <optional>
#include <string>

#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/dense_to_jagged/impls.h"
#include "recops/jagged.h"

namespace recops::ops {
namespace {
constexpr const char* kOp = "dense_to_jagged";
}  // namespace
}  // namespace recops::ops

namespace recops {

Status dense_to_jagged_total_L(const TensorView& seq_offsets, int64_t* total_L,
                               const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(ops::kOp, "seq_offsets", seq_offsets));
  RECOPS_RETURN_IF_ERROR(core::read_offset(seq_offsets, seq_offsets.sizes[0] - 1, total_L, ctx));
  RECOPS_CHECK(*total_L >= 0, ops::kOp, ": seq_offsets[", seq_offsets.sizes[0] - 1, "]=", *total_L,
               " is negative; the last offset is total_L and must be >= 0");
  return Status::Ok();
}

Status dense_to_jagged_shape(const TensorView& dense, const TensorView& seq_offsets,
                             int64_t total_L, Shape* out_shape) {
  using ops::kOp;
  RECOPS_CHECK(dense.ndim >= 2, kOp, ": dense must have at least 2 dims [B, S, *E], got ",
               dense.ndim, "-D");
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(kOp, "seq_offsets", seq_offsets));
  RECOPS_CHECK(dense.sizes[0] == seq_offsets.sizes[0] - 1, kOp, ": dense.size(0)=", dense.sizes[0],
               " but seq_offsets has ", seq_offsets.sizes[0],
               " elements; dense's batch must be B = seq_offsets.numel() - 1");
  RECOPS_CHECK(total_L >= 0, kOp, ": total_L=", total_L, " must be >= 0");
  Shape s = {total_L};
  for (int i = 2; i < dense.ndim; ++i) s.push_back(dense.sizes[i]);
  *out_shape = std::move(s);
  return Status::Ok();
}

Status dense_to_jagged(const TensorView& dense, const TensorView& seq_offsets,
                       const TensorView& out, const Context& ctx) {
  using ops::kOp;
  RECOPS_CHECK(out.ndim >= 1, kOp, ": out must have at least 1 dim [total_L, *E]");
  const int64_t total_L = out.sizes[0];
  Shape expect;
  RECOPS_RETURN_IF_ERROR(dense_to_jagged_shape(dense, seq_offsets, total_L, &expect));
  return ops::row_copy_run(ops::RowCopyDir::to_jagged, dense, seq_offsets, out, expect,
                           std::nullopt, ops::row_copy_impls<ops::dense_to_jagged_reference>(),
                           ctx);
}

}  // namespace recops

// ---- the argument tables (core/kit/op_def.h) ----
namespace recops::ops {
namespace {
struct Args {
  TensorView dense;                // [B, S, *E]
  TensorView seq_offsets;          // [B+1]
  std::optional<int64_t> total_L;  // nullopt: seq_offsets[B]
};

// With total_L omitted the size is seq_offsets[B]: a device-to-host copy and a synchronisation for
// CUDA offsets (§2.2). Never called on Meta: the op's fake kernel is Python's (fake.py).
Status shapes(const Args& a, std::vector<kit::OutSpec>* outs, const Context& ctx) {
  int64_t rows = 0;
  if (a.total_L) {
    rows = *a.total_L;
    // CPU offsets are host memory: a total_L that disagrees with them is refused here, before
    // the output of total_L rows is allocated (CUDA offsets are checked by the run).
    if (a.seq_offsets.device.is_cpu() && a.seq_offsets.data != nullptr && rows >= 0 &&
        core::check_offsets_meta(kOp, "seq_offsets", a.seq_offsets).ok())
      RECOPS_RETURN_IF_ERROR(
          core::validate_offsets(kOp, "seq_offsets", a.seq_offsets, rows, "total_L", ctx));
  } else {
    RECOPS_RETURN_IF_ERROR(dense_to_jagged_total_L(a.seq_offsets, &rows, ctx));
  }
  Shape s;  // [total_L, *E]
  RECOPS_RETURN_IF_ERROR(dense_to_jagged_shape(a.dense, a.seq_offsets, rows, &s));
  outs->push_back({s, a.dense.dtype});
  return Status::Ok();
}

Status run(const Args& a, const kit::Outputs& o, const Context& ctx) {
  return dense_to_jagged(a.dense, a.seq_offsets, o.views[0], ctx);
}

// The helper op _dense_to_jagged_meta: dense_to_jagged with a known total_L. Its Meta kernel is
// what matters: dense_to_jagged's fake kernel (fake.py) calls it after creating the unbacked size
// that total_L=None needs, which only Python can do.
struct MetaArgs {
  TensorView dense;
  TensorView seq_offsets;
  int64_t total_L = 0;
};

Status meta_shapes(const MetaArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  RECOPS_RETURN_IF_ERROR(dense_to_jagged_shape(a.dense, a.seq_offsets, a.total_L, &s));
  outs->push_back({s, a.dense.dtype});
  return Status::Ok();
}

Status meta_run(const MetaArgs& a, const kit::Outputs& o, const Context& ctx) {
  return dense_to_jagged(a.dense, a.seq_offsets, o.views[0], ctx);
}

constexpr const char* kDoc = R"(Gathers the valid rows of a dense batch into a jagged values tensor.

Args:
    dense: ``[B, S, *E]``, any dtype recops supports.
    seq_offsets: ``[B+1]`` int32 or int64 on dense's device, valid offsets.
    total_L: ``seq_offsets[B]``. When omitted it is read from ``seq_offsets`` (on CUDA a
        device-to-host copy and a synchronisation; under torch.compile an unbacked size).

Returns:
    ``[total_L, *E]``: row ``seq_offsets[b] + l`` is ``dense[b, l]`` for ``l < min(L_b, S)``
    and 0 for ``l >= S``.

Differentiable in ``dense``: the gradient is ``jagged_to_padded_dense(grad, seq_offsets, S, 0)``.
Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: ``dense.size(0) != B``; ``total_L`` that
    disagrees with ``seq_offsets[B]``; invalid offsets (as in ``jagged_to_padded_dense``);
    tensors on different devices.
)";
}  // namespace
}  // namespace recops::ops

RECOPS_REGISTER_OPS(reg) {
  using recops::ops::Args;
  using recops::ops::MetaArgs;
  reg.add(recops::ops::row_copy_info(
      recops::ops::RowCopyDir::to_jagged,
      recops::ops::row_copy_impls<recops::ops::dense_to_jagged_reference>()));
  // dense: trailing dims dense (the binding copies otherwise), batch and row strides free.
  reg.add(recops::kit::Def<Args>("dense_to_jagged", "jagged")
              .arg<&Args::dense>("dense", {.grad = true, .dense_from = 2})
              .arg<&Args::seq_offsets>("seq_offsets")
              .arg<&Args::total_L>("total_L", {.def = "None", .sym = true})
              .out("out")
              .shapes(recops::ops::shapes)
              .run(recops::ops::run)
              .fake_in_python()
              .doc("", recops::ops::kDoc));
  reg.add(recops::kit::Def<MetaArgs>("_dense_to_jagged_meta", "jagged")
              .arg<&MetaArgs::dense>("dense", {.dense_from = 2})
              .arg<&MetaArgs::seq_offsets>("seq_offsets")
              .arg<&MetaArgs::total_L>("total_L", {.sym = true})
              .out("out")
              .shapes(recops::ops::meta_shapes)
              .run(recops::ops::meta_run)
              .doc("-", ""));
}
