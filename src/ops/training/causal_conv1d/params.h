// training/causal_conv1d/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/, for causal_conv1d and its backward.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::causal_conv1d_ns {

// Element strides of a [B, D, T] tensor.
struct Strides3 {
  int64_t b = 0, d = 0, t = 0;
};

// x, residual, y, dy, dx, dres: [B, D, T] through their strides, dtype; weight, dweight:
// contiguous [D, W] (wd: [W, D]); bias, dbias: [D]; init, final, dfinal, dinit: contiguous
// [N, D, S], state_dtype; seq_idx [B, T] contiguous, seq_offsets [N+1], of idx_dtype/off_dtype.
// Sequences: seq_offsets given: n covers [off[n], off[n+1]) of batch 0 (B = 1); else n = b, the
// whole of [0, T); with seq_idx a tap counts only when its seq_idx equals the output's.
struct Params {
  bool backward = false;
  bool silu = false;
  bool wd = false;
  DType dtype = DType::fp32;
  DType state_dtype = DType::fp32;
  DType idx_dtype = DType::int32;
  DType off_dtype = DType::int64;
  int64_t B = 0, D = 0, T = 0, W = 1, S = 0, N = 0;
  Strides3 sx, sres, sy, sdy, sdx, sdres;
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;      // nullptr: 0
  const void* init = nullptr;      // nullptr: zeros
  const void* residual = nullptr;  // nullptr: none
  const void* seq_idx = nullptr;
  const void* seq_offsets = nullptr;
  void* y = nullptr;
  void* final_state = nullptr;  // nullptr: not produced
  // backward
  const void* dy = nullptr;
  const void* dfinal = nullptr;  // nullptr: no gradient into final_state
  void* dx = nullptr;
  void* dweight = nullptr;
  void* dbias = nullptr;      // nullptr: not wanted
  void* dinit = nullptr;      // nullptr: not wanted
  void* dres = nullptr;       // nullptr: not wanted
  void* workspace = nullptr;  // CUDA: [P, D, W+1] acc_t partials of dweight (W) and dbias (1)
  int device_index = 0;
};

}  // namespace recops::ops::causal_conv1d_ns
