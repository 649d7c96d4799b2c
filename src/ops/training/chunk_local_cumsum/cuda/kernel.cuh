// training/chunk_local_cumsum/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, column tile). A column tile is CW = min(32, next power of two >= C)
// adjacent columns; a block has up to 8 warps (fewer when a chunk is short), each lane
// (lane = r·CW + tx) one column tx and, per step, V = 8 consecutive positions of the chunk (logical
// order: from the chunk's start, or from its end for reverse); a warp's RW = 32 / CW lanes of a
// column hold consecutive runs of positions. So a warp's loads of one v cover 32 contiguous columns
// of one row (C ≥ 32), or RW rows of min(CW, C) columns whose other positions the next v loads
// (C < 32, L1 hits). Per step: the V loads of a thread are in flight together; the thread scans
// its V values serially, the thread totals get an fp64 warp scan (shuffles CW·d lanes up, i.e.
// d runs back in the same column), the warp totals go through shared memory (double-buffered,
// one __syncthreads a step; each thread reads them once a step, one shared load per element), and
// `carry` holds the sum of the chunk's earlier steps. Every sum is fp64 (README, "Dtypes and
// accuracy": fp32 running sums miss the `single` standard), each output scale·sum rounded once to
// out's dtype (16-bit via float by round-to-odd, so once in effect).
//
// Chunk slots: without seq_offsets slot i is chunk i % per_batch of batch i / per_batch. With
// seq_offsets sequence n owns the slots [S(n), S(n+1)), S(n) = floor(off[n]/BT) + n: at least
// ceil(len_n / BT) of them (floor(e/BT) − floor(a/BT) + 1 ≥ ceil((e − a)/BT)), S(N) =
// floor(T/BT) + N slots in all; a slot past its sequence's chunks does nothing. S is increasing
// for valid offsets; the block finds its sequence by binary search. Offsets are clamped to
// [0, T] before use, so even unvalidated offsets (validation off) never index outside g.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "ops/training/chunk_local_cumsum/cuda/tiles.h"
#include "ops/training/chunk_local_cumsum/params.h"

namespace recops::ops::chunk_local_cumsum_ns {

// widen / narrow: core/cuda/numeric.cuh's exact widening to double and single rounding from it
// (16-bit through float by round-to-odd: the CPU path's `narrow`).
template <class T>
__device__ __forceinline__ double widen(T v) {
  return core::cuda::to_double(v);
}
template <class U>
__device__ __forceinline__ U narrow(double x) {
  return core::cuda::from_double<U>(x);
}

__device__ __forceinline__ int64_t offset_at(const Params& p, int64_t n) {
  const int64_t v = p.off_dtype == DType::int32 ? static_cast<const int32_t*>(p.seq_offsets)[n]
                                                : static_cast<const int64_t*>(p.seq_offsets)[n];
  return v < 0 ? 0 : (v > p.T ? p.T : v);
}

// Slot `slot`'s chunk: *row0 its first row of the flattened [B·T, C] input, *len its length
// (<= 0: an empty slot).
__device__ __forceinline__ void slot_chunk(const Params& p, int64_t slot, int64_t* row0,
                                           int64_t* len) {
  const int64_t bt = p.chunk;
  if (!p.seq_offsets) {
    const int64_t per_batch = (p.T + bt - 1) / bt;
    const int64_t b = slot / per_batch, c = slot % per_batch;
    *row0 = b * p.T + c * bt;
    *len = p.T - c * bt < bt ? p.T - c * bt : bt;
    return;
  }
  // The largest n in [0, N) with S(n) <= slot (n = 0 if none).
  int64_t lo = 0, hi = p.N - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (offset_at(p, mid) / bt + mid <= slot)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int64_t a = offset_at(p, lo), e = offset_at(p, lo + 1);
  const int64_t c = slot - (a / bt + lo);  // >= 0 for valid offsets
  const int64_t start = a + c * bt;
  *row0 = start;
  const int64_t left = e - start;
  *len = (c < 0 || left <= 0) ? 0 : (left < bt ? left : bt);
}

// log_cw = log2(CW); items = slots · tiles, tiles = ceil(C / CW); blockDim.x = 32 · (warps in use).
template <class T, class U>
__global__ void __launch_bounds__(kThreads)
    chunk_local_cumsum_kernel(const Params p, int log_cw, int64_t tiles, int64_t items) {
  constexpr int V = kRowsPerThread;
  __shared__ double tot[2][kWarps][32];  // warp totals, double-buffered across steps
  const T* in = static_cast<const T*>(p.in);
  U* out = static_cast<U*>(p.out);
  const int cw = 1 << log_cw, rw = 32 >> log_cw;
  const int warps = static_cast<int>(blockDim.x >> 5);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int tx = lane & (cw - 1), r = lane >> log_cw;
  const int64_t rows_step = static_cast<int64_t>(warps) * rw * V;  // positions a step
  const int64_t first = static_cast<int64_t>(warp * rw + r) * V;   // the thread's, in a step
  int par = 0;  // kept across items: one __syncthreads a step separates two uses of a buffer
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t slot = item / tiles, tile = item % tiles;
    int64_t row0, len;
    slot_chunk(p, slot, &row0, &len);  // the same for the whole block
    if (len <= 0) continue;
    const int64_t col = tile * cw + tx;
    const bool col_ok = col < p.C;
    double carry = 0.0;  // the sum of the chunk's earlier steps
    for (int64_t q0 = 0; q0 < len; q0 += rows_step) {
      double x[V];  // the thread's V consecutive positions, then their inclusive prefix sums
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const int64_t q = q0 + first + v;  // logical position in the chunk
        const int64_t row = row0 + (p.reverse ? len - 1 - q : q);
        x[v] = col_ok && q < len ? widen(in[row * p.C + col]) : 0.0;
      }
#pragma unroll
      for (int v = 1; v < V; ++v) x[v] += x[v - 1];
      double incl = x[V - 1];  // inclusive scan of the thread totals over the warp's positions
      for (int d = 1; d < rw; d <<= 1) {
        const double y = __shfl_up_sync(0xffffffffu, incl, d << log_cw);
        if (r >= d) incl += y;
      }
      const double below = __shfl_up_sync(0xffffffffu, incl, cw & 31);  // lane r - 1's
      if (r == rw - 1) tot[par][warp][tx] = incl;
      __syncthreads();
      double pre = carry;
      for (int w = 0; w < warps; ++w) {
        const double t = tot[par][w][tx];
        if (w < warp) pre += t;
        carry += t;
      }
      if (r > 0) pre += below;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const int64_t q = q0 + first + v;
        const int64_t row = row0 + (p.reverse ? len - 1 - q : q);
        if (col_ok && q < len) out[row * p.C + col] = narrow<U>(p.scale * (pre + x[v]));
      }
      par ^= 1;
    }
  }
}

}  // namespace recops::ops::chunk_local_cumsum_ns
