// ops/jagged/common/cuda/select_tiles.h: the segment-select ops' launch configuration
// (architecture.md habit 4). Untuned: chosen by reasoning, not measured yet.
#pragma once

namespace recops::ops::select_dev {

inline constexpr int kThreads =
    256;  // 8 warps; the copy kernels take one segment per warp at a time
inline constexpr long long kMaxBlocks = 8192;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::select_dev
