// ops/jagged/common/bmm_golden.h: goldens-only helpers of the jagged matmuls' references
// (jagged_dense_bmm/reference.cpp, jagged_jagged_bmm/reference.cpp); the CPU and CUDA paths
// never include it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/jagged/common/bmm_params.h"
#include "ops/jagged/common/golden_offsets.h"

namespace recops::ops::bmm {

// fp32 -> TF32 (10 mantissa bits), round to nearest with ties away from zero (cvt.rna.tf32).
inline float golden_tf32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if ((bits & 0x7F800000u) != 0x7F800000u) bits = (bits + 0x1000u) & 0xFFFFE000u;
  std::memcpy(&v, &bits, sizeof bits);
  return v;
}

// Sequence b's rows [*lo, *hi), offsets clamped into [0, total_L] and hi >= lo.
inline void golden_rows(const BmmParams& p, int64_t b, int64_t* lo, int64_t* hi) {
  auto at = [&](int64_t i) {
    return golden_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i);
  };
  *lo = std::clamp<int64_t>(at(b), 0, p.total_L);
  *hi = std::clamp<int64_t>(at(b + 1), *lo, p.total_L);
}

}  // namespace recops::ops::bmm
