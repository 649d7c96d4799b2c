// ops/jagged/common/cuda/select_kernel.cuh: the device code of the segment-select ops
// (select_params.h); reads only the params and the workspace arrays select_launch.cu carves out.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cub/block/block_scan.cuh>
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

// One CTA: in_off = complete cumsum of max(lengths, 0) [F*B+1]; out_off = complete cumsum of the
// selected lengths [F*K+1]; the forward writes out_lengths (when given), the backward the sort's
// (key, value) pairs (input segment, output segment). Chunks of kScanThreads are scanned in order
// with a running carry.
// static: this header is included by more than one translation unit (select_launch.cu and
// permute_launch.cu); a non-template kernel must not be defined in both.
static __global__ void __launch_bounds__(kScanThreads)
    offsets_kernel(SelectParams p, int64_t* in_off, int64_t* out_off, int64_t* keys,
                   int64_t* vals) {
  using Scan = cub::BlockScan<int64_t, kScanThreads>;
  __shared__ typename Scan::TempStorage tmp;
  const int t = threadIdx.x;
  const int64_t n_in = p.F * p.B, n_out = p.F * p.K;
  int64_t carry = 0;
  if (t == 0) in_off[0] = 0;
  for (int64_t base = 0; base < n_in; base += kScanThreads) {
    const int64_t s = base + t;
    int64_t v = s < n_in ? dev_int(p.lengths, p.lengths_int64, p.lengths_stride, s) : 0;
    v = v < 0 ? 0 : v;
    int64_t incl = 0, total = 0;
    Scan(tmp).InclusiveSum(v, incl, total);
    __syncthreads();
    if (s < n_in) in_off[s + 1] = carry + incl;
    carry += total;
  }
  __syncthreads();  // in_off is read back below by other threads of this block
  carry = 0;
  if (t == 0) out_off[0] = 0;
  for (int64_t base = 0; base < n_out; base += kScanThreads) {
    const int64_t j = base + t;
    int64_t v = 0;
    if (j < n_out) {
      const int64_t s = p.B > 0 ? dev_source(p, j) : 0;  // B = 0: every selected length is 0
      v = p.B > 0 ? in_off[s + 1] - in_off[s] : 0;
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
    int64_t incl = 0, total = 0;
    Scan(tmp).InclusiveSum(v, incl, total);
    __syncthreads();
    if (j < n_out) out_off[j + 1] = carry + incl;
    carry += total;
  }
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

// Forward: one warp per output row r, warps grid-stride over rows. Row r belongs to output
// segment j (the last j with out_off[j] <= r) and copies input row in_off[source(j)] + r -
// out_off[j]; E: an unsigned integer of the element's size (the bytes are copied as they are).
// Rows past the offsets (invalid input with validation off) get zeros.
template <class E>
__global__ void select_rows_kernel(SelectParams p, const int64_t* in_off, const int64_t* out_off) {
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

// Backward: one warp per grad_values row r (input segment s = the last s with in_off[s] <= r, row
// l = r - in_off[s]). keys/vals: the (input segment, output segment) pairs stably sorted by key,
// so the output segments of s are vals[first_ge(keys, s) ..) in ascending order; each lane sums
// its columns over them in that order in fp64 for every dtype (repeated gradients may cancel),
// rounded once: deterministic, no atomics.
template <class T>
__global__ void gather_grad_kernel(SelectParams p, const int64_t* in_off, const int64_t* out_off,
                                   const int64_t* keys, const int64_t* vals) {
  const T* g = static_cast<const T*>(p.src);
  T* gv = static_cast<T*>(p.dst);
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
       r < p.total_L; r += warps) {
    int64_t j0 = 0, j1 = 0, l = 0;
    const int64_t n_in = p.F * p.B, n_out = p.F * p.K;
    if (r < in_off[n_in]) {
      const int64_t s = dev_last_le(in_off, n_in, r);
      l = r - in_off[s];
      j0 = dev_first_ge(keys, n_out, s);
      j1 = dev_first_ge(keys, n_out, s + 1);
    }
    for (int64_t c = lane; c < p.D; c += 32) {
      double acc = 0;
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t src_row = out_off[vals[j]] + l;
        if (src_row < p.out_rows) {
          if constexpr (std::is_same_v<T, double>)
            acc += g[src_row * p.src_row_stride + c];
          else
            acc += static_cast<double>(core::cuda::to_float(g[src_row * p.src_row_stride + c]));
        }
      }
      if constexpr (std::is_same_v<T, double>)
        gv[r * p.D + c] = acc;
      else
        gv[r * p.D + c] = dev_from_double<T>(acc);
    }
  }
}

}  // namespace recops::ops::select_dev
