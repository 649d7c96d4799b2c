// jagged/expand_1d_jagged_to_dense/expand_1d_jagged_to_dense.h: the op's C++ API (torch-free).
//
// expand_1d_jagged_to_dense: out[b, j] = values[o_b + j] for j < min(L_b, max_len), then the
// sequence's last value repeated; 0 for an empty sequence. values [total_L] any dtype (any
// stride), seq_offsets [B+1] int32/int64, out [B, max_len] contiguous.
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct Expand1dJaggedToDenseArgs {
  TensorView values;       // [total_L]
  TensorView seq_offsets;  // [B+1]
  int64_t max_len = 0;     // >= 0
};

// out: [B, max_len] of values' dtype.
Status expand_1d_jagged_to_dense_shape(const Expand1dJaggedToDenseArgs& a, Shape* out_shape);
Status expand_1d_jagged_to_dense(const Expand1dJaggedToDenseArgs& a, const TensorView& out,
                                 const Context& ctx = {});

}  // namespace recops
