// ops/jagged/common/cuda/permute_kernel.cuh: the device code of the permute ops
// (permute_params.h); reads only the params and the workspace arrays permute_launch.cu carves out.
// Invalid contents (validation off) never cause an out-of-bounds access: negative lengths count as
// 0, permute entries are clamped into [0, T), and output rows the offsets do not cover, or whose
// source row lies past N, get zeros.
#pragma once

#include <cstdint>

#include "ops/jagged/common/cuda/permute_tiles.h"
#include "ops/jagged/common/cuda/select_kernel.cuh"
#include "ops/jagged/common/permute_params.h"

namespace recops::ops::permute_dev {

__device__ __forceinline__ int64_t dev_int(const void* p, bool int64, int64_t i) {
  return int64 ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
}

// The input row of output row i, clamped into [0, T) (T > 0).
__device__ __forceinline__ int64_t dev_source(const PermuteParams& p, int64_t i) {
  const int64_t t = dev_int(p.permute, p.permute_int64, i * p.permute_stride);
  return t < 0 ? 0 : (t >= p.T ? p.T - 1 : t);
}

// The last i in [lo, hi) with a[i] <= x (a non-decreasing, a[lo] <= x).
__device__ __forceinline__ int64_t dev_last_le(const int64_t* a, int64_t lo, int64_t hi,
                                               int64_t x) {
  return lo + select_dev::dev_last_le(a + lo, hi - lo, x);
}

// rowlen[t] = sum_b max(lengths[t, b], 0): a warp per row when kWarp (B > 1), else a thread per
// row; rows grid-stride. Also in_off[0] = out_off[0] = 0 (the scans write the rest).
template <bool kWarp>
__global__ void __launch_bounds__(kThreads)
    row_sums_kernel(PermuteParams p, int64_t* rowlen, int64_t* in_off, int64_t* out_off) {
  constexpr int kGroup = kWarp ? 32 : 1;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tid == 0) in_off[0] = out_off[0] = 0;
  const int lane = threadIdx.x % kGroup;
  const int64_t groups = static_cast<int64_t>(gridDim.x) * blockDim.x / kGroup;
  for (int64_t t = tid / kGroup; t < p.T; t += groups) {  // uniform within a warp when kWarp
    int64_t s = 0;
    for (int64_t b = lane; b < p.B; b += kGroup) {
      const int64_t v =
          dev_int(p.lengths, p.lengths_int64, t * p.lengths_stride_t + b * p.lengths_stride_b);
      s += v > 0 ? v : 0;
    }
    if constexpr (kWarp)
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) rowlen[t] = s;
  }
}

// permlen[i] = the row sum of input row permute[i]; permuted_lengths[i, b] = lengths[permute[i],
// b]. Grid-stride over P, then over P*B.
static __global__ void __launch_bounds__(kThreads)
    permuted_lengths_kernel(PermuteParams p, const int64_t* in_off, int64_t* permlen) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < p.P; i += stride) {
    int64_t n = 0;
    if (p.T > 0) {
      const int64_t t = dev_source(p, i);
      n = in_off[t + 1] - in_off[t];
    }
    permlen[i] = n;
  }
  for (int64_t e = tid; e < p.P * p.B; e += stride) {
    const int64_t i = e / p.B, b = e - i * p.B;
    const int64_t v = p.T > 0
                          ? dev_int(p.lengths, p.lengths_int64,
                                    dev_source(p, i) * p.lengths_stride_t + b * p.lengths_stride_b)
                          : 0;
    if (p.lengths_int64)
      static_cast<int64_t*>(p.out_lengths)[e] = v;
    else
      static_cast<int32_t*>(p.out_lengths)[e] = static_cast<int32_t>(v);
  }
}

// Copy of one payload, E an unsigned integer of the element's size (bytes as they are). Blocks
// take tiles of kTile consecutive output elements (grid-stride). Two threads find the output rows
// of the tile's first and last element (binary searches over out_off), then each element searches
// only between them: a tile inside one long segment needs no search at all, a tile of many tiny
// segments searches a short range that the block shares in cache. Writes are coalesced, and so
// are reads within a segment.
template <class E>
__global__ void __launch_bounds__(kThreads)
    copy_kernel(PermuteParams p, PermutePayload pl, const int64_t* in_off, const int64_t* out_off) {
  __shared__ int64_t range[2];
  const E* src = static_cast<const E*>(pl.src);
  E* dst = static_cast<E*>(pl.dst);
  const int64_t n = p.R * pl.D;
  const int64_t covered = p.P > 0 ? out_off[p.P] : 0;  // output rows the offsets cover
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kTile; base < n;
       base += static_cast<int64_t>(gridDim.x) * kTile) {
    const int64_t end = base + kTile < n ? base + kTile : n;
    __syncthreads();  // the previous tile's readers of range[] are done
    if (threadIdx.x < 2) {
      const int64_t r = (threadIdx.x == 0 ? base : end - 1) / pl.D;
      range[threadIdx.x] = r < covered ? dev_last_le(out_off, 0, p.P, r) : p.P - 1;
    }
    __syncthreads();
    const int64_t lo = range[0], hi = range[1] + 1;
    for (int64_t e = base + threadIdx.x; e < end; e += kThreads) {
      const int64_t r = pl.D == 1 ? e : e / pl.D;
      E v = E(0);
      if (r < covered) {
        const int64_t j = dev_last_le(out_off, lo, hi, r);
        const int64_t row = in_off[dev_source(p, j)] + (r - out_off[j]);
        if (row < p.N) v = src[row * pl.src_row_stride + (e - r * pl.D)];
      }
      dst[e] = v;
    }
  }
}

}  // namespace recops::ops::permute_dev
