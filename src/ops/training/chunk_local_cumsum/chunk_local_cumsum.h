// training/chunk_local_cumsum/chunk_local_cumsum.h: the C++ API (torch-free) of chunk_local_cumsum
// and its backward op (training_ops.md §4.3, the GDN gate cumsum; fla-core's
// fla.ops.utils.cumsum.chunk_local_cumsum). The Args structs are the argument tables' structs.
//
// Each sequence is cut into chunks of BT = chunk_size positions from its own start (the last one
// may be shorter); within a chunk, per head h (and channel k for a 4-D g):
//   reverse = false:  out_t = scale · Σ_{s = chunk start .. t} g_s
//   reverse = true:   out_t = scale · Σ_{s = t .. chunk end}   g_s
// The backward is the same sum in the other direction: dg = chunk_local_cumsum(dout, reverse =
// !reverse, scale), rounded to g's dtype.
// g: [B, T, H] or [B, T, H, K], contiguous, fp64/fp32/fp16/bf16; seq_offsets [N+1] (fla's
// cu_seqlens): packed sequences of batch 0, B must be 1.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkLocalCumsumArgs {
  TensorView g;                           // [B, T, H] or [B, T, H, K]
  int64_t chunk_size = 64;                // BT, a power of two
  bool reverse = false;                   // sum to the chunk's end instead of from its start
  double scale = 1.0;                     // multiplies the sum (1/ln 2 gives log2 units)
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  std::optional<DType> out_dtype;         // out's dtype; default fp32
};
// out: g's shape, dtype out_dtype (default fp32).
Status chunk_local_cumsum_shape(const ChunkLocalCumsumArgs& a, Shape* out_shape, DType* out_dtype);
Status chunk_local_cumsum(const ChunkLocalCumsumArgs& a, const TensorView& out,
                          const Context& ctx = {});

struct ChunkLocalCumsumBwdArgs {
  TensorView dout;  // like the forward's out (g's shape, out_dtype)
  TensorView g;     // the forward's g (its shape and dtype give dg's; the values are not read)
  int64_t chunk_size = 64;
  bool reverse = false;  // the forward's direction
  double scale = 1.0;
  std::optional<TensorView> seq_offsets;
  std::optional<DType> out_dtype;  // the forward's out_dtype
};
// dg: g's shape and dtype.
Status chunk_local_cumsum_bwd(const ChunkLocalCumsumBwdArgs& a, const TensorView& dg,
                              const Context& ctx = {});

}  // namespace recops
