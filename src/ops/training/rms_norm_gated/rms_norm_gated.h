// training/rms_norm_gated/rms_norm_gated.h: the C++ API (torch-free) of rms_norm_gated and its
// backward op (training_ops.md §3.4: fla FusedRMSNormGated, Mamba2 RMSNormGated). The Args
// structs are the argument tables' structs.
//
// Per row (leading dims of x flattened; D = x's last dim) and group k of gs columns
// (gs = group_size, 0 meaning D), a(z) = z·σ(z) (silu) or σ(z) (sigmoid):
//   v = x (norm_before_gate) or x·a(z) (not);  r_k = 1 / sqrt(mean_{d∈k} v_d² + eps)
//   n_d = v_d·r_k;  y0_d = n_d·w_d (+ b_d);  y = y0·a(z) (norm_before_gate) or y0 (not)
// rms_norm_gated_bwd: h = dy·a(z) (norm_before_gate) or dy; dbias = Σ_rows h; dweight =
//   Σ_rows h·n; with g = h·w: dv = r_k·(g − n·mean_{d∈k}(g·n)); norm_before_gate: dx = dv,
//   dz = dy·y0·a'(z); not: dx = dv·a(z), dz = dv·x·a'(z).
// x, z: [..., D], same shape and dtype (fp64/fp32/fp16/bf16), contiguous; weight, bias: [D].
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

// The gate activation; swish is another name for silu (the value the Python name maps to).
enum class GateActivation : uint8_t { silu = 0, sigmoid = 1, swish = 2 };

struct RmsNormGatedArgs {
  TensorView x;                      // [..., D]
  TensorView z;                      // like x
  std::optional<TensorView> weight;  // [D]
  std::optional<TensorView> bias;    // [D]
  double eps = 1e-6;
  GateActivation activation = GateActivation::silu;
  int64_t group_size = 0;  // divides D; 0 = D
  bool norm_before_gate = true;
};
// y: x's shape and dtype.
Status rms_norm_gated_shape(const RmsNormGatedArgs& a, Shape* y_shape);
Status rms_norm_gated(const RmsNormGatedArgs& a, const TensorView& y, const Context& ctx = {});

struct RmsNormGatedBwdArgs {
  TensorView grad_y;  // like x
  TensorView x;
  TensorView z;
  std::optional<TensorView> weight;
  std::optional<TensorView> bias;
  double eps = 1e-6;
  GateActivation activation = GateActivation::silu;
  int64_t group_size = 0;
  bool norm_before_gate = true;
  bool want_dweight = true;  // dweight is produced when weight is given and this is true
  bool want_dbias = true;    // dbias likewise with bias
};
// The scratch rms_norm_gated_bwd needs on x's device for dweight and dbias (0 without them).
size_t rms_norm_gated_bwd_workspace_bytes(const RmsNormGatedBwdArgs& a);
// dx, dz: x's shape and dtype; dweight, dbias: [D] or nullptr (not produced). ctx.workspace holds
// rms_norm_gated_bwd_workspace_bytes(a) bytes when either is produced.
Status rms_norm_gated_bwd(const RmsNormGatedBwdArgs& a, const TensorView& dx, const TensorView& dz,
                          const TensorView* dweight, const TensorView* dbias,
                          const Context& ctx = {});

}  // namespace recops
