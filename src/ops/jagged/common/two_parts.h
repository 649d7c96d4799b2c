// ops/jagged/common/two_parts.h: the entry checks shared by the ops that join two parts per
// sample or split them again (concat_1d_jagged, concat_2d_jagged). A part is `values_a` with
// `offsets_a` (jagged) or without (dense); the second is `values_b` / `offsets_b`.
#pragma once

#include <optional>

#include "recops/context.h"
#include "recops/dtype.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops {

// What the two parts must agree on, given each part's batch size (Ba, Bb): one device, one
// values dtype, one offsets dtype, one batch size. *offsets_dtype: the offsets' dtype (int64
// when neither part has offsets).
Status check_parts_agree(const char* op, const TensorView& values_a,
                         const std::optional<TensorView>& offsets_a, int64_t Ba,
                         const TensorView& values_b, const std::optional<TensorView>& offsets_b,
                         int64_t Bb, DType* offsets_dtype);

// jagged_ops.md §1.2 contents of each given offsets tensor; its last entry must equal that part's
// `values.size(0)` (rows_a, rows_b).
Status validate_parts_offsets(const char* op, const std::optional<TensorView>& offsets_a,
                              int64_t rows_a, const std::optional<TensorView>& offsets_b,
                              int64_t rows_b, const Context& ctx);

// An output the caller allocates: contiguous, `shape`, `dtype`, on values_a's device.
Status check_part_output(const char* op, const char* name, const TensorView& t, const Shape& shape,
                         DType dtype, const TensorView& values_a);

// The split's outputs (the backward): grad_a and grad_b contiguous in the shapes of values_a and
// values_b, values_a's dtype.
Status check_part_grads(const char* op, const TensorView& grad_a, const TensorView& grad_b,
                        const TensorView& values_a, const TensorView& values_b);

}  // namespace recops::ops
