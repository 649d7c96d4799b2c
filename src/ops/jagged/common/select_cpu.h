// ops/jagged/common/select_cpu.h: CPU work splitting shared by the select/segment ops: threads take
// contiguous item ranges of equal cost, where the cost of items [0, i) is a non-decreasing prefix
// (an offsets array the entry validated), found by binary search. Each item is processed by one
// thread in one order, so results never depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>
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

// The sum of count(i) over [0, n) in one chunk per thread, each chunk in order; count returns
// (value, bad). With o (n + 1 elements), also the prefix sums: o[0] = 0, o[i + 1] = count(0) +
// ... + count(i) (count is called once per i, so it may do more: the permute gather). False when
// an item is bad or a sum overflows int64 (*total and o are then unspecified).
template <class Count>
bool chunked_sum(int64_t n, int threads, Count&& count, int64_t* o, int64_t* total) {
  if (o != nullptr) o[0] = 0;
  const int nt = core::max_threads(threads, n >> 15);
  std::vector<int64_t> base(static_cast<size_t>(nt + 1), 0);
  std::vector<char> bad(static_cast<size_t>(nt), 0);
  // One loop with the prefix stores and one without (a test per item kept the second pass slow).
  const auto chunk = [&](int64_t c, auto store) {
    int64_t sum = 0;
    bool b = false;
    for (int64_t i = n * c / nt; i < n * (c + 1) / nt; ++i) {
      const auto [v, wrong] = count(i);
      b |= wrong | __builtin_add_overflow(sum, v, &sum);
      if constexpr (decltype(store)::value) o[i + 1] = sum;
    }
    base[static_cast<size_t>(c) + 1] = sum;
    bad[static_cast<size_t>(c)] = b;
  };
  core::parallel_for(nt, 1, nt, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      if (o != nullptr)
        chunk(c, std::true_type{});
      else
        chunk(c, std::false_type{});
    }
  });
  for (size_t c = 0; c < static_cast<size_t>(nt); ++c)
    if (bad[c] || __builtin_add_overflow(base[c + 1], base[c], &base[c + 1])) return false;
  if (o != nullptr && nt > 1)  // every chunk but the first adds the chunks before it
    core::parallel_for(nt - 1, 1, nt - 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0 + 1; c < c1 + 1; ++c)
        for (int64_t i = n * c / nt; i < n * (c + 1) / nt; ++i)
          o[i + 1] += base[static_cast<size_t>(c)];
    });
  *total = base[static_cast<size_t>(nt)];
  return true;
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
    // The fp32 sum widens exactly, so cpu_bf16_from_double rounds it once (with the golden's NaN).
    return cpu_bf16_from_double((0.0f + to_float(a)) + to_float(b));
  }
}

}  // namespace recops::ops
