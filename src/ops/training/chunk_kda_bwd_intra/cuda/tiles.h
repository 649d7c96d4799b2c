// training/chunk_kda_bwd_intra/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned (no GPU measurement yet): a first correct version's values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace recops::ops::chunk_kda_bwd_intra_ns {

inline constexpr int kMaxBT = 64;  // the largest chunk size
inline constexpr int kSub = 16;    // sub-block rows of the exponent split (fla's BC)
inline constexpr int kSubs = kMaxBT / kSub;
// KT: key columns of one tile. A block has kSub·KT threads: thread (ty, tx) owns column tx of the
// tile and row ty of every 16-row sub-block (rows ty, 16 + ty, 32 + ty, 48 + ty).
template <class S>
inline constexpr int kKT = sizeof(S) == 8 ? 8 : 16;
template <class S>
inline constexpr int kThreads = kSub* kKT<S>;
// Dynamic shared memory, in elements of S: dAqk and dAkk blocks [64, 64]; q, k, G tiles
// [64, KT + 1]; the column factors κ and k·κ of the earlier rows [48, KT + 1]; ρ, q·ρ and β·k·ρ
// of one row sub-block [16, KT + 1]; β [64]. 55872 B for fp32 arithmetic, 90240 B for fp64.
template <class S>
inline constexpr size_t kSmemElems = 2 * kMaxBT* kMaxBT + 3 * kMaxBT*(kKT<S> + 1) +
                                     2 * (kMaxBT - kSub) * (kKT<S> + 1) +
                                     3 * kSub*(kKT<S> + 1) + kMaxBT;
inline constexpr int64_t kMaxBlocks = 16384;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::chunk_kda_bwd_intra_ns
