// training/clipped_swiglu/clipped_swiglu.h: the op's C++ API (torch-free). The Args structs are
// the argument tables' structs (the entry's kit::Def binds each member to a schema argument).
//
// clipped_swiglu:      y  = min(g, L)·σ(α·min(g, L))·(clamp(u, -L, L) + β)
//                      x: [..., 2I] -> y: [..., I]; fp64/fp32/fp16/bf16
// clipped_swiglu_bwd:  dx [..., 2I] from dy [..., I] and x (README.md)
#pragma once

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ClippedSwigluArgs {
  TensorView x;                // [..., 2I], contiguous
  double alpha = 1.702;        // α
  double limit = 7.0;          // L >= 0; +inf: no clipping
  double linear_offset = 1.0;  // β
  bool interleaved = true;     // gate 2i / linear 2i+1; false: gate [:I], linear [I:]
};

// y: x's shape with the last dim halved, x's dtype.
Status clipped_swiglu_shape(const ClippedSwigluArgs& a, Shape* out_shape);
Status clipped_swiglu(const ClippedSwigluArgs& a, const TensorView& y, const Context& ctx = {});

// The backward: x and the scalars as in the forward, plus dy (y's shape and dtype).
struct ClippedSwigluBwdArgs : ClippedSwigluArgs {
  TensorView dy;  // [..., I], contiguous
};
Status clipped_swiglu_bwd(const ClippedSwigluBwdArgs& a, const TensorView& dx,
                          const Context& ctx = {});

}  // namespace recops
