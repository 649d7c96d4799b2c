// jagged/expand_1d_jagged_to_dense/cuda/kernel.cuh: the device code (reads only the params).
#pragma once

#include <cstdint>

#include "ops/jagged/expand_1d_jagged_to_dense/params.h"

namespace recops::ops::expand_1d_jagged_to_dense_ns {

__device__ __forceinline__ int64_t dev_offset(const Params& p, int64_t i) {
  const int64_t k = i * p.offsets_stride;
  const int64_t v = p.offsets_int64 ? static_cast<const int64_t*>(p.seq_offsets)[k]
                                    : static_cast<const int32_t*>(p.seq_offsets)[k];
  return v < 0 ? 0 : (v > p.total_L ? p.total_L : v);  // clamped: no out-of-bounds reads
}

// One thread per output element (b, j), grid-stride over B * max_len; E: an unsigned integer of
// the element's size.
template <class E>
__global__ void expand_kernel(Params p) {
  const E* v = static_cast<const E*>(p.values);
  E* out = static_cast<E*>(p.out);
  const int64_t n = p.B * p.max_len;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const int64_t b = i / p.max_len, j = i - b * p.max_len;
    const int64_t o = dev_offset(p, b), e = dev_offset(p, b + 1);
    out[i] = e > o ? v[(o + (j < e - o ? j : e - o - 1)) * p.values_stride] : E(0);
  }
}

}  // namespace recops::ops::expand_1d_jagged_to_dense_ns
