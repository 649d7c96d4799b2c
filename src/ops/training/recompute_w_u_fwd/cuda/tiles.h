// training/recompute_w_u_fwd/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned (no GPU measurement yet): a first correct version's values.
#pragma once

#include <cstdint>

namespace recops::ops::recompute_w_u_fwd_ns {

inline constexpr int kThreads = 256;  // a block: kThreads / DT row groups of DT columns
inline constexpr int kMaxBT = 64;     // the largest chunk size (Ai's last dim)
// DT: output columns (of K for w, of V for u) a block owns; fp64 arithmetic keeps it small so
// that Ai [64, 65] and x [64, DT] stay in 48 KB of static shared memory (40 KB for fp64, 32 KB
// for fp32).
template <class S>
inline constexpr int kCols = sizeof(S) == 8 ? 16 : 64;
inline constexpr int64_t kMaxBlocks = 16384;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::recompute_w_u_fwd_ns
