// training/chunk_kda_bwd_dav/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned (no GPU measurement yet): a first correct version's values.
#pragma once

#include <cstdint>

namespace recops::ops::chunk_kda_bwd_dav_ns {

inline constexpr int kThreads = 256;  // a block: one (chunk, value head) item at a time
inline constexpr int kMaxBT = 64;     // the largest chunk size
// VT: value columns of one tile (do and v_new staged as [64, VT + 1] each, next to the [64, 64]
// lower block of Aqk), chosen so that the static shared memory stays within 48 KB: 33280 B for
// fp32 arithmetic, 41984 B for fp64.
template <class S>
inline constexpr int kVT = sizeof(S) == 8 ? 8 : 32;
inline constexpr int64_t kMaxBlocks = 16384;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::chunk_kda_bwd_dav_ns
