// training/sort_chunks_by_idx/cuda/kernel.cuh: the device code (reads only the params).
//   row_map_kernel: one thread writes the chunk offsets (row_map.h) into the workspace.
//   move_rows_kernel<V>: blocks take output rows (grid-stride); a row's chunk by binary search
//   over the output offsets, then the block moves the row in accesses of sizeof(V) bytes (the
//   launch checked the alignment); thread 0 moves the row's prob.
#pragma once

#include <cstdint>

#include "ops/training/sort_chunks_by_idx/params.h"
#include "ops/training/sort_chunks_by_idx/row_map.h"

namespace recops::ops::sort_chunks_by_idx_ns {

__global__ void row_map_kernel(Params p) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    build_row_map(p.split_sizes, p.split_dtype, p.sorted_idx, p.idx_dtype, p.C, p.T,
                  static_cast<int64_t*>(p.workspace));
}

template <class V>
__global__ void move_rows_kernel(Params p) {
  const int64_t* oo = static_cast<const int64_t*>(p.workspace) + p.C + 1;
  const int64_t* src = static_cast<const int64_t*>(p.workspace) + 2 * p.C + 2;
  const int64_t rows = oo[p.C];
  const int64_t n = p.row_bytes / static_cast<int64_t>(sizeof(V));
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    // The last k in [0, C) with oo[k] <= r (so oo[k + 1] > r).
    int64_t lo = 0, hi = p.C - 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (oo[mid] <= r)
        lo = mid;
      else
        hi = mid - 1;
    }
    const int64_t s = src[lo] + (r - oo[lo]);
    // Forward: to[r] = from[s]; backward: to[s] = from[r].
    const int64_t f = p.inverse ? r : s, t = p.inverse ? s : r;
    const V* from = reinterpret_cast<const V*>(static_cast<const char*>(p.from) + f * p.row_bytes);
    V* to = reinterpret_cast<V*>(static_cast<char*>(p.to) + t * p.row_bytes);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) to[j] = from[j];
    if (p.from_probs != nullptr && threadIdx.x == 0) {
      const char* pf = static_cast<const char*>(p.from_probs) + f * p.probs_bytes;
      char* pt = static_cast<char*>(p.to_probs) + t * p.probs_bytes;
      for (int64_t b = 0; b < p.probs_bytes; ++b) pt[b] = pf[b];
    }
  }
}

}  // namespace recops::ops::sort_chunks_by_idx_ns
