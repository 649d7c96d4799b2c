// training/clipped_swiglu/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/ (architecture.md habit 1).
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::clipped_swiglu_ns {

struct Params {
  // x: (rows, 2I) contiguous; forward: out = y (rows, I); backward: dy (rows, I), out = dx
  // (rows, 2I). One dtype for all.
  const void* x = nullptr;
  const void* dy = nullptr;  // nullptr in the forward
  void* out = nullptr;
  DType dtype = DType::fp32;
  int64_t rows = 0;
  int64_t I = 0;
  double alpha = 1.702;
  double limit = 7.0;  // may be +inf
  double linear_offset = 1.0;
  bool interleaved = true;
  bool backward = false;
  int device_index = 0;
};

}  // namespace recops::ops::clipped_swiglu_ns
