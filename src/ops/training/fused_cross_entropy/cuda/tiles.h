// training/fused_cross_entropy/cuda/tiles.h: the launch shape (architecture.md habit 4). Not tuned
// yet (no GPU measurement in this change): first values from the kernels' shape, to be replaced
// with `recops tune` results and their measurement.
#pragma once

#include <algorithm>
#include <cstdint>

namespace recops::ops::fused_cross_entropy_ns {

inline constexpr int kMaxThreads = 1024;           // the row kernels' __launch_bounds__
inline constexpr int kReduceThreads = 1024;        // the one-CTA row-sum kernels
inline constexpr int64_t kMaxRowBlocks = 1 << 20;  // rows beyond this: a grid-stride loop

// Threads of the CTA that owns a row of `nvec` vectors: about 8 vectors per thread, 64 to
// kMaxThreads (a multiple of 32).
inline int row_threads(int64_t nvec) {
  const int64_t t = (nvec / 8 + 31) / 32 * 32;
  return static_cast<int>(std::clamp<int64_t>(t, 64, kMaxThreads));
}

}  // namespace recops::ops::fused_cross_entropy_ns
