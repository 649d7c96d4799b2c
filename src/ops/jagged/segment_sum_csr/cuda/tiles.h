// jagged/segment_sum_csr/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Untuned: chosen by reasoning, not measured yet.
#pragma once

namespace recops::ops::segment_sum_csr_ns {

inline constexpr int kThreads = 256;           // 8 warps a block, one segment per warp at a time
inline constexpr long long kMaxBlocks = 8192;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::segment_sum_csr_ns
