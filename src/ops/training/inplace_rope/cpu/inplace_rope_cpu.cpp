// training/inplace_rope/cpu/inplace_rope_cpu.cpp: cpu_generic. OpenMP over blocks of rows (one row
// = one head of one position, at least kGrain elements a block). A block's rows go position by
// position; a position's rope slice goes in pieces of kBlock pairs: the piece's cos and sin are
// widened once (sin with the rotation's sign) and reused over the position's heads; each head's
// pairs are split into even/odd arrays and widened, one branch-free loop over the arrays rotates
// them and the results are rounded once (branch-free) and stored back interleaved.
//
// The arithmetic is fp64 for every dtype: a product of two floats (or of a 16-bit value and a
// float) is exact in a double, so x0·c − x1·s is rounded once before the final rounding to the
// dtype and a near-cancellation keeps its relative accuracy (in fp32 it would keep only the
// absolute error of the products, which the `single` standard's max(rel) can fail). The work is
// memory-bound; doubles cost no time that shows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/parallel.h"
#include "ops/training/inplace_rope/impls.h"

namespace recops::ops::inplace_rope_ns {
namespace {
constexpr int64_t kGrain = int64_t{1} << 14;  // elements per OpenMP chunk, at least
constexpr int64_t kBlock = 128;               // pairs per piece of a row

// Exact widening (the 16-bit types through the library's inline float conversions).
template <class T>
double load(T v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return v;
  else
    return to_float(v);
}

// The 16-bit formats' constants: explicit mantissa bits, exponent bias, and the range of |v|
// whose rounding the integer path below does ([smallest normal, 2^(emax+1)): the normal range,
// including the values that round up to Inf).
template <class T>
struct Fmt;
template <>
struct Fmt<BFloat16> {
  static constexpr int kMant = 7, kBias = 127;
  static constexpr double kLo = 0x1p-126, kHi = 0x1p128;
};
template <>
struct Fmt<Half> {
  static constexpr int kMant = 10, kBias = 15;
  static constexpr double kLo = 0x1p-14, kHi = 0x1p16;
};

// out[k] = y[k] rounded once (to nearest even) to T. For the 16-bit types the normal range is
// rounded on the double's bits (add half an ulp minus one, plus the kept last bit; shift; rebias
// the exponent; a carry into the exponent field gives the next binade or Inf, as it should), a
// branch-free loop over 64-bit integers; the rest (zero, subnormal results, Inf, NaN) is redone
// by the exact from_double afterwards, only in a block that has one. (A per-element round-to-odd
// through float, with a branch on a random last bit, was the op's whole cost.)
template <class T>
void round_out(const double* y, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    for (int64_t k = 0; k < n; ++k) out[k] = static_cast<T>(y[k]);
  } else {
    constexpr int kDrop = 52 - Fmt<T>::kMant;
    constexpr uint64_t kRebias = static_cast<uint64_t>(1023 - Fmt<T>::kBias) << Fmt<T>::kMant;
    int64_t others = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double a = std::fabs(y[k]);
      others += !(a >= Fmt<T>::kLo && a < Fmt<T>::kHi);  // NaN too
      uint64_t u;
      std::memcpy(&u, &y[k], sizeof u);
      const uint64_t m = u & 0x7FFFFFFFFFFFFFFFull;
      const uint64_t r = (m + ((uint64_t{1} << (kDrop - 1)) - 1) + ((m >> kDrop) & 1u)) >> kDrop;
      out[k] = T{static_cast<uint16_t>(((u >> 48) & 0x8000u) | ((r - kRebias) & 0xFFFFu))};
    }
    if (others > 0)
      for (int64_t k = 0; k < n; ++k) {
        const double a = std::fabs(y[k]);
        if (!(a >= Fmt<T>::kLo && a < Fmt<T>::kHi)) out[k] = from_double<T>(y[k]);
      }
  }
}

// Rows [r0, r0 + nh) of one position (b, l): heads h0 .. h0+nh-1. The position's angles are
// widened once per piece and reused over its heads.
template <class T, class C>
void position(const Params& p, int64_t b, int64_t l, int64_t h0, int64_t nh, const T* src, T* dst,
              const C* cr, const C* sr) {
  const int64_t first = p.Dh - 2 * p.half;
  if (p.copy_nope)
    for (int64_t h = h0; h < h0 + nh; ++h) {
      const T* xs = src + b * p.src_sb + l * p.src_sl + h * p.src_sh;
      std::copy(xs, xs + first, dst + b * p.dst_sb + l * p.dst_sl + h * p.dst_sh);
    }
  const double sg = p.sign;
  alignas(64) double x0[kBlock], x1[kBlock], c[kBlock], s[kBlock], y[2 * kBlock];
  for (int64_t i0 = 0; i0 < p.half; i0 += kBlock) {
    const int64_t n = std::min(kBlock, p.half - i0);
    for (int64_t j = 0; j < n; ++j) {
      c[j] = load(cr[i0 + j]);
      s[j] = sg * load(sr[i0 + j]);
    }
    for (int64_t h = h0; h < h0 + nh; ++h) {
      const T* xs = src + b * p.src_sb + l * p.src_sl + h * p.src_sh + first + 2 * i0;
      T* xd = dst + b * p.dst_sb + l * p.dst_sl + h * p.dst_sh + first + 2 * i0;
      for (int64_t j = 0; j < n; ++j) {
        x0[j] = load(xs[2 * j]);
        x1[j] = load(xs[2 * j + 1]);
      }
      for (int64_t j = 0; j < n; ++j) {
        y[2 * j] = x0[j] * c[j] - x1[j] * s[j];
        y[2 * j + 1] = x1[j] * c[j] + x0[j] * s[j];
      }
      round_out<T>(y, xd, 2 * n);
    }
  }
}

template <class T, class C>
void run_typed(const Params& p, int threads) {
  const int64_t rows = p.B * p.L * p.H;  // the entry returned early for an empty problem
  const int64_t per_row = p.copy_nope ? p.Dh : 2 * p.half;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, per_row));
  const T* src = static_cast<const T*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  const C* cs = static_cast<const C*>(p.cos);
  const C* sn = static_cast<const C*>(p.sin);
  core::parallel_for(rows, grain, threads, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end;) {
      const int64_t h = r % p.H, bl = r / p.H;
      const int64_t l = bl % p.L, b = bl / p.L;
      const int64_t nh = std::min(p.H - h, end - r);
      position<T, C>(p, b, l, h, nh, src, dst, cs + b * p.cs_sb + l * p.cs_sl,
                     sn + b * p.sn_sb + l * p.sn_sl);
      r += nh;
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  bool ok = false;
  visit_floating(p.dtype, [&](auto t) {
    using T = decltype(t);
    if (p.cs_dtype == DType::fp32) {
      run_typed<T, float>(p, ctx.num_threads);
      ok = true;
    } else if (p.cs_dtype == p.dtype) {
      run_typed<T, T>(p, ctx.num_threads);
      ok = true;
    }
  });
  if (!ok)
    return Status(StatusCode::internal, "inplace_rope_: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::inplace_rope_ns
