// jagged/segment_sum_csr/cpu/segment_sum_csr_cpu.cpp: the optimized CPU path. Threads take
// contiguous segment ranges of equal cost (common/select_cpu.h; csr_seg * batch_size is the cost
// prefix, non-decreasing since the entry validated it). Each segment sums in
// kLanes interleaved accumulators (fp32 for fp32/fp16/bf16, fp64 for fp64, uint64 for integers),
// combined in a fixed order: deterministic for any thread count.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ops/jagged/common/cpu_half.h"
#include "ops/jagged/common/select_cpu.h"
#include "ops/jagged/segment_sum_csr/impls.h"

namespace recops::ops::segment_sum_csr_ns {
namespace {
constexpr int kLanes = 8;

int64_t csr_at(const Params& p, int64_t i) {
  const int64_t k = i * p.csr_stride;
  return p.csr_int64 ? static_cast<const int64_t*>(p.csr_seg)[k]
                     : static_cast<const int32_t*>(p.csr_seg)[k];
}

// Acc: the accumulator; load widens one element exactly.
template <class T>
struct Sum {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double,
                                 std::conditional_t<std::is_integral_v<T>, uint64_t, float>>;
  static Acc load(T v) {
    if constexpr (std::is_same_v<T, Half>)
      return cpu_half_to_float(v);
    else if constexpr (std::is_same_v<T, BFloat16>)
      return to_float(v);
    else if constexpr (std::is_integral_v<T>)
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    else
      return v;
  }
  static T store(Acc a) {
    if constexpr (std::is_same_v<T, Half>)
      return cpu_half_from(a);
    else if constexpr (std::is_same_v<T, BFloat16>)
      return cpu_bf16_from_float(a);
    else
      return static_cast<T>(a);  // integers: two's complement wrap to T's width
  }
};

template <class T>
void segment_sums(const Params& p, int threads) {
  using S = Sum<T>;
  using Acc = typename S::Acc;
  const T* v = static_cast<const T*>(p.values);
  T* out = static_cast<T*>(p.out);
  const int64_t bs = p.batch_size;
  select_balanced_for(
      p.S, threads, [&](int64_t i) { return csr_at(p, i) * bs; },
      [&](int64_t i) {
        const int64_t begin = csr_at(p, i) * bs, end = csr_at(p, i + 1) * bs;
        Acc acc[kLanes] = {};
        int64_t j = begin;
        for (; j + kLanes <= end; j += kLanes)
          for (int k = 0; k < kLanes; ++k) acc[k] += S::load(v[j + k]);
        for (int k = 0; j < end; ++j, ++k) acc[k] += S::load(v[j]);
        out[i] = S::store(((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                          ((acc[4] + acc[5]) + (acc[6] + acc[7])));
      });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  const int threads = ctx.num_threads;
  switch (p.dtype) {
    case DType::int32: segment_sums<int32_t>(p, threads); return Status::Ok();
    case DType::int64: segment_sums<int64_t>(p, threads); return Status::Ok();
    default:
      if (!visit_floating(p.dtype, [&](auto t) { segment_sums<decltype(t)>(p, threads); }))
        return Status(StatusCode::internal,
                      "segment_sum_csr: cpu_generic reached with a bad dtype");
      return Status::Ok();
  }
}

}  // namespace recops::ops::segment_sum_csr_ns
