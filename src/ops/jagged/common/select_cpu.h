// ops/jagged/common/select_cpu.h: CPU work splitting shared by the select/segment ops: threads take
// contiguous item ranges of equal cost, where the cost of items [0, i) is a non-decreasing prefix
// (an offsets array the entry validated), found by binary search. Each item is processed by one
// thread in one order, so results never depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/parallel.h"
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

// bf16 from double in one rounding (to nearest even), by integer arithmetic on the double's bits
// for zeros and results that are normal bf16 numbers; the rest (subnormal, overflow, inf, NaN)
// take the library's exact path. The same bits as bf16_from_double, several times faster.
inline BFloat16 select_bf16_from_double(double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  const uint64_t mag = u & 0x7FFFFFFFFFFFFFFFull;
  // Round the 52-bit mantissa to 7 bits: add half an ulp minus one, plus the kept lsb (ties to
  // even); a carry moves into the exponent as it should.
  const uint64_t r = mag + ((uint64_t{1} << 44) - 1) + ((mag >> 45) & 1u);
  const int64_t e = static_cast<int64_t>(r >> 52) - 1023 + 127;
  if (mag == 0) return BFloat16{static_cast<uint16_t>((u >> 48) & 0x8000u)};  // +-0
  if (e < 1 || e > 254) return bf16_from_double(v);
  const auto bits = static_cast<uint16_t>(((u >> 48) & 0x8000u) | (static_cast<uint64_t>(e) << 7) |
                                          ((r >> 45) & 0x7Fu));
  return BFloat16{bits};
}

}  // namespace recops::ops
