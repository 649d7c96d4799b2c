// training/chunk_gated_delta_rule_fwd_h/cuda/tiles.h: the launch configuration and the shared
// memory plan (architecture.md habit 4). Not tuned (no GPU measurement yet).
#pragma once

#include <cstddef>
#include <cstdint>

namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns {

inline constexpr int kThreads = 256;  // 8 warps a block
inline constexpr int kMaxBV = 32;     // state columns (of V) a block keeps, at most
inline constexpr int kKT = 32;        // K columns of w / k staged at a time
inline constexpr int kLd = kKT + 1;   // the staged tile's row stride (padded against conflicts)
inline constexpr int kMaxBT = 64;     // the largest chunk size (16, 32, 64)
// Rows of a chunk a thread keeps in registers in the v_new step: BT / (kThreads / BV) with
// BV <= 32, so at most 64 / 8.
inline constexpr int kRowsPerThread = kMaxBT / (kThreads / kMaxBV);
// Dynamic shared memory budgets; the kernels' static shared memory is the block reduction's
// kThreads / 32 long longs.
inline constexpr size_t kStaticSmem = sizeof(long long) * (kThreads / 32);
inline constexpr size_t kSmemDefault = 48 * 1024 - kStaticSmem;  // no opt-in needed
inline constexpr size_t kSmemMax = 96 * 1024;     // opt-in ceiling (sm_80/86/89 and sm_90 all fit)
inline constexpr long long kMaxBlocks = 1 << 20;  // grid-stride beyond this

// Dynamic shared memory of a block, in elements of the accumulator: the state slice S [K, BV],
// the staged w / k tile [BT, kLd], the chunk's gated v_new rows [BT, BV] and the gate factors
// [BT].
inline int64_t smem_elems(int64_t K, int64_t bv, int64_t bt) {
  return K * bv + bt * kLd + bt * bv + bt;
}

}  // namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns
