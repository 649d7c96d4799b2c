// jagged/concat_1d_jagged/cuda/tiles.h: the launch configuration (not tuned yet; no measurement).
#pragma once

namespace recops::ops::concat_1d_jagged_ns {

// 256 threads a block; a thread moves one unit (16 bytes of its destination where the destination
// is 16-byte aligned, else one element) per tile, so a tile is kThreads units.
inline constexpr int kThreads = 256;
inline constexpr long long kMaxBlocks = 8192;  // grid-stride over tiles beyond this (H200: 132 SMs)

}  // namespace recops::ops::concat_1d_jagged_ns
