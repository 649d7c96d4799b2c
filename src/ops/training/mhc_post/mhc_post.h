// training/mhc_post/mhc_post.h: the op's C++ API (torch-free). The Args structs are the argument
// tables' structs (the entry's kit::Def binds each member to a schema argument).
//
// mhc_post:      out_j = post_j·y + Σ_i comb[i, j]·X_i   (comb_layout in_out; out_in: comb[j, i])
//                X: [..., n, C], y: [..., C] (X's dtype), post: [..., n], comb: [..., n, n]
//                (fp32; fp64 with fp64 X) -> out: [..., n, C], X's dtype
// mhc_post_bwd:  dX, dy, dpost, dcomb from dout and the forward's arguments (README.md)
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

// How comb is indexed: in_out = comb[..., i, j] is the weight from input stream i to output
// stream j (DeepSeek V4, TileKernels); out_in = comb[..., j, i] (Megatron-LM).
enum class MhcCombLayout : int64_t { in_out = 0, out_in = 1 };

struct MhcPostArgs {
  TensorView X;     // [..., n, C], contiguous; fp64, fp32, fp16 or bf16 (the n residual streams)
  TensorView y;     // [..., C], X's dtype (the block's output)
  TensorView post;  // [..., n], fp32 (fp64 when X is fp64)
  TensorView comb;  // [..., n, n], post's dtype
  MhcCombLayout comb_layout = MhcCombLayout::in_out;
};

// out: X's shape and dtype.
Status mhc_post_shape(const MhcPostArgs& a, Shape* out_shape);
Status mhc_post(const MhcPostArgs& a, const TensorView& out, const Context& ctx = {});

// The backward: dout (out's shape and dtype), then the forward's arguments.
struct MhcPostBwdArgs {
  TensorView dout;  // [..., n, C], X's dtype
  TensorView X;
  TensorView y;
  TensorView post;
  TensorView comb;
  MhcCombLayout comb_layout = MhcCombLayout::in_out;
};
// The outputs: dX like X, dy like y, dpost like post, dcomb like comb (in comb_layout's indexing).
Status mhc_post_bwd(const MhcPostBwdArgs& a, const TensorView& dX, const TensorView& dy,
                    const TensorView& dpost, const TensorView& dcomb, const Context& ctx = {});

}  // namespace recops
