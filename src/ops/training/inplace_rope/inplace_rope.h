// training/inplace_rope/inplace_rope.h: the op's C++ API (torch-free). The Args structs are the
// argument tables' structs (the entry's kit::Def binds each member to a schema argument).
//
// inplace_rope_:     x[..., Dh-R:] rotated pair by pair (channels 2i, 2i+1 of the rope slice) by
//                    the angle whose cosine and sine are cos[.., i], sin[.., i]; in place
//                    x: [B, L, H, Dh] or [T, H, Dh]; cos, sin: [L, R/2], [B, L, R/2] or [T, R/2]
// inplace_rope_bwd:  dx = dy rotated the other way (README.md), a new tensor
#pragma once

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct InplaceRopeArgs {
  TensorView x;          // [B, L, H, Dh] or [T, H, Dh]; last dim unit stride; written in place
  TensorView cos;        // [L, R/2], [B, L, R/2] or [T, R/2]; fp32 or x's dtype; last stride 1
  TensorView sin;        // cos's shape and dtype
  bool inverse = false;  // the conjugate rotation (angle -θ)
};

// The shape the kit's binding reports for the returned x (x's own), after every check.
Status inplace_rope_shape(const InplaceRopeArgs& a, Shape* out_shape);
// Rotates the trailing R = 2 * cos.shape[-1] channels of every head of x in place.
Status inplace_rope_(const InplaceRopeArgs& a, const Context& ctx = {});

// The backward: dy in x's place (any strides with a unit last one), read only.
struct InplaceRopeBwdArgs {
  TensorView dy;  // [B, L, H, Dh] or [T, H, Dh]
  TensorView cos;
  TensorView sin;
  bool inverse = false;  // the forward's flag (the backward rotates the other way)
};
// dx: contiguous, dy's shape and dtype; dx = R(-θ)·dy on the rope slice, dy elsewhere.
Status inplace_rope_bwd(const InplaceRopeBwdArgs& a, const TensorView& dx, const Context& ctx = {});

}  // namespace recops
