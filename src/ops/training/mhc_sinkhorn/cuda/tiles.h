// training/mhc_sinkhorn/cuda/tiles.h: the launch configuration (architecture.md habit 4). Not
// tuned yet (no GPU measurement).
#pragma once

#include <cstdint>

namespace recops::ops::mhc_sinkhorn_ns {

// One token (one n x n matrix) a thread. n <= kMaxFastN: n is a template argument, the matrix and
// the gradient live in registers; larger n: per-thread scratch in dynamic shared memory.
inline constexpr int kMaxFastN = 8;
inline constexpr int kThreads = 128;           // fast path: 4 warps a block
inline constexpr long long kMaxBlocks = 8192;  // grid-stride beyond this

// The backward keeps `cap` checkpoint matrices and `cap` matrices of one segment's iterates
// (per thread; local memory on the fast path). 2·iters − 1 <= cap² steps cost two forward sweeps;
// beyond that each segment is recomputed from its checkpoint per step (README, Limits).
constexpr int fast_cap(int n) {
  return n <= 4 ? 32 : 16;
}

// Generic path (n > kMaxFastN): at most this much dynamic shared memory a block (no opt-in
// needed), at most kGenericThreads threads, at most kGenericCap checkpoints.
inline constexpr int64_t kGenericSmemBytes = 48 * 1024;
inline constexpr int kGenericThreads = 32;
inline constexpr int kGenericCap = 16;

}  // namespace recops::ops::mhc_sinkhorn_ns
