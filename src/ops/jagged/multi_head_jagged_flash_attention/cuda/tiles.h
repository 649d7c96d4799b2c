// jagged/multi_head_jagged_flash_attention/cuda/tiles.h: the launch configuration of the FMA
// kernels (not tuned yet: chosen so that a key tile of the widest bucket, 2 x kKeys x 256
// elements of 4 bytes, fits the 48 KiB of static shared memory).
#pragma once

namespace recops::ops::multi_head_jagged_flash_attention_ns {

inline constexpr int kWarps = 8;   // warps a block; one query (or key) row per warp
inline constexpr int kKeys = 16;   // keys (or queries) staged in shared memory per step
inline constexpr int kMaxD = 256;  // the widest bucket: 8 elements per lane
inline constexpr long long kMaxGrid = 1LL << 30;  // blocks per launch; more are looped over

// cuda_sm80_mma (cuda/mma_kernel.cuh): 4 warps a block, 16 rows a warp.
inline constexpr int kMmaThreads = 128;
inline constexpr int kMmaRows = 64;   // query rows (forward, dq) or key rows (dk, dv) a block
inline constexpr int kMmaMaxD = 128;  // the widest D bucket

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
