// training/rms_norm/rms_norm.h: the C++ API (torch-free) of rms_norm, rms_norm_rstd and their
// backward ops (training_ops.md §3.3). The Args structs are the argument tables' structs.
//
// Per row (all leading dims of x flattened; D = x's last dim):
//   r = 1 / sqrt(mean_d x_d^2 + eps)
//   rms_norm:          y_d = x_d * r * w~_d,  w~ = weight_offset + weight (1 without weight)
//   rms_norm_bwd:      g_d = dy_d * w~_d, c = mean_d g_d x_d; dx_d = r * (g_d - r^2 c x_d);
//                      dweight_d = sum_rows dy_d x_d r
//   rms_norm_rstd:     r, shape [..., 1], dtype out_dtype (default fp32)
//   rms_norm_rstd_bwd: dx_d = -dr * r^3 * x_d / D
// x: [..., D], D >= 1, contiguous, fp64/fp32/fp16/bf16; weight: [D], x's dtype.
#pragma once

#include <cstddef>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct RmsNormArgs {
  TensorView x;                      // [..., D]
  std::optional<TensorView> weight;  // [D]
  double eps = 1e-6;
  double weight_offset = 0.0;
};
// y: x's shape and dtype.
Status rms_norm_shape(const RmsNormArgs& a, Shape* y_shape);
Status rms_norm(const RmsNormArgs& a, const TensorView& y, const Context& ctx = {});

struct RmsNormBwdArgs {
  TensorView grad_y;                 // like x
  TensorView x;                      // the forward's x
  std::optional<TensorView> weight;  // the forward's weight
  double eps = 1e-6;
  double weight_offset = 0.0;
  bool want_dweight = true;  // dweight is produced when the weight is given and this is true
};
// The scratch rms_norm_bwd needs on x's device for dweight (0 without it).
size_t rms_norm_bwd_workspace_bytes(const RmsNormBwdArgs& a);
// dx: x's shape and dtype; dweight: [D], weight's dtype, or nullptr (not wanted). ctx.workspace
// holds rms_norm_bwd_workspace_bytes(a) bytes when dweight is produced.
Status rms_norm_bwd(const RmsNormBwdArgs& a, const TensorView& dx, const TensorView* dweight,
                    const Context& ctx = {});

struct RmsNormRstdArgs {
  TensorView x;  // [..., D]
  double eps = 1e-6;
  std::optional<DType> out_dtype;  // r's dtype; default fp32
};
// r: x's shape with the last dim 1, dtype out_dtype (default fp32).
Status rms_norm_rstd_shape(const RmsNormRstdArgs& a, Shape* r_shape, DType* r_dtype);
Status rms_norm_rstd(const RmsNormRstdArgs& a, const TensorView& r, const Context& ctx = {});

struct RmsNormRstdBwdArgs {
  TensorView grad_r;  // like r
  TensorView x;       // the forward's x
  double eps = 1e-6;
  std::optional<DType> out_dtype;  // the forward's out_dtype (r's dtype)
};
Status rms_norm_rstd_bwd(const RmsNormRstdBwdArgs& a, const TensorView& dx,
                         const Context& ctx = {});

}  // namespace recops
