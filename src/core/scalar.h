// core/scalar.h: scalar arguments and offset clamping shared by the jagged entries (jagged_ops.md
// §1.1-1.2).
#pragma once

#include <cstdint>
#include <string_view>

#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::core {

// Encodes `v` as `dtype`'s bit pattern (little-endian, low dtype_size bytes), checking that integer
// and bool dtypes get an integral value they can hold.
Status encode_scalar(std::string_view op, std::string_view arg, double v, DType dtype,
                     uint64_t* bits);

// Clamp helper used by kernels when validation is off: offsets outside [0, total] are clamped so
// that corrupted offsets never read or write out of bounds.
inline int64_t clamp_offset(int64_t v, int64_t total) {
  return v < 0 ? 0 : (v > total ? total : v);
}

}  // namespace recops::core
