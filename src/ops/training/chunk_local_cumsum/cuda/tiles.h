// training/chunk_local_cumsum/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned (no GPU measurement yet): a memory-bound scan's defaults.
#pragma once

namespace recops::ops::chunk_local_cumsum_ns {

inline constexpr int kThreads = 256;  // 8 warps a block
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kRowsPerThread = 4;       // V: loads in flight per thread per step
inline constexpr long long kMaxBlocks = 8192;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::chunk_local_cumsum_ns
