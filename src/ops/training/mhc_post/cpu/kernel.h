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
#include <cstring>
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

// Four doubles (one AVX2 register; two SSE2 ones in the baseline build) and the lane-wise
// helpers of token_fixed. They have internal linkage and are inlined, so GCC's note that passing
// a 32-byte vector without AVX changes the ABI (-Wpsabi, the baseline build) concerns no caller.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
typedef double V4 __attribute__((vector_size(32)));
inline V4 load4(const Acc* p) {
  V4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store4(T* dst, V4 v) {
  if constexpr (std::is_same_v<T, double>) {
    std::memcpy(dst, &v, sizeof v);
  } else if constexpr (std::is_same_v<T, float>) {
    typedef float F4 __attribute__((vector_size(16)));
    const F4 f = __builtin_convertvector(v, F4);
    std::memcpy(dst, &f, sizeof f);
  } else {
    for (int k = 0; k < 4; ++k) dst[k] = narrow<T>(v[k]);
  }
}

// token() for a compile-time n = N (DeepSeek V4's 4): the same sums in the same order, four
// channels at a time in explicit vectors: out_j, dy and dX_i from the N streams' values of four
// channels held in registers (no accumulator row in memory), and the dot products of one stream
// against all N dout rows in one pass (N vector sums whose lanes are mhc_cpu::dot's four partial
// sums over c mod 4, combined as (s0 + s1) + (s2 + s3); the tail adds to lane 0 as dot does).
template <class T, class W, int N>
void token_fixed(const Params& p, int64_t t, Scratch& s) {
  constexpr int64_t n = N;
  const int64_t C = p.C;
  const T* X = static_cast<const T*>(p.X) + t * n * C;
  const T* y = static_cast<const T*>(p.y) + t * C;
  const W* post = static_cast<const W*>(p.post) + t * n;
  const W* comb = static_cast<const W*>(p.comb) + t * n * n;
  Acc w[n][n], pj[n], dpost[n] = {}, dcomb[n][n] = {};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) w[i][j] = p.out_in ? comb[j * n + i] : comb[i * n + j];
  for (int64_t j = 0; j < n; ++j) pj[j] = post[j];
  Acc* xs = s.xs.data();
  Acc* gs = s.gs.data();
  Acc* yb = s.yb.data();
  for (int64_t c0 = 0; c0 < C; c0 += kBlock) {
    const int64_t m = std::min(kBlock, C - c0), m4 = m / 4 * 4;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < m; ++c) xs[i * kBlock + c] = widen(X[i * C + c0 + c]);
    for (int64_t c = 0; c < m; ++c) yb[c] = widen(y[c0 + c]);
    if (!p.backward) {
      T* out = static_cast<T*>(p.out) + t * n * C + c0;
      for (int64_t c = 0; c < m4; c += 4) {
        V4 xv[n];
        for (int64_t i = 0; i < n; ++i) xv[i] = load4(xs + i * kBlock + c);
        const V4 yv = load4(yb + c);
        for (int64_t j = 0; j < n; ++j) {
          V4 a = pj[j] * yv;
          for (int64_t i = 0; i < n; ++i) a += w[i][j] * xv[i];
          store4(out + j * C + c, a);
        }
      }
      for (int64_t c = m4; c < m; ++c)
        for (int64_t j = 0; j < n; ++j) {
          Acc a = pj[j] * yb[c];
          for (int64_t i = 0; i < n; ++i) a += w[i][j] * xs[i * kBlock + c];
          out[j * C + c] = narrow<T>(a);
        }
      continue;
    }
    const T* dout = static_cast<const T*>(p.dout) + t * n * C + c0;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t c = 0; c < m; ++c) gs[j * kBlock + c] = widen(dout[j * C + c]);
    T* dy = static_cast<T*>(p.dy) + t * C + c0;
    T* dX = static_cast<T*>(p.dX) + t * n * C + c0;
    for (int64_t c = 0; c < m4; c += 4) {
      V4 gv[n];
      for (int64_t j = 0; j < n; ++j) gv[j] = load4(gs + j * kBlock + c);
      V4 a = {0, 0, 0, 0};  // dy = Σ_j post_j·dout_j
      for (int64_t j = 0; j < n; ++j) a += pj[j] * gv[j];
      store4(dy + c, a);
      for (int64_t i = 0; i < n; ++i) {  // dX_i = Σ_j w_ij·dout_j
        V4 d = {0, 0, 0, 0};
        for (int64_t j = 0; j < n; ++j) d += w[i][j] * gv[j];
        store4(dX + i * C + c, d);
      }
    }
    for (int64_t c = m4; c < m; ++c) {
      Acc a = 0;
      for (int64_t j = 0; j < n; ++j) a += pj[j] * gs[j * kBlock + c];
      dy[c] = narrow<T>(a);
      for (int64_t i = 0; i < n; ++i) {
        Acc d = 0;
        for (int64_t j = 0; j < n; ++j) d += w[i][j] * gs[j * kBlock + c];
        dX[i * C + c] = narrow<T>(d);
      }
    }
    // dcomb_ij += <X_i, dout_j>, and (row i = n) dpost_j += <y, dout_j>.
    for (int64_t i = 0; i <= n; ++i) {
      const Acc* a = i < n ? xs + i * kBlock : yb;
      V4 part[n];
      for (int64_t j = 0; j < n; ++j) part[j] = V4{0, 0, 0, 0};
      for (int64_t c = 0; c < m4; c += 4) {
        const V4 av = load4(a + c);
        for (int64_t j = 0; j < n; ++j) part[j] += av * load4(gs + j * kBlock + c);
      }
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t c = m4; c < m; ++c) part[j][0] += a[c] * gs[j * kBlock + c];
        const Acc d = (part[j][0] + part[j][1]) + (part[j][2] + part[j][3]);
        (i < n ? dcomb[i][j] : dpost[j]) += d;
      }
    }
  }
  if (!p.backward) return;
  W* dpo = static_cast<W*>(p.dpost) + t * n;
  W* dco = static_cast<W*>(p.dcomb) + t * n * n;
  for (int64_t j = 0; j < n; ++j) dpo[j] = static_cast<W>(dpost[j]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      (p.out_in ? dco[j * n + i] : dco[i * n + j]) = static_cast<W>(dcomb[i][j]);
}
#pragma GCC diagnostic pop

template <class T, class W>
void run_typed(const Params& p, int threads) {
  const int64_t per_token = std::max<int64_t>(1, p.n * std::max<int64_t>(p.C, 1));
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / per_token);
  core::parallel_for(p.tokens, grain, threads, [&](int64_t begin, int64_t end) {
    Scratch s(p.n);
    for (int64_t t = begin; t < end; ++t) {
      if (p.n == 4)
        token_fixed<T, W, 4>(p, t, s);
      else
        token<T, W>(p, t, s);
    }
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
