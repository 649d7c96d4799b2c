// ops/jagged/common/cpu_half.h: fp16 conversions for the jagged CPU implementations, through the
// compiler's _Float16 where it has one (exact widening, one round-to-nearest-even narrowing from
// float or double: the same bits as recops/dtype.h's to_float and half_from_double). Measured about
// 2x faster than the library's portable to_float(Half) / half_from_float in a convert-scale-convert
// loop (g++ -O3, x86-64), so the CPU loops keep it.
// And the bf16 narrowings that the jagged CPU loops store through (cpu_bf16_from_float,
// cpu_bf16_from_double).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "recops/dtype.h"
#include "recops/isa_ns.h"

namespace recops::ops {
// The ISA-named inline namespace (recops/isa_ns.h): *_avx2.cpp files include this header too.
inline namespace RECOPS_ISA_NS {

#if defined(__FLT16_MAX__)
inline float cpu_half_to_float(Half v) {
  _Float16 h;
  std::memcpy(&h, &v.bits, sizeof h);
  return static_cast<float>(h);
}
// V: float or double; one rounding.
template <class V>
Half cpu_half_from(V v) {
  const _Float16 h = static_cast<_Float16>(v);
  Half r;
  std::memcpy(&r.bits, &h, sizeof h);
  return r;
}
#else
inline float cpu_half_to_float(Half v) {
  return to_float(v);
}
template <class V>
Half cpu_half_from(V v) {
  return half_from_double(static_cast<double>(v));
}
#endif

// float -> bf16, round to nearest even, a NaN kept and made quiet: the same bits as
// recops/dtype.h's bf16_from_float, written with one select instead of its early return so that a
// loop storing through it vectorises (the jagged_softmax forward's write loop did not before).
inline BFloat16 cpu_bf16_from_float(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet = (u >> 16) | 0x40u;
  return BFloat16{static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet : rounded)};
}

// bf16 from double in one rounding (to nearest even), the same bits as bf16_from_double (NaN
// included: its sign and 0x7FC0), without branches so that a loop storing through it vectorises:
// the double is rounded to odd into fp32 (the nearest float toward zero with its last bit set when
// inexact), and that float to nearest even into bf16. fp32 keeps 16 bits more than bf16, so the
// second rounding sees the first one's sticky bit and the pair rounds as one (round-to-odd); the
// range is the same (one exponent width), so overflow, subnormals and zeros come out as the exact
// rounding's.
inline BFloat16 cpu_bf16_from_double(double v) {
  const float f = static_cast<float>(v);  // IEEE: out of range gives inf, handled below
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const double back = static_cast<double>(f);
  const bool inexact = back != v && v == v;
  // Toward zero then odd: one below in magnitude when the nearest float lies above (bits are
  // sign-magnitude, so u - 1 is smaller in magnitude for either sign; f is never 0 there).
  const uint32_t odd = ((std::fabs(back) > std::fabs(v) ? u - 1u : u) | 1u);
  u = inexact ? odd : u;
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = ((u >> 16) & 0x8000u) | 0x7FC0u;  // u is f's own bits for a NaN
  return BFloat16{static_cast<uint16_t>(v == v ? rounded : nan)};
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops::ops
