// jagged/keyed_jagged_index_select_dim1/keyed_jagged_index_select_dim1.h: the op's C++ API
// (torch-free). The Args structs are the argument tables' structs.
//
// keyed_jagged_index_select_dim1: the same batch positions selected in every key of a KJT:
//   output segment f*K + k = input segment f*B + indices[k] (key-major), weights likewise
// keyed_jagged_index_select_dim1_bwd: grad_values of input segment (f, b) = the sum over k with
//   indices[k] = b (ascending k) of grad of output segment (f, k); 0 when none
// values [total] any dtype; lengths [F*B], offsets [F*B+1] (int32/int64); indices [K]; weights
// [total] floating (optional); out [R], out_lengths [F*K], out_weights [R].
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct KeyedJaggedIndexSelectDim1Args {
  TensorView values;       // [total]
  TensorView lengths;      // [F*B], key-major: lengths[f*B + b]
  TensorView offsets;      // [F*B+1], the complete cumsum of lengths (checked against them)
  TensorView indices;      // [K], each in [0, B)
  int64_t batch_size = 1;  // B >= 1
  std::optional<TensorView> weights;            // [total], floating
  std::optional<int64_t> selected_lengths_sum;  // R; nullopt: computed on the host (CPU only)
};

// out [R] (values' dtype), out_lengths [F*K] (lengths' dtype), out_weights [R] (weights' dtype;
// absent without weights). Without selected_lengths_sum CPU tensors are read; CUDA tensors and
// data-less views are refused (the op never synchronises).
Status keyed_jagged_index_select_dim1_shape(const KeyedJaggedIndexSelectDim1Args& a,
                                            Shape* out_shape, Shape* out_lengths_shape,
                                            const Context& ctx = {});
size_t keyed_jagged_index_select_dim1_workspace_bytes(const KeyedJaggedIndexSelectDim1Args& a);
// out_weights: nullptr without weights.
Status keyed_jagged_index_select_dim1(const KeyedJaggedIndexSelectDim1Args& a,
                                      const TensorView& out, const TensorView& out_lengths,
                                      const TensorView* out_weights, const Context& ctx = {});

struct KeyedJaggedIndexSelectDim1BwdArgs {
  TensorView grad;  // [R], like out
  TensorView values;
  TensorView lengths;
  TensorView offsets;
  TensorView indices;
  int64_t batch_size = 1;
  std::optional<TensorView> weights;            // unused (no gradient)
  std::optional<int64_t> selected_lengths_sum;  // unused beyond the forward's schema
};
size_t keyed_jagged_index_select_dim1_bwd_workspace_bytes(
    const KeyedJaggedIndexSelectDim1BwdArgs& a);
// grad_values: values' shape and dtype.
Status keyed_jagged_index_select_dim1_bwd(const KeyedJaggedIndexSelectDim1BwdArgs& a,
                                          const TensorView& grad_values, const Context& ctx = {});

}  // namespace recops
