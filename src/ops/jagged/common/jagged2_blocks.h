// ops/jagged/common/jagged2_blocks.h: the jagged² layout the jagged2_* ops share (jagged_ops.md
// §2.4 (b), §3, §4 rows 3-4): block b is an N_b x N_b row-major matrix starting at offsets[b], row
// stride N_b (never min(N_b, max_L)). Host and device code (CPU paths and CUDA kernels).
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define RECOPS_J2_HD __host__ __device__
#else
#define RECOPS_J2_HD
#endif

namespace recops::ops {

// The exact integer square root floor(sqrt(n)) (0 for n <= 0): the side of a block of n elements.
// The float root is only the first guess; the products are unsigned so none overflows.
RECOPS_J2_HD inline int64_t jagged2_side(int64_t n) {
  if (n <= 0) return 0;
  auto r = static_cast<uint64_t>(std::sqrt(static_cast<double>(n)));
  const auto u = static_cast<uint64_t>(n);
  while (r > 0 && r * r > u) --r;
  while ((r + 1) * (r + 1) <= u) ++r;
  return static_cast<int64_t>(r);
}

// One block's extent with the offsets clamped into [0, total] (kernels; with validation off,
// invalid offsets give unspecified values but every access stays inside [0, total)).
struct Jagged2Block {
  int64_t begin = 0;  // offsets[b]
  int64_t side = 0;   // N_b; side * side <= the block's size
};

RECOPS_J2_HD inline Jagged2Block jagged2_block(int64_t begin, int64_t end, int64_t total) {
  begin = begin < 0 ? 0 : (begin > total ? total : begin);
  end = end < begin ? begin : (end > total ? total : end);
  return {begin, jagged2_side(end - begin)};
}

// Block b of int32 or int64 offsets whose elements are `stride` apart.
RECOPS_J2_HD inline Jagged2Block jagged2_block_at(const void* offsets, bool int64, int64_t stride,
                                                  int64_t b, int64_t total) {
  const int64_t k = b * stride;
  if (int64) {
    const auto* o = static_cast<const int64_t*>(offsets);
    return jagged2_block(o[k], o[k + stride], total);
  }
  const auto* o = static_cast<const int32_t*>(offsets);
  return jagged2_block(o[k], o[k + stride], total);
}

}  // namespace recops::ops
