// jagged/jagged2_softmax/cuda/kernel.cuh: the device code (reads only the params). CTAs take
// samples b (grid-stride over B, no grid dim tied to B). In a CTA, every thread first writes 0 to
// the block's elements outside the window; then each warp takes lines j (warp-stride over n_b),
// its lanes the line's elements k = lane, lane + 32, ... in order, reduced by a fixed butterfly
// (deterministic). fp32 statistics for fp32/fp16/bf16 and fp64 for fp64; the backward in fp64
// always, rounded once. Column lines (transpose) read elements N_b apart: correct, not coalesced
// (untuned). Offsets are clamped (common/jagged2_blocks.h): never out of bounds.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ops/jagged/common/cuda/acc.cuh"
#include "ops/jagged/common/jagged2_blocks.h"
#include "ops/jagged/jagged2_softmax/params.h"

namespace recops::ops::jagged2_softmax_ns {

template <class A>
__device__ __forceinline__ A warp_max(A v) {  // a NaN sticks
  for (int s = 16; s > 0; s >>= 1) {
    const A o = __shfl_xor_sync(0xffffffffu, v, s);
    v = (o > v || o != o) ? o : v;
  }
  return v;
}
template <class A>
__device__ __forceinline__ A warp_sum(A v) {
  for (int s = 16; s > 0; s >>= 1) v += __shfl_xor_sync(0xffffffffu, v, s);
  return v;
}
__device__ __forceinline__ float dev_exp(float v) {
  return expf(v);
}
__device__ __forceinline__ double dev_exp(double v) {
  return exp(v);
}

template <class T>
__global__ void softmax_kernel(Params p) {
  using Acc = decltype(jagged_dev::to_acc(T{}));
  const T* a = static_cast<const T*>(p.a);
  const T* yv = static_cast<const T*>(p.b);
  T* out = static_cast<T*>(p.out);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int64_t b = blockIdx.x; b < p.B; b += gridDim.x) {
    const Jagged2Block blk =
        jagged2_block_at(p.offsets, p.offsets_int64, p.offsets_stride, b, p.total);
    const int64_t N = blk.side, n = N < p.max_L ? N : p.max_L;
    for (int64_t i = threadIdx.x; i < N * N; i += blockDim.x) {
      const int64_t r = i / N, c = i - r * N;
      if (r >= n || c >= n) out[blk.begin + i] = T{};  // all-zero bits: +0
    }
    const int64_t step = p.transpose ? N : 1, line = p.transpose ? 1 : N;
    for (int64_t j = warp; j < n; j += warps) {
      const int64_t base = blk.begin + j * line;  // element k at base + k * step
      if (!p.backward) {
        Acc m = -INFINITY;
        for (int64_t k = lane; k < n; k += 32) {
          const Acc v = jagged_dev::to_acc(a[(base + k * step) * p.a_stride]);
          m = (v > m || v != v) ? v : m;
        }
        m = warp_max(m);
        Acc s = 0;
        for (int64_t k = lane; k < n; k += 32)
          s += dev_exp(jagged_dev::to_acc(a[(base + k * step) * p.a_stride]) - m);
        s = warp_sum(s);
        for (int64_t k = lane; k < n; k += 32) {
          const Acc e = dev_exp(jagged_dev::to_acc(a[(base + k * step) * p.a_stride]) - m);
          out[base + k * step] = jagged_dev::from_acc<T>(m == -INFINITY ? Acc(0) : e / s);
        }
      } else {
        double dot = 0;
        for (int64_t k = lane; k < n; k += 32)
          dot += static_cast<double>(jagged_dev::to_acc(a[(base + k * step) * p.a_stride])) *
                 static_cast<double>(jagged_dev::to_acc(yv[(base + k * step) * p.b_stride]));
        dot = warp_sum(dot);
        for (int64_t k = lane; k < n; k += 32) {  // in fp64, rounded once: grad - dot cancels
          const double g = jagged_dev::to_acc(a[(base + k * step) * p.a_stride]);
          const double y = jagged_dev::to_acc(yv[(base + k * step) * p.b_stride]);
          out[base + k * step] = jagged_dev::from_acc<T>(y * (g - dot));
        }
      }
    }
  }
}

}  // namespace recops::ops::jagged2_softmax_ns
