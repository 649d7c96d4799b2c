// jagged/concat_1d_jagged/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/. Raw pointers, element strides, sizes.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::concat_1d_jagged_ns {

// One part (A or B). Element n of sample b is at
//   jagged (S < 0): data + (offsets[b] + n) * stride
//   dense  (S >= 0): data + b * batch_stride + n * stride
// elements. Its gradient (backward) is contiguous in the part's shape: element n of sample b at
// grad + start_b + n, start_b = offsets[b] or b * S.
struct Part {
  const void* data = nullptr;
  void* grad = nullptr;
  int64_t stride = 0;
  int64_t batch_stride = 0;
  int64_t S = -1;  // dense: elements per sample ([B] parts: 1); -1: jagged
  const void* offsets = nullptr;
  int64_t offsets_stride = 1;
  int64_t total = 0;  // T (jagged) or B * S (dense)
};

struct Params {
  Part a, b;
  void* out = nullptr;          // forward: [total] contiguous
  void* out_offsets = nullptr;  // forward: [B + 1] contiguous, offsets dtype
  const void* grad = nullptr;   // backward: [total], element stride grad_stride
  int64_t grad_stride = 1;
  int64_t total = 0;  // a.total + b.total
  int64_t B = 0;
  bool offsets_int64 = false;  // the dtype of every offsets tensor, the output's included
  DType dtype = DType::fp32;
  int64_t itemsize = 4;
  bool backward = false;
  int device_index = 0;  // the tensors' device (CUDA)
};

}  // namespace recops::ops::concat_1d_jagged_ns
