// jagged/jagged2_dense_elementwise_mul/jagged2_dense_elementwise_mul.h: the op's C++ API
// (torch-free).
//
// jagged2_dense_elementwise_mul: x jagged² (block b an N_b x N_b row-major matrix, N_b =
// seq_lengths[b], x_offsets the complete cumsum of N_b²) times y [max_L, max_L], a matrix shared by
// the batch: out_b[m, n] = x_b[m, n] * y[m, n] for m, n < min(N_b, max_L), 0 elsewhere in the
// block. Backward: dx = grad ⊙ y on the same window, 0 elsewhere; y gets no gradient.
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct Jagged2DenseElementwiseMulArgs {
  TensorView x;            // [sum N_b^2], fp64/fp32/fp16/bf16, any stride
  TensorView y;            // [max_L, max_L], x's dtype, last stride 1
  TensorView seq_lengths;  // [B] int32/int64: N_b
  TensorView x_offsets;    // [B+1] int32/int64: the complete cumsum of N_b^2
  int64_t max_seq_len = 0;
};

struct Jagged2DenseElementwiseMulBwdArgs {
  TensorView grad;  // like x
  TensorView x;     // the forward's x: dx's size and dtype (not read)
  TensorView y;
  TensorView seq_lengths;
  TensorView x_offsets;
  int64_t max_seq_len = 0;
};

// out: like x, contiguous.
Status jagged2_dense_elementwise_mul(const Jagged2DenseElementwiseMulArgs& a, const TensorView& out,
                                     const Context& ctx = {});
Status jagged2_dense_elementwise_mul_bwd(const Jagged2DenseElementwiseMulBwdArgs& a,
                                         const TensorView& dx, const Context& ctx = {});

}  // namespace recops
