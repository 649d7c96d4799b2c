// jagged/jagged2_softmax/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::jagged2_softmax_ns {

// A "line" is a row (transpose = false: elements 1 apart) or a column (true: N_b apart) of a
// block's n_b x n_b window.
struct Params {
  bool backward = false;
  bool transpose = false;
  const void* a = nullptr;  // x (forward) or grad (backward): [total], element stride a_stride
  int64_t a_stride = 1;
  const void* b = nullptr;  // backward: y, element stride b_stride
  int64_t b_stride = 1;
  void* out = nullptr;  // y or dx: [total] contiguous
  DType dtype = DType::fp32;
  const void* offsets = nullptr;  // [B+1]
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;
  int64_t B = 0;
  int64_t max_L = 0;
  int64_t total = 0;
  int device_index = 0;
};

}  // namespace recops::ops::jagged2_softmax_ns
