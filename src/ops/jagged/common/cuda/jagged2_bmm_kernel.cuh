// ops/jagged/common/cuda/jagged2_bmm_kernel.cuh: cuda_sm80 of the jagged² matmuls (jagged2_bmm.h).
// CTAs take samples b (grid-stride over B, no grid dim tied to B); threads take the sample's
// output elements (L x D rows for ay/ayt, N x N for xyt), each one sum over k < n (or d < D) in
// order, in fp32 (fp64 for fp64), rounded once. No atomics: deterministic. Untuned: a simple,
// obviously correct kernel (no tiles, no tensor cores; allow_tf32 has no effect).
#pragma once

#include <cstdint>

#include "ops/jagged/common/cuda/acc.cuh"
#include "ops/jagged/common/jagged2_bmm.h"

namespace recops::ops::j2bmm {

template <class T>
__global__ void jagged2_bmm_kernel(Params p) {
  const T* a = static_cast<const T*>(p.a);
  const T* y = static_cast<const T*>(p.y);
  T* z = static_cast<T*>(p.z);
  using Acc = decltype(jagged_dev::to_acc(T{}));
  for (int64_t b = blockIdx.x; b < p.B; b += gridDim.x) {
    const Sample s = sample_at(p, b);
    const int64_t n = s.n, D = p.D;
    if (p.mode == Mode::xyt) {
      for (int64_t i = threadIdx.x; i < s.N * s.N; i += blockDim.x) {
        const int64_t m = i / s.N, j = i - m * s.N;
        Acc sum = 0;
        if (m < n && j < n) {
          const T* am = a + (s.o + m) * p.a_stride;
          const T* yj = y + (s.o + j) * p.y_stride;
          for (int64_t d = 0; d < D; ++d)
            sum += jagged_dev::to_acc(am[d]) * jagged_dev::to_acc(yj[d]);
        }
        z[s.sq + i] = jagged_dev::from_acc<T>(sum);
      }
    } else {
      const bool t = p.mode == Mode::ayt;
      for (int64_t i = threadIdx.x; i < s.L * D; i += blockDim.x) {
        const int64_t m = i / D, d = i - m * D;
        Acc sum = 0;
        for (int64_t k = 0; m < n && k < n; ++k)
          sum += jagged_dev::to_acc(a[(s.sq + (t ? k * s.N + m : m * s.N + k)) * p.a_stride]) *
                 jagged_dev::to_acc(y[(s.o + k) * p.y_stride + d]);
        z[s.o * D + i] = jagged_dev::from_acc<T>(sum);
      }
    }
  }
}

}  // namespace recops::ops::j2bmm
