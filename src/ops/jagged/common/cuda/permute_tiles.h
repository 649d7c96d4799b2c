// ops/jagged/common/cuda/permute_tiles.h: the permute ops' launch configuration (architecture.md
// habit 4). Untuned: chosen by reasoning, not measured yet.
#pragma once

namespace recops::ops::permute_dev {

inline constexpr int kThreads = 256;             // every kernel
inline constexpr int kItems = 8;                 // copy: elements per thread per tile
inline constexpr int kTile = kThreads * kItems;  // copy: output elements per block tile
inline constexpr long long kMaxBlocks = 8192;    // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::permute_dev
