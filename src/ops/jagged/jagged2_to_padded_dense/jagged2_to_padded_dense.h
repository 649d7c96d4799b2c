// jagged/jagged2_to_padded_dense/jagged2_to_padded_dense.h: the op's C++ API (torch-free).
//
// jagged2_to_padded_dense: a jagged² tensor (block b an N_b x N_b row-major matrix, N_b the exact
// integer square root of offsets[b+1] - offsets[b]) to out [B, max_length, max_length]:
// out[b, m, n] = values[o_b + m * N_b + n] for m, n < min(N_b, max_length), else padding_value.
// Backward: grad_values[o_b + m * N_b + n] = grad[b, m, n] on the same window, 0 elsewhere.
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct Jagged2ToPaddedDenseArgs {
  TensorView values;   // [total] any dtype, any stride
  TensorView offsets;  // [B+1] int32/int64, the complete cumsum of N_b²
  int64_t max_length = 0;
  double padding_value = 0.0;
};

struct Jagged2ToPaddedDenseBwdArgs {
  TensorView grad;     // [B, max_length, max_length], last stride 1, values' dtype
  TensorView values;   // the forward's values: gives grad_values' size and dtype (not read)
  TensorView offsets;  // [B+1]
  int64_t max_length = 0;
  double padding_value = 0.0;  // the forward's; unused
};

// out: [B, max_length, max_length] of values' dtype, contiguous.
Status jagged2_to_padded_dense_shape(const Jagged2ToPaddedDenseArgs& a, Shape* out_shape);
Status jagged2_to_padded_dense(const Jagged2ToPaddedDenseArgs& a, const TensorView& out,
                               const Context& ctx = {});
// grad_values: [total] of values' dtype, contiguous.
Status jagged2_to_padded_dense_bwd(const Jagged2ToPaddedDenseBwdArgs& a,
                                   const TensorView& grad_values, const Context& ctx = {});

}  // namespace recops
