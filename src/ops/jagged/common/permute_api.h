// ops/jagged/common/permute_api.h: the C++ API (torch-free) of permute_1D_sparse_data and
// permute_2D_sparse_data (jagged_ops.md §3; the op folders' READMEs hold the cards). Each op's
// own header includes this one; both share the argument struct and the entry code
// (permute_entry.cpp).
//
//   1-D: lengths [T]: output segment i is input segment permute[i]
//   2-D: lengths [T, B]: output row i (B segments) is input row permute[i]
// values [N, *E] (any dtype) and weights [N, *E'] (fp64, fp32, fp16, bf16) follow the lengths:
// N = sum(lengths), the segments lie back to back in row-major order of lengths. permute [P]
// (int32 or int64) may repeat rows or leave some out. Forward only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct PermuteSparseDataArgs {
  TensorView permute;                 // [P] int32/int64, each in [0, T)
  TensorView lengths;                 // [T] (1-D op) or [T, B] contiguous (2-D op); int32/int64
  TensorView values;                  // [N, *E], any dtype; dims after the first dense
  std::optional<TensorView> weights;  // [N, *E'], floating; dims after the first dense
  // R = the sum of the permuted lengths; nullopt: read from CPU tensors (CUDA tensors and
  // data-less views are refused: the op never synchronises).
  std::optional<int64_t> permuted_lengths_sum;
};

// Outputs: permuted_lengths [P] / [P, B] (lengths' dtype), permuted_values [R, *E] (values'
// dtype), permuted_weights [R, *E'] (weights' dtype; absent without weights).
Status permute_1D_sparse_data_shape(const PermuteSparseDataArgs& a, Shape* lengths_shape,
                                    Shape* values_shape, const Context& ctx = {});
Status permute_2D_sparse_data_shape(const PermuteSparseDataArgs& a, Shape* lengths_shape,
                                    Shape* values_shape, const Context& ctx = {});
// Scratch bytes a CUDA call needs in ctx.workspace (0 on the CPU).
size_t permute_1D_sparse_data_workspace_bytes(const PermuteSparseDataArgs& a);
size_t permute_2D_sparse_data_workspace_bytes(const PermuteSparseDataArgs& a);
// permuted_weights: nullptr exactly when a.weights is absent.
Status permute_1D_sparse_data(const PermuteSparseDataArgs& a, const TensorView& permuted_lengths,
                              const TensorView& permuted_values, const TensorView* permuted_weights,
                              const Context& ctx = {});
Status permute_2D_sparse_data(const PermuteSparseDataArgs& a, const TensorView& permuted_lengths,
                              const TensorView& permuted_values, const TensorView* permuted_weights,
                              const Context& ctx = {});

}  // namespace recops
