// jagged/jagged_jagged_bmm_jagged_out/jagged_jagged_bmm_jagged_out.h: the op's C++ API
// (torch-free).
//
// jagged_jagged_bmm_jagged_out (jagged_ops.md §3, SLL; the backward partner of
// array_jagged_bmm_jagged_out): x, y jagged [sum N_b, D] (offsets the complete cumsum of
// N_b = seq_lengths[b]) -> z jagged² (block b N_b x N_b row-major, z_offsets the complete cumsum
// of N_b², total_z = z_offsets[B] elements), on the window n = min(N_b, max_L):
//   z_b[m,j] = x(b,m) · y(b,j) for m, j < n, 0 elsewhere in the block (flatten(x_b y_b^T)).
// Backward: dx(b,m) = sum_{j<n} grad_b[m,j] · y(b,j), dy(b,j) = sum_{m<n} grad_b[m,j] · x(b,m)
// for rows < n, 0 for rows >= n (both array_jagged_bmm_jagged_out products).
// fp64, fp32, fp16, bf16; fp32 accumulation (fp64 for fp64). allow_tf32 is accepted and has no
// effect (no path rounds to TF32).
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct JaggedJaggedBmmJaggedOutArgs {
  TensorView x;            // [sum N_b, D], fp64/fp32/fp16/bf16, last stride 1, row stride free
  TensorView y;            // like x
  TensorView seq_lengths;  // [B] int32/int64: N_b
  TensorView offsets;      // [B+1] int32/int64: complete cumsum of N_b (x's and y's rows)
  TensorView z_offsets;    // [B+1] int32/int64: complete cumsum of N_b^2
  int64_t total_z = 0;     // z's size, z_offsets[B] (given, so that no call reads it back)
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;
};

struct JaggedJaggedBmmJaggedOutBwdArgs {
  TensorView grad;  // [total_z], x's dtype, any stride
  TensorView x;
  TensorView y;
  TensorView seq_lengths;
  TensorView offsets;
  TensorView z_offsets;
  int64_t total_z = 0;
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;
};

// z: [total_z], x's dtype, contiguous.
Status jagged_jagged_bmm_jagged_out(const JaggedJaggedBmmJaggedOutArgs& a, const TensorView& z,
                                    const Context& ctx = {});
// dx like x, dy like y, both contiguous.
Status jagged_jagged_bmm_jagged_out_bwd(const JaggedJaggedBmmJaggedOutBwdArgs& a,
                                        const TensorView& dx, const TensorView& dy,
                                        const Context& ctx = {});

// The double standard's plain same-precision baselines (CPU tensors only): the reference loops
// summing products of the inputs in order in fp32 (fp64 for fp64), rounded once.
Status jagged_jagged_bmm_jagged_out_plain(const JaggedJaggedBmmJaggedOutArgs& a,
                                          const TensorView& z);
Status jagged_jagged_bmm_jagged_out_bwd_plain(const JaggedJaggedBmmJaggedOutBwdArgs& a,
                                              const TensorView& dx, const TensorView& dy);

}  // namespace recops
