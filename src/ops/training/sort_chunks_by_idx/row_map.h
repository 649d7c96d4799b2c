// training/sort_chunks_by_idx/row_map.h: the chunk offsets both fast paths move rows by (the CPU
// on the host, CUDA in a one-thread kernel). Not used by the reference.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

#if defined(__CUDACC__)
#define RECOPS_SCI_HD __host__ __device__
#else
#define RECOPS_SCI_HD
#endif

namespace recops::ops::sort_chunks_by_idx_ns {

RECOPS_SCI_HD inline int64_t index_at(const void* p, DType t, int64_t i) {
  return t == DType::int64 ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
}

// Writes into ws (int64 [3C + 2]):
//   io [C+1] at ws:          input chunk offsets, the exclusive prefix sum of split_sizes;
//   oo [C+1] at ws + C + 1:  output chunk offsets, the same over split_sizes[sorted_idx[k]];
//   src [C]  at ws + 2C + 2: the input offset of output chunk k, io[sorted_idx[k]].
// Output rows [oo[k], oo[k+1]) are input rows [src[k], src[k] + oo[k+1] - oo[k]). Sizes are
// clamped so that every offset stays in [0, T] and indices into [0, C): with the values the entry
// checks this changes nothing, with unchecked bad values (CUDA, validation off) no access leaves
// the tensors (rows past oo[C] are then left unwritten).
RECOPS_SCI_HD inline void build_row_map(const void* split_sizes, DType split_dtype,
                                        const void* sorted_idx, DType idx_dtype, int64_t C,
                                        int64_t T, int64_t* ws) {
  int64_t* io = ws;
  int64_t* oo = ws + C + 1;
  int64_t* src = ws + 2 * C + 2;
  io[0] = 0;
  for (int64_t c = 0; c < C; ++c) {
    int64_t n = index_at(split_sizes, split_dtype, c);
    n = n < 0 ? 0 : (n > T - io[c] ? T - io[c] : n);
    io[c + 1] = io[c] + n;
  }
  oo[0] = 0;
  for (int64_t k = 0; k < C; ++k) {
    int64_t c = index_at(sorted_idx, idx_dtype, k);
    c = c < 0 ? 0 : (c >= C ? C - 1 : c);
    int64_t n = io[c + 1] - io[c];
    n = n > T - oo[k] ? T - oo[k] : n;
    oo[k + 1] = oo[k] + n;
    src[k] = io[c];
  }
}

}  // namespace recops::ops::sort_chunks_by_idx_ns

#undef RECOPS_SCI_HD
