// __family__/__op__/cuda/tiles.h: the launch configuration (architecture.md habit 4). Replace the
// values with tuned ones and say beside each what measured it (device, shape, recops tune output).
#pragma once

namespace recops::ops::__op___ns {

inline constexpr int kThreads = 256;           // a memory-bound elementwise loop: 8 warps a block
inline constexpr long long kMaxBlocks = 4096;  // grid-stride beyond this (H200: 132 SMs x ~31)

}  // namespace recops::ops::__op___ns
