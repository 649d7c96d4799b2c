// training/mhc_post/cpu/kernel.h: the CPU path. OpenMP over blocks of tokens; each token's
// channels go in pieces of kBlock, widened to double so that the inner loops over channels are
// plain vectorisable loops. The arithmetic is fp64 for every dtype, not the spec's fp32 floor:
// the streams are signed, so every output is a sum whose terms may cancel, and an fp32 sum then
// misses the single standard's per-element bound (rms_norm_gated's CPU path does the same); each
// output is still rounded once. The backward's per-token sums (dpost, dcomb) add one partial
// per piece, in channel order: deterministic, no atomics.
//
// Built twice: cpu_generic (mhc_post_cpu.cpp, baseline flags) and cpu_avx2
// (mhc_post_cpu_avx2.cpp, AVX2 + FMA: the channel loops run 4 doubles a vector instead of 2).
// Everything here has internal linkage, and mhc_cpu.h sits in an ISA-named namespace, so the two
// copies never merge.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/common/mhc_cpu.h"
#include "ops/training/mhc_post/impls.h"

namespace recops::ops::mhc_post_ns {
namespace {
constexpr int64_t kBlock = 256;  // channels per piece

using Acc = double;
using training::mhc_cpu::dot;
using training::mhc_cpu::narrow;
using training::mhc_cpu::widen;

// Per-thread scratch: the pieces of the n streams (xs), of dout (gs), of y (yb), one output row
// (acc); the token's weights w[i * n + j] (from stream i to stream j) and post; the sums.
struct Scratch {
  std::vector<Acc> xs, gs, yb, acc, w, post, dpost, dcomb;
  explicit Scratch(int64_t n)
      : xs(n * kBlock),
        gs(n * kBlock),
        yb(kBlock),
        acc(kBlock),
        w(n * n),
        post(n),
        dpost(n),
        dcomb(n * n) {}
};

// T: the streams' dtype; W: the coefficients' (float, or double with fp64 streams).
template <class T, class W>
void token(const Params& p, int64_t t, Scratch& s) {
  const int64_t n = p.n, C = p.C;
  const T* X = static_cast<const T*>(p.X) + t * n * C;
  const T* y = static_cast<const T*>(p.y) + t * C;
  const W* post = static_cast<const W*>(p.post) + t * n;
  const W* comb = static_cast<const W*>(p.comb) + t * n * n;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) s.w[i * n + j] = p.out_in ? comb[j * n + i] : comb[i * n + j];
  for (int64_t j = 0; j < n; ++j) s.post[j] = post[j];
  std::fill(s.dpost.begin(), s.dpost.end(), Acc(0));
  std::fill(s.dcomb.begin(), s.dcomb.end(), Acc(0));
  for (int64_t c0 = 0; c0 < C; c0 += kBlock) {
    const int64_t m = std::min(kBlock, C - c0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < m; ++c) s.xs[i * kBlock + c] = widen(X[i * C + c0 + c]);
    for (int64_t c = 0; c < m; ++c) s.yb[c] = widen(y[c0 + c]);
    if (!p.backward) {
      T* out = static_cast<T*>(p.out) + t * n * C + c0;
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t c = 0; c < m; ++c) s.acc[c] = s.post[j] * s.yb[c];
        for (int64_t i = 0; i < n; ++i) {
          const Acc wij = s.w[i * n + j];
          const Acc* xi = &s.xs[i * kBlock];
          for (int64_t c = 0; c < m; ++c) s.acc[c] += wij * xi[c];
        }
        for (int64_t c = 0; c < m; ++c) out[j * C + c] = narrow<T>(s.acc[c]);
      }
      continue;
    }
    const T* dout = static_cast<const T*>(p.dout) + t * n * C + c0;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t c = 0; c < m; ++c) s.gs[j * kBlock + c] = widen(dout[j * C + c]);
    // dy = Σ_j post_j·dout_j
    T* dy = static_cast<T*>(p.dy) + t * C + c0;
    std::fill(s.acc.begin(), s.acc.begin() + m, Acc(0));
    for (int64_t j = 0; j < n; ++j) {
      const Acc pj = s.post[j];
      const Acc* gj = &s.gs[j * kBlock];
      for (int64_t c = 0; c < m; ++c) s.acc[c] += pj * gj[c];
    }
    for (int64_t c = 0; c < m; ++c) dy[c] = narrow<T>(s.acc[c]);
    // dX_i = Σ_j w_ij·dout_j; dcomb_ij += <X_i, dout_j> over this piece
    T* dX = static_cast<T*>(p.dX) + t * n * C + c0;
    for (int64_t i = 0; i < n; ++i) {
      std::fill(s.acc.begin(), s.acc.begin() + m, Acc(0));
      const Acc* xi = &s.xs[i * kBlock];
      for (int64_t j = 0; j < n; ++j) {
        const Acc wij = s.w[i * n + j];
        const Acc* gj = &s.gs[j * kBlock];
        for (int64_t c = 0; c < m; ++c) s.acc[c] += wij * gj[c];
        s.dcomb[i * n + j] += dot(xi, gj, m);
      }
      for (int64_t c = 0; c < m; ++c) dX[i * C + c] = narrow<T>(s.acc[c]);
    }
    // dpost_j += <dout_j, y> over this piece
    for (int64_t j = 0; j < n; ++j) s.dpost[j] += dot(&s.gs[j * kBlock], s.yb.data(), m);
  }
  if (!p.backward) return;
  // C = 0: no pieces ran, dpost and dcomb are the zeros they started as (n = 0: dy = 0 above).
  W* dpost = static_cast<W*>(p.dpost) + t * n;
  W* dcomb = static_cast<W*>(p.dcomb) + t * n * n;
  for (int64_t j = 0; j < n; ++j) dpost[j] = static_cast<W>(s.dpost[j]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      (p.out_in ? dcomb[j * n + i] : dcomb[i * n + j]) = static_cast<W>(s.dcomb[i * n + j]);
}

template <class T, class W>
void run_typed(const Params& p, int threads) {
  const int64_t per_token = std::max<int64_t>(1, p.n * std::max<int64_t>(p.C, 1));
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / per_token);
  core::parallel_for(p.tokens, grain, threads, [&](int64_t begin, int64_t end) {
    Scratch s(p.n);
    for (int64_t t = begin; t < end; ++t) token<T, W>(p, t, s);
  });
}

// The CPU path: every dtype, fp32 or fp64 coefficients; `impl` names it in errors.
Status run(const Params& p, const Context& ctx, const char* impl) {
  const bool ok = visit_floating(p.dtype, [&](auto t) {
    if (p.coef_dtype == DType::fp64)
      run_typed<decltype(t), double>(p, ctx.num_threads);
    else
      run_typed<decltype(t), float>(p, ctx.num_threads);
  });
  if (!ok)
    return Status(StatusCode::internal,
                  std::string("mhc_post: ") + impl + " reached with a bad dtype");
  return Status::Ok();
}
}  // namespace

}  // namespace recops::ops::mhc_post_ns
