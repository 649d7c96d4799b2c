// ops/jagged/common/two_parts.cpp: see two_parts.h.
#include "ops/jagged/common/two_parts.h"

#include "core/offsets.h"

namespace recops::ops {

Status check_parts_agree(const char* op, const TensorView& values_a,
                         const std::optional<TensorView>& offsets_a, int64_t Ba,
                         const TensorView& values_b, const std::optional<TensorView>& offsets_b,
                         int64_t Bb, DType* offsets_dtype) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "values_a", values_a, "values_b", values_b));
  RECOPS_CHECK(values_b.dtype == values_a.dtype, op, ": values_b (", dtype_name(values_b.dtype),
               ") must have values_a's dtype (", dtype_name(values_a.dtype), ")");
  if (offsets_a && offsets_b)
    RECOPS_CHECK(offsets_a->dtype == offsets_b->dtype, op, ": offsets_b (",
                 dtype_name(offsets_b->dtype), ") must have offsets_a's dtype (",
                 dtype_name(offsets_a->dtype), ")");
  RECOPS_CHECK(Ba == Bb, op, ": the batch sizes differ: ", Ba, " samples in values_a/offsets_a, ",
               Bb, " in values_b/offsets_b");
  *offsets_dtype = offsets_a ? offsets_a->dtype : offsets_b ? offsets_b->dtype : DType::int64;
  return Status::Ok();
}

Status validate_parts_offsets(const char* op, const std::optional<TensorView>& offsets_a,
                              int64_t rows_a, const std::optional<TensorView>& offsets_b,
                              int64_t rows_b, const Context& ctx) {
  if (offsets_a)
    RECOPS_RETURN_IF_ERROR(
        core::validate_offsets(op, "offsets_a", *offsets_a, rows_a, "values_a.size(0)", ctx));
  if (offsets_b)
    RECOPS_RETURN_IF_ERROR(
        core::validate_offsets(op, "offsets_b", *offsets_b, rows_b, "values_b.size(0)", ctx));
  return Status::Ok();
}

Status check_part_output(const char* op, const char* name, const TensorView& t, const Shape& shape,
                         DType dtype, const TensorView& values_a) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "values_a", values_a, name, t));
  RECOPS_CHECK(t.shape() == shape && t.dtype == dtype && t.is_contiguous(), op, ": ", name,
               " must be contiguous ", shape_str(shape), " ", dtype_name(dtype), "; got ",
               describe(t));
  return Status::Ok();
}

Status check_part_grads(const char* op, const TensorView& grad_a, const TensorView& grad_b,
                        const TensorView& values_a, const TensorView& values_b) {
  RECOPS_RETURN_IF_ERROR(
      check_part_output(op, "grad_a", grad_a, values_a.shape(), values_a.dtype, values_a));
  return check_part_output(op, "grad_b", grad_b, values_b.shape(), values_a.dtype, values_a);
}

}  // namespace recops::ops
