// complete_cumsum/params.h: one params struct for the three cumsum ops (jagged_ops.md §2.8).
#pragma once

#include <cstdint>

namespace recops::ops {

enum class CumsumKind : uint8_t { complete, exclusive, inclusive };

struct CumsumParams {
  // in: R rows of n elements, row r, element i at in + r*in_row_stride + i*in_stride (elements).
  // For exclusive/inclusive the flattened tensor is one row (R = 1) and must be contiguous.
  const void* in = nullptr;
  // out: R rows of n_out = n + (kind == complete) elements, dense rows, row stride out_row_stride.
  void* out = nullptr;
  bool in_int64 = false;
  bool out_int64 = false;
  CumsumKind kind = CumsumKind::complete;
  int64_t R = 1;
  int64_t n = 0;
  int64_t in_row_stride = 0;
  int64_t in_stride = 1;
  int64_t out_row_stride = 0;
  // CUDA: scratch from Context::workspace; validate asks the kernel to flag int32 overflow.
  bool validate = false;
  int device_index = 0;
};

}  // namespace recops::ops
