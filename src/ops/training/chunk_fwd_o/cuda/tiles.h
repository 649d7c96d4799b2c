// training/chunk_fwd_o/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned (no GPU measurement yet): a first correct version's values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace recops::ops::chunk_fwd_o_ns {

inline constexpr int kThreads = 256;  // 4 row groups of 64 lanes (one column / key position each)
inline constexpr int kMaxBT = 64;     // the largest chunk size; also the V tile (VT)
inline constexpr int kVT = 64;        // V columns a block owns
inline constexpr int kRowGroups = kThreads / kVT;
inline constexpr int kRowsPerThread = kMaxBT / kRowGroups;  // 16
// KT: the K slice staged per step (q, k [64, KT + 1] and h [KT, VT]).
template <class S>
inline constexpr int kKT = sizeof(S) == 8 ? 16 : 32;
// Dynamic shared memory, in S elements: the K steps' q, k and h slices, then (reusing it) the
// gated scores w [64, 64], the v_new rows [64, VT] and G [64]. fp32: 33 KB; fp64: 66 KB (the
// launch raises the kernel's limit past the 48 KB default; sm_80/86/90 allow it).
template <class S>
inline constexpr size_t kSmemElems = (2 * kMaxBT * (kKT<S> + 1) + kKT<S> * kVT) >
                                             (kMaxBT * kMaxBT + kMaxBT * kVT + kMaxBT)
                                         ? (2 * kMaxBT * (kKT<S> + 1) + kKT<S> * kVT)
                                         : (kMaxBT* kMaxBT + kMaxBT * kVT + kMaxBT);
inline constexpr int64_t kMaxBlocks = 16384;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::chunk_fwd_o_ns
