// jagged/jagged_index_select/jagged_index_select.h: the op's C++ API (torch-free). The Args
// structs are the argument tables' structs (the entry's kit::Def binds each member to a schema
// argument).
//
// jagged_index_select:     whole sequences of a jagged tensor gathered in index order:
//   out_lengths[k] = seq_lengths[indices[k]];  output sequence k = input sequence indices[k]
// jagged_index_select_bwd: grad_values (b, l) = sum over k with indices[k] = b (ascending k) of
//   grad (k, l); 0 for a sequence no index selects
// values [total_L, D] (any dtype forward; fp64/fp32/fp16/bf16 backward), seq_lengths [B],
// indices [K] (int32 or int64 each), out [num_dense_output_rows, D], out_lengths [K].
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct JaggedIndexSelectArgs {
  TensorView values;       // [total_L, D] or [total_L]; last stride 1
  TensorView seq_lengths;  // [B], sum = total_L
  TensorView indices;      // [K], each in [0, B)
  // sum_k seq_lengths[indices[k]]; nullopt: computed on the host (CPU tensors only).
  std::optional<int64_t> num_dense_output_rows;
};

// out: [num_dense_output_rows, *values.shape[1:]] of values' dtype; out_lengths: [K] of
// seq_lengths' dtype. Without num_dense_output_rows CPU lengths and indices are read (and
// checked); CUDA ones are refused (the op never synchronises), as are data-less (Meta) views,
// except with K = 0 (0 rows, nothing read). An empty tensor needs no data (B = 0 is valid).
Status jagged_index_select_shape(const JaggedIndexSelectArgs& a, Shape* out_shape,
                                 Shape* out_lengths_shape, const Context& ctx = {});
// Scratch bytes on values' device (0 on the CPU).
size_t jagged_index_select_workspace_bytes(const JaggedIndexSelectArgs& a);
Status jagged_index_select(const JaggedIndexSelectArgs& a, const TensorView& out,
                           const TensorView& out_lengths, const Context& ctx = {});

struct JaggedIndexSelectBwdArgs {
  TensorView grad;                               // [num_dense_output_rows, D], like out
  TensorView values;                             // the forward's values (its shape and dtype only)
  TensorView seq_lengths;                        // [B]
  TensorView indices;                            // [K]
  std::optional<int64_t> num_dense_output_rows;  // unused beyond the forward's schema
};
size_t jagged_index_select_bwd_workspace_bytes(const JaggedIndexSelectBwdArgs& a);
// grad_values: values' shape and dtype.
Status jagged_index_select_bwd(const JaggedIndexSelectBwdArgs& a, const TensorView& grad_values,
                               const Context& ctx = {});

}  // namespace recops
