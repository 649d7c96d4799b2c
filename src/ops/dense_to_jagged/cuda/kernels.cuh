// dense_to_jagged/cuda/kernels.cuh: the conversion kernel, which moves units of bits.
//
// Output row r of sequence b (o_b <= r < o_{b+1}, l = r - o_b) = dense[b, l] for l < S, else 0.
//
// Two walks (the launch picks one from the configuration; the jagged walk is the default): the
// dense walk below, and the jagged walk here. Jagged walk work list: the total_L output rows, cut
// into tiles of kRowsPerThread * (threads / G) consecutive rows (threads, kRowsPerThread in {4, 8},
// G and the unit width are tunable: core/row_copy_tuning.h); blocks walk the tiles grid-stride. A
// tile finds the sequences of its first and last rows with a 32-way search over seq_offsets by one
// warp each (log32(B) dependent loads), and each row then searches only between those two, which is
// no search at all when the tile lies inside one sequence. Offsets are clamped into [0, total_L]; a
// row whose sequence cannot be found consistently (corrupted offsets) is written as zeros, so dense
// is read only at b < B, 0 <= l < S.
#pragma once

#include <cstdint>

#include "core/cuda/bits.cuh"

namespace recops::ops::d2j_cuda {

// H200, 2026-11-29, commit 133a4d52d93a (bench/results/h200/): S3 bf16 3408 GB/s = 81.4% of copy,
// fp32 85.6%, S5 72%; 40 registers on sm_90a, no spills. See jagged_to_padded_dense's note.
inline constexpr int kMaxThreads = 512;  // the largest `threads` candidate

template <class U>  // U: the unit (uint4, uint2, unsigned int, unsigned short, unsigned char)
struct Args {
  const U* dense;  // (B, S, W) units, strides dense_batch_stride, dense_row_stride
  U* out;          // (total_L, W) units, row stride out_row_stride
  core::cuda::ClampedOffsets offsets;  // offsets.total_L = total_L
  int64_t B;
  int64_t S;
  int64_t total_L;
  int64_t W;  // units per row: D * elem_size / sizeof(U)
  int64_t dense_batch_stride;
  int64_t dense_row_stride;
  int64_t out_row_stride;
  int64_t tile_rows;  // kRowsPerThread * (blockDim.x >> lanes_log2)
  int64_t num_tiles;  // ceil(total_L / tile_rows)
  int lanes_log2;     // G = 1 << lanes_log2 lanes per row
};

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
      src[k] = a.dense;
      dst[k] = a.out + r * a.out_row_stride;
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
        if (copy[k]) src[k] = a.dense + lo * a.dense_batch_stride + l * a.dense_row_stride;
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

// The same conversion walked over the dense rows instead (dense_walk): tile t covers the dense rows
// [t * tile_rows, (t+1) * tile_rows) of the (B, S) grid, row (b, l) is copied to out row o_b + l
// when l < n_b = min(L_b, S) and skipped otherwise; no search at all, which pays when most of the
// grid is filled (used when a tuning file's config has dense_walk = 1, a `recops tune` candidate
// that is checked against the golden before it can win; num_tiles then counts the dense grid).
// Output rows past S of a sequence (L_b > S) get their zeros from the lanes of its dense rows: row
// l also writes out rows l + S, l + 2S, ... below L_b (at most ceil(L_b / S) - 1 extra rows per
// lane group). Offsets are clamped, so every out row written is below o_{b+1} <= total_L: no access
// falls outside out or dense even with corrupted offsets.
template <class U, int kRowsPerThread>
__global__ void __launch_bounds__(kMaxThreads) dense_to_jagged_dense_walk_kernel(const Args<U> a) {
  const int lanes = 1 << a.lanes_log2;
  const int lane = threadIdx.x & (lanes - 1);
  const int group = threadIdx.x >> a.lanes_log2;
  const int groups = static_cast<int>(blockDim.x) >> a.lanes_log2;

  for (int64_t tile = blockIdx.x; tile < a.num_tiles; tile += gridDim.x) {
    const int64_t r0 = tile * a.tile_rows;
    const int64_t b0 = r0 / a.S;
    const int64_t l0 = r0 - b0 * a.S;
    const U* src[kRowsPerThread];
    U* dst[kRowsPerThread];
    bool copy[kRowsPerThread];
    bool any = false;
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) {
      int64_t l = l0 + static_cast<int64_t>(k * groups + group);
      int64_t b = b0;
      if (l >= a.S) {
        const int64_t q = l / a.S;
        b += q;
        l -= q * a.S;
      }
      copy[k] = false;
      src[k] = a.dense;
      dst[k] = a.out;
      if (b < a.B) {
        const int64_t start = a.offsets(b);
        const int64_t end = a.offsets(b + 1);
        const int64_t len = end > start ? end - start : 0;
        const int64_t n = len < a.S ? len : a.S;
        copy[k] = l < n;
        src[k] = a.dense + b * a.dense_batch_stride + l * a.dense_row_stride;
        dst[k] = a.out + (start + l) * a.out_row_stride;
        // Rows past S of this sequence are zeros: the lanes of dense row l take out rows
        // l + S, l + 2S, ... (spread over all S rows' lanes, not one group per sequence).
        if (l < n) {
          const U zero{};
          for (int64_t x = l + a.S; x < len; x += a.S)
            for (int64_t c = lane; c < a.W; c += lanes)
              core::cuda::store_stream(a.out + (start + x) * a.out_row_stride + c, zero);
        }
      }
      any = any || copy[k];
    }
    if (!any) continue;
    for (int64_t c = lane; c < a.W; c += lanes) {
      U v[kRowsPerThread];
#pragma unroll
      for (int k = 0; k < kRowsPerThread; ++k)
        if (copy[k]) v[k] = core::cuda::load_stream(src[k] + c);
#pragma unroll
      for (int k = 0; k < kRowsPerThread; ++k)
        if (copy[k]) core::cuda::store_stream(dst[k] + c, v[k]);
    }
  }
}

}  // namespace recops::ops::d2j_cuda
