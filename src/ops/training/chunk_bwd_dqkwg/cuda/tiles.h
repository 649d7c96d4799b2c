// training/chunk_bwd_dqkwg/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned (no GPU measurement yet): a first, simple version.
#pragma once

namespace recops::ops::chunk_bwd_dqkwg_ns {

inline constexpr int kThreads = 256;  // a block: 8 warps
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kTile = 16;          // K and V tile width
inline constexpr int kPitch = kTile + 1;  // shared row pitch (odd: no bank conflicts)
inline constexpr int kMaxBT = 64;         // the largest chunk_size
inline constexpr int kRowsPer = kMaxBT * kTile / kThreads;    // [BT, kTile] elements a thread: 4
inline constexpr int kPairsPer = kMaxBT * kMaxBT / kThreads;  // ds elements a thread: 16
inline constexpr long long kMaxBlocks = 16384;                // grid-stride beyond this
inline constexpr unsigned long kSmemOptinLimit = 98 * 1024;   // bytes, under sm_86's 99 KB opt-in

}  // namespace recops::ops::chunk_bwd_dqkwg_ns
