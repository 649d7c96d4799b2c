// complete_cumsum/cuda/kernels.cuh: one single-pass scan for the three cumsum ops, any R.
//
// The R rows of n elements are scanned as ONE flattened sequence of N = R*n elements with a
// segment boundary at every row start (a segmented inclusive scan). The sequence is cut into tiles
// of kTile elements taken in launch order from a counter; tile t publishes its segmented aggregate
// and later its inclusive value, and finds its carry-in by a decoupled look-back over the tiles
// before it, one warp looking at 32 predecessors per step. A tile that begins at a row start
// needs no carry-in at all (R = 65536, n = 16: no look-back anywhere); a look-back stops at the
// nearest tile holding an inclusive value (every tile containing a row start publishes one at
// once). So one launch serves R = 65536 x n = 16 and R = 1 x n = 2^28 alike.
//
//   Equivalent scalar loop (complete): for each r: s = 0; out[r,0] = 0;
//                                      for i < n: s += in[r,i]; out[r,i+1] = s
//   exclusive / inclusive: R = 1, out[i] = s before / after adding in[i].
//
// Sums are int64 computed modulo 2^64 (integer addition is exact and associative, so the result
// does not depend on tile timing: bit-identical runs). With validate, an int32 output that does
// not fit is recorded as the smallest overflowing output position (atomicMax of its complement).
#pragma once

#include <cub/block/block_scan.cuh>
#include <cuda/atomic>

#include <cstdint>

namespace recops::ops::scan_cuda {

// H200, 2026-11-29, commit 133a4d52d93a (bench/results/h200/): C3 (n = 2^28 int64) 2170-2275 GB/s
// = 52-54% of copy; C2 and R = 65536 x n = 16 (no look-back) ~20 us, launch-bound. The C3 rate
// matches one look-back window (32 tiles x 64 KB) per L2 round trip (~1 us), i.e. the inclusive
// frontier advances 32 tiles at a time; a wider window (several statuses per lane) or larger tiles
// should lift it.
inline constexpr int kThreads = 256;
inline constexpr int kItems = 16;
inline constexpr int kTile = kThreads * kItems;  // 4096 elements per tile
// Resident blocks per SM asked of the register allocator (<= 64 registers a thread): with 38.6 KB
// of shared memory a block, 5 fit on an H100/H200 SM, 4 on an A100.
inline constexpr int kMinBlocks = 4;
// Shared-memory staging of one tile, padded by one word every 16 so that both the striped
// (global-facing) and the blocked (thread-owns-16-consecutive) accesses avoid bank conflicts.
inline constexpr int kStage = kTile + kTile / 16;
__device__ __forceinline__ int stage_index(int j) {
  return j + (j >> 4);
}

// Look-back window: 4 predecessors per lane, 128 per round trip to L2. Measured on the H200 at
// 815e2d52b57d: C3 51-54% of copy, the same as with 32 per round trip, so the window was not what
// bounds C3 (the note above is disproved); the next suspects are the 4-5 resident 256-thread
// blocks per SM (38.6 KB of staging each) and the two block barriers per 32 KB tile.
inline constexpr int kLookBackPerLane = 4;
inline constexpr int kLookBack = 32 * kLookBackPerLane;

enum TileStatus : int { kEmpty = 0, kAggregate = 1, kInclusive = 2 };

// Workspace layout (bytes): [0, 8) tile counter, [8, 16) ~(first overflowing position) or 0,
// [16, 16 + 4T) status, then (8-aligned) T aggregates and T inclusive values. The first
// zeroed_bytes(T) bytes must be zero before the launch.
struct Workspace {
  static int64_t status_offset() { return 16; }
  static int64_t agg_offset(int64_t tiles) { return (16 + 4 * tiles + 7) / 8 * 8; }
  static int64_t incl_offset(int64_t tiles) { return agg_offset(tiles) + 8 * tiles; }
  static int64_t total_bytes(int64_t tiles) { return incl_offset(tiles) + 8 * tiles; }
  static int64_t zeroed_bytes(int64_t tiles) { return 16 + 4 * tiles; }
};

// x / d for x < 2^32 and 1 <= d < 2^31 with a multiply-high (the round-up method): m and s are
// chosen on the host so that (umulhi(x, m) + x) >> s == floor(x / d).
struct FastDiv {
  unsigned int m;
  int s;
  unsigned int d;
  __device__ __forceinline__ unsigned int div(unsigned int x) const {
    return static_cast<unsigned int>((static_cast<unsigned long long>(__umulhi(x, m)) + x) >> s);
  }
};

struct Args {
  const void* in;  // R rows of n, element (r, i) at r*in_row_stride + i*in_stride
  void* out;       // complete: (r, i) at r*out_row_stride + i; else flattened index
  int64_t R, n, N;
  int64_t in_row_stride, in_stride, out_row_stride;
  int64_t num_tiles;
  FastDiv div_n;   // used when n < kTile
  bool complete;   // out[r, 0] = 0 and out[r, i+1] = inclusive(r, i)
  bool exclusive;  // out[i] = inclusive(i) - in(i)
  bool validate;   // record int32 overflow
  unsigned long long* counter;
  unsigned long long* first_bad;  // ~position of the first overflow, 0 when none
  int* status;
  unsigned long long* agg;
  unsigned long long* incl;
};

// One element of the segmented scan: a value and whether a segment starts inside it.
struct Seg {
  unsigned long long v;
  int f;
};
struct SegOp {
  __device__ __forceinline__ Seg operator()(const Seg& a, const Seg& b) const {
    return Seg{b.f ? b.v : a.v + b.v, a.f | b.f};
  }
};

// Row and column of the element at offset x from the tile's first element (row r0, column i0).
struct Pos {
  int64_t r, i;
};
__device__ __forceinline__ Pos locate(const Args& a, int64_t r0, int64_t i0, int j) {
  if (a.n < kTile) {  // i0 + j < 2 * kTile: 32-bit fast division
    const unsigned int x = static_cast<unsigned int>(i0 + j);
    const unsigned int q = a.div_n.div(x);
    return Pos{r0 + q, static_cast<int64_t>(x - q * a.div_n.d)};
  }
  const int64_t x = i0 + j;  // n >= kTile: the tile spans at most two rows
  return x >= a.n ? Pos{r0 + 1, x - a.n} : Pos{r0, x};
}

__device__ __forceinline__ void publish(const Args& a, int64_t tile, int status,
                                        unsigned long long v) {
  unsigned long long* slot = status == kInclusive ? a.incl + tile : a.agg + tile;
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*slot).store(
      v, cuda::memory_order_relaxed);
  cuda::atomic_ref<int, cuda::thread_scope_device>(a.status[tile])
      .store(status, cuda::memory_order_release);
}

// Block-prefix callback of cub::BlockScan, run by warp 0: publishes this tile and returns its
// carry-in (the running sum of the segment open at the tile's first element).
struct LookBack {
  const Args& a;
  int64_t tile;
  bool needs_carry;  // the tile does not begin at a row start

  __device__ Seg operator()(const Seg& block) {
    const int lane = threadIdx.x & 31;
    if (!needs_carry) {  // block.f is set: its value is already the inclusive one
      if (lane == 0) publish(a, tile, kInclusive, block.v);
      return Seg{0, 0};
    }
    if (lane == 0) publish(a, tile, block.f ? kInclusive : kAggregate, block.v);
    // Windows of kLookBack predecessors: lane l reads distances m*32 + l (m < kLookBackPerLane)
    // before the tile, all loads of a window in flight together; the window's contribution is
    // every predecessor up to (and including) the nearest one holding an inclusive value.
    unsigned long long carry = 0;
    for (int64_t base = tile - 1;; base -= kLookBack) {
      int st[kLookBackPerLane];
#pragma unroll
      for (int m = 0; m < kLookBackPerLane; ++m)
        st[m] = base - (m * 32 + lane) < 0 ? kInclusive : kEmpty;
      while (true) {
        bool empty = false;
#pragma unroll
        for (int m = 0; m < kLookBackPerLane; ++m) {
          const int64_t idx = base - (m * 32 + lane);
          if (st[m] == kEmpty)
            st[m] = cuda::atomic_ref<int, cuda::thread_scope_device>(a.status[idx])
                        .load(cuda::memory_order_acquire);
          empty = empty || st[m] == kEmpty;
        }
        if (!__any_sync(0xffffffffu, empty)) break;
      }
      int stop = -1;  // the nearest distance in this window holding an inclusive value
#pragma unroll
      for (int m = kLookBackPerLane - 1; m >= 0; --m) {
        const unsigned hit = __ballot_sync(0xffffffffu, st[m] == kInclusive);
        if (hit) stop = m * 32 + __ffs(hit) - 1;
      }
      unsigned long long part = 0;
#pragma unroll
      for (int m = 0; m < kLookBackPerLane; ++m) {
        const int64_t idx = base - (m * 32 + lane);
        if (idx >= 0 && (stop < 0 || m * 32 + lane <= stop)) {
          unsigned long long* slot = st[m] == kInclusive ? a.incl + idx : a.agg + idx;
          part += cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*slot).load(
              cuda::memory_order_relaxed);
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
      carry += part;
      if (stop >= 0) break;
    }
    if (lane == 0 && !block.f) publish(a, tile, kInclusive, carry + block.v);
    return Seg{carry, 0};
  }
};

template <class In, class Out, bool kContiguousIn>
__global__ void __launch_bounds__(kThreads, kMinBlocks) cumsum_kernel(const Args a) {
  using BlockScan = cub::BlockScan<Seg, kThreads>;
  __shared__ typename BlockScan::TempStorage scan_storage;
  __shared__ unsigned long long stage[kStage];
  __shared__ unsigned long long s_tile;

  if (threadIdx.x == 0) s_tile = atomicAdd(a.counter, 1ull);
  __syncthreads();
  const int64_t tile = static_cast<int64_t>(s_tile);
  const int64_t g0 = tile * kTile;
  const int count = a.N - g0 < kTile ? static_cast<int>(a.N - g0) : kTile;
  const int64_t r0 = g0 / a.n;
  const int64_t i0 = g0 - r0 * a.n;

  // 1. Striped, coalesced loads into the staging buffer (as int64 bits).
  const In* in = static_cast<const In*>(a.in);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int j = k * kThreads + threadIdx.x;
    unsigned long long v = 0;
    if (j < count) {
      int64_t idx;
      if constexpr (kContiguousIn) {
        idx = g0 + j;
      } else {
        const Pos p = locate(a, r0, i0, j);
        idx = p.r * a.in_row_stride + p.i * a.in_stride;
      }
      v = static_cast<unsigned long long>(static_cast<int64_t>(in[idx]));
    }
    stage[stage_index(j)] = v;
  }
  __syncthreads();

  // 2. Each thread owns kItems consecutive elements: row-start flags and a local segmented scan.
  // (The values stay in shared memory across the block scan; only flags live in registers.)
  const int j0 = threadIdx.x * kItems;
  int flag_bits = 0;
  {
    const Pos p = locate(a, r0, i0, j0 < count ? j0 : 0);
    int64_t i = p.i;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      if (i == 0 && j0 + k < count) flag_bits |= 1 << k;
      if (++i == a.n) i = 0;
    }
  }
  Seg mine{0, flag_bits != 0};
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const unsigned long long x = stage[stage_index(j0 + k)];
    mine.v = ((flag_bits >> k) & 1) ? x : mine.v + x;
  }

  // 3. Block-wide exclusive segmented scan of the thread aggregates, seeded by the look-back.
  Seg before;
  LookBack look{a, tile, i0 != 0};
  BlockScan(scan_storage).ExclusiveScan(mine, before, SegOp{}, look);

  // 4. Final values over the inputs in the staging buffer (each thread rewrites only its own
  // elements, which no other thread reads before the barrier below).
  {
    unsigned long long run = before.v;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const unsigned long long x = stage[stage_index(j0 + k)];
      run = ((flag_bits >> k) & 1) ? x : run + x;
      stage[stage_index(j0 + k)] = a.exclusive ? run - x : run;
    }
  }
  __syncthreads();

  // 5. Striped stores.
  Out* out = static_cast<Out*>(a.out);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int j = k * kThreads + threadIdx.x;
    if (j < count) {
      const int64_t s = static_cast<int64_t>(stage[stage_index(j)]);
      int64_t o;
      if (a.complete) {
        const Pos p = locate(a, r0, i0, j);
        const int64_t row = p.r * a.out_row_stride;
        if (p.i == 0) out[row] = Out{0};
        o = row + p.i + 1;
      } else {
        o = g0 + j;
      }
      if constexpr (sizeof(Out) == 4) {
        if (a.validate && (s < INT32_MIN || s > INT32_MAX)) {
          // Logical position in the output, row-major over [R, n + complete].
          const int64_t pos = a.complete ? g0 + j + locate(a, r0, i0, j).r + 1 : g0 + j;
          atomicMax(a.first_bad, ~static_cast<unsigned long long>(pos));
        }
      }
      out[o] = static_cast<Out>(s);
    }
  }
}

// out[r, 0] = 0 for every row: complete_cumsum with n = 0 (nothing to scan).
template <class Out>
__global__ void __launch_bounds__(kThreads)
    zero_first_column_kernel(Out* out, int64_t R, int64_t out_row_stride) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; r < R;
       r += static_cast<int64_t>(gridDim.x) * kThreads)
    out[r * out_row_stride] = Out{0};
}

}  // namespace recops::ops::scan_cuda
