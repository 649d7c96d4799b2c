// training/chunk_bwd_dv_local/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned (no GPU measurement yet): a first, correctness-first version.
#pragma once

namespace recops::ops::chunk_bwd_dv_local_ns {

inline constexpr int kThreads = 256;  // one block a (chunk slot, value head)
inline constexpr int kBV = 32;        // V tile: the columns one pass over do covers
inline constexpr int kKT = 16;        // K tile of the staged q and k rows
inline constexpr int kMaxBT = 64;     // the largest chunk size the entry accepts
inline constexpr int kDotsPerThread = kMaxBT * kMaxBT / kThreads;  // (j, i) entries of A
inline constexpr int kOutPerThread = kMaxBT * kBV / kThreads;      // (j, v) outputs a pass
inline constexpr long long kMaxBlocks = 65535;                     // grid-stride beyond this

}  // namespace recops::ops::chunk_bwd_dv_local_ns
