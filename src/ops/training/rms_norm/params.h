// training/rms_norm/params.h: the flat problem description shared by the entry, the reference,
// cpu/ and cuda/ (architecture.md habit 1). One struct for the four ops of the folder.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::rms_norm_ns {

enum class Mode : uint8_t {
  norm,      // rms_norm:          out = y [rows, D]
  rstd,      // rms_norm_rstd:     out = r [rows]                       (r_dtype)
  norm_bwd,  // rms_norm_bwd:      grad = dy [rows, D]; out = dx; dweight [D] when weight and wanted
  rstd_bwd,  // rms_norm_rstd_bwd: grad = dr [rows] (r_dtype); out = dx [rows, D]
};

// x, y, dy, dx: [rows, D] contiguous, dtype; weight, dweight: [D], dtype; r, dr: [rows], r_dtype.
struct Params {
  Mode mode = Mode::norm;
  const void* x = nullptr;
  const void* grad = nullptr;
  const void* weight = nullptr;  // nullptr: no weight (w~ = 1, weight_offset unused)
  void* out = nullptr;
  void* dweight = nullptr;  // nullptr: not wanted
  // [P, D] partial column sums of dweight (P = training::norm_partials(rows, D)); acc_t elements
  // (fp32, fp64 for fp64).
  void* workspace = nullptr;
  DType dtype = DType::fp32;
  DType r_dtype = DType::fp32;
  int64_t rows = 0;
  int64_t D = 0;
  double eps = 1e-6;
  double weight_offset = 0.0;  // w~ = weight_offset + weight
  int device_index = 0;
};

}  // namespace recops::ops::rms_norm_ns
