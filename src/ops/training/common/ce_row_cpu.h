// training/common/ce_row_cpu.h: the CPU row statistics of the cross-entropy ops
// (fused_cross_entropy, chunk_loss): one read of a row of logits gives its lse and the sum of its
// (soft-capped) logits. Blocks of kCeBlock logits are converted to A (fp32, fp64 for fp64) in a
// local buffer, their max found, the running sum rescaled when the max grows (online softmax), then
// the block's exp and plain sums taken over kCeLanes independent lanes (vectorisable, fixed order).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "recops/dtype.h"

namespace recops::ops::training {

inline constexpr int64_t kCeBlock = 256;
inline constexpr int kCeLanes = 8;

template <class A, class T>
inline A ce_load(T v) {
  if constexpr (std::is_same_v<T, A>)
    return v;
  else if constexpr (std::is_same_v<A, double>)
    return to_double(v);
  else
    return to_float(v);
}

template <class A>
inline A ce_lane_sum(const A (&v)[kCeLanes]) {
  A s = 0;
  for (int l = 0; l < kCeLanes; ++l) s += v[l];
  return s;
}

// The row's lse and sum of its (capped when cap > 0) logits, in one read of the row.
template <class T, class A>
void ce_row_stats(const T* z, int64_t V, A cap, A* lse, A* sum_z) {
  A buf[kCeBlock];
  A m = -INFINITY, s = 0, sz = 0;
  for (int64_t b0 = 0; b0 < V; b0 += kCeBlock) {
    const int64_t n = std::min(kCeBlock, V - b0);
    for (int64_t k = 0; k < n; ++k) buf[k] = ce_load<A>(z[b0 + k]);
    if (cap > 0)
      for (int64_t k = 0; k < n; ++k) buf[k] = cap * std::tanh(buf[k] / cap);
    A lm[kCeLanes], ls[kCeLanes] = {}, lz[kCeLanes] = {};
    std::fill(lm, lm + kCeLanes, A(-INFINITY));
    int64_t k = 0;
    for (; k + kCeLanes <= n; k += kCeLanes)
      for (int l = 0; l < kCeLanes; ++l) {
        lm[l] = std::max(lm[l], buf[k + l]);
        lz[l] += buf[k + l];
      }
    for (; k < n; ++k) {
      lm[0] = std::max(lm[0], buf[k]);
      lz[0] += buf[k];
    }
    sz += ce_lane_sum(lz);
    const A bm = *std::max_element(lm, lm + kCeLanes);
    if (bm > m) {
      s = m == -INFINITY ? A(0) : s * std::exp(m - bm);
      m = bm;
    }
    if (m == -INFINITY) continue;  // every logit so far is -inf
    for (k = 0; k + kCeLanes <= n; k += kCeLanes)
      for (int l = 0; l < kCeLanes; ++l) ls[l] += std::exp(buf[k + l] - m);
    for (; k < n; ++k) ls[0] += std::exp(buf[k] - m);
    s += ce_lane_sum(ls);
  }
  *lse = m + std::log(s);
  *sum_z = sz;
}

}  // namespace recops::ops::training
