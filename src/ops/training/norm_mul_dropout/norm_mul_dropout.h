// training/norm_mul_dropout/norm_mul_dropout.h: the C++ API (torch-free) of norm_mul_dropout and
// its backward op (jagged_ops.md §3 tranche 2; HSTU's output normalisation). The Args structs are
// the argument tables' structs.
//
// Per row (leading dims flattened; D = x's last dim) and group k (group_norm: num_heads groups of
// L = linear_dim columns, weight/bias one scalar per group; else one group of D columns, weight/
// bias per column):
//   n = (x - mean_k)·r_k, r_k = 1/sqrt(var_k + eps);  ln = n·w + b;  y = u ⊙ ln
//   out = drop(y)  or, with concat_ux,  out = [drop(u), drop(x), drop(y)]   ([..., 3D])
// drop(v) at output column c of row i: v / (1 - p) when kept, else 0 (training and p > 0;
// identity otherwise); the mask is training/common/counter_rng.h's (seed, offset, i, c).
// Backward (dout of out's shape, masks regenerated): gy = drop(dout_y); du = gy·ln (+
// drop(dout_u));
//   g = gy·u·w; dx = r·(g - mean_k g - n·mean_k(g·n)) (+ drop(dout_x));
//   dweight = Σ gy·u·n, dbias = Σ gy·u (over rows, and over the group's columns for group_norm).
#pragma once

#include <cstddef>
#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct NormMulDropoutArgs {
  TensorView x;       // [..., D]
  TensorView u;       // like x
  TensorView weight;  // [D], or [num_heads] with group_norm
  TensorView bias;    // like weight
  double eps = 1e-5;
  double dropout_ratio = 0.0;  // p in [0, 1)
  bool training = true;        // false: no dropout
  bool concat_ux = false;
  bool group_norm = false;
  int64_t num_heads = 1;    // group_norm: groups a row
  int64_t linear_dim = -1;  // group_norm: columns a group; -1 = D / num_heads
  int64_t seed = 0;
  int64_t offset = 0;
};
// out: x's shape with the last dim D or 3·D (concat_ux), x's dtype.
Status norm_mul_dropout_shape(const NormMulDropoutArgs& a, Shape* out_shape);
Status norm_mul_dropout(const NormMulDropoutArgs& a, const TensorView& out,
                        const Context& ctx = {});

struct NormMulDropoutBwdArgs {
  TensorView grad_out;  // out's shape
  TensorView x;
  TensorView u;
  TensorView weight;
  TensorView bias;
  double eps = 1e-5;
  double dropout_ratio = 0.0;
  bool training = true;
  bool concat_ux = false;
  bool group_norm = false;
  int64_t num_heads = 1;
  int64_t linear_dim = -1;
  int64_t seed = 0;
  int64_t offset = 0;
};
// The scratch norm_mul_dropout_bwd needs on x's device (fp64 column partials of dweight, dbias).
size_t norm_mul_dropout_bwd_workspace_bytes(const NormMulDropoutBwdArgs& a);
// dx, du: x's shape and dtype; dweight, dbias: weight's shape and dtype.
Status norm_mul_dropout_bwd(const NormMulDropoutBwdArgs& a, const TensorView& dx,
                            const TensorView& du, const TensorView& dweight,
                            const TensorView& dbias, const Context& ctx = {});

}  // namespace recops
