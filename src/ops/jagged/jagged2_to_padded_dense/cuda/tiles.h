// jagged/jagged2_to_padded_dense/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Untuned: chosen by reasoning, not measured yet.
#pragma once

namespace recops::ops::jagged2_to_padded_dense_ns {

inline constexpr int kThreads = 256;           // memory-bound copies: 8 warps a CTA
inline constexpr long long kMaxBlocks = 8192;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::jagged2_to_padded_dense_ns
