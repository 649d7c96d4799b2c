// jagged/concat_2d_jagged/cuda/tiles.h: the launch configuration (not tuned yet; no measurement).
#pragma once

namespace recops::ops::concat_2d_jagged_ns {

inline constexpr int kThreads = 256;           // 256 threads a block; a row gets up to 32 of them
inline constexpr long long kMaxBlocks = 8192;  // grid-stride beyond this (H200: 132 SMs x 62)

}  // namespace recops::ops::concat_2d_jagged_ns
