// jagged/jagged2_softmax/jagged2_softmax.h: the op's C++ API (torch-free).
//
// jagged2_softmax: x jagged² (block b an N_b x N_b row-major matrix, N_b the exact integer square
// root of x_offsets[b+1] - x_offsets[b]); a softmax along each row (transpose = false) or each
// column (true) of the block's top-left n_b x n_b window, n_b = min(N_b, max_seq_len); 0 outside
// the window. Backward: dx = y ⊙ (grad − Σ_line grad ⊙ y) on the window, 0 outside.
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct Jagged2SoftmaxArgs {
  TensorView x;          // [sum N_b^2] fp64/fp32/fp16/bf16, any stride
  TensorView x_offsets;  // [B+1] int32/int64, the complete cumsum of N_b^2
  int64_t max_seq_len = 0;
  bool transpose = false;
};

struct Jagged2SoftmaxBwdArgs {
  TensorView grad;  // like y
  TensorView y;     // the forward's output
  TensorView x_offsets;
  int64_t max_seq_len = 0;
  bool transpose = false;
};

// out / dx: like x / y, contiguous.
Status jagged2_softmax(const Jagged2SoftmaxArgs& a, const TensorView& out, const Context& ctx = {});
Status jagged2_softmax_bwd(const Jagged2SoftmaxBwdArgs& a, const TensorView& dx,
                           const Context& ctx = {});

}  // namespace recops
