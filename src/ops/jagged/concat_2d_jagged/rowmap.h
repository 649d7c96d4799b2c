// jagged/concat_2d_jagged/rowmap.h: which source row each destination row copies (README.md's
// formulas), shared by cpu/ and cuda/ (host and device code; the reference has its own loops).
// Destinations: 0 = out (forward), 1 = grad_a, 2 = grad_b (backward). Offsets are clamped into
// [0, rows], so invalid offsets (CUDA with validation off) never address outside the tensors.
#pragma once

#include <cstdint>

#include "ops/jagged/concat_2d_jagged/params.h"

#if defined(__CUDACC__)
#define RECOPS_C2J_HD __host__ __device__
#else
#define RECOPS_C2J_HD
#endif

namespace recops::ops::concat_2d_jagged_ns {

// Flattened position of sample b's first row on side s (b in [0, B]; b = B is the end).
RECOPS_C2J_HD inline int64_t side_pos(const Params& p, const Side& s, int64_t b) {
  if (s.S >= 0) return b * s.S;
  const int64_t i = b * s.offsets_stride;
  int64_t v = p.offsets_int64 ? static_cast<const int64_t*>(s.offsets)[i]
                              : static_cast<int64_t>(static_cast<const int32_t*>(s.offsets)[i]);
  return v < 0 ? 0 : (v > s.rows ? s.rows : v);
}

// Position of sample b's first row in destination `dest`.
RECOPS_C2J_HD inline int64_t dest_pos(const Params& p, int dest, int64_t b) {
  if (dest == 1) return side_pos(p, p.a, b);
  if (dest == 2) return side_pos(p, p.b, b);
  return side_pos(p, p.a, b) + (p.is_replace ? 0 : side_pos(p, p.b, b));
}

RECOPS_C2J_HD inline int64_t min64(int64_t x, int64_t y) {
  return x < y ? x : y;
}

// Address of row i of sample b on side s (bytes).
RECOPS_C2J_HD inline const char* side_row(const Params& p, const Side& s, int64_t b, int64_t start,
                                          int64_t i) {
  const int64_t jag = s.S >= 0 ? 0 : start;
  return static_cast<const char*>(s.data) +
         (b * s.batch_stride + (jag + i) * s.row_stride) * p.itemsize;
}

// The source of destination row r of `dest`, or nullptr (the row is 0).
RECOPS_C2J_HD inline const char* source_row(const Params& p, int dest, int64_t r) {
  if (p.B == 0) return nullptr;
  int64_t lo = 0, hi = p.B - 1;  // the last sample whose first row is <= r
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (dest_pos(p, dest, mid) <= r)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int64_t b = lo;
  const int64_t pa = side_pos(p, p.a, b), pb = side_pos(p, p.b, b);
  int64_t la = side_pos(p, p.a, b + 1) - pa, lb = side_pos(p, p.b, b + 1) - pb;
  la = la < 0 ? 0 : la;
  lb = lb < 0 ? 0 : lb;
  const int64_t n = r - dest_pos(p, dest, b);
  if (n < 0) return nullptr;
  const int64_t kk = min64(p.k, lb), rr = min64(la, lb);
  if (dest == 0) {  // forward
    if (p.is_replace) {
      if (n < la - rr) return side_row(p, p.a, b, pa, n);
      if (n < la) return side_row(p, p.b, b, pb, n - la + lb);
      return nullptr;
    }
    if (n < kk) return side_row(p, p.b, b, pb, n);
    if (n < kk + la) return side_row(p, p.a, b, pa, n - kk);
    if (n < la + lb) return side_row(p, p.b, b, pb, n - la);
    return nullptr;
  }
  // backward: a row of grad, at the forward's output row
  const int64_t po = pa + (p.is_replace ? 0 : pb);
  int64_t o = -1;
  if (dest == 1) {
    if (n < la && (!p.is_replace || n < la - rr)) o = p.is_replace ? n : kk + n;
  } else if (n < lb) {
    if (p.is_replace)
      o = n >= lb - rr ? n - lb + la : -1;
    else
      o = n < kk ? n : n + la;
  }
  if (o < 0) return nullptr;
  return static_cast<const char*>(p.grad) + (po + o) * p.grad_row_stride * p.itemsize;
}

}  // namespace recops::ops::concat_2d_jagged_ns
