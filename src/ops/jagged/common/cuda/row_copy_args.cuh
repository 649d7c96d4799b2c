// ops/jagged/common/cuda/row_copy_args.cuh: the kernel arguments of the two row-copy conversions
// (ops/jagged/common/row_copy.h), in units U of sizeof(U) bytes; filled by row_copy_launch.cu.
#pragma once

#include <cstdint>

#include "core/cuda/bits.cuh"

namespace recops::ops::row_copy_dev {

template <class U>  // U: the unit (uint4, uint2, unsigned int, unsigned short, unsigned char)
struct Args {
  const U* src;                        // to_dense: the jagged side; to_jagged: the dense side
  U* dst;                              // the other side
  core::cuda::ClampedOffsets offsets;  // clamped into [0, total_L]
  int64_t B;
  int64_t S;  // dense rows per batch (max_L of jagged_to_padded_dense)
  int64_t total_L;
  int64_t W;                   // units per row: D * elem_size / sizeof(U)
  int64_t jagged_row_stride;   // (total_L, W)
  int64_t dense_batch_stride;  // (B, S, W)
  int64_t dense_row_stride;
  int64_t tile_rows;  // kRowsPerThread * (blockDim.x >> lanes_log2)
  int64_t num_tiles;  // ceil(output rows / tile_rows)
  U pad;              // to_dense: the padding pattern (to_jagged writes zeros)
  int lanes_log2;     // G = 1 << lanes_log2 lanes per row
};

}  // namespace recops::ops::row_copy_dev
