// jagged/jagged_dense_elementwise_add/jagged_dense_elementwise_add.h: the op's C++ API
// (torch-free; jagged_ops.md §2.3).
//
//   out(b,l) = x(b,l) + y[b,l] for l < S;  x(b,l) for l >= S      (jagged out, seq_offsets' layout)
//   x_values [total_L, *E], seq_offsets [B+1], y [B, S, *E]; fp64, fp32, fp16, bf16
#pragma once

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct JaggedDenseElementwiseAddArgs {
  TensorView x_values;     // [total_L, *E], trailing dims dense, row stride free
  TensorView seq_offsets;  // [B+1] int32 or int64
  TensorView y;            // [B, S, *E], trailing dims dense, batch and row strides free
};

// out: [total_L, *E], x_values' dtype.
Status jagged_dense_elementwise_add_shape(const JaggedDenseElementwiseAddArgs& a, Shape* out_shape);
Status jagged_dense_elementwise_add(const JaggedDenseElementwiseAddArgs& a, const TensorView& out,
                                    const Context& ctx = {});

}  // namespace recops
