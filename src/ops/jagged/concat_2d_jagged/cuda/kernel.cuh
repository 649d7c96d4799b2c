// jagged/concat_2d_jagged/cuda/kernel.cuh: the device code (reads only the params). A group of
// lanes per destination row (grid-stride over rows): the row's source comes from rowmap.h (binary
// search of the sample), the lanes copy it in Unit-sized words (16 bytes where everything is
// aligned).
#pragma once

#include <cstdint>

#include "ops/jagged/concat_2d_jagged/params.h"
#include "ops/jagged/concat_2d_jagged/rowmap.h"

namespace recops::ops::concat_2d_jagged_ns {

// A word of N bytes (N = 1, 2, 4, 8, 16).
template <int N>
struct alignas(N) Word {
  unsigned char b[N];
};

// dest: 0 = out, 1 = grad_a, 2 = grad_b; rows of that destination; dst its base. A group of
// `tpr` lanes (a power of two <= 32, about the row's word count) copies one row; the groups
// stride over the rows.
template <int N>
__global__ void copy_rows_kernel(Params p, int dest, void* dst, int64_t rows, int tpr) {
  using W = Word<N>;
  const int lane = static_cast<int>(threadIdx.x) % tpr;
  const int64_t groups = static_cast<int64_t>(gridDim.x) * (blockDim.x / tpr);
  const int64_t words = p.D * p.itemsize / N;
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / tpr; r < rows;
       r += groups) {
    const char* src = source_row(p, dest, r);
    W* out = reinterpret_cast<W*>(static_cast<char*>(dst) + r * words * N);
    if (src) {
      const W* in = reinterpret_cast<const W*>(src);
      for (int64_t i = lane; i < words; i += tpr) out[i] = in[i];
    } else {
      W zero;
      for (int j = 0; j < N; ++j) zero.b[j] = 0;
      for (int64_t i = lane; i < words; i += tpr) out[i] = zero;
    }
  }
}

}  // namespace recops::ops::concat_2d_jagged_ns
