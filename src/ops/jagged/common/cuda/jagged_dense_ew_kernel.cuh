// ops/jagged/common/cuda/jagged_dense_ew_kernel.cuh: the jagged-dense elementwise kernels
// (jagged_dense_ew.h): memory-bound, fp32 arithmetic for fp32/fp16/bf16 and fp64 for fp64, one
// rounding per element (no FMA contraction: each output is one add or one multiply).
//
// jagged_kernel: the total_L rows of out (add, mul) or dx (mul_bwd), cut into tiles of
// blockDim / G consecutive rows, G = 2^lanes_log2 lanes per row; blocks walk the tiles
// grid-stride (no grid dim tied to B). Two threads find the sequences of a tile's first and last
// rows by binary search over the offsets; each row then searches only between those two. Offsets
// are clamped into [0, total_L], so corrupted offsets never index out of bounds: a row outside
// every sequence is a pass-through (add) or 0. V elements per access: 16-byte vectors when every
// pointer, row width and stride allows, else 1.
// dy_kernel (mul_bwd): the B*S rows of dy, (b, l) = (r / S, r % S), grad * x for l < min(L_b, S).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/bits.cuh"
#include "ops/jagged/common/cuda/acc.cuh"

namespace recops::ops::jd_ew_dev {

inline constexpr int kThreads = 256;

template <class T>
struct DevArgs {
  const T* a;  // x (add, mul) or grad (mul_bwd)
  const T* x;  // mul_bwd's x
  const T* y;
  T* out;
  T* dy;
  core::cuda::ClampedOffsets offsets;
  int mode;  // JdEwMode: 0 add, 1 mul, 2 mul_bwd
  int lanes_log2;
  int64_t B, S, D, total_L;
  int64_t a_row_stride, x_row_stride, y_batch_stride, y_row_stride;  // elements
  int64_t tile_rows, num_tiles;
};

using jagged_dev::from_acc;  // common/cuda/acc.cuh
using jagged_dev::to_acc;

// One add or multiply, rounded to nearest (the _rn intrinsics are never contracted into an FMA).
__device__ __forceinline__ float op_rn(float p, float q, bool is_add) {
  return is_add ? __fadd_rn(p, q) : __fmul_rn(p, q);
}
__device__ __forceinline__ double op_rn(double p, double q, bool is_add) {
  return is_add ? __dadd_rn(p, q) : __dmul_rn(p, q);
}

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// out[0..V) = a op y (op: add when is_add, else mul), elementwise, rounded once.
template <class T, int V>
__device__ __forceinline__ void combine(const T* a, const T* y, T* out, bool is_add) {
  const Vec<T, V> va = *reinterpret_cast<const Vec<T, V>*>(a);
  const Vec<T, V> vy = *reinterpret_cast<const Vec<T, V>*>(y);
  Vec<T, V> vo;
#pragma unroll
  for (int i = 0; i < V; ++i) {
    vo.v[i] = from_acc<T>(op_rn(to_acc(va.v[i]), to_acc(vy.v[i]), is_add));
  }
  *reinterpret_cast<Vec<T, V>*>(out) = vo;
}

template <class T, int V>
__device__ __forceinline__ void fill(const T* src, T* out, bool copy) {
  Vec<T, V> v;
  if (copy) {
    v = *reinterpret_cast<const Vec<T, V>*>(src);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) v.v[i] = from_acc<T>(0.0f);
  }
  *reinterpret_cast<Vec<T, V>*>(out) = v;
}

// Largest b in [lo, hi] with offsets(b) <= r.
__device__ __forceinline__ int64_t find_sequence(const core::cuda::ClampedOffsets& off, int64_t lo,
                                                 int64_t hi, int64_t r) {
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo + 1) >> 1);
    if (off(mid) <= r)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

template <class T, int V>
__global__ void __launch_bounds__(kThreads) jagged_kernel(const DevArgs<T> a) {
  __shared__ int64_t s_range[2];
  const int lanes = 1 << a.lanes_log2;
  const int lane = threadIdx.x & (lanes - 1);
  const int64_t group = threadIdx.x >> a.lanes_log2;
  const bool is_add = a.mode == 0;
  for (int64_t tile = blockIdx.x; tile < a.num_tiles; tile += gridDim.x) {
    const int64_t r0 = tile * a.tile_rows;
    const int64_t r_end = r0 + a.tile_rows < a.total_L ? r0 + a.tile_rows : a.total_L;
    if (a.B > 0 && (threadIdx.x == 0 || threadIdx.x == 32))
      s_range[threadIdx.x >> 5] =
          find_sequence(a.offsets, 0, a.B - 1, threadIdx.x == 0 ? r0 : r_end - 1);
    __syncthreads();
    const int64_t r = r0 + group;
    if (r < r_end) {
      bool in_seq = false;
      int64_t b = 0, l = 0;
      if (a.B > 0) {
        const int64_t lo = s_range[0], hi = s_range[1] > lo ? s_range[1] : lo;
        b = find_sequence(a.offsets, lo, hi, r);
        const int64_t start = a.offsets(b);
        l = r - start;
        in_seq = r >= start && r < a.offsets(b + 1);
      }
      const T* ar = a.a + r * a.a_row_stride;
      T* o = a.out + r * a.D;
      if (in_seq && l < a.S) {
        const T* yr = a.y + b * a.y_batch_stride + l * a.y_row_stride;
        for (int64_t c = static_cast<int64_t>(lane) * V; c < a.D;
             c += static_cast<int64_t>(lanes) * V)
          combine<T, V>(ar + c, yr + c, o + c, is_add);
      } else {
        for (int64_t c = static_cast<int64_t>(lane) * V; c < a.D;
             c += static_cast<int64_t>(lanes) * V)
          fill<T, V>(ar + c, o + c, is_add);
      }
    }
    __syncthreads();  // s_range is rewritten by the next tile
  }
}

template <class T, int V>
__global__ void __launch_bounds__(kThreads) dy_kernel(const DevArgs<T> a) {
  const int lanes = 1 << a.lanes_log2;
  const int lane = threadIdx.x & (lanes - 1);
  const int64_t group = threadIdx.x >> a.lanes_log2;
  const int64_t rows = a.B * a.S;
  for (int64_t tile = blockIdx.x; tile < a.num_tiles; tile += gridDim.x) {
    const int64_t r = tile * a.tile_rows + group;
    if (r >= rows) continue;
    const int64_t b = r / a.S, l = r - b * a.S;
    const int64_t start = a.offsets(b), end = a.offsets(b + 1);
    T* o = a.dy + r * a.D;
    if (l < end - start) {
      const T* g = a.a + (start + l) * a.a_row_stride;
      const T* x = a.x + (start + l) * a.x_row_stride;
      for (int64_t c = static_cast<int64_t>(lane) * V; c < a.D;
           c += static_cast<int64_t>(lanes) * V)
        combine<T, V>(g + c, x + c, o + c, false);
    } else {
      for (int64_t c = static_cast<int64_t>(lane) * V; c < a.D;
           c += static_cast<int64_t>(lanes) * V)
        fill<T, V>(nullptr, o + c, false);
    }
  }
}

}  // namespace recops::ops::jd_ew_dev
