// training/inplace_rope/cpu/inplace_rope_cpu.cpp: cpu_generic. OpenMP over blocks of rows (one row
// = one head of one position, at least kGrain elements a block). A row's rope slice goes in
// pieces of kBlock pairs: the pairs are split into even/odd arrays and widened, together with the
// piece's cos and sin, then one branch-free loop over the arrays rotates them (the compiler
// vectorises it) and the results are rounded once and stored back interleaved.
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
// decoder of from_double costs more than the rest of the op.
template <class T>
T store(double v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    return static_cast<T>(v);
  } else {
    const float f = static_cast<float>(v);
    uint32_t bits = detail::f32_bits(f);
    if (static_cast<double>(f) != v && (bits & 1u) == 0 && (bits & 0x7FFFFFFFu) < 0x7F800000u) {
      if (f == 0.0f)
        bits = (v < 0 ? 0x80000000u : 0u) | 1u;  // below the smallest subnormal
      else
        bits = std::fabs(static_cast<double>(f)) > std::fabs(v) ? bits - 1u : bits + 1u;  // odd
    }
    return from_float<T>(detail::bits_f32(bits));
  }
}

// One row: the rope slice of src_row (and, in the backward, the nope channels) into dst_row.
template <class T, class C>
void row(const Params& p, const T* src, T* dst, const C* cr, const C* sr) {
  const int64_t first = p.Dh - 2 * p.half;
  if (p.copy_nope) std::copy(src, src + first, dst);
  const T* xs = src + first;
  T* xd = dst + first;
  const double sg = p.sign;
  double x0[kBlock], x1[kBlock], c[kBlock], s[kBlock], y0[kBlock], y1[kBlock];
  for (int64_t i0 = 0; i0 < p.half; i0 += kBlock) {
    const int64_t n = std::min(kBlock, p.half - i0);
    for (int64_t j = 0; j < n; ++j) {
      x0[j] = load(xs[2 * (i0 + j)]);
      x1[j] = load(xs[2 * (i0 + j) + 1]);
      c[j] = load(cr[i0 + j]);
      s[j] = load(sr[i0 + j]);
    }
    for (int64_t j = 0; j < n; ++j) {
      y0[j] = x0[j] * c[j] - sg * (x1[j] * s[j]);
      y1[j] = x1[j] * c[j] + sg * (x0[j] * s[j]);
    }
    for (int64_t j = 0; j < n; ++j) {
      xd[2 * (i0 + j)] = store<T>(y0[j]);
      xd[2 * (i0 + j) + 1] = store<T>(y1[j]);
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
    for (int64_t r = begin; r < end; ++r) {
      const int64_t h = r % p.H, bl = r / p.H;
      const int64_t l = bl % p.L, b = bl / p.L;
      row<T, C>(p, src + b * p.src_sb + l * p.src_sl + h * p.src_sh,
                dst + b * p.dst_sb + l * p.dst_sl + h * p.dst_sh, cs + b * p.cs_sb + l * p.cs_sl,
                sn + b * p.sn_sb + l * p.sn_sl);
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
