// ops/jagged/common/select_cpu.h: CPU work splitting shared by the select/segment ops: threads take
// contiguous item ranges of equal cost, where the cost of items [0, i) is a non-decreasing prefix
// (an offsets array the entry validated), found by binary search. Each item is processed by one
// thread in one order, so results never depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/parallel.h"

namespace recops::ops {

// Calls item(i) for every i in [0, n). cost(i) (i in [0, n]) is the non-decreasing cost prefix;
// each item also counts 1, so runs of empty items are spread too.
template <class Cost, class Item>
void select_balanced_for(int64_t n, int threads, Cost&& cost, Item&& item) {
  if (n <= 0) return;
  const auto weight = [&](int64_t i) { return cost(i) + i; };
  const int64_t total = weight(n);
  const int nt = core::max_threads(threads, std::max<int64_t>(1, total >> 14));
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

}  // namespace recops::ops
