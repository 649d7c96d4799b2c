// training/layer_norm/layer_norm.h: the C++ API (torch-free) of layer_norm, swish_layer_norm and
// their backward ops (jagged_ops.md §3 tranche 2; training_ops.md §1 row-op rules). The Args
// structs are the argument tables' structs; both forwards take LayerNormArgs, both backwards
// LayerNormBwdArgs.
//
// Per row (leading dims of x flattened; D = x's last dim):
//   mu = mean_d x_d;  r = 1 / sqrt(mean_d (x_d - mu)^2 + eps);  n_d = (x_d - mu)·r
//   y0_d = n_d·w_d + b_d  (w = 1, b = 0 when absent)
//   layer_norm:       y = y0
//   swish_layer_norm: y = σ(y0)·x            (recsys-examples / generative-recommenders IS_SWISH)
// Backward, with h the gradient reaching y0 (layer_norm: h = dy; swish: s = σ(y0),
// h = dy·x·s·(1 - s)) and g = h·w:
//   dx = r·(g - mean(g) - n·mean(g·n))  (+ dy·s for swish);  dweight = Σ_rows h·n;  dbias = Σ_rows
//   h
// x: [..., D], D >= 1, contiguous, fp64/fp32/fp16/bf16; weight, bias: [D], x's dtype.
#pragma once

#include <cstddef>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct LayerNormArgs {
  TensorView x;                      // [..., D]
  std::optional<TensorView> weight;  // [D]
  std::optional<TensorView> bias;    // [D]
  double eps = 1e-5;
};
// y: x's shape and dtype (both ops).
Status layer_norm_shape(const LayerNormArgs& a, Shape* y_shape);
Status layer_norm(const LayerNormArgs& a, const TensorView& y, const Context& ctx = {});
Status swish_layer_norm_shape(const LayerNormArgs& a, Shape* y_shape);
Status swish_layer_norm(const LayerNormArgs& a, const TensorView& y, const Context& ctx = {});

struct LayerNormBwdArgs {
  TensorView grad_y;  // like x
  TensorView x;
  std::optional<TensorView> weight;
  std::optional<TensorView> bias;
  double eps = 1e-5;
  bool want_dweight = true;  // dweight is produced when weight is given and this is true
  bool want_dbias = true;    // dbias likewise with bias
};
// The scratch either backward needs on x's device for dweight and dbias (0 without them).
size_t layer_norm_bwd_workspace_bytes(const LayerNormBwdArgs& a);
// dx: x's shape and dtype; dweight, dbias: [D] or nullptr (not produced). ctx.workspace holds
// layer_norm_bwd_workspace_bytes(a) bytes when either is produced.
Status layer_norm_bwd(const LayerNormBwdArgs& a, const TensorView& dx, const TensorView* dweight,
                      const TensorView* dbias, const Context& ctx = {});
Status swish_layer_norm_bwd(const LayerNormBwdArgs& a, const TensorView& dx,
                            const TensorView* dweight, const TensorView* dbias,
                            const Context& ctx = {});

}  // namespace recops
