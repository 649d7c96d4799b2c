// training/clipped_swiglu/cpu/clipped_swiglu_cpu.cpp: cpu_generic. OpenMP over blocks of rows (at
// least kGrain outputs each); per row one branch-free loop over i in Acc (float for fp32 and the
// 16-bit dtypes, double for fp64), each output rounded once. The clamps are comparisons, so that
// a NaN passes through them (torch.clamp); the backward's masks are selects, not products.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/parallel.h"
#include "ops/training/clipped_swiglu/impls.h"

namespace recops::ops::clipped_swiglu_ns {
namespace {
constexpr int64_t kGrain = int64_t{1} << 14;  // outputs per OpenMP chunk, at least

template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
AccOf<T> load(T v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return v;
  else
    return to_float(v);
}
template <class T>
T store(AccOf<T> v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return v;
  else
    return from_float<T>(v);
}

// One row r: the gate of output i at x[i * step], its linear part at x[u0 + i * step].
template <class T, bool kBackward>
void row(const Params& p, int64_t r) {
  using Acc = AccOf<T>;
  const Acc L = static_cast<Acc>(p.limit), a = static_cast<Acc>(p.alpha),
            b = static_cast<Acc>(p.linear_offset);
  const int64_t I = p.I;
  const int64_t step = p.interleaved ? 2 : 1;
  const int64_t u0 = p.interleaved ? 1 : I;  // the linear part's first position in the row
  const T* x = static_cast<const T*>(p.x) + r * 2 * I;
  for (int64_t i = 0; i < I; ++i) {
    const Acc g = load(x[i * step]), u = load(x[u0 + i * step]);
    const Acc gc = g > L ? L : g;
    const Acc uc = u > L ? L : (u < -L ? -L : u);
    const Acc s = Acc(1) / (Acc(1) + std::exp(-a * gc));
    if constexpr (!kBackward) {
      static_cast<T*>(p.out)[r * I + i] = store<T>(gc * s * (uc + b));
    } else {
      const Acc d = load(static_cast<const T*>(p.dy)[r * I + i]);
      const Acc dg = d * (uc + b) * (s + a * gc * s * (Acc(1) - s));
      const Acc du = d * gc * s;
      T* dx = static_cast<T*>(p.out) + r * 2 * I;
      dx[i * step] = store<T>(g <= L ? dg : Acc(0));
      dx[u0 + i * step] = store<T>((u >= -L && u <= L) ? du : Acc(0));
    }
  }
}

template <class T>
void run_typed(const Params& p, int threads) {
  const int64_t grain = std::max<int64_t>(1, kGrain / p.I);
  core::parallel_for(p.rows, grain, threads, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (p.backward)
        row<T, true>(p, r);
      else
        row<T, false>(p, r);
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) { run_typed<decltype(t)>(p, ctx.num_threads); }))
    return Status(StatusCode::internal, "clipped_swiglu: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::clipped_swiglu_ns
