// jagged/jagged_softmax/params.h: the flat problem description shared by the entry, the reference,
// cpu/ and cuda/. Raw pointers, element strides, sizes.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::jagged_softmax_ns {

// One params struct for both directions:
//   forward:  a = values [total_L, H], b unused,            out = y  [total_L, H]
//   backward: a = grad   [total_L, H], b = y [total_L, H],  out = dx [total_L, H]
// Rows of a and b are a_row_stride / b_row_stride elements apart (last stride 1); out is dense.
struct Params {
  bool backward = false;
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  int64_t a_row_stride = 0;
  int64_t b_row_stride = 0;
  DType dtype = DType::fp32;
  const void* seq_offsets = nullptr;  // [B+1], int32 or int64
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;
  int64_t B = 0;
  int64_t H = 1;
  int64_t total_L = 0;
  int64_t max_L = 0;  // n_b = min(L_b, max_L)
  int device_index = 0;
};

}  // namespace recops::ops::jagged_softmax_ns
