// training/mhc_pre_bmm/mhc_pre_bmm.h: the op's C++ API (torch-free). The Args structs are the
// argument tables' structs (the entry's kit::Def binds each member to a schema argument).
//
// mhc_pre_bmm:      y = Σ_i h_pre_i·X_i      h_pre: [..., n] fp32 (fp64 with fp64 X),
//                   X: [..., n, C] -> y: [..., C], dtype out_dtype (default fp32)
// mhc_pre_bmm_bwd:  dh_pre (h_pre's dtype) and dX (X's) from dy and the forward's arguments
#pragma once

#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct MhcPreBmmArgs {
  TensorView h_pre;                // [..., n], fp32 (fp64 when X is fp64), contiguous
  TensorView X;                    // [..., n, C], fp64, fp32, fp16 or bf16, contiguous
  std::optional<DType> out_dtype;  // y's dtype; default fp32
};

// y: X's leading dims + [C], dtype out_dtype (default fp32).
Status mhc_pre_bmm_shape(const MhcPreBmmArgs& a, Shape* out_shape, DType* out_dtype);
Status mhc_pre_bmm(const MhcPreBmmArgs& a, const TensorView& y, const Context& ctx = {});

// The backward: dy (y's shape and dtype), then the forward's arguments.
struct MhcPreBmmBwdArgs {
  TensorView dy;  // [..., C], dtype out_dtype (default fp32)
  TensorView h_pre;
  TensorView X;
  std::optional<DType> out_dtype;
};
// The outputs: dh_pre like h_pre (a per-token sum over C), dX like X.
Status mhc_pre_bmm_bwd(const MhcPreBmmBwdArgs& a, const TensorView& dh_pre, const TensorView& dX,
                       const Context& ctx = {});

}  // namespace recops
