// training/solve_tril/cuda/tiles.h: the launch configuration (architecture.md habit 4). Not tuned
// (no GPU measurement yet): first values from the kernel's shape.
#pragma once

namespace recops::ops::solve_tril_ns {

inline constexpr int kThreads = 256;  // a block: 8 warps, one 16 x 16 block's elements a pass
inline constexpr int kBlk = 16;       // the diagonal block size (as the CPU path)
inline constexpr int kMaxBT = 64;     // the largest chunk size (16, 32 or 64)
// Packed lower triangle (diagonal included) of a kMaxBT x kMaxBT matrix: A and X in shared memory
// take 2 x 2080 values (16.6 KB fp32, 33.3 KB fp64), the block-row sums 3 x 16 x 16 more (3 KB
// fp32, 6 KB fp64): at most 39.4 KB of static shared memory.
inline constexpr int kTri = kMaxBT * (kMaxBT + 1) / 2;
inline constexpr long long kMaxBlocks = 65536;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::solve_tril_ns
