// training/chunk_kda_fwd_intra/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned (no GPU measurement yet): a first correct version's values.
#pragma once

#include <cstdint>

namespace recops::ops::chunk_kda_fwd_intra_ns {

inline constexpr int kThreads = 256;  // a block: one (chunk, value head) item at a time
inline constexpr int kMaxBT = 64;     // the largest chunk size
inline constexpr int kSub = 16;       // sub-block rows of the exponent factorisation (fla's BC)
inline constexpr int kSubs = kMaxBT / kSub;
// KT: key columns of one score-phase tile (q, k, G, the two row-factored tiles and the column
// factors, six [64, KT + 1] tiles); DT: columns of one product-phase tile ([64, DT]). Chosen so
// that the tiles plus the [64, 64] M / Akk block stay within 48 KB of static shared memory
// (42752 B for fp32 arithmetic, 48640 B for fp64; ptxas -v).
template <class S>
inline constexpr int kKT = sizeof(S) == 8 ? 4 : 16;
template <class S>
inline constexpr int kDT = sizeof(S) == 8 ? 16 : 64;
inline constexpr int64_t kMaxBlocks = 16384;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::chunk_kda_fwd_intra_ns
