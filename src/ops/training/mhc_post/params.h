// training/mhc_post/params.h: the flat problem description shared by the entry, the reference
// and cpu/ (architecture.md habit 1).
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::mhc_post_ns {

struct Params {
  // Inputs, all contiguous: X (tokens, n, C), y (tokens, C) in `dtype`; post (tokens, n) and comb
  // (tokens, n, n) in `coef_dtype`; dout (tokens, n, C) in `dtype` (backward only).
  const void* X = nullptr;
  const void* y = nullptr;
  const void* post = nullptr;
  const void* comb = nullptr;
  const void* dout = nullptr;
  // Forward: out (tokens, n, C). Backward: dX, dy like X, y; dpost, dcomb like post, comb.
  void* out = nullptr;
  void* dX = nullptr;
  void* dy = nullptr;
  void* dpost = nullptr;
  void* dcomb = nullptr;
  DType dtype = DType::fp32;
  DType coef_dtype = DType::fp32;
  int64_t tokens = 0;
  int64_t n = 0;
  int64_t C = 0;
  bool out_in = false;  // comb[t, j, i] is the weight from stream i to stream j
  bool backward = false;
  int device_index = 0;  // the tensors' device (cuda_sm80's capability check)
};

}  // namespace recops::ops::mhc_post_ns
