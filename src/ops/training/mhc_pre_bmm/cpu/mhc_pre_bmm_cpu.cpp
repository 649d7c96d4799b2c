// training/mhc_pre_bmm/cpu/mhc_pre_bmm_cpu.cpp: cpu_generic. OpenMP over blocks of tokens; each
// token's channels go in pieces of kBlock; the loops over channels vectorise. The arithmetic is
// fp64 for every dtype, not the spec's fp32 floor: X is signed, so y and dh_pre are sums whose
// terms may cancel, and an fp32 sum then misses the single standard's per-element bound (as in
// rms_norm_gated's CPU path); each output is still rounded once. dh_pre adds one partial per
// piece, in channel order: a deterministic per-token reduction, no atomics.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/common/mhc_cpu.h"
#include "ops/training/mhc_pre_bmm/impls.h"

namespace recops::ops::mhc_pre_bmm_ns {
namespace {
constexpr int64_t kBlock = 256;  // channels per piece

using training::mhc_cpu::dot;
using training::mhc_cpu::narrow;
using training::mhc_cpu::widen;

// T: X's dtype; Y: y's (and dy's); W: h_pre's (float, or double with fp64 X).
template <class T, class Y, class W>
void run_typed(const Params& p, int threads) {
  using Acc = double;
  const int64_t n = p.n, C = p.C;
  const int64_t per_token = std::max<int64_t>(1, std::max<int64_t>(n, 1) * C);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / per_token);
  core::parallel_for(p.tokens, grain, threads, [&](int64_t begin, int64_t end) {
    std::vector<Acc> acc(kBlock), xw(kBlock), dh(n);
    for (int64_t t = begin; t < end; ++t) {
      const W* h = static_cast<const W*>(p.h_pre) + t * n;
      const T* X = static_cast<const T*>(p.X) + t * n * C;
      if (!p.backward) {
        Y* y = static_cast<Y*>(p.y) + t * C;
        for (int64_t c0 = 0; c0 < C; c0 += kBlock) {
          const int64_t m = std::min(kBlock, C - c0);
          std::fill(acc.begin(), acc.begin() + m, Acc(0));
          for (int64_t i = 0; i < n; ++i) {
            const Acc hi = h[i];
            const T* xi = X + i * C + c0;
            for (int64_t c = 0; c < m; ++c) acc[c] += hi * widen(xi[c]);
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
        for (int64_t c = 0; c < m; ++c) acc[c] = widen(dy[c0 + c]);
        for (int64_t i = 0; i < n; ++i) {
          const Acc hi = h[i];
          const T* xi = X + i * C + c0;
          T* dxi = dX + i * C + c0;
          for (int64_t c = 0; c < m; ++c) {
            dxi[c] = narrow<T>(acc[c] * hi);
            xw[c] = widen(xi[c]);
          }
          dh[i] += dot(acc.data(), xw.data(), m);
        }
      }
      W* dh_out = static_cast<W*>(p.dh_pre) + t * n;
      for (int64_t i = 0; i < n; ++i) dh_out[i] = static_cast<W>(dh[i]);
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  bool ok = false;
  visit_floating(p.x_dtype, [&](auto xt) {
    ok = visit_floating(p.y_dtype, [&](auto yt) {
      using T = decltype(xt);
      using Y = decltype(yt);
      if (p.coef_dtype == DType::fp64)
        run_typed<T, Y, double>(p, ctx.num_threads);
      else
        run_typed<T, Y, float>(p, ctx.num_threads);
    });
  });
  if (!ok) return Status(StatusCode::internal, "mhc_pre_bmm: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::mhc_pre_bmm_ns
