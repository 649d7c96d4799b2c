// training/layer_norm/params.h: the flat problem description shared by the entry, the reference,
// cpu/ and cuda/ (architecture.md habit 1), for layer_norm, swish_layer_norm and their backwards.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::layer_norm_ns {

// x, y, dy, dx: [rows, D] contiguous, dtype; weight, bias, dweight, dbias: [D], dtype.
//   forward: out = y;  backward: grad = dy, out = dx.
struct Params {
  bool backward = false;
  bool swish = false;  // y = σ(LN(x)·w + b)·x, else y = LN(x)·w + b
  const void* x = nullptr;
  const void* weight = nullptr;  // nullptr: w = 1
  const void* bias = nullptr;    // nullptr: b = 0
  const void* grad = nullptr;
  void* out = nullptr;
  void* dweight = nullptr;  // nullptr: not wanted
  void* dbias = nullptr;    // nullptr: not wanted
  // [n, P, D] partial column sums in fp64 (n = 1 per wanted dweight/dbias, in that order; P =
  // training::norm_partials(rows, D)).
  void* workspace = nullptr;
  DType dtype = DType::fp32;
  int64_t rows = 0;
  int64_t D = 0;
  double eps = 1e-5;
  int device_index = 0;
};

}  // namespace recops::ops::layer_norm_ns
