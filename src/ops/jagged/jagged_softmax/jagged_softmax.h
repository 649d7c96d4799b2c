// jagged/jagged_softmax/jagged_softmax.h: the op's C++ API (torch-free). The Args structs are the
// argument tables' structs (the entry's kit::Def binds each member to a schema argument).
//
// jagged_softmax:     y  = softmax of values along the jagged axis, per sequence b and column h,
//                          over rows l < n_b = min(L_b, max_seq_len); rows l >= n_b are 0
// jagged_softmax_bwd: dx = y * (grad - sum_{l < n_b} grad * y) per (b, h); rows l >= n_b are 0
// values, grad, y: [total_L, H] or [total_L] (H = 1); fp64, fp32, fp16, bf16; last stride 1.
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct JaggedSoftmaxArgs {
  TensorView values;       // [total_L, H] or [total_L]
  TensorView seq_offsets;  // [B+1] int32 or int64
  int64_t max_seq_len = 0;
};

// out: values' shape and dtype.
Status jagged_softmax_shape(const JaggedSoftmaxArgs& a, Shape* out_shape);
Status jagged_softmax(const JaggedSoftmaxArgs& a, const TensorView& out, const Context& ctx = {});

struct JaggedSoftmaxBwdArgs {
  TensorView grad;         // like y
  TensorView y;            // the forward's output
  TensorView seq_offsets;  // [B+1]
  int64_t max_seq_len = 0;
};
Status jagged_softmax_bwd(const JaggedSoftmaxBwdArgs& a, const TensorView& dx,
                          const Context& ctx = {});

}  // namespace recops
