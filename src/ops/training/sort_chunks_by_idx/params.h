// training/sort_chunks_by_idx/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/ (architecture.md habit 1). One struct for both directions.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::sort_chunks_by_idx_ns {

struct Params {
  // The forward moves src rows to dst rows in chunk-sorted order: dst[oo_k + t] =
  // src[io_{sorted_idx[k]} + t]; the backward (inverse = true) reads dst positions and writes src
  // positions: src = grad_output, dst = grad_input (the pointers keep their roles: `from`, `to`).
  const void* from = nullptr;        // [T, row_bytes]
  void* to = nullptr;                // [T, row_bytes]
  const void* from_probs = nullptr;  // [T] of probs_bytes each; nullptr: no probs
  void* to_probs = nullptr;
  int64_t T = 0;
  int64_t row_bytes = 0;
  int64_t probs_bytes = 0;
  bool inverse =
      false;  // false: to[oo_k + t] = from[io_c + t]; true: to[io_c + t] = from[oo_k + t]
  // split_sizes and sorted_idx: [C], contiguous, on the data's device.
  const void* split_sizes = nullptr;
  const void* sorted_idx = nullptr;
  DType split_dtype = DType::int64;
  DType idx_dtype = DType::int64;
  int64_t C = 0;
  // CUDA: (3C + 2) int64 of scratch for the offsets.
  void* workspace = nullptr;
  int device_index = 0;
};

}  // namespace recops::ops::sort_chunks_by_idx_ns
