// training/solve_tril/params.h: the flat parameters of solve_tril (training_ops.md §4.3). A and
// Ai are contiguous [B, T, HV, BT]; element (b, t, h, j) at ((b·T + t)·HV + h)·BT + j.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::solve_tril_ns {

struct Params {
  const void* a = nullptr;  // A [B, T, HV, BT], in_dtype; only the strictly lower part is read
  void* out = nullptr;      // Ai [B, T, HV, BT], out_dtype; every element written
  DType in_dtype = DType::fp32;
  DType out_dtype = DType::fp32;
  const void* seq_offsets = nullptr;  // [N + 1] (B = 1) or nullptr
  DType off_dtype = DType::int64;
  int64_t B = 0, T = 0, H = 0;  // H: the value heads HV
  int64_t BT = 64;              // chunk size = A's last dim (16, 32 or 64)
  int64_t N = 0;                // sequences: B, or len(seq_offsets) - 1
  int device_index = 0;
};

}  // namespace recops::ops::solve_tril_ns
