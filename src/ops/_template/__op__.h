// __family__/__op__/__op__.h: the op's C++ API (torch-free). The Args struct is the argument
// table's struct (the entry's kit::Def binds each member to a schema argument).
//
// __op__:      out = factor * x                 x: any shape, fp64/fp32/fp16/bf16
// __op___bwd:  dx  = factor * dout              (the backward; the gradient of x)
#pragma once

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct __Op__Args {
  TensorView x;         // any shape, contiguous
  double factor = 1.0;  // the scale
};

// out: x's shape and dtype.
Status __op___shape(const __Op__Args& a, Shape* out_shape);
Status __op__(const __Op__Args& a, const TensorView& out, const Context& ctx = {});

struct __Op__BwdArgs {
  TensorView dout;  // like out
  TensorView x;     // the forward's x (unused by the math, checked for shape)
  double factor = 1.0;
};
Status __op___bwd(const __Op__BwdArgs& a, const TensorView& dx, const Context& ctx = {});

}  // namespace recops
