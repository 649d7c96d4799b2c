// training/chunk_loss/cuda/tiles.h: the launch shapes of the row kernels. Not tuned (no GPU
// measurement in this change): first values from the kernels' shape.
#pragma once

#include <algorithm>
#include <cstdint>

namespace recops::ops::chunk_loss_ns {

inline constexpr int kMaxThreads = 1024;           // the row kernels' __launch_bounds__
inline constexpr int kReduceThreads = 1024;        // the one-CTA kernels over all N rows
inline constexpr int kColThreads = 256;            // colsum_kernel, cast_kernel
inline constexpr int64_t kMaxRowBlocks = 1 << 20;  // rows beyond this: a grid-stride loop
inline constexpr int64_t kMaxCastBlocks = 4096;
inline constexpr int kGradPer = 8;  // grad_kernel: G values a thread holds between read and write

// Threads of the CTA that owns a row tile of vc columns: about 8 per thread, 64 to kMaxThreads.
inline int row_threads(int64_t vc) {
  const int64_t t = (vc / 8 + 31) / 32 * 32;
  return static_cast<int>(std::clamp<int64_t>(t, 64, kMaxThreads));
}

}  // namespace recops::ops::chunk_loss_ns
