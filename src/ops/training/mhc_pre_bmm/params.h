// training/mhc_pre_bmm/params.h: the flat problem description shared by the entry, the
// reference and cpu/ (architecture.md habit 1).
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::mhc_pre_bmm_ns {

struct Params {
  // Inputs, all contiguous: h_pre (tokens, n) in coef_dtype; X (tokens, n, C) in x_dtype; dy
  // (tokens, C) in y_dtype (backward only).
  const void* h_pre = nullptr;
  const void* X = nullptr;
  const void* dy = nullptr;
  // Forward: y (tokens, C) in y_dtype. Backward: dh_pre like h_pre, dX like X.
  void* y = nullptr;
  void* dh_pre = nullptr;
  void* dX = nullptr;
  DType x_dtype = DType::fp32;
  DType coef_dtype = DType::fp32;
  DType y_dtype = DType::fp32;
  int64_t tokens = 0;
  int64_t n = 0;
  int64_t C = 0;
  bool backward = false;
  int device_index = 0;  // the tensors' device (cuda_sm80's capability check)
};

}  // namespace recops::ops::mhc_pre_bmm_ns
