// training/clipped_swiglu/cuda/tiles.h: the launch configuration (architecture.md habit 4). Not
// tuned yet (no GPU measurement): the template's memory-bound defaults.
#pragma once

namespace recops::ops::clipped_swiglu_ns {

inline constexpr int kThreads = 256;           // a memory-bound elementwise loop: 8 warps a block
inline constexpr long long kMaxBlocks = 4096;  // grid-stride beyond this (H200: 132 SMs x ~31)

}  // namespace recops::ops::clipped_swiglu_ns
