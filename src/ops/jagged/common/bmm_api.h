// ops/jagged/common/bmm_api.h: the C++ API (torch-free) of the jagged matmuls:
// jagged_dense_bmm (jagged_ops.md §2.6), jagged_jagged_bmm (§2.7) and their backward ops. Each
// op's own header includes this one (each backward calls both forwards).
//
//   jagged_dense_bmm:  z(b,l) = x(b,l) · y[b] for l < n_b = min(L_b, max_seq_len), else 0
//                      x_values [total_L, K], y [B, K, N] -> z [total_L, N]
//   jagged_jagged_bmm: z[b] = sum_{l < n_b} x(b,l)^T · y(b,l)   (n_b = 0: a zero block)
//                      x_values [total_L, M], y_values [total_L, N] -> z [B, M, N]
// fp32, fp16, bf16 (fp32 accumulation), fp64 (fp64 accumulation). allow_tf32: CUDA may round
// fp32 products' inputs to TF32 (the CPU always computes exact fp32 products).
#pragma once

#include <cstddef>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct JaggedDenseBmmArgs {
  TensorView x_values;     // [total_L, K], last stride 1, row stride free
  TensorView seq_offsets;  // [B+1] int32 or int64
  TensorView y;            // [B, K, N], any strides (a transposed view needs no copy)
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;
};
// z: [total_L, N], x_values' dtype, contiguous.
Status jagged_dense_bmm_shape(const JaggedDenseBmmArgs& a, Shape* z_shape);
Status jagged_dense_bmm(const JaggedDenseBmmArgs& a, const TensorView& z, const Context& ctx = {});

struct JaggedDenseBmmBwdArgs {
  TensorView grad;  // [total_L, N], last stride 1
  TensorView x_values;
  TensorView seq_offsets;
  TensorView y;
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;
};
// dx = jagged_dense_bmm(grad, seq_offsets, y^T) [total_L, K];
// dy = jagged_jagged_bmm(x_values, grad, seq_offsets) [B, K, N]; both contiguous.
Status jagged_dense_bmm_bwd(const JaggedDenseBmmBwdArgs& a, const TensorView& dx,
                            const TensorView& dy, const Context& ctx = {});
// Scratch of dy's jagged_jagged_bmm (see jagged_jagged_bmm_workspace_bytes).
size_t jagged_dense_bmm_bwd_workspace_bytes(const JaggedDenseBmmBwdArgs& a);

struct JaggedJaggedBmmArgs {
  TensorView x_values;     // [total_L, M], last stride 1, row stride free
  TensorView y_values;     // [total_L, N], likewise
  TensorView seq_offsets;  // [B+1] int32 or int64
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;
};
// z: [B, M, N], x_values' dtype, contiguous.
Status jagged_jagged_bmm_shape(const JaggedJaggedBmmArgs& a, Shape* z_shape);
// Scratch the call needs in Context::workspace on the tensors' device (CUDA: the split of long
// sequences when the batch gives too few work items; 0 otherwise and on the CPU).
size_t jagged_jagged_bmm_workspace_bytes(const JaggedJaggedBmmArgs& a);
Status jagged_jagged_bmm(const JaggedJaggedBmmArgs& a, const TensorView& z,
                         const Context& ctx = {});

struct JaggedJaggedBmmBwdArgs {
  TensorView grad;  // [B, M, N], any strides
  TensorView x_values;
  TensorView y_values;
  TensorView seq_offsets;
  int64_t max_seq_len = 0;
  bool allow_tf32 = false;
};
// dx = jagged_dense_bmm(y_values, seq_offsets, grad^T) [total_L, M];
// dy = jagged_dense_bmm(x_values, seq_offsets, grad) [total_L, N]; both contiguous.
Status jagged_jagged_bmm_bwd(const JaggedJaggedBmmBwdArgs& a, const TensorView& dx,
                             const TensorView& dy, const Context& ctx = {});

// The double standard's plain same-precision baselines (accuracy.md; CPU tensors only): the
// reference loops with products of the inputs (rounded to TF32 when allow_tf32 and fp32), summed
// in order in fp32 (fp64 for fp64), the result rounded to the dtype once: what a framework bmm
// over padded tensors computes.
Status jagged_dense_bmm_plain(const JaggedDenseBmmArgs& a, const TensorView& z);
Status jagged_dense_bmm_bwd_plain(const JaggedDenseBmmBwdArgs& a, const TensorView& dx,
                                  const TensorView& dy);
Status jagged_jagged_bmm_plain(const JaggedJaggedBmmArgs& a, const TensorView& z);
Status jagged_jagged_bmm_bwd_plain(const JaggedJaggedBmmBwdArgs& a, const TensorView& dx,
                                   const TensorView& dy);

}  // namespace recops
