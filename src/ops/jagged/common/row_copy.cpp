// ops/jagged/common/row_copy.cpp: the checks, params and dispatch both conversions' entries share
// (row_copy.h). The messages keep each op's words: the argument it names and the rule.
#include "ops/jagged/common/row_copy.h"

#include "core/offsets.h"
#include "core/scalar.h"

namespace recops::ops {
namespace {

struct Words {
  const char* src;           // the input's name
  const char* out_shape;     // out's shape in letters
  const char* src_dense;     // the rule on src's trailing dims
  const char* total_L_from;  // where total_L comes from
};

Words words(RowCopyDir dir) {
  if (dir == RowCopyDir::to_dense)
    return {"values", "[B, max_seq_len, *E]",
            "values' trailing dims must be dense (last stride 1); got strides of ",
            "values.size(0) (total_L)"};
  return {"dense", "[total_L, *E]", "dense's trailing dims must be dense (last stride 1); got ",
          "total_L (out.size(0))"};
}

}  // namespace

Status row_copy_run(RowCopyDir dir, const TensorView& src, const TensorView& seq_offsets,
                    const TensorView& out, const Shape& expect, std::optional<double> padding_value,
                    const std::vector<core::Impl<RowCopyParams>>& impls, const Context& ctx) {
  const char* op = row_copy_op(dir);
  const Words w = words(dir);
  const bool to_dense = dir == RowCopyDir::to_dense;
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, w.src, src, "seq_offsets", seq_offsets));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, w.src, src, "out", out));
  RECOPS_CHECK(out.shape() == expect, op, ": out has shape ", shape_str(out.shape()), ", expected ",
               w.out_shape, " = ", shape_str(expect));
  RECOPS_CHECK(out.dtype == src.dtype, op, ": out dtype ", dtype_name(out.dtype), " differs from ",
               w.src, " dtype ", dtype_name(src.dtype));
  // Trailing dims: after the jagged side's first dim, after the dense side's first two.
  const TensorView& jagged = to_dense ? src : out;
  const TensorView& dense = to_dense ? out : src;
  RECOPS_CHECK(src.inner_contiguous(to_dense ? 1 : 2), op, ": ", w.src_dense, describe(src));
  RECOPS_CHECK(out.inner_contiguous(to_dense ? 2 : 1), op,
               ": out's trailing dims must be dense (last stride 1)");
  // Rows that share memory would overwrite each other (e.g. batches with batch stride 0).
  if (out.numel() > 0)
    for (int i = 0; i < (to_dense ? 2 : 1); ++i)
      RECOPS_CHECK(out.sizes[i] <= 1 || out.strides[i] != 0, op, ": out has stride 0 on dim ", i,
                   " of size ", out.sizes[i], " (", describe(out),
                   "); an output's elements must not alias");

  RowCopyParams p;
  p.dir = dir;
  p.src = src.data;
  p.dst = out.data;
  p.seq_offsets = seq_offsets.data;
  p.dtype = src.dtype;
  p.elem_size = dtype_size(src.dtype);
  p.offsets_int64 = seq_offsets.dtype == DType::int64;
  p.offsets_stride = seq_offsets.strides[0];
  p.B = seq_offsets.sizes[0] - 1;  // = dense.size(0), checked by the shape functions
  p.S = dense.sizes[1];
  p.D = src.inner_numel(to_dense ? 1 : 2);
  p.total_L = jagged.sizes[0];
  p.jagged_row_stride = jagged.strides[0];
  p.dense_batch_stride = dense.strides[0];
  p.dense_row_stride = dense.strides[1];
  p.device_index = src.device.index;
  if (padding_value)
    RECOPS_RETURN_IF_ERROR(
        core::encode_scalar(op, "padding_value", *padding_value, src.dtype, &p.padding_bits));
  RECOPS_RETURN_IF_ERROR(
      core::validate_offsets(op, "seq_offsets", seq_offsets, p.total_L, w.total_L_from, ctx));
  if (out.numel() == 0) return Status::Ok();  // no rows or D = 0: nothing to launch
  return core::dispatch(op, impls, src.device.type, p, ctx);
}

}  // namespace recops::ops
