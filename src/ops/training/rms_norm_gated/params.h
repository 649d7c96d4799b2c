// training/rms_norm_gated/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/ (architecture.md habit 1), for rms_norm_gated and its backward.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::rms_norm_gated_ns {

// x, z, y, dy, dx, dz: [rows, D] contiguous, dtype; weight, bias, dweight, dbias: [D], dtype.
//   forward:  out = y;  backward: grad = dy, out = dx, dz.
struct Params {
  bool backward = false;
  bool sigmoid = false;  // the gate: σ(z), else silu z·σ(z)
  bool norm_before_gate = true;
  const void* x = nullptr;
  const void* z = nullptr;
  const void* weight = nullptr;  // nullptr: w = 1
  const void* bias = nullptr;    // nullptr: b = 0
  const void* grad = nullptr;
  void* out = nullptr;
  void* dz = nullptr;
  void* dweight = nullptr;  // nullptr: not wanted
  void* dbias = nullptr;    // nullptr: not wanted
  // [n, P, D] partial column sums in fp64 (n = 1 per wanted dweight/dbias, in that order; P =
  // training::norm_partials(rows, D)).
  void* workspace = nullptr;
  DType dtype = DType::fp32;
  int64_t rows = 0;
  int64_t D = 0;
  int64_t group = 0;  // gs: divides D (the entry resolves 0 to D)
  double eps = 1e-6;
  int device_index = 0;
};

}  // namespace recops::ops::rms_norm_gated_ns
