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
// seq_offsets[i] from a raw pointer (int32 or int64 elements, `stride` elements apart).
inline int64_t load_offset(const void* offsets, bool is_int64, int64_t stride, int64_t i) {
  return is_int64 ? static_cast<const int64_t*>(offsets)[i * stride]
                  : static_cast<const int32_t*>(offsets)[i * stride];
}

inline int64_t clamp_offset(int64_t v, int64_t total) {
  return v < 0 ? 0 : (v > total ? total : v);
}

}  // namespace recops::core
