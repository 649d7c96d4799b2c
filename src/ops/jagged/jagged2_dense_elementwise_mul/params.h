// jagged/jagged2_dense_elementwise_mul/params.h: the flat problem description shared by the
// entry, the reference, cpu/ and cuda/ (forward and backward are one computation: out = a ⊙ y on
// the window, a = x or grad).
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::jagged2_dense_elementwise_mul_ns {

struct Params {
  const void* a = nullptr;  // x (forward) or grad (backward): [total], element stride a_stride
  int64_t a_stride = 1;
  const void* y = nullptr;  // [max_L, max_L], row stride y_row_stride, last stride 1
  int64_t y_row_stride = 0;
  void* out = nullptr;  // out or dx: [total] contiguous
  DType dtype = DType::fp32;
  const void* offsets = nullptr;  // x_offsets [B+1]
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;
  // seq_lengths [B]: the golden's N_b; the implementations take N_b from the offsets (the same
  // once the entry has checked them; clamped, never out of bounds, when it has not).
  const void* lengths = nullptr;
  bool lengths_int64 = false;
  int64_t lengths_stride = 1;
  int64_t B = 0;
  int64_t max_L = 0;
  int64_t total = 0;
  int device_index = 0;
};

}  // namespace recops::ops::jagged2_dense_elementwise_mul_ns
