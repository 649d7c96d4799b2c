// jagged/jagged_softmax/cuda/tiles.h: the launch configuration. Not tuned yet (no GPU measurement
// in this change): first values chosen from the kernel's shape, to be replaced by `recops tune`
// results with their measurement.
#pragma once

namespace recops::ops::jagged_softmax_ns {

inline constexpr int kThreads = 256;           // one CTA per (sequence, column tile); 8 warps
inline constexpr int kMaxCols = 32;            // a column tile is at most one warp wide
inline constexpr long long kMaxBlocks = 8192;  // CTAs loop over the work list beyond this

// Columns of one tile: the smallest power of two >= min(H, kMaxCols); the CTA's other threads
// take rows (kThreads / cols row groups).
inline int tile_cols(long long H) {
  int c = 1;
  while (c < kMaxCols && c < H) c *= 2;
  return c;
}

}  // namespace recops::ops::jagged_softmax_ns
