// ops/jagged/common/select_cpu.h: CPU work splitting shared by the select/segment ops: threads take
// contiguous item ranges of equal cost, where the cost of items [0, i) is a non-decreasing prefix
// (an offsets array the entry validated), found by binary search. Each item is processed by one
// thread in one order, so results never depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <cstring>

#include "core/parallel.h"
#include "ops/jagged/common/cpu_half.h"
#include "recops/dtype.h"

namespace recops::ops {

// Calls item(i) for every i in [0, n). cost(i) (i in [0, n]) is the non-decreasing cost prefix;
// each item also counts 1, so runs of empty items are spread too. A thread is started per
// `per_thread` units of the total (at least one thread).
template <class Cost, class Item>
void select_balanced_for(int64_t n, int threads, Cost&& cost, Item&& item,
                         int64_t per_thread = int64_t{1} << 14) {
  if (n <= 0) return;
  const auto weight = [&](int64_t i) { return cost(i) + i; };
  const int64_t total = weight(n);
  const int nt =
      core::max_threads(threads, std::max<int64_t>(1, total / std::max<int64_t>(1, per_thread)));
  // First item of part t: the first i with weight(i) >= total * t / nt.
  const auto part_begin = [&](int64_t t) {
    if (t >= nt) return n;
    const auto target = static_cast<int64_t>(static_cast<double>(total) * t / nt);
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (weight(mid) < target)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  };
  core::parallel_for(nt, 1, nt, [&](int64_t t0, int64_t t1) {
    const int64_t end = part_begin(t1);
    for (int64_t i = part_begin(t0); i < end; ++i) item(i);
  });
}

// bf16 from double in one rounding (to nearest even), the same bits as bf16_from_double (NaN
// included: its sign and 0x7FC0), without branches so that a loop storing through it vectorises:
// the double is rounded to odd into fp32 (the nearest float toward zero with its last bit set when
// inexact), and that float to nearest even into bf16. fp32 keeps 16 bits more than bf16, so the
// second rounding sees the first one's sticky bit and the pair rounds as one (round-to-odd); the
// range is the same (one exponent width), so overflow, subnormals and zeros come out as the exact
// rounding's.
inline BFloat16 select_bf16_from_double(double v) {
  const float f = static_cast<float>(v);  // IEEE: out of range gives inf, handled below
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const double back = static_cast<double>(f);
  const bool inexact = back != v && v == v;
  // Toward zero then odd: one below in magnitude when the nearest float lies above (bits are
  // sign-magnitude, so u - 1 is smaller in magnitude for either sign; f is never 0 there).
  const uint32_t odd = ((std::fabs(back) > std::fabs(v) ? u - 1u : u) | 1u);
  u = inexact ? odd : u;
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = ((u >> 16) & 0x8000u) | 0x7FC0u;  // u is f's own bits for a NaN
  return BFloat16{static_cast<uint16_t>(v == v ? rounded : nan)};
}

// (0 + a) + b rounded once to T (fp16 or bf16), computed in fp32: the same bits as the sum in fp64
// rounded once (the golden's), NaN included. The fp32 sum is exact while the exponents of a and b
// differ by at most 15 (bf16: 8 significant bits each, so at most 24 in the sum; fp16: 11, at most
// 12 apart); further apart, the smaller one is below a quarter of the larger's ulp in T, the exact
// sum rounds to the larger one in T, and the fp32 sum (within an fp32 ulp of the exact one) is no
// tie in T and rounds there too. The two-member case of the segment select backward, which the
// fp64 path made slow (test_jagged_index_select.cpp checks it against the fp64 sum).
template <class T>
T select_pair_sum(T a, T b) {
  if constexpr (std::is_same_v<T, Half>) {
    return cpu_half_from((0.0f + cpu_half_to_float(a)) + cpu_half_to_float(b));
  } else {
    static_assert(std::is_same_v<T, BFloat16>);
    const auto wide = [](BFloat16 v) {
      const uint32_t bits = static_cast<uint32_t>(v.bits) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    };
    const float s = (0.0f + wide(a)) + wide(b);
    uint32_t u;
    std::memcpy(&u, &s, sizeof u);
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const uint32_t nan = ((u >> 16) & 0x8000u) | 0x7FC0u;  // bf16_from_double's NaN
    return BFloat16{static_cast<uint16_t>(s == s ? rounded : nan)};
  }
}

}  // namespace recops::ops
