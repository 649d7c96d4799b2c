// training/mhc_sinkhorn/mhc_sinkhorn.h: the op's C++ API (torch-free). The Args structs are the
// argument tables' structs (the entry's kit::Def binds each member to a schema argument).
//
// mhc_sinkhorn:      P = Sinkhorn(softmax(logits) + eps), iters row/column rounds (README.md)
//                    logits: [..., n, n] fp32 (fp64 for the golden) -> P: like logits
// mhc_sinkhorn_bwd:  dlogits [..., n, n] from dP and logits (the iterates are recomputed)
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct MhcSinkhornArgs {
  TensorView logits;   // [..., n, n], contiguous; fp32 or fp64
  int64_t iters = 20;  // >= 1: the column normalisation, then iters - 1 row/column rounds
  double eps = 1e-6;   // >= 0, finite: added after the softmax and to every sum
};

// P: logits' shape and dtype.
Status mhc_sinkhorn_shape(const MhcSinkhornArgs& a, Shape* out_shape);
Status mhc_sinkhorn(const MhcSinkhornArgs& a, const TensorView& P, const Context& ctx = {});

// The backward: dP (P's shape and dtype), then the forward's arguments.
struct MhcSinkhornBwdArgs {
  TensorView dP;  // [..., n, n], like logits
  TensorView logits;
  int64_t iters = 20;
  double eps = 1e-6;
};
Status mhc_sinkhorn_bwd(const MhcSinkhornBwdArgs& a, const TensorView& dlogits,
                        const Context& ctx = {});

}  // namespace recops
