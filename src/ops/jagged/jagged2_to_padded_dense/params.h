// jagged/jagged2_to_padded_dense/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/. One struct for both directions.
#pragma once

#include <cstdint>

namespace recops::ops::jagged2_to_padded_dense_ns {

// Forward (backward = false): jagged = values [total] (element stride jagged_stride) read, dense =
// out [B, max_L, max_L] written (contiguous strides in dense_b / dense_m). Backward: dense = grad
// read (strides dense_b, dense_m, last 1), jagged = grad_values [total] written (stride 1).
// Elements of elem_size bytes moved as they are.
struct Params {
  bool backward = false;
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t elem_size = 4;
  int64_t jagged_stride = 1;
  int64_t dense_b = 0;
  int64_t dense_m = 0;
  const void* offsets = nullptr;  // [B+1]
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;
  int64_t B = 0;
  int64_t max_L = 0;
  int64_t total = 0;
  uint64_t padding_bits = 0;  // forward: padding_value as the dtype's bits (low bytes)
  int device_index = 0;
};

}  // namespace recops::ops::jagged2_to_padded_dense_ns
