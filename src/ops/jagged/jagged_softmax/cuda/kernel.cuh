// jagged/jagged_softmax/cuda/kernel.cuh: the device code (reads only the params).
//
// One CTA per work item (sequence b, tile of `cols` columns), items from a flattened list walked
// with a grid-stride loop (no grid dim tied to B). Thread t: column h = tile * cols + t % cols, row
// group r = t / cols; rows l = r, r + R, ... (R = kThreads / cols), so a warp reads contiguous
// row segments and any sequence length is a loop, not a tile. Per-thread statistics are combined
// over the R row groups by a fixed shared-memory tree (deterministic, no atomics).
//   forward:  online (max, sum exp) per thread; combine; write exp(x - max) / sum
//   backward: dot = sum grad * y in fp64 per thread; combine; write y * (grad - dot) from fp64
// Rows n_b <= l < L_b are written 0. Offsets are clamped into [0, total_L]; index math is 64-bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/cuda/bits.cuh"
#include "ops/jagged/common/cuda/acc.cuh"
#include "ops/jagged/jagged_softmax/cuda/tiles.h"
#include "ops/jagged/jagged_softmax/params.h"

namespace recops::ops::jagged_softmax_ns {

using jagged_dev::to_acc;  // common/cuda/acc.cuh

template <class T, class V>
__device__ __forceinline__ T round_to(V v) {  // one rounding from float or double
  if constexpr (std::is_same_v<T, __half> && std::is_same_v<V, double>)
    return __double2half(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16> && std::is_same_v<V, double>)
    return __double2bfloat16(v);
  else
    return jagged_dev::from_acc<T>(v);
}

// The larger of a and b, NaN if either is NaN.
template <class Acc>
__device__ __forceinline__ Acc max_nan(Acc a, Acc b) {
  return (b > a || b != b) ? b : a;
}

// Combines (m1, s1) with (m2, s2): the running maxima and the sums of exp(x - max).
template <class Acc>
__device__ __forceinline__ void combine(Acc& m1, Acc& s1, Acc m2, Acc s2) {
  const Acc m = max_nan(m1, m2);
  if (m == -INFINITY) return;  // both empty or all -inf: (m1, s1) = (-inf, 0) already
  s1 = s1 * exp(m1 - m) + s2 * exp(m2 - m);
  m1 = m;
}

struct Work {
  int64_t start, rows, n, h;  // the sequence's first row, L_b, n_b, this thread's column
  bool col_ok;                // h < H
};

__device__ __forceinline__ Work work_of(const Params& p, int64_t item, int64_t tiles, int cols) {
  const core::cuda::ClampedOffsets off{p.seq_offsets, p.offsets_stride, p.total_L, p.offsets_int64};
  const int64_t b = item / tiles;
  Work w;
  w.start = off(b);
  const int64_t end = off(b + 1);
  w.rows = end > w.start ? end - w.start : 0;
  w.n = w.rows < p.max_L ? w.rows : p.max_L;
  w.h = (item % tiles) * cols + static_cast<int64_t>(threadIdx.x % cols);
  w.col_ok = w.h < p.H;
  return w;
}

// Rows n_b <= l < L_b of this thread's column are 0.
template <class T>
__device__ __forceinline__ void zero_tail(const Params& p, const Work& w, int g, int groups) {
  T* out = static_cast<T*>(p.out);
  if (!w.col_ok) return;
  for (int64_t l = w.n + g; l < w.rows; l += groups)
    out[(w.start + l) * p.H + w.h] = round_to<T>(0.0f);
}

// Runs f(w, g, groups) for each of this CTA's work items (g: the thread's row group, groups: their
// count), then zeroes the item's truncated rows.
template <class T, class F>
__device__ __forceinline__ void for_each_item(const Params& p, int cols, F&& f) {
  const int groups = kThreads / cols, g = static_cast<int>(threadIdx.x) / cols;
  const int64_t tiles = (p.H + cols - 1) / cols, items = p.B * tiles;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const Work w = work_of(p, item, tiles, cols);
    f(w, g, groups);
    zero_tail<T>(p, w, g, groups);
  }
}

template <class T, class Acc>
__global__ void __launch_bounds__(kThreads) softmax_fwd_kernel(Params p, int cols) {
  __shared__ Acc sm[kThreads], ss[kThreads];
  const T* x = static_cast<const T*>(p.a);
  T* y = static_cast<T*>(p.out);
  for_each_item<T>(p, cols, [&](const Work& w, int g, int groups) {
    Acc m = -INFINITY, s = 0;
    if (w.col_ok) {
      for (int64_t l = g; l < w.n; l += groups) {
        const Acc v = to_acc(x[(w.start + l) * p.a_row_stride + w.h]);
        if (v > m || v != v) {
          s = s * exp(m - v) + (v - v + Acc(1));  // + 1, or NaN when v is +inf or NaN
          m = v;
        } else if (m != -INFINITY) {
          s += exp(v - m);
        }
      }
    }
    __syncthreads();  // the previous item's readers are done with sm, ss
    sm[threadIdx.x] = m;
    ss[threadIdx.x] = s;
    for (int half = groups / 2; half > 0; half /= 2) {
      __syncthreads();
      if (g < half) {
        Acc m1 = sm[threadIdx.x], s1 = ss[threadIdx.x];
        combine(m1, s1, sm[threadIdx.x + half * cols], ss[threadIdx.x + half * cols]);
        sm[threadIdx.x] = m1;
        ss[threadIdx.x] = s1;
      }
    }
    __syncthreads();
    const Acc M = sm[threadIdx.x % cols], S = ss[threadIdx.x % cols];
    if (w.col_ok) {
      for (int64_t l = g; l < w.n; l += groups) {
        const Acc v = to_acc(x[(w.start + l) * p.a_row_stride + w.h]);
        y[(w.start + l) * p.H + w.h] = round_to<T>(M == -INFINITY ? Acc(0) : exp(v - M) / S);
      }
    }
  });
}

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_bwd_kernel(Params p, int cols) {
  __shared__ double sd[kThreads];
  const T* gr = static_cast<const T*>(p.a);
  const T* yv = static_cast<const T*>(p.b);
  T* dx = static_cast<T*>(p.out);
  for_each_item<T>(p, cols, [&](const Work& w, int g, int groups) {
    // fp64: grad - dot cancels wherever grad is close to the column's weighted mean.
    double dot = 0;
    if (w.col_ok)
      for (int64_t l = g; l < w.n; l += groups)
        dot += static_cast<double>(to_acc(gr[(w.start + l) * p.a_row_stride + w.h])) *
               to_acc(yv[(w.start + l) * p.b_row_stride + w.h]);
    __syncthreads();
    sd[threadIdx.x] = dot;
    for (int half = groups / 2; half > 0; half /= 2) {
      __syncthreads();
      if (g < half) sd[threadIdx.x] += sd[threadIdx.x + half * cols];
    }
    __syncthreads();
    dot = sd[threadIdx.x % cols];
    if (w.col_ok) {
      for (int64_t l = g; l < w.n; l += groups) {
        const double gv = to_acc(gr[(w.start + l) * p.a_row_stride + w.h]);
        const double y = to_acc(yv[(w.start + l) * p.b_row_stride + w.h]);
        dx[(w.start + l) * p.H + w.h] = round_to<T>(y * (gv - dot));
      }
    }
  });
}

}  // namespace recops::ops::jagged_softmax_ns
