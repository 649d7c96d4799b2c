// jagged/concat_1d_jagged/concat_1d_jagged.h: the op's C++ API (torch-free). README.md has the
// math.
//
// concat_1d_jagged:      (values, offsets) = per sample [A_b, B_b] of two 1-D parts
// concat_1d_jagged_bwd:  (grad_a, grad_b) = the split of grad (the concat's adjoint)
#pragma once

#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct Concat1dJaggedArgs {
  TensorView values_a;                  // [T_A] with offsets_a, else dense [B] or [B, S_A]
  std::optional<TensorView> offsets_a;  // [B+1] int32/int64, or none (A dense)
  TensorView values_b;                  // [T_B] with offsets_b, else dense [B] or [B, S_B]
  std::optional<TensorView> offsets_b;  // [B+1] (offsets_a's dtype), or none (B dense)
};

// values: [T_A + T_B] of values_a's dtype; offsets: [B+1] of the offsets' dtype (int64 when both
// parts are dense). Reads no offsets contents.
Status concat_1d_jagged_shape(const Concat1dJaggedArgs& a, Shape* values_shape,
                              Shape* offsets_shape, DType* offsets_dtype);
Status concat_1d_jagged(const Concat1dJaggedArgs& a, const TensorView& values,
                        const TensorView& offsets, const Context& ctx = {});

struct Concat1dJaggedBwdArgs : Concat1dJaggedArgs {
  TensorView grad;  // [T_A + T_B], like the forward's values (any stride)
};
// grad_a: values_a's shape, grad_b: values_b's shape (both contiguous).
Status concat_1d_jagged_bwd(const Concat1dJaggedBwdArgs& a, const TensorView& grad_a,
                            const TensorView& grad_b, const Context& ctx = {});

}  // namespace recops
