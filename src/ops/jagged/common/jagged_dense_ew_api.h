// ops/jagged/common/jagged_dense_ew_api.h: the C++ API (torch-free) of the jagged-dense
// elementwise ops: jagged_dense_elementwise_add (jagged_ops.md §2.3), jagged_dense_elementwise_mul
// and its backward (§2.4(a)). Each op's own header includes this one.
//
//   add:  out(b,l) = x(b,l) + y[b,l] for l < S;  x(b,l) for l >= S   (jagged out, seq_offsets'
//   layout) mul:  out(b,l) = x(b,l) * y[b,l] for l < S;  0 for l >= S mul_bwd:  dx(b,l) = grad(b,l)
//   * y[b,l] for l < S, else 0
//             dy[b,l] = grad(b,l) * x(b,l) for l < min(L_b, S), else 0
//   x_values, grad [total_L, *E], seq_offsets [B+1], y [B, S, *E]; fp64, fp32, fp16, bf16
#pragma once

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

// The forward ops' arguments.
struct JaggedDenseElementwiseArgs {
  TensorView x_values;     // [total_L, *E], trailing dims dense, row stride free
  TensorView seq_offsets;  // [B+1] int32 or int64
  TensorView y;            // [B, S, *E], trailing dims dense, batch and row strides free
};
using JaggedDenseElementwiseAddArgs = JaggedDenseElementwiseArgs;
using JaggedDenseElementwiseMulArgs = JaggedDenseElementwiseArgs;

// out: [total_L, *E], x_values' dtype.
Status jagged_dense_elementwise_add_shape(const JaggedDenseElementwiseAddArgs& a, Shape* out_shape);
Status jagged_dense_elementwise_add(const JaggedDenseElementwiseAddArgs& a, const TensorView& out,
                                    const Context& ctx = {});
Status jagged_dense_elementwise_mul_shape(const JaggedDenseElementwiseMulArgs& a, Shape* out_shape);
Status jagged_dense_elementwise_mul(const JaggedDenseElementwiseMulArgs& a, const TensorView& out,
                                    const Context& ctx = {});

struct JaggedDenseElementwiseMulBwdArgs {
  TensorView grad;  // like out
  TensorView x_values;
  TensorView seq_offsets;
  TensorView y;
};
// dx: [total_L, *E]; dy: y's shape; both contiguous.
Status jagged_dense_elementwise_mul_bwd(const JaggedDenseElementwiseMulBwdArgs& a,
                                        const TensorView& dx, const TensorView& dy,
                                        const Context& ctx = {});

}  // namespace recops
