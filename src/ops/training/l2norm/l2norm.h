// training/l2norm/l2norm.h: the C++ API (torch-free) of l2norm and l2norm_bwd (training_ops.md
// §3.5, fla semantics). The Args structs are the argument tables' structs.
//
// Per row (leading dims of x flattened; D = x's last dim):
//   r = 1 / sqrt(Σ_d x_d² + eps)          (eps added to the sum of squares, not to the mean)
//   l2norm:     y_d = x_d · r             (dtype out_dtype, default x's)
//   l2norm_bwd: dx_d = r · (dy_d − y_d · Σ_d' dy_d' y_d'), y recomputed from x
// x: [..., D], D >= 1, contiguous, fp64/fp32/fp16/bf16.
#pragma once

#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct L2normArgs {
  TensorView x;  // [..., D]
  double eps = 1e-6;
  std::optional<DType> out_dtype;  // y's dtype; default x's
};
// y: x's shape, dtype out_dtype (default x's).
Status l2norm_shape(const L2normArgs& a, Shape* y_shape, DType* y_dtype);
Status l2norm(const L2normArgs& a, const TensorView& y, const Context& ctx = {});

struct L2normBwdArgs {
  TensorView grad_y;  // like y
  TensorView x;       // the forward's x
  double eps = 1e-6;
  std::optional<DType> out_dtype;  // the forward's out_dtype
};
Status l2norm_bwd(const L2normBwdArgs& a, const TensorView& dx, const Context& ctx = {});

}  // namespace recops
