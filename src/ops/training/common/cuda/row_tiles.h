// training/common/cuda/row_tiles.h: the launch shape of the row kit's kernels (host code). Not
// tuned yet (no GPU measurement in this change): first values from the kernels' shape, to be
// replaced with `recops tune` results and their measurement.
#pragma once

#include <algorithm>
#include <cstdint>

namespace recops::ops::training_dev {

inline constexpr int kRowSlots = 4;        // 16-byte vectors per thread kept in registers
inline constexpr int kRowWarpBlock = 256;  // warp-per-row mode: 8 rows in flight per CTA
// CTAs of a launch without fixed owners. Each CTA walks its rows one after the other, so with
// few CTAs (4096 was the first value) the last wave runs part-empty: 65536x4096 bf16 had 16 rows
// a CTA and about 6.2 waves of resident CTAs on an H200. 65536 gives most shapes a row group a
// row (or a few), and the grid's tail becomes short.
inline constexpr int64_t kRowMaxBlocks = 65536;
// The most threads of a CTA (the kernels' __launch_bounds__): the backward keeps two cached rows
// and the weight-gradient sums, about 170 registers per thread for 16-bit dtypes (ptxas -v,
// sm_90a), so 256 threads fit the 64K registers of an SM without spilling.
inline constexpr int kRowMaxThreads = 256;
// Short rows packed several to a warp (row_launch_packed): vectors per lane, so a row of at most
// 32 16-byte vectors (D <= 256 for 16-bit dtypes, 128 for fp32) takes fewer than 32 lanes.
inline constexpr int kRowPackedPerLane = 2;

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

// The launch for row groups of `width` threads (row_launch, row_launch_packed).
inline RowLaunch row_launch_width(int64_t rows, int width, int64_t owners) {
  RowLaunch s;
  s.width = width;
  s.block = s.width <= 32 ? kRowWarpBlock : s.width;
  const int64_t per_block = s.block / s.width;
  s.owners = owners > 0 ? owners : std::min<int64_t>(rows, kRowMaxBlocks * per_block);
  s.blocks = (s.owners + per_block - 1) / per_block;
  return s;
}

inline RowLaunch row_launch(int64_t rows, int64_t nvec, int64_t owners) {
  return row_launch_width(rows, row_width(nvec), owners);
}

// Threads per row with short rows packed several to a warp: the fewest lanes (a power of two)
// that hold the row with at most `per_lane` vectors each; rows of more than 32·per_lane vectors
// as row_width. The kernels sum over such groups with packed_group_sum (row_norm.cuh).
inline int packed_row_width(int64_t nvec, int per_lane) {
  if (nvec > int64_t{32} * per_lane) return row_width(nvec);
  int w = 1;
  while (int64_t{w} * per_lane < nvec) w *= 2;
  return w;
}

inline RowLaunch row_launch_packed(int64_t rows, int64_t nvec, int64_t owners, int per_lane) {
  return row_launch_width(rows, packed_row_width(nvec, per_lane), owners);
}

}  // namespace recops::ops::training_dev
