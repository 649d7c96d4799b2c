// jagged/expand_1d_jagged_to_dense/cuda/tiles.h: the launch configuration (architecture.md habit
// 4). Untuned: chosen by reasoning, not measured yet.
#pragma once

namespace recops::ops::expand_1d_jagged_to_dense_ns {

inline constexpr int kThreads = 256;           // a memory-bound elementwise loop: 8 warps a block
inline constexpr long long kMaxBlocks = 8192;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::expand_1d_jagged_to_dense_ns
