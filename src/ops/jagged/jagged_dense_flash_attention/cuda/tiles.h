// jagged/jagged_dense_flash_attention/cuda/tiles.h: the launch configuration of the cuda_sm80
// kernels (not tuned yet: chosen for simplicity and to fit fp64 tiles in 48 KiB of static shared
// memory; retune with `recops tune` on the H200 and record the measurement here).
#pragma once

#include <cstdint>

namespace recops::ops::jagged_dense_flash_attention_ns {

inline constexpr int kWarps = 4;                       // warps of a CTA
inline constexpr int kThreads = 32 * kWarps;           // 128
inline constexpr int kCols = 8;                        // target columns of a CTA's tile
inline constexpr int kColsPerWarp = kCols / kWarps;    // 2
inline constexpr int kMaxD = 256;                      // the one D bucket: D <= 256, masked
inline constexpr int kMaxNi = kMaxD / 32;              // row elements per lane
inline constexpr int64_t kMaxGrid = int64_t{1} << 20;  // grid-stride beyond this many CTAs

// cuda_sm80_mma's forward (cuda/mma_kernel.cuh): 4 warps a block, 16 target columns a warp.
inline constexpr int kMmaThreads = 128;
inline constexpr int kMmaCols = 64;  // target columns of a block's tile

}  // namespace recops::ops::jagged_dense_flash_attention_ns
