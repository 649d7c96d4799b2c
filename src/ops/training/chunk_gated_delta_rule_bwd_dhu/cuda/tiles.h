// training/chunk_gated_delta_rule_bwd_dhu/cuda/tiles.h: the launch configuration (architecture.md
// habit 4). Not tuned (no GPU measurement yet): a first, correctness-first version.
#pragma once

namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns {

inline constexpr int kThreads = 256;  // one block a (sequence, value head, V tile)
inline constexpr int kMaxBV = 32;     // V tile: at most 32 columns (fewer for large K)
inline constexpr int kKT = 16;        // K tile of the staged q, k, w rows
inline constexpr int kMaxBT = 64;     // the largest chunk size the entry accepts
inline constexpr int kPerThread = kMaxBT * kMaxBV / kThreads;  // (t, v) pairs a thread in dv2
inline constexpr long long kMaxBlocks = 65535;                 // grid-stride beyond this
inline constexpr long long kSmemSoft = 48 * 1024;  // preferred dynamic shared memory a block
inline constexpr long long kSmemHard = 99 * 1024;  // opt-in limit (sm_86/89 still launch)

}  // namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns
