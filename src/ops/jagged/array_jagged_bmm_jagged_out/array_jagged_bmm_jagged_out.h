// jagged/array_jagged_bmm_jagged_out/array_jagged_bmm_jagged_out.h: the op's C++ API (torch-free).
//
// array_jagged_bmm_jagged_out (jagged_ops.md §3, SLL): x jagged² (block b an N_b x N_b row-major
// matrix, N_b = seq_lengths[b], x_offsets the complete cumsum of N_b²) times y jagged [sum N_b, D]
// (y_offsets the complete cumsum of N_b), per sample on the window n = min(N_b, max_L):
//   z(b,m) = sum_{k<n} x_b[m,k] · y(b,k) for m < n; rows n <= m < N_b of z are 0.
// Backward: dx_b[m,k] = grad(b,m) · y(b,k) for m, k < n, else 0 (jagged_jagged_bmm_jagged_out);
//           dy(b,k) = sum_{m<n} x_b[m,k] · grad(b,m) for k < n, else 0.
// fp64, fp32, fp16, bf16; fp32 accumulation (fp64 for fp64). allow_tf32 is accepted and has no
// effect (no path rounds to TF32).
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ArrayJaggedBmmJaggedOutArgs {
  TensorView x;            // [sum N_b^2], fp64/fp32/fp16/bf16, any stride
  TensorView y;            // [sum N_b, D], x's dtype, last stride 1, row stride free
  TensorView seq_lengths;  // [B] int32/int64: N_b
  TensorView x_offsets;    // [B+1] int32/int64: complete cumsum of N_b^2
  TensorView y_offsets;    // [B+1] int32/int64: complete cumsum of N_b
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;
};

struct ArrayJaggedBmmJaggedOutBwdArgs {
  TensorView grad;  // like y (last stride 1)
  TensorView x;
  TensorView y;
  TensorView seq_lengths;
  TensorView x_offsets;
  TensorView y_offsets;
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;
};

// z: like y, contiguous.
Status array_jagged_bmm_jagged_out(const ArrayJaggedBmmJaggedOutArgs& a, const TensorView& z,
                                   const Context& ctx = {});
// dx like x, dy like y, both contiguous.
Status array_jagged_bmm_jagged_out_bwd(const ArrayJaggedBmmJaggedOutBwdArgs& a,
                                       const TensorView& dx, const TensorView& dy,
                                       const Context& ctx = {});

// The double standard's plain same-precision baselines (CPU tensors only): the reference loops
// summing products of the inputs in order in fp32 (fp64 for fp64), rounded once.
Status array_jagged_bmm_jagged_out_plain(const ArrayJaggedBmmJaggedOutArgs& a, const TensorView& z);
Status array_jagged_bmm_jagged_out_bwd_plain(const ArrayJaggedBmmJaggedOutBwdArgs& a,
                                             const TensorView& dx, const TensorView& dy);

}  // namespace recops
