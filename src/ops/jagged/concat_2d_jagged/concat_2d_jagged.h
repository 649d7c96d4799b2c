// jagged/concat_2d_jagged/concat_2d_jagged.h: the op's C++ API (torch-free). README.md has the
// math.
//
// concat_2d_jagged:      out = per sample [B_b[:k'], A_b, B_b[k':]] (or A_b with its tail replaced)
// concat_2d_jagged_bwd:  (grad_a, grad_b) = the split of grad (the concat's adjoint)
#pragma once

#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct Concat2dJaggedArgs {
  TensorView values_a;                  // [T_A, D] with offsets_a, else dense [B, S_A, D]
  std::optional<TensorView> offsets_a;  // [B+1] int32/int64, or none (A dense)
  TensorView values_b;                  // [T_B, D] with offsets_b, else dense [B, S_B, D]
  std::optional<TensorView> offsets_b;  // [B+1], or none (B dense)
  int64_t n_prefix_from_right = 0;      // k >= 0: B_b's first min(k, b_b) rows go first
  bool is_replace = false;              // replace A_b's last rows by B_b's (k must be 0)
};

// out: [T_A + T_B, D] (concat) or [T_A, D] (replace); values_a's dtype.
Status concat_2d_jagged_shape(const Concat2dJaggedArgs& a, Shape* out_shape);
Status concat_2d_jagged(const Concat2dJaggedArgs& a, const TensorView& out,
                        const Context& ctx = {});

struct Concat2dJaggedBwdArgs : Concat2dJaggedArgs {
  TensorView grad;  // like the forward's out
};
// grad_a: values_a's shape, grad_b: values_b's shape (both contiguous).
Status concat_2d_jagged_bwd(const Concat2dJaggedBwdArgs& a, const TensorView& grad_a,
                            const TensorView& grad_b, const Context& ctx = {});

}  // namespace recops
