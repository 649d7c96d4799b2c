// jagged/concat_2d_jagged/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/. Raw pointers, element strides, sizes.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::concat_2d_jagged_ns {

// One side (A or B). Row i of sample b is at data + b * batch_stride + (start_b + i) * row_stride
// elements, where start_b = offsets[b] (jagged; batch_stride 0) or 0 (dense; S rows a sample).
struct Side {
  const void* data = nullptr;
  void* grad = nullptr;  // the backward's output for this side (contiguous, rows dense)
  int64_t row_stride = 0;
  int64_t batch_stride = 0;
  int64_t S = -1;  // dense rows per sample; -1: jagged
  const void* offsets = nullptr;
  int64_t offsets_stride = 1;
  int64_t rows = 0;  // T (jagged) or B * S (dense): the side's flattened rows
};

struct Params {
  Side a, b;
  void* out = nullptr;         // forward: [rows, D] contiguous
  const void* grad = nullptr;  // backward: the out gradient
  int64_t grad_row_stride = 0;
  int64_t out_rows = 0;  // a.rows + b.rows (concat) or a.rows (replace)
  bool offsets_int64 = false;
  DType dtype = DType::fp32;
  int64_t itemsize = 4;
  int64_t B = 0, D = 0;
  int64_t k = 0;  // n_prefix_from_right
  bool is_replace = false;
  bool backward = false;
  int device_index = 0;
};

}  // namespace recops::ops::concat_2d_jagged_ns
