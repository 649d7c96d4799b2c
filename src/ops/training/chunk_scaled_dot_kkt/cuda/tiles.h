// training/chunk_scaled_dot_kkt/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned (no GPU measurement yet): first values from the kernel's shape.
#pragma once

namespace recops::ops::chunk_scaled_dot_kkt_ns {

inline constexpr int kThreads = 256;  // a block: 8 warps; 16 Gram pairs a thread at BT = 64
inline constexpr int kMaxBT = 64;     // the largest chunk size (the entry allows 16, 32, 64)
inline constexpr long long kMaxBlocks = 65536;  // grid-stride beyond this (H200: 132 SMs)

// Columns of k staged per step: BT rows of KT (+1 padding) values of the arithmetic type S.
// fp32: 64 x 33 x 4 B = 8.4 KB, fp64: 64 x 17 x 8 B = 8.7 KB, next to the BT x BT Gram tile
// (16 KB fp32, 32 KB fp64): at most 41 KB of static shared memory.
template <class S>
inline constexpr int kKTile = sizeof(S) == 8 ? 16 : 32;

}  // namespace recops::ops::chunk_scaled_dot_kkt_ns
