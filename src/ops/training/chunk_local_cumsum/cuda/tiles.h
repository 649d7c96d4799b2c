// training/chunk_local_cumsum/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned (no GPU measurement yet): a memory-bound scan's defaults.
#pragma once

namespace recops::ops::chunk_local_cumsum_ns {

inline constexpr int kThreads = 256;  // at most 8 warps a block (fewer for short chunks)
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kRowsPerThread = 8;       // V: consecutive positions a thread a step
inline constexpr long long kMaxBlocks = 8192;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::chunk_local_cumsum_ns
