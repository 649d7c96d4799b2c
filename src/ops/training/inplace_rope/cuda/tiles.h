// training/inplace_rope/cuda/tiles.h: the launch configuration (architecture.md habit 4). Not
// tuned yet (no GPU measurement): memory-bound defaults.
#pragma once

namespace recops::ops::inplace_rope_ns {

inline constexpr int kThreads = 256;           // 8 warps a block
inline constexpr long long kMaxBlocks = 4096;  // grid-stride beyond this (H200: 132 SMs x ~31)
inline constexpr int kHeadsPerThread = 4;      // heads that share one load of a cos/sin group

}  // namespace recops::ops::inplace_rope_ns
