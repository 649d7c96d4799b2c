// ops/jagged/common/cuda/select_kernel.cuh: the device code of the segment-select ops
// (select_params.h); reads only the params and the workspace arrays select_launch.cu carves out.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "ops/jagged/common/cuda/select_tiles.h"
#include "ops/jagged/common/select_params.h"

namespace recops::ops::select_dev {

__device__ __forceinline__ int64_t dev_int(const void* p, bool int64, int64_t stride, int64_t i) {
  return int64 ? static_cast<const int64_t*>(p)[i * stride]
               : static_cast<const int32_t*>(p)[i * stride];
}

// The input segment of output segment j: (j / K) * B + indices[j % K], the index clamped into
// [0, B) (invalid input with validation off stays in bounds; B > 0).
__device__ __forceinline__ int64_t dev_source(const SelectParams& p, int64_t j) {
  const int64_t i = dev_int(p.indices, p.indices_int64, p.indices_stride, j % p.K);
  return j / p.K * p.B + (i < 0 ? 0 : (i >= p.B ? p.B - 1 : i));
}

// The last i in [0, n) with a[i] <= x (a non-decreasing, a[0] <= x).
__device__ __forceinline__ int64_t dev_last_le(const int64_t* a, int64_t n, int64_t x) {
  int64_t lo = 0, hi = n;  // answer in [lo, hi)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// The first i in [0, n) with a[i] >= x (n when none).
__device__ __forceinline__ int64_t dev_first_ge(const int64_t* a, int64_t n, int64_t x) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// The scans' inputs (grid-stride, any length): lens_in[s] = max(lengths[s], 0); in_off[0] and
// out_off[0] = 0 (CUB's inclusive scans write from index 1).
static __global__ void input_lengths_kernel(SelectParams p, int64_t* lens_in, int64_t* in_off,
                                            int64_t* out_off) {
  const int64_t n_in = p.F * p.B;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; s < n_in;
       s += stride) {
    const int64_t v = dev_int(p.lengths, p.lengths_int64, p.lengths_stride, s);
    lens_in[s] = v < 0 ? 0 : v;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) in_off[0] = out_off[0] = 0;
}

// After in_off is scanned: lens_out[j] = the selected segment's length; the forward writes
// out_lengths (when given), the backward the sort's (key, value) pairs (input segment, output
// segment).
static __global__ void selected_lengths_kernel(SelectParams p, const int64_t* in_off,
                                               int64_t* lens_out, int64_t* keys, int64_t* vals) {
  const int64_t n_out = p.F * p.K;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n_out;
       j += stride) {
    const int64_t s = p.B > 0 ? dev_source(p, j) : 0;  // B = 0: every selected length is 0
    const int64_t v = p.B > 0 ? in_off[s + 1] - in_off[s] : 0;
    lens_out[j] = v;
    if (p.backward) {
      keys[j] = s;
      vals[j] = j;
    } else if (p.out_lengths != nullptr) {
      if (p.lengths_int64)
        static_cast<int64_t*>(p.out_lengths)[j] = v;
      else
        static_cast<int32_t*>(p.out_lengths)[j] = static_cast<int32_t>(v);
    }
  }
}

// n elements from s to d by the 32 lanes of a warp: 16-byte words when both pointers share their
// alignment mod 16 (a head of elements first), elements otherwise and for the tail.
template <class E>
__device__ __forceinline__ void warp_copy(E* d, const E* s, int64_t n, int lane) {
  int64_t done = 0;
  const auto da = reinterpret_cast<uintptr_t>(d), sa = reinterpret_cast<uintptr_t>(s);
  if (((da ^ sa) & 15u) == 0) {
    int64_t head = static_cast<int64_t>(((16u - (da & 15u)) & 15u) / sizeof(E));
    head = head < n ? head : n;
    for (int64_t k = lane; k < head; k += 32) d[k] = s[k];
    const int64_t words = (n - head) * static_cast<int64_t>(sizeof(E)) / 16;
    const auto* s4 = reinterpret_cast<const uint4*>(s + head);
    auto* d4 = reinterpret_cast<uint4*>(d + head);
    for (int64_t w = lane; w < words; w += 32) d4[w] = s4[w];
    done = head + words * 16 / static_cast<int64_t>(sizeof(E));
  }
  for (int64_t k = done + lane; k < n; k += 32) d[k] = s[k];
}

// One rounding from fp64 to T.
template <class T>
__device__ __forceinline__ T dev_from_double(double v) {
  if constexpr (std::is_same_v<T, __half>)
    return __double2half(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __double2bfloat16(v);
  else
    return static_cast<T>(v);
}

// Forward: one warp per output segment j (warps grid-stride over segments). Segment j's rows are
// contiguous in the output and in the source (input segment source(j)), so a dense source is one
// span copied in 16-byte words; a strided source is copied row by row. Rows whose source would lie
// past total_L, and rows no segment covers (invalid input with validation off), get zeros. E: an
// unsigned integer of the element's size (the bytes are copied as they are).
template <class E>
__global__ void select_rows_kernel(SelectParams p, const int64_t* in_off, const int64_t* out_off) {
  const E* src = static_cast<const E*>(p.src);
  E* dst = static_cast<E*>(p.dst);
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int64_t n_out = p.F * p.K, D = p.D;
  for (int64_t j = warp; j < n_out; j += warps) {
    const int64_t r0 = out_off[j] < p.out_rows ? out_off[j] : p.out_rows;
    const int64_t r1 = out_off[j + 1] < p.out_rows ? out_off[j + 1] : p.out_rows;
    if (r1 <= r0) continue;
    const int64_t row0 = in_off[dev_source(p, j)], n = r1 - r0;
    int64_t valid = p.total_L - row0;
    valid = valid < 0 ? 0 : (valid > n ? n : valid);
    E* d = dst + r0 * D;
    const E* s = src + row0 * p.src_row_stride;
    if (p.src_row_stride == D) {
      warp_copy(d, s, valid * D, lane);
    } else {
      for (int64_t i = 0; i < valid; ++i)
        for (int64_t c = lane; c < D; c += 32) d[i * D + c] = s[i * p.src_row_stride + c];
    }
    for (int64_t k = valid * D + lane; k < n * D; k += 32) d[k] = E(0);
  }
  // Rows past the last segment (only with invalid lengths / out_rows, validation off).
  const int64_t covered = out_off[n_out] < p.out_rows ? out_off[n_out] : p.out_rows;
  for (int64_t k = (warp * 32 + lane) + covered * D; k < p.out_rows * D; k += warps * 32)
    dst[k] = E(0);
}

// Forward for long segments (select_tiles.h kSegmentElems): one warp per output row r, warps
// grid-stride over rows. Row r belongs to output segment j (the last j with out_off[j] <= r) and
// copies input row in_off[source(j)] + r - out_off[j]; E: an unsigned integer of the element's size
// (the bytes are copied as they are). Rows past the offsets (invalid input with validation off) get
// zeros.
template <class E>
__global__ void select_by_row_kernel(SelectParams p, const int64_t* in_off,
                                     const int64_t* out_off) {
  const E* src = static_cast<const E*>(p.src);
  E* dst = static_cast<E*>(p.dst);
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
       r < p.out_rows; r += warps) {
    int64_t row = -1;
    const int64_t n_out = p.F * p.K;
    if (r < out_off[n_out]) {
      const int64_t j = dev_last_le(out_off, n_out, r);
      row = in_off[dev_source(p, j)] + (r - out_off[j]);
      if (row >= p.total_L) row = -1;
    }
    E* d = dst + r * p.D;
    if (row < 0) {
      for (int64_t c = lane; c < p.D; c += 32) d[c] = E(0);
      continue;
    }
    const E* s = src + row * p.src_row_stride;
    for (int64_t c = lane; c < p.D; c += 32) d[c] = s[c];
  }
}

// Backward: grad_values row r, row l of input segment s, is the sum over the output segments j
// of s of grad row out_off[j] + l. keys/vals: the (input segment, output segment) pairs stably
// sorted by key, so the output segments of s are vals[first_ge(keys, s) ..) in ascending order.
// Each warp takes kGradRows consecutive rows (warps grid-stride over such chunks) and searches
// for a row's segment and its pairs only where the segment changes, so short and long segments
// alike give every warp work (one warp per segment left most SMs idle with few segments, one
// per row paid three searches a row). Lanes take columns, 16 bytes of them at a time when D,
// the grad's row stride and both pointers allow. Sums in fp64 for every dtype (repeated
// gradients may cancel), in ascending output segment, rounded once: deterministic, no atomics.
// Rows past in_off[F*B] (invalid input with validation off) get zeros.

// Columns [c, c + V) of row r: the sum over the pairs [j0, j1) (row l of each output segment).
template <class T, int V>
__device__ __forceinline__ void grad_columns(const SelectParams& p, const T* g, T* gv, int64_t r,
                                             int64_t l, int64_t c, int64_t j0, int64_t j1,
                                             const int64_t* out_off, const int64_t* vals) {
  double acc[V];
#pragma unroll
  for (int i = 0; i < V; ++i) acc[i] = 0;
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t src_row = out_off[vals[j]] + l;
    if (src_row >= p.out_rows) continue;
    const T* q = g + src_row * p.src_row_stride + c;
    if constexpr (V == 1) {
      acc[0] += core::cuda::to_double(*q);
    } else {
      const uint4 w = *reinterpret_cast<const uint4*>(q);
      T e[V];
      memcpy(e, &w, sizeof(w));
#pragma unroll
      for (int i = 0; i < V; ++i) acc[i] += core::cuda::to_double(e[i]);
    }
  }
  if constexpr (V == 1) {
    gv[r * p.D + c] = dev_from_double<T>(acc[0]);
  } else {
    T e[V];
#pragma unroll
    for (int i = 0; i < V; ++i) e[i] = dev_from_double<T>(acc[i]);
    uint4 w;
    memcpy(&w, e, sizeof(w));
    *reinterpret_cast<uint4*>(gv + r * p.D + c) = w;
  }
}

template <class T>
__global__ void gather_grad_kernel(SelectParams p, const int64_t* in_off, const int64_t* out_off,
                                   const int64_t* keys, const int64_t* vals) {
  constexpr int V = 16 / sizeof(T);
  const T* g = static_cast<const T*>(p.src);
  T* gv = static_cast<T*>(p.dst);
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  const int64_t n_in = p.F * p.B, n_out = p.F * p.K, D = p.D;
  const int64_t covered = in_off[n_in] < p.total_L ? in_off[n_in] : p.total_L;
  const bool vec = D % V == 0 && p.src_row_stride % V == 0 &&
                   reinterpret_cast<uintptr_t>(g) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(gv) % 16 == 0;
  const int64_t chunks = (p.total_L + kGradRows - 1) / kGradRows;
  for (int64_t ch = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
       ch < chunks; ch += warps) {
    const int64_t r_end = (ch + 1) * kGradRows < p.total_L ? (ch + 1) * kGradRows : p.total_L;
    int64_t seg_start = 0, seg_end = -1, j0 = 0, j1 = 0;  // the current segment and its pairs
    for (int64_t r = ch * kGradRows; r < r_end; ++r) {
      if (r >= covered) {
        for (int64_t c = lane; c < D; c += 32) gv[r * D + c] = dev_from_double<T>(0.0);
        continue;
      }
      if (r >= seg_end) {  // the last s with in_off[s] <= r: the non-empty segment holding r
        const int64_t s = dev_last_le(in_off, n_in, r);
        seg_start = in_off[s];
        seg_end = in_off[s + 1];
        j0 = dev_first_ge(keys, n_out, s);
        j1 = dev_first_ge(keys, n_out, s + 1);
      }
      const int64_t l = r - seg_start;
      if (vec) {
        for (int64_t c = lane * V; c < D; c += 32 * V)
          grad_columns<T, V>(p, g, gv, r, l, c, j0, j1, out_off, vals);
      } else {
        for (int64_t c = lane; c < D; c += 32)
          grad_columns<T, 1>(p, g, gv, r, l, c, j0, j1, out_off, vals);
      }
    }
  }
}

}  // namespace recops::ops::select_dev
