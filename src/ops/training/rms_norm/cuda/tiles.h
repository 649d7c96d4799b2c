// training/rms_norm/cuda/tiles.h: the launch configuration. Not tuned yet (no GPU measurement in
// this change): first values from the kernel's shape, to be replaced with `recops tune` results.
#pragma once

#include <cstdint>

namespace recops::ops::rms_norm_ns {

inline constexpr int kSlots = 4;             // 16-byte vectors per thread kept in registers
inline constexpr int kWarpBlock = 256;       // warp-per-row mode: 8 rows in flight per CTA
inline constexpr int64_t kMaxBlocks = 4096;  // CTAs of a launch without weight gradient

// Threads per row for a row of `nvec` vectors: a warp while kSlots vectors per lane hold it, else
// the CTA, with enough threads (a multiple of 32, at most 1024) for kSlots vectors each.
inline int row_width(int64_t nvec) {
  if (nvec <= 32 * kSlots) return 32;
  int64_t w = (nvec + kSlots - 1) / kSlots;
  w = (w + 31) / 32 * 32;
  return static_cast<int>(w < 64 ? 64 : (w > 1024 ? 1024 : w));
}

}  // namespace recops::ops::rms_norm_ns
