// training/mhc_pre_bmm/cpu/mhc_pre_bmm_cpu.cpp: cpu_generic. OpenMP over blocks of tokens; each
// token's channels go in pieces of kBlock, widened to Acc (float; double for fp64 X) so that the
// loops over channels vectorise. dh_pre adds one partial per piece, in channel order: a
// deterministic per-token reduction, no atomics.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/mhc_pre_bmm/impls.h"

namespace recops::ops::mhc_pre_bmm_ns {
namespace {
constexpr int64_t kBlock = 256;  // channels per piece

template <class V>
constexpr bool kNative = std::is_same_v<V, double> || std::is_same_v<V, float>;

template <class Acc, class V>
Acc widen(V v) {
  if constexpr (kNative<V>)
    return static_cast<Acc>(v);
  else if constexpr (std::is_same_v<Acc, float>)
    return to_float(v);
  else
    return to_double(v);
}
template <class V, class Acc>
V narrow(Acc v) {
  if constexpr (kNative<V>)
    return static_cast<V>(v);
  else if constexpr (std::is_same_v<Acc, float>)
    return from_float<V>(v);
  else
    return from_double<V>(v);
}

// T: X's dtype; Y: y's (and dy's).
template <class T, class Y>
void run_typed(const Params& p, int threads) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t n = p.n, C = p.C;
  const int64_t per_token = std::max<int64_t>(1, std::max<int64_t>(n, 1) * C);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / per_token);
  core::parallel_for(p.tokens, grain, threads, [&](int64_t begin, int64_t end) {
    std::vector<Acc> acc(kBlock), dh(n);
    for (int64_t t = begin; t < end; ++t) {
      const Acc* h = static_cast<const Acc*>(p.h_pre) + t * n;
      const T* X = static_cast<const T*>(p.X) + t * n * C;
      if (!p.backward) {
        Y* y = static_cast<Y*>(p.y) + t * C;
        for (int64_t c0 = 0; c0 < C; c0 += kBlock) {
          const int64_t m = std::min(kBlock, C - c0);
          std::fill(acc.begin(), acc.begin() + m, Acc(0));
          for (int64_t i = 0; i < n; ++i) {
            const Acc hi = h[i];
            const T* xi = X + i * C + c0;
            for (int64_t c = 0; c < m; ++c) acc[c] += hi * widen<Acc>(xi[c]);
          }
          for (int64_t c = 0; c < m; ++c) y[c0 + c] = narrow<Y>(acc[c]);
        }
        continue;
      }
      const Y* dy = static_cast<const Y*>(p.dy) + t * C;
      T* dX = static_cast<T*>(p.dX) + t * n * C;
      std::fill(dh.begin(), dh.end(), Acc(0));
      for (int64_t c0 = 0; c0 < C; c0 += kBlock) {
        const int64_t m = std::min(kBlock, C - c0);
        for (int64_t c = 0; c < m; ++c) acc[c] = widen<Acc>(dy[c0 + c]);
        for (int64_t i = 0; i < n; ++i) {
          const Acc hi = h[i];
          const T* xi = X + i * C + c0;
          T* dxi = dX + i * C + c0;
          Acc dot = 0;
          for (int64_t c = 0; c < m; ++c) {
            dxi[c] = narrow<T>(acc[c] * hi);
            dot += acc[c] * widen<Acc>(xi[c]);
          }
          dh[i] += dot;
        }
      }
      Acc* dh_out = static_cast<Acc*>(p.dh_pre) + t * n;
      std::copy(dh.begin(), dh.end(), dh_out);
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  bool ok = false;
  visit_floating(p.x_dtype, [&](auto xt) {
    ok = visit_floating(
        p.y_dtype, [&](auto yt) { run_typed<decltype(xt), decltype(yt)>(p, ctx.num_threads); });
  });
  if (!ok) return Status(StatusCode::internal, "mhc_pre_bmm: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::mhc_pre_bmm_ns
