// training/common/cuda/row_tiles.h: the launch shape of the row kit's kernels (host code). Not
// tuned yet (no GPU measurement in this change): first values from the kernels' shape, to be
// replaced with `recops tune` results and their measurement.
#pragma once

#include <algorithm>
#include <cstdint>

namespace recops::ops::training_dev {

inline constexpr int kRowSlots = 4;             // 16-byte vectors per thread kept in registers
inline constexpr int kRowWarpBlock = 256;       // warp-per-row mode: 8 rows in flight per CTA
inline constexpr int64_t kRowMaxBlocks = 4096;  // CTAs of a launch without fixed owners
// The most threads of a CTA (the kernels' __launch_bounds__): the backward keeps two cached rows
// and the weight-gradient sums, about 170 registers per thread for 16-bit dtypes (ptxas -v,
// sm_90a), so 256 threads fit the 64K registers of an SM without spilling.
inline constexpr int kRowMaxThreads = 256;

// Threads per row for a row of `nvec` vectors: a warp while kRowSlots vectors per lane hold it,
// else the CTA, with enough threads (a multiple of 32, 64 to kRowMaxThreads) for kRowSlots vectors
// each; longer rows are partly read again from L2.
inline int row_width(int64_t nvec) {
  if (nvec <= 32 * kRowSlots) return 32;
  const int64_t w = ((nvec + kRowSlots - 1) / kRowSlots + 31) / 32 * 32;
  return static_cast<int>(std::clamp<int64_t>(w, 64, kRowMaxThreads));
}

// Threads per row, CTA size, CTAs and owners (row ranges) of a launch over `rows` rows of `nvec`
// vectors; owners = 0: as many as the grid has row groups (at most kRowMaxBlocks CTAs).
struct RowLaunch {
  int width, block;
  int64_t blocks, owners;
};

inline RowLaunch row_launch(int64_t rows, int64_t nvec, int64_t owners) {
  RowLaunch s;
  s.width = row_width(nvec);
  s.block = s.width == 32 ? kRowWarpBlock : s.width;
  const int64_t per_block = s.block / s.width;
  s.owners = owners > 0 ? owners : std::min<int64_t>(rows, kRowMaxBlocks * per_block);
  s.blocks = (s.owners + per_block - 1) / per_block;
  return s;
}

}  // namespace recops::ops::training_dev
