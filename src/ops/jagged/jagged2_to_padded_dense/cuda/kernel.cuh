// jagged/jagged2_to_padded_dense/cuda/kernel.cuh: the device code (reads only the params). Offsets
// are clamped into [0, total] (common/jagged2_blocks.h): invalid offsets with validation off give
// unspecified values, never an out-of-bounds access.
#pragma once

#include <cstdint>

#include "ops/jagged/common/jagged2_blocks.h"
#include "ops/jagged/jagged2_to_padded_dense/params.h"

namespace recops::ops::jagged2_to_padded_dense_ns {

__device__ __forceinline__ Jagged2Block dev_block(const Params& p, int64_t b) {
  return jagged2_block_at(p.offsets, p.offsets_int64, p.offsets_stride, b, p.total);
}

// Forward: one thread per output element (b, m, c), grid-stride over B * max_L * max_L (int64);
// E: an unsigned integer of the element's size.
template <class E>
__global__ void to_dense_kernel(Params p, E pad) {
  const E* v = static_cast<const E*>(p.src);
  E* out = static_cast<E*>(p.dst);
  const int64_t block = p.max_L * p.max_L, n_out = p.B * block;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_out;
       i += stride) {
    const int64_t b = i / block, r = i - b * block, m = r / p.max_L, c = r - m * p.max_L;
    const Jagged2Block blk = dev_block(p, b);
    const int64_t n = blk.side < p.max_L ? blk.side : p.max_L;
    out[i] = (m < n && c < n) ? v[(blk.begin + m * blk.side + c) * p.jagged_stride] : pad;
  }
}

// Backward: CTAs take blocks b (grid-stride over B), threads the block's N_b² elements.
template <class E>
__global__ void to_jagged_kernel(Params p) {
  const E* g = static_cast<const E*>(p.src);
  E* out = static_cast<E*>(p.dst);
  for (int64_t b = blockIdx.x; b < p.B; b += gridDim.x) {
    const Jagged2Block blk = dev_block(p, b);
    const int64_t N = blk.side, n = N < p.max_L ? N : p.max_L;
    for (int64_t i = threadIdx.x; i < N * N; i += blockDim.x) {
      const int64_t m = i / N, c = i - m * N;
      out[blk.begin + i] = (m < n && c < n) ? g[b * p.dense_b + m * p.dense_m + c] : E(0);
    }
  }
}

}  // namespace recops::ops::jagged2_to_padded_dense_ns
