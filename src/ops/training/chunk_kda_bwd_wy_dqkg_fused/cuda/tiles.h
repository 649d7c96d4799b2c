// training/chunk_kda_bwd_wy_dqkg_fused/cuda/tiles.h: the launch configuration (architecture.md
// habit 4). Not tuned (no GPU measurement yet): a first correct version's values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns {

inline constexpr int kThreads = 256;    // a block: one (chunk, key head) item at a time
inline constexpr int kMaxBT = 64;       // the largest chunk size
inline constexpr int kAP = kMaxBT + 1;  // row stride of the [64, 64] blocks in shared memory
// KT: key columns of one tile of the K phase; thread (ty, tx) = (tid / KT, tid % KT) owns column
// tx and rows ty, ty + 16, ty + 32, ty + 48 (so KT = kThreads / 16).
inline constexpr int kKT = 16;
inline constexpr int kRG = kThreads / kKT;  // 16 row groups
// VT: value columns of one tile (the V phase and the inner loop of the K phase).
template <class S>
inline constexpr int kVT = sizeof(S) == 8 ? 16 : 32;
// Dynamic shared memory, in elements of S: Akk's block [64, 65], β and the dβ sums [64] each,
// and one area used in turn by the V phase (dv2, v tiles [64, VT + 1]), the K phase (h, dh tiles
// [16, VT + 1]; do, dv2, v_new tiles [64, VT + 1]; dw and e⊙k tiles [64, 17]; the column sums
// [16, 17]) and the dA phase (X, then Y, [64, 65]). 56512 B for fp32 arithmetic, 84352 B for fp64.
template <class S>
inline constexpr int kAreaElems = [] {
  constexpr int vp = kVT<S> + 1, kp = kKT + 1;
  constexpr int kphase = 2 * kKT * vp + 3 * kMaxBT * vp + 2 * kMaxBT * kp + kRG * kp;
  constexpr int vphase = 2 * kMaxBT * vp;
  constexpr int dphase = kMaxBT * kAP;
  constexpr int m = kphase > vphase ? kphase : vphase;
  return m > dphase ? m : dphase;
}();
template <class S>
inline constexpr size_t kSmemElems = kMaxBT* kAP + 2 * kMaxBT + kAreaElems<S>;
inline constexpr int64_t kMaxBlocks = 16384;  // grid-stride beyond this (H200: 132 SMs)

}  // namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns
