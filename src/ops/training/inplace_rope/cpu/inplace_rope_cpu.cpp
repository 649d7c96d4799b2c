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

// One rounding of a double to T. For the 16-bit types: to float with round-to-odd (a float
// holds at least two more bits than either, so the float rounding to nearest even that follows
// gives the correctly rounded value), then the library's fast float conversion; the exact
// decoder of from_double costs more than the rest of the op. Branch-free: the odd step is a
// select (a branch on the last bit of a random value mispredicted every other element, which
// made this loop the op's whole cost). f = ±0 from a tiny v steps to ±the smallest subnormal, the
// odd value on v's side; NaN, Inf and exact values are left alone.
template <class T>
T store(double v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    return static_cast<T>(v);
  } else {
    const float f = static_cast<float>(v);
    const uint32_t bits = detail::f32_bits(f);
    const bool fix = (static_cast<double>(f) != v) & ((bits & 1u) == 0) &
                     ((bits & 0x7FFFFFFFu) < 0x7F800000u);
    const uint32_t step = std::fabs(static_cast<double>(f)) > std::fabs(v) ? ~0u : 1u;
    return from_float<T>(detail::bits_f32(bits + (fix ? step : 0u)));
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
  alignas(64) double x0[kBlock], x1[kBlock], c[kBlock], s[kBlock], y0[kBlock], y1[kBlock];
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
        y0[j] = x0[j] * c[j] - x1[j] * s[j];
        y1[j] = x1[j] * c[j] + x0[j] * s[j];
      }
      for (int64_t j = 0; j < n; ++j) {
        xd[2 * j] = store<T>(y0[j]);
        xd[2 * j + 1] = store<T>(y1[j]);
      }
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
