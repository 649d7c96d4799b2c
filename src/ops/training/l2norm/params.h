// training/l2norm/params.h: the flat problem description shared by the entry, the reference,
// cpu/ and cuda/ (architecture.md habit 1), for l2norm and l2norm_bwd.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::l2norm_ns {

// x, dx: [rows, D] contiguous, dtype; y, dy: [rows, D] contiguous, y_dtype.
//   forward:  out = y;  backward: grad = dy, out = dx.
struct Params {
  bool backward = false;
  const void* x = nullptr;
  const void* grad = nullptr;
  void* out = nullptr;
  DType dtype = DType::fp32;
  DType y_dtype = DType::fp32;
  int64_t rows = 0;
  int64_t D = 0;
  double eps = 1e-6;
  int device_index = 0;
};

}  // namespace recops::ops::l2norm_ns
