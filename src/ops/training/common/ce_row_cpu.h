// training/common/ce_row_cpu.h: the CPU row statistics of the cross-entropy ops
// (fused_cross_entropy, chunk_loss): one read of a row of logits gives its lse and the sum of its
// (soft-capped) logits. Blocks of kCeBlock logits are converted to A (fp32, fp64 for fp64) in a
// local buffer, their max found, the running sum rescaled when the max grows (online softmax), then
// the block's exp and plain sums taken over kCeLanes independent lanes (vectorisable, fixed order).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/exp_poly.h"
#include "recops/isa_ns.h"
#include "recops/dtype.h"

namespace recops::ops::training {
// The ISA-named inline namespace (recops/isa_ns.h): cpu/*_avx2.cpp files include this header too.
inline namespace RECOPS_ISA_NS {

inline constexpr int64_t kCeBlock = 256;
inline constexpr int kCeLanes = 8;

// The exp of the row loops, as a policy: StdExp (std::exp, the baseline build) or PolyExp.
struct StdExp {
  template <class A>
  static A exp(A x) {
    return std::exp(x);
  }
};

// exp for fp32 that compilers vectorise: core::exp_poly_f32 (core/exp_poly.h, about 1 ulp; 0 below
// -87.33, NaN kept, clamped above 88.37), +inf above ln(FLT_MAX) as std::exp (a select: the clamp
// alone made exp(+inf) finite, and a +inf logit's gradient finite); fp64 keeps std::exp. The
// *_avx2.cpp builds use it: 8 lanes with FMA, where std::exp is one scalar libm call per logit.
struct PolyExp {
  template <class A>
  static A exp(A x) {
    if constexpr (std::is_same_v<A, double>) {
      return std::exp(x);
    } else {
      const float v = core::exp_poly_f32(x);
      return x > 88.7228394f ? INFINITY : v;
    }
  }
};

// exp for fp64 that compilers vectorise (no call, no branch): x = k·ln2 + r with k = round(x·log2e)
// and r from a two-part ln2 (Cody-Waite), exp(r) by its Taylor series to r^13/13! on |r| <= ln2/2
// (the first term left out is below 5e-18 of the result: about 1 ulp in all), 2^k put into the
// exponent bits. x is clamped to [ln(DBL_MIN), ln(DBL_MAX)]: below it (where 2^k would leave the
// normal range) the result is 0 where std::exp's is subnormal, above it +inf as std::exp's; NaN
// gives NaN. rms_norm_gated's cpu_avx2 takes its gates with it.
inline double poly_exp64(double x) {
  const double lo = -708.3964185322641, hi = 709.782712893384;  // ln(DBL_MIN), ln(DBL_MAX)
  const double c = x < lo ? lo : (x > hi ? hi : x);             // NaN stays NaN
  const double ck = c == c ? c : 0.0;
  // k = round(ck·log2e) by the 1.5·2^52 shift: its low mantissa bits then hold k as an integer,
  // so 2^k is built with 64-bit integer adds and shifts (AVX2 has no double -> int64 conversion;
  // a cast here would keep the loop scalar).
  const double shift = 6755399441055744.0;  // 1.5 · 2^52
  const double ks = std::fma(ck, 1.4426950408889634, shift);
  const double k = ks - shift;
  double r = std::fma(k, -6.93147180369123816490e-01, c);  // ln2's high part (exact product)
  r = std::fma(k, -1.90821492927058770002e-10, r);         // and its low part
  double q = 1.0 / 6227020800.0;                           // 1/13!
  q = std::fma(q, r, 1.0 / 479001600.0);
  q = std::fma(q, r, 1.0 / 39916800.0);
  q = std::fma(q, r, 1.0 / 3628800.0);
  q = std::fma(q, r, 1.0 / 362880.0);
  q = std::fma(q, r, 1.0 / 40320.0);
  q = std::fma(q, r, 1.0 / 5040.0);
  q = std::fma(q, r, 1.0 / 720.0);
  q = std::fma(q, r, 1.0 / 120.0);
  q = std::fma(q, r, 1.0 / 24.0);
  q = std::fma(q, r, 1.0 / 6.0);
  q = std::fma(q, r, 0.5);
  q = std::fma(q, r, 1.0);
  const double e = std::fma(q, r, 1.0);
  // k reaches 1024 just below the top (exp(709.78) is finite): 2^k as 2 · 2^1023 there.
  int64_t ki, si;
  std::memcpy(&ki, &ks, sizeof ki);
  std::memcpy(&si, &shift, sizeof si);
  ki -= si;  // k, exact
  const bool top = ki > 1023;
  const int64_t bits = ((top ? int64_t{1023} : ki) + 1023) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  const double v = (top ? e * 2.0 : e) * scale;
  return x > hi ? INFINITY : (x < lo ? 0.0 : v);
}

template <class A, class T>
inline A ce_load(T v) {
  if constexpr (std::is_same_v<T, A>)
    return v;
  else if constexpr (std::is_same_v<A, double>)
    return to_double(v);
  else
    return to_float(v);
}

template <class A>
inline A ce_lane_sum(const A (&v)[kCeLanes]) {
  A s = 0;
  for (int l = 0; l < kCeLanes; ++l) s += v[l];
  return s;
}

// The row's lse and sum of its (capped when cap > 0) logits, in one read of the row; E::exp for
// the per-logit exponentials. The lane max passes over a NaN and a block whose logits are all -inf
// (or NaN) skips its exp sum, so a NaN can miss s; it never misses the plain sum: a NaN sum gives
// lse NaN (a NaN logit, or +inf with -inf, where m = +inf makes s NaN anyway), as the golden's.
template <class T, class A, class E = StdExp>
void ce_row_stats(const T* z, int64_t V, A cap, A* lse, A* sum_z) {
  A buf[kCeBlock];
  A m = -INFINITY, s = 0, sz = 0;
  for (int64_t b0 = 0; b0 < V; b0 += kCeBlock) {
    const int64_t n = V - b0 < kCeBlock ? V - b0 : kCeBlock;
    for (int64_t k = 0; k < n; ++k) buf[k] = ce_load<A>(z[b0 + k]);
    if (cap > 0)
      for (int64_t k = 0; k < n; ++k) buf[k] = cap * std::tanh(buf[k] / cap);
    A lm[kCeLanes], ls[kCeLanes] = {}, lz[kCeLanes] = {};
    for (int l = 0; l < kCeLanes; ++l) lm[l] = A(-INFINITY);
    int64_t k = 0;
    for (; k + kCeLanes <= n; k += kCeLanes)
      for (int l = 0; l < kCeLanes; ++l) {
        lm[l] = buf[k + l] > lm[l] ? buf[k + l] : lm[l];
        lz[l] += buf[k + l];
      }
    for (; k < n; ++k) {
      lm[0] = buf[k] > lm[0] ? buf[k] : lm[0];
      lz[0] += buf[k];
    }
    sz += ce_lane_sum(lz);
    A bm = lm[0];
    for (int l = 1; l < kCeLanes; ++l) bm = lm[l] > bm ? lm[l] : bm;
    if (bm > m) {
      s = m == -INFINITY ? A(0) : s * std::exp(m - bm);
      m = bm;
    }
    if (m == -INFINITY) continue;  // every logit so far is -inf
    for (k = 0; k + kCeLanes <= n; k += kCeLanes)
      for (int l = 0; l < kCeLanes; ++l) ls[l] += E::exp(buf[k + l] - m);
    for (; k < n; ++k) ls[0] += E::exp(buf[k] - m);
    s += ce_lane_sum(ls);
  }
  *lse = sz == sz ? m + std::log(s) : sz;  // a row of -inf only: -inf (log 0)
  *sum_z = sz;
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops::ops::training
