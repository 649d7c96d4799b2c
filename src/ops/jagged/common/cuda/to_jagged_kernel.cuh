// common/cuda/to_jagged_kernel.cuh: the conversion kernel, which moves units of bits.
//
// Output row r of sequence b (o_b <= r < o_{b+1}, l = r - o_b) = dense[b, l] for l < S, else 0.
//
// Work list: the total_L output rows,
// cut into tiles of kRowsPerThread * (threads / G) consecutive rows (threads, kRowsPerThread in {4,
// 8}, G and the unit width are tunable: ops/jagged/common/row_copy_tuning.h); one block per tile by
// default (a persistent grid walking the tiles grid-stride is a tune candidate). A tile finds the
// sequences of its first and last rows with a 32-way search over seq_offsets by one warp each
// (log32(B) dependent loads), and each row then searches only between those two, which is no search
// at all when the tile lies inside one sequence. Offsets are clamped into [0, total_L]; a row whose
// sequence cannot be found consistently (corrupted offsets) is written as zeros, so dense is read
// only at b < B, 0 <= l < S.
#pragma once

#include <cstdint>

#include "core/cuda/bits.cuh"
#include "ops/jagged/common/cuda/row_copy_args.cuh"

namespace recops::ops::d2j_cuda {

// H200, 2026-11-29 (bench/experiments/jagged_variants.cu in git history, S3 = B=1024 S=1024 D=256
// skewed): one block per tile 90.7% of the 1 GiB copy ceiling in bf16 and 93.1% in fp32,
// against 82.3% and 86.1% with the persistent grid used before. A walk over the (B, S) grid instead
// (no search; rows l >= n_b skipped) measured 71.9% / 79.5% (persistent) and was removed.
inline constexpr int kMaxThreads = 512;  // the largest `threads` candidate

template <class U>
using Args = row_copy_dev::Args<U>;  // src: dense, dst: the jagged out

// Largest b in [0, B-1] with offsets(b) <= r, by one full warp (B >= 1). Each round tests 32
// evenly spaced candidates and keeps the stretch between the last that passes and the next; with
// non-decreasing offsets that is exact, and with corrupted ones it still ends within [0, B-1].
__device__ __forceinline__ int64_t warp_find_sequence(const core::cuda::ClampedOffsets& off,
                                                      int64_t B, int64_t r) {
  const int lane = threadIdx.x & 31;
  int64_t lo = 0, hi = B - 1;
  while (lo < hi) {
    const int64_t step = (hi - lo + 31) >> 5;  // ceil((hi - lo) / 32) >= 1
    const int64_t idx = lo + (lane + 1) * step;
    const bool pass = idx <= hi && off(idx) <= r;
    const int k = __popc(__ballot_sync(0xffffffffu, pass));
    const int64_t new_lo = lo + k * step;
    const int64_t cap = lo + (k + 1) * step - 1;
    hi = cap < hi ? cap : hi;
    lo = new_lo;
  }
  return lo;
}

template <class U, int kRowsPerThread>
__global__ void __launch_bounds__(kMaxThreads) dense_to_jagged_kernel(const Args<U> a) {
  __shared__ int64_t s_range[2];  // sequences of the tile's first and last rows
  const int lanes = 1 << a.lanes_log2;
  const int lane = threadIdx.x & (lanes - 1);
  const int group = threadIdx.x >> a.lanes_log2;
  const int groups = static_cast<int>(blockDim.x) >> a.lanes_log2;
  const int warp = threadIdx.x >> 5;

  for (int64_t tile = blockIdx.x; tile < a.num_tiles; tile += gridDim.x) {
    const int64_t r0 = tile * a.tile_rows;
    const int64_t r_end = r0 + a.tile_rows < a.total_L ? r0 + a.tile_rows : a.total_L;
    if (a.B > 0 && warp < 2) {
      const int64_t b = warp_find_sequence(a.offsets, a.B, warp == 0 ? r0 : r_end - 1);
      if ((threadIdx.x & 31) == 0) s_range[warp] = b;
    }
    __syncthreads();
    const int64_t b_lo = a.B > 0 ? s_range[0] : 0;
    const int64_t b_hi = a.B > 0 ? (s_range[1] > b_lo ? s_range[1] : b_lo) : 0;

    const U* src[kRowsPerThread];
    U* dst[kRowsPerThread];
    bool live[kRowsPerThread];  // the row exists (r < total_L)
    bool copy[kRowsPerThread];  // it comes from dense, else zeros
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) {
      const int64_t r = r0 + static_cast<int64_t>(k * groups + group);
      live[k] = r < r_end;
      copy[k] = false;
      src[k] = a.src;
      dst[k] = a.dst + r * a.jagged_row_stride;
      if (live[k] && a.B > 0) {
        int64_t lo = b_lo, hi = b_hi;  // largest b in [lo, hi] with offsets(b) <= r
        while (lo < hi) {
          const int64_t mid = lo + ((hi - lo + 1) >> 1);
          if (a.offsets(mid) <= r)
            lo = mid;
          else
            hi = mid - 1;
        }
        const int64_t start = a.offsets(lo);
        const int64_t end = a.offsets(lo + 1);
        const int64_t l = r - start;
        copy[k] = r >= start && r < end && l < a.S;
        if (copy[k]) src[k] = a.src + lo * a.dense_batch_stride + l * a.dense_row_stride;
      }
    }
    const U zero{};
    for (int64_t c = lane; c < a.W; c += lanes) {
      U v[kRowsPerThread];
#pragma unroll
      for (int k = 0; k < kRowsPerThread; ++k)
        v[k] = copy[k] ? core::cuda::load_stream(src[k] + c) : zero;
#pragma unroll
      for (int k = 0; k < kRowsPerThread; ++k)
        if (live[k]) core::cuda::store_stream(dst[k] + c, v[k]);
    }
    __syncthreads();  // s_range is rewritten by the next tile
  }
}

}  // namespace recops::ops::d2j_cuda
