// __family__/__op__/params.h: the flat problem description shared by the entry, the reference,
// cpu/ and cuda/ (architecture.md habit 1). Raw pointers, element strides, sizes, scalars.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::__op___ns {

struct Params {
  // x: (N,) viewed flat (the entry requires it contiguous); out: (N,), x's dtype.
  const void* x = nullptr;
  void* out = nullptr;
  DType dtype = DType::fp32;
  int64_t N = 0;
  double factor = 1.0;  // out = factor * x
  int device_index = 0;
};

}  // namespace recops::ops::__op___ns
