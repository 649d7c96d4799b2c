// training/causal_conv1d/causal_conv1d.h: the C++ API (torch-free) of causal_conv1d and its
// backward op (training_ops.md §3.7, Dao-AILab semantics). The Args structs are the argument
// tables' structs.
//
// Per sequence, channel d and position t (x̃: x, then the initial state before the sequence):
//   z_t = b_d + Σ_{k<W} w[d,k]·x̃_{t−(W−1)+k};  y_t = act(z_t) (+ residual_t)
// final_state: the last S entries of [init-or-zeros ‖ x] along time.
// x: [B, D, T], any strides (channel-first stride(2) = 1 and channel-last stride(1) = 1 are the
// fast ones); weight [D, W] ("DW") or [W, D] ("WD"), 1 ≤ W ≤ 8; states [N, D, S], S ∈ {W−1, W}.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

enum class ConvActivation : uint8_t { none = 0, silu = 1, swish = 2 };  // swish = silu
enum class ConvWeightLayout : uint8_t { DW = 0, WD = 1 };

struct CausalConv1dArgs {
  TensorView x;                             // [B, D, T]
  TensorView weight;                        // [D, W] or [W, D]
  std::optional<TensorView> bias;           // [D]
  std::optional<TensorView> initial_state;  // [N, D, S], x's dtype or fp32
  bool output_final_state = false;
  ConvActivation activation = ConvActivation::none;
  std::optional<TensorView> seq_idx;      // [B, T] int32/int64 (Dao); no states with it
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64 (fla cu_seqlens); needs B = 1
  std::optional<TensorView> residual;     // [B, D, T], x's dtype, added after the activation
  ConvWeightLayout weight_layout = ConvWeightLayout::DW;
  int64_t state_len = 0;  // S; 0 = W−1
};
// y: [B, D, T] in x's dtype; final_state: [N, D, S] in initial_state's dtype (x's without one),
// or nullptr when output_final_state is false.
Status causal_conv1d_shape(const CausalConv1dArgs& a, Shape* y_shape, Shape* state_shape,
                           DType* state_dtype);
Status causal_conv1d(const CausalConv1dArgs& a, const TensorView& y, const TensorView* final_state,
                     const Context& ctx = {});

struct CausalConv1dBwdArgs {
  TensorView grad_y;  // [B, D, T]
  // [N, D, S] in the final state's dtype, or any empty 1-D tensor (no gradient: the binding
  // passes [0] when final_state was not produced).
  TensorView grad_final_state;
  TensorView x;
  TensorView weight;
  std::optional<TensorView> bias;
  std::optional<TensorView> initial_state;
  bool output_final_state = false;
  ConvActivation activation = ConvActivation::none;
  std::optional<TensorView> seq_idx;
  std::optional<TensorView> seq_offsets;
  std::optional<TensorView> residual;
  ConvWeightLayout weight_layout = ConvWeightLayout::DW;
  int64_t state_len = 0;
  bool want_dbias = true;
  bool want_dinitial_state = true;
  bool want_dresidual = true;
};
// Scratch on x's device: the fp32 (fp64 for fp64) partial sums of dweight and dbias on CUDA;
// 0 on the CPU.
size_t causal_conv1d_bwd_workspace_bytes(const CausalConv1dBwdArgs& a);
// dx: [B, D, T] (x's dtype, any strides); dweight: weight's shape; dbias [D], dinitial_state
// [N, D, S], dresidual [B, D, T]: given exactly when the argument is given and wanted.
Status causal_conv1d_bwd(const CausalConv1dBwdArgs& a, const TensorView& dx,
                         const TensorView& dweight, const TensorView* dbias,
                         const TensorView* dinitial_state, const TensorView* dresidual,
                         const Context& ctx = {});

}  // namespace recops
