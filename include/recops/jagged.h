// recops/jagged.h: jagged tensor ops (spec: jagged_ops.md).
//
// Letters: B sequences, total_L rows of the values tensor, max_L truncation bound
// (`max_seq_len`), D = prod of the trailing dims E. A jagged tensor is values [total_L, *E] plus
// seq_offsets [B+1] (int32 or int64, offsets[0] = 0, non-decreasing, offsets[B] = total_L).
//
// Every op writes into outputs the caller allocated with the shape its *_shape function gives;
// outputs need the same dtype and device as the inputs and densely laid out trailing dims.
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

// ---- complete_cumsum / exclusive_cumsum / inclusive_cumsum (jagged_ops.md §2.8) ----
// t: [n] or [R, n] int32/int64 (complete) or any shape (exclusive/inclusive, flattened).
// out: [n+1] / [R, n+1] (complete) or t's shape; its dtype (int32 or int64) is the out_dtype.
// Sums accumulate in int64; an int32 result that overflows is an out_of_range error (CPU always,
// CUDA when validation is on).
Status complete_cumsum_shape(const TensorView& t, Shape* out_shape);
Status complete_cumsum(const TensorView& t, const TensorView& out, const Context& ctx = {});
Status exclusive_cumsum(const TensorView& t, const TensorView& out, const Context& ctx = {});
Status inclusive_cumsum(const TensorView& t, const TensorView& out, const Context& ctx = {});
// Scratch bytes a CUDA call needs in ctx.workspace (0 on the CPU).
size_t cumsum_workspace_bytes(const TensorView& t, const TensorView& out);

// ---- jagged_to_padded_dense (§2.1) ----
// values [total_L, *E] (any dtype) -> out [B, max_seq_len, *E]; out[b, l] = values[o_b + l] for
// l < min(L_b, max_seq_len), else padding_value (integer/bool dtypes need an integral
// padding_value that the dtype can hold).
Status jagged_to_padded_dense_shape(const TensorView& values, const TensorView& seq_offsets,
                                    int64_t max_seq_len, Shape* out_shape);
Status jagged_to_padded_dense(const TensorView& values, const TensorView& seq_offsets,
                              int64_t max_seq_len, double padding_value, const TensorView& out,
                              const Context& ctx = {});

// ---- dense_to_jagged (§2.2) ----
// dense [B, S, *E] -> out [total_L, *E]; row (b, l) = dense[b, l] for l < min(L_b, S), else 0.
// total_L is seq_offsets[B]: dense_to_jagged_total_L reads it (a device-to-host copy and a
// synchronisation for CUDA offsets).
Status dense_to_jagged_total_L(const TensorView& seq_offsets, int64_t* total_L,
                               const Context& ctx = {});
Status dense_to_jagged_shape(const TensorView& dense, const TensorView& seq_offsets,
                             int64_t total_L, Shape* out_shape);
Status dense_to_jagged(const TensorView& dense, const TensorView& seq_offsets,
                       const TensorView& out, const Context& ctx = {});

}  // namespace recops
