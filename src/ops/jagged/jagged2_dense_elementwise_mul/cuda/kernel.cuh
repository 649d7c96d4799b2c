// jagged/jagged2_dense_elementwise_mul/cuda/kernel.cuh: the device code (reads only the params).
// CTAs take samples b (grid-stride over B, no grid dim tied to B), threads the block's N_b²
// elements. fp32 products for fp32/fp16/bf16 and fp64 for fp64, rounded once (the _rn intrinsics
// are never contracted). Offsets are clamped into [0, total] and N_b is the root of the clamped
// block size, so invalid offsets with validation off never index out of bounds.
#pragma once

#include <cstdint>

#include "ops/jagged/common/cuda/acc.cuh"
#include "ops/jagged/common/jagged2_blocks.h"
#include "ops/jagged/jagged2_dense_elementwise_mul/params.h"

namespace recops::ops::jagged2_dense_elementwise_mul_ns {

__device__ __forceinline__ float mul_rn(float p, float q) {
  return __fmul_rn(p, q);
}
__device__ __forceinline__ double mul_rn(double p, double q) {
  return __dmul_rn(p, q);
}

template <class T>
__global__ void mul_kernel(Params p) {
  const T* a = static_cast<const T*>(p.a);
  const T* y = static_cast<const T*>(p.y);
  T* out = static_cast<T*>(p.out);
  for (int64_t b = blockIdx.x; b < p.B; b += gridDim.x) {
    const Jagged2Block blk =
        jagged2_block_at(p.offsets, p.offsets_int64, p.offsets_stride, b, p.total);
    const int64_t N = blk.side, n = N < p.max_L ? N : p.max_L;
    for (int64_t i = threadIdx.x; i < N * N; i += blockDim.x) {
      const int64_t m = i / N, c = i - m * N;
      T v = T{};  // all-zero bits: +0
      if (m < n && c < n)
        v = jagged_dev::from_acc<T>(mul_rn(jagged_dev::to_acc(a[(blk.begin + i) * p.a_stride]),
                                           jagged_dev::to_acc(y[m * p.y_row_stride + c])));
      out[blk.begin + i] = v;
    }
  }
}

}  // namespace recops::ops::jagged2_dense_elementwise_mul_ns
